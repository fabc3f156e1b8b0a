#include "heft/sim/sim_model.hpp"

#include <mujoco/mujoco.h>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/sim/mujoco_errors.hpp"
#include "mujoco_spec.hpp"

namespace heft::sim {

namespace {

std::string num(double x) { return formatNumber(x, 6); }

pinocchio::SE3 mujocoBodyPlacement(const mjModel* m, int b) {
  const mjtNum* q = m->body_quat + 4 * b;
  const Eigen::Matrix3d R =
      Eigen::Quaterniond(q[0], q[1], q[2], q[3]).normalized().toRotationMatrix();
  return pinocchio::SE3(
      R, Eigen::Vector3d(m->body_pos[3 * b], m->body_pos[3 * b + 1], m->body_pos[3 * b + 2]));
}

}  // namespace

void SimModelOptions::validate() const {
  require(std::isfinite(timestep) && timestep > 0 && timestep <= 0.01, "timestep",
          "a value in (0, 0.01] s", num(timestep));
  for (const auto& e : link_edits) {
    require(!e.body.empty(), "link_edits body", "a body name", "\"\"");
    require(std::isfinite(e.mass_scale) && e.mass_scale > 0,
            "link_edits[" + e.body + "] mass_scale", "a finite value > 0", num(e.mass_scale));
    require(e.com_shift.allFinite(), "link_edits[" + e.body + "] com_shift", "finite values [m]",
            "non-finite values");
  }
  std::set<std::string> names;
  for (const auto& p : payloads) {
    require(!p.name.empty(), "payloads name", "a non-empty MuJoCo body name", "\"\"");
    require(names.insert(p.name).second, "payloads name", "unique names",
            "\"" + p.name + "\" twice");
    require(!p.body.empty(), "payloads[" + p.name + "] body", "a body name", "\"\"");
    p.payload.validate();
  }
  for (const auto& [joint, f] : joint_friction) {
    const bool ok = std::isfinite(f.damping) && f.damping >= 0 && std::isfinite(f.frictionloss) &&
                    f.frictionloss >= 0 && std::isfinite(f.armature) && f.armature >= 0;
    require(ok, "joint_friction[" + joint + "]", "finite damping, frictionloss, armature >= 0",
            num(f.damping) + ", " + num(f.frictionloss) + ", " + num(f.armature));
  }
  require(std::isfinite(contact_radius) && contact_radius > 0, "contact_radius", "a value > 0 m",
          num(contact_radius));
  std::set<std::string> point_names;
  for (const auto& c : contact_points) {
    require(!c.name.empty(), "contact_points name", "a non-empty name", "\"\"");
    require(point_names.insert(c.name).second, "contact_points name", "unique names",
            "\"" + c.name + "\" twice");
    require(c.offset.allFinite(), "contact_points[" + c.name + "] offset", "finite values [m]",
            "non-finite values");
  }
  for (const auto& v : mass_variations) {
    require(!v.body.empty(), "mass_variations body", "a body or payload name", "\"\"");
    const std::string field = "mass_variations[" + v.body + "]";
    if (v.waveform == MassVariation::Waveform::Step) {
      // a step may start or end at zero mass (a payload not yet picked up)
      require(std::isfinite(v.offset) && v.offset >= 0, field + " offset",
              "a finite mass >= 0 kg before the step", num(v.offset));
      require(std::isfinite(v.amplitude) && v.offset + v.amplitude >= 0, field + " amplitude",
              "a finite change with offset + amplitude >= 0 kg",
              "offset " + num(v.offset) + ", amplitude " + num(v.amplitude));
      require(std::isfinite(v.step_time) && v.step_time >= 0, field + " step_time",
              "a finite time >= 0 s", num(v.step_time));
      continue;
    }
    require(
        std::isfinite(v.offset) && std::isfinite(v.amplitude) && std::abs(v.amplitude) < v.offset,
        field, "offset > |amplitude| (a positive mass)",
        "offset " + num(v.offset) + ", amplitude " + num(v.amplitude));
    require(std::isfinite(v.frequency) && v.frequency > 0, field + " frequency", "a value > 0 Hz",
            num(v.frequency));
  }
  for (const auto& [joint, a] : actuators) {
    require(std::isfinite(a.gain) && a.gain > 0 && std::isfinite(a.saturation) && a.saturation >= 0,
            "actuators[" + joint + "]", "gain > 0 and saturation >= 0",
            num(a.gain) + ", " + num(a.saturation));
  }
  for (const auto& [joint, offset] : torque_offsets) {
    require(std::isfinite(offset), "torque_offsets[" + joint + "]", "a finite value [N m]",
            num(offset));
  }
  require(std::isfinite(floor_friction) && floor_friction > 0, "floor_friction", "a value > 0",
          num(floor_friction));
}

namespace {

// The scenario's link edits, applied to a copy of the nominal inertias.
std::vector<pinocchio::Inertia> editedInertias(const model::RobotModel& nominal,
                                               const std::vector<LinkEdit>& edits) {
  const pinocchio::Model& pm = nominal.pinocchio();
  std::vector<pinocchio::Inertia> inertias(pm.inertias.begin(), pm.inertias.end());
  for (const auto& e : edits) {
    const auto j = nominal.bodyIndex(e.body);
    const pinocchio::Inertia& I = inertias[j];
    const Eigen::Matrix3d scaled = I.inertia().matrix() * e.mass_scale;
    inertias[j] = pinocchio::Inertia(I.mass() * e.mass_scale, I.lever() + e.com_shift,
                                     pinocchio::Symmetric3(scaled));
  }
  return inertias;
}

// An empty spec with heft's compiler settings and physics options.
SpecPtr makeSpec(const std::string& name, double timestep) {
  SpecPtr spec(mj_makeSpec());
  if (!spec) throw SolveError("MuJoCo: mj_makeSpec failed");
  mjs_setString(spec->modelname, name.c_str());
  spec->compiler.degree = 0;  // radians
  spec->compiler.inertiafromgeom = mjINERTIAFROMGEOM_FALSE;
  spec->compiler.balanceinertia = 0;
  spec->compiler.boundmass = 0;
  spec->compiler.boundinertia = 0;
  spec->compiler.alignfree = 0;  // the free joint's qpos is the body frame, not the inertial frame
  spec->option.timestep = timestep;
  spec->option.gravity[0] = 0;
  spec->option.gravity[1] = 0;
  spec->option.gravity[2] = -9.81;
  spec->option.integrator = mjINT_EULER;
  // explicit damping: qvel[k+1] = qvel[k] + h qacc[k] exactly, so the logged a matches the states
  spec->option.disableflags |= mjDSBL_EULERDAMP;
  return spec;
}

// One MuJoCo joint on `body` for the one-dimensional Pinocchio joint j: its axis is the joint's
// column of its local Jacobian at the neutral configuration (pd holds computeJointJacobians).
mjsJoint* addJoint(mjsBody* body, const model::RobotModel& nominal, const pinocchio::Data& pd,
                   pinocchio::JointIndex j) {
  const pinocchio::Model& pm = nominal.pinocchio();
  const auto& jm = pm.joints[j];
  const std::string& joint_name = pm.names[j];
  if (jm.nv() != 1) {
    throw InputError(nominal.source() + ": joint " + joint_name + ": expected a revolute, " +
                     "continuous or prismatic joint (or a free-flyer root), got " + jm.shortname());
  }
  Eigen::Matrix<double, 6, Eigen::Dynamic> J(6, pm.nv);
  J.setZero();
  pinocchio::getJointJacobian(pm, pd, j, pinocchio::LOCAL, J);
  const Eigen::Matrix<double, 6, 1> S = J.col(jm.idx_v());
  mjsJoint* joint = mjs_addJoint(body, nullptr);
  mjs_setName(joint->element, joint_name.c_str());
  const bool revolute = S.tail<3>().norm() > 0.5;
  if (revolute && S.head<3>().norm() > 1e-9) {
    throw InputError(nominal.source() + ": joint " + joint_name +
                     ": expected a revolute axis through the joint frame origin");
  }
  joint->type = revolute ? mjJNT_HINGE : mjJNT_SLIDE;
  const Eigen::Vector3d axis = revolute ? S.tail<3>() : S.head<3>();
  for (int k = 0; k < 3; ++k) joint->axis[k] = axis[k];
  joint->limited = mjLIMITED_FALSE;
  if (jm.nq() == 1) {
    const double lo = pm.lowerPositionLimit[jm.idx_q()];
    const double hi = pm.upperPositionLimit[jm.idx_q()];
    // URDFs write lower = upper = 0 for "no limit" (double_pendulum); Pinocchio keeps it.
    if (std::isfinite(lo) && std::isfinite(hi) && lo < hi) {
      joint->limited = mjLIMITED_TRUE;
      joint->range[0] = lo;
      joint->range[1] = hi;
    }
  }
  return joint;
}

// One MuJoCo body per Pinocchio joint (index j; the world at 0), with its joint: free for a
// free-flyer root, else hinge or slide with the scenario's friction. Appends the names of the
// one-dimensional joints to joint_names and the bodies' names to used_names.
std::vector<mjsBody*> addJointBodies(mjSpec* spec, const model::RobotModel& nominal,
                                     const std::vector<pinocchio::Inertia>& inertias,
                                     const std::map<std::string, JointFriction>& friction,
                                     std::vector<std::string>& joint_names,
                                     std::set<std::string>& used_names) {
  const pinocchio::Model& pm = nominal.pinocchio();
  const bool free_flyer = nominal.hasFreeFlyer();
  pinocchio::Data pd(pm);
  const Eigen::VectorXd q0 = pinocchio::neutral(pm);
  pinocchio::computeJointJacobians(pm, pd, q0);
  mjsBody* world = mjs_findBody(spec, "world");
  std::vector<mjsBody*> bodies(pm.njoints, nullptr);
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(pm.njoints); ++j) {
    const std::string& joint_name = pm.names[j];
    const std::string body_name = nominal.body(j).name;
    mjsBody* parent = pm.parents[j] == 0 ? world : bodies[pm.parents[j]];
    mjsBody* body = mjs_addBody(parent, nullptr);
    bodies[j] = body;
    mjs_setName(body->element, body_name.c_str());
    used_names.insert(body_name);
    const pinocchio::SE3& placement = pm.jointPlacements[j];
    for (int k = 0; k < 3; ++k) body->pos[k] = placement.translation()[k];
    setQuat(body->quat, placement.rotation());
    setInertial(body, inertias[j]);

    if (j == 1 && free_flyer) {
      mjsJoint* free = mjs_addFreeJoint(body);
      mjs_setName(free->element, joint_name.c_str());
      free->align = mjALIGNFREE_FALSE;
      continue;
    }
    mjsJoint* joint = addJoint(body, nominal, pd, j);
    auto f = friction.find(joint_name);
    if (f != friction.end()) {
      joint->damping = f->second.damping;
      joint->frictionloss = f->second.frictionloss;
      joint->armature = f->second.armature;
    }
    joint_names.push_back(joint_name);
  }
  for (const auto& [name, f] : friction) {
    if (std::find(joint_names.begin(), joint_names.end(), name) == joint_names.end()) {
      throw InputError("joint_friction: expected a 1-DoF joint of " + nominal.displayName() +
                       ", got \"" + name + "\"");
    }
  }
  return bodies;
}

// Payloads: welded bodies of their own, so MuJoCo (not heft) does the lumping.
void addPayloads(const model::RobotModel& nominal, const std::vector<PayloadSpec>& payloads,
                 const std::vector<mjsBody*>& bodies, const std::set<std::string>& used_names) {
  for (const auto& p : payloads) {
    const auto j = nominal.bodyIndex(p.body);
    if (used_names.count(p.name)) {
      throw InputError("payloads name: expected a name that is not a body of the robot, got \"" +
                       p.name + "\"");
    }
    mjsBody* body = mjs_addBody(bodies[j], nullptr);
    mjs_setName(body->element, p.name.c_str());
    const Eigen::Matrix3d I = 0.5 * (p.payload.inertia + p.payload.inertia.transpose());
    setInertial(body, pinocchio::Inertia(p.payload.mass, p.payload.com, pinocchio::Symmetric3(I)));
  }
}

// The contact points: the scenario's, else one at each contact frame (the scenario's or the
// robot's).
std::vector<ContactPoint> scenarioContactPoints(const model::RobotModel& nominal,
                                                const SimModelOptions& options) {
  std::vector<ContactPoint> points = options.contact_points;
  if (points.empty()) {
    std::vector<std::string> frame_names = options.contact_frames;
    if (frame_names.empty()) frame_names = nominal.contactFrames();
    for (const auto& name : frame_names) points.push_back({name, name, Vector3::Zero()});
  }
  return points;
}

// Contact spheres at the points, and the floor they touch; returns the spheres' names.
std::vector<std::string> addContactGeoms(mjSpec* spec, const model::RobotModel& nominal,
                                         const SimModelOptions& options,
                                         const std::vector<ContactPoint>& points,
                                         const std::vector<mjsBody*>& bodies) {
  const pinocchio::Model& pm = nominal.pinocchio();
  std::vector<std::string> names;
  for (const auto& point : points) {
    const std::string& name = point.frame;
    if (!pm.existFrame(name)) {
      throw InputError("contact_frames: expected a frame of " + nominal.displayName() + ", got \"" +
                       name + "\"");
    }
    const auto& frame = pm.frames[pm.getFrameId(name)];
    if (frame.parentJoint == 0) {
      throw InputError("contact_frames: frame \"" + name + "\" is welded to the world");
    }
    mjsGeom* geom = mjs_addGeom(bodies[frame.parentJoint], nullptr);
    mjs_setName(geom->element, point.name.c_str());
    geom->type = mjGEOM_SPHERE;
    geom->size[0] = options.contact_radius;
    const Eigen::Vector3d center = frame.placement.act(point.offset);
    for (int k = 0; k < 3; ++k) geom->pos[k] = center[k];
    // feet collide with the floor only (contype / conaffinity bits 1 and 2)
    geom->contype = 1;
    geom->conaffinity = 2;
    geom->condim = 3;
    geom->friction[0] = options.floor_friction;
    geom->mass = 0;
    geom->density = 0;
    names.push_back(point.name);
  }
  if (!points.empty()) {
    mjsGeom* floor = mjs_addGeom(mjs_findBody(spec, "world"), nullptr);
    mjs_setName(floor->element, "floor");
    floor->type = mjGEOM_PLANE;
    floor->size[0] = floor->size[1] = 0;  // infinite
    floor->size[2] = 1;
    floor->contype = 2;
    floor->conaffinity = 1;
    floor->condim = 3;
    floor->friction[0] = options.floor_friction;
  }
  return names;
}

// IMU: MuJoCo's gyro and accelerometer at a site on the base (free-flyer robots), or at the
// scenario's IMU frame when the robot has it; returns that frame ("" for the base).
std::string addImu(mjSpec* spec, const model::RobotModel& nominal, const SimModelOptions& options,
                   const std::vector<mjsBody*>& bodies) {
  const pinocchio::Model& pm = nominal.pinocchio();
  mjsBody* host = bodies[1];
  pinocchio::SE3 placement = pinocchio::SE3::Identity();
  std::string imu_frame;
  if (!options.imu_frame.empty()) {
    if (pm.existFrame(options.imu_frame)) {
      const auto& frame = pm.frames[pm.getFrameId(options.imu_frame)];
      host = bodies[frame.parentJoint];
      placement = frame.placement;
      imu_frame = options.imu_frame;
    } else if (!options.imu_frame_optional) {
      throw InputError("imu_frame: expected a frame of " + nominal.displayName() + ", got \"" +
                       options.imu_frame + "\"");
    }
  }
  mjsSite* site = mjs_addSite(host, nullptr);
  mjs_setName(site->element, "heft_imu");
  for (int k = 0; k < 3; ++k) site->pos[k] = placement.translation()[k];
  setQuat(site->quat, placement.rotation());
  mjsSensor* gyro = mjs_addSensor(spec);
  mjs_setName(gyro->element, "heft_gyro");
  gyro->type = mjSENS_GYRO;
  gyro->objtype = mjOBJ_SITE;
  mjs_setString(gyro->objname, "heft_imu");
  mjsSensor* accel = mjs_addSensor(spec);
  mjs_setName(accel->element, "heft_accel");
  accel->type = mjSENS_ACCELEROMETER;
  accel->objtype = mjOBJ_SITE;
  mjs_setString(accel->objname, "heft_imu");
  return imu_frame;
}

// The simulation model's spec and the names the model is mapped by.
struct BuiltSpec {
  SpecPtr spec;
  std::vector<std::string> joint_names, contact_names;
  std::vector<ContactPoint> contact_points;
  std::string imu_frame;
};

// The robot's closed loops: MuJoCo connect equalities between sites at the two anchors, stiffer
// than MuJoCo's default (solref 0.02 s) so that the loop opens by well under a millimetre under
// the motion's forces.
void addLoops(mjSpec* spec, const model::RobotModel& nominal, const std::vector<mjsBody*>& bodies) {
  const pinocchio::Model& pm = nominal.pinocchio();
  for (const model::LoopClosure& l : nominal.loops()) {
    std::string names[2];
    const pinocchio::FrameIndex frames[2] = {l.frame1, l.frame2};
    for (int i = 0; i < 2; ++i) {
      const pinocchio::Frame& frame = pm.frames[frames[i]];
      mjsBody* host =
          frame.parentJoint == 0 ? mjs_findBody(spec, "world") : bodies[frame.parentJoint];
      mjsSite* site = mjs_addSite(host, nullptr);
      names[i] = "heft_" + frame.name;
      mjs_setName(site->element, names[i].c_str());
      for (int k = 0; k < 3; ++k) site->pos[k] = frame.placement.translation()[k];
    }
    mjsEquality* eq = mjs_addEquality(spec, nullptr);
    mjs_setName(eq->element, ("heft_" + l.name).c_str());
    eq->type = mjEQ_CONNECT;
    eq->objtype = mjOBJ_SITE;
    mjs_setString(eq->name1, names[0].c_str());
    mjs_setString(eq->name2, names[1].c_str());
    eq->solref[0] = 0.004;
    eq->solref[1] = 1;
    eq->solimp[0] = 0.99;
    eq->solimp[1] = 0.999;
  }
}

BuiltSpec buildSpec(const model::RobotModel& nominal, const SimModelOptions& options) {
  BuiltSpec built;
  const std::vector<pinocchio::Inertia> inertias = editedInertias(nominal, options.link_edits);
  built.spec = makeSpec(nominal.displayName(), options.timestep);
  std::set<std::string> used_names;
  const std::vector<mjsBody*> bodies = addJointBodies(
      built.spec.get(), nominal, inertias, options.joint_friction, built.joint_names, used_names);
  addPayloads(nominal, options.payloads, bodies, used_names);
  addLoops(built.spec.get(), nominal, bodies);
  built.contact_points = scenarioContactPoints(nominal, options);
  built.contact_names =
      addContactGeoms(built.spec.get(), nominal, options, built.contact_points, bodies);
  if (nominal.hasFreeFlyer()) built.imu_frame = addImu(built.spec.get(), nominal, options, bodies);
  return built;
}

}  // namespace

SimModel::SimModel(const model::RobotModel& nominal, SimModelOptions options)
    : nominal_(nominal), options_(std::move(options)) {
  options_.validate();
  installMujocoHandlers();
  BuiltSpec built = buildSpec(nominal_, options_);
  joint_names_ = std::move(built.joint_names);
  contact_names_ = std::move(built.contact_names);
  contact_points_ = std::move(built.contact_points);
  imu_frame_ = std::move(built.imu_frame);
  model_ = compileSpec(built.spec.get(), nominal_.displayName());
  mapModels();
  mapMassVariations();
  mapActuators();
}

std::string SimModel::mjcf() const {
  const BuiltSpec built = buildSpec(nominal_, options_);
  mj_deleteModel(compileSpec(built.spec.get(), nominal_.displayName()));
  return saveSpecXml(built.spec.get(), nominal_.displayName());
}

// Maps between the two models, by name: bodies, joints, contact spheres, payloads, IMU sensors.
void SimModel::mapModels() {
  const pinocchio::Model& pm = nominal_.pinocchio();
  const bool free_flyer = nominal_.hasFreeFlyer();
  joint_body_.assign(pm.njoints, -1);
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(pm.njoints); ++j) {
    joint_body_[j] = mj_name2id(model_, mjOBJ_BODY, nominal_.body(j).name.c_str());
    if (j == 1 && free_flyer) continue;
    const auto& jm = pm.joints[j];
    const int id = mj_name2id(model_, mjOBJ_JOINT, pm.names[j].c_str());
    JointMap map;
    map.joint = j;
    map.idx_q = jm.idx_q();
    map.idx_v = jm.idx_v();
    map.nq = jm.nq();
    map.mj_qpos = model_->jnt_qposadr[id];
    map.mj_dof = model_->jnt_dofadr[id];
    joints_.push_back(map);
  }
  for (const auto& name : contact_names_) {
    contact_geoms_.push_back(mj_name2id(model_, mjOBJ_GEOM, name.c_str()));
  }
  for (const auto& p : options_.payloads) {
    payload_bodies_.push_back(mj_name2id(model_, mjOBJ_BODY, p.name.c_str()));
  }
  if (free_flyer) {
    imu_site_ = mj_name2id(model_, mjOBJ_SITE, "heft_imu");
    gyro_adr_ = model_->sensor_adr[mj_name2id(model_, mjOBJ_SENSOR, "heft_gyro")];
    accel_adr_ = model_->sensor_adr[mj_name2id(model_, mjOBJ_SENSOR, "heft_accel")];
  }
}

// Time-varying masses: the MuJoCo body and the Pinocchio body (nearest ancestor with a joint).
// Errors free the compiled model (the destructor does not run when the constructor throws).
void SimModel::mapMassVariations() {
  for (const auto& v : options_.mass_variations) {
    std::string mj_name = v.body;
    bool is_payload = false;
    for (const auto& p : options_.payloads) is_payload = is_payload || p.name == v.body;
    int b = -1;
    try {
      if (!is_payload) mj_name = nominal_.body(nominal_.bodyIndex(v.body)).name;
      b = mj_name2id(model_, mjOBJ_BODY, mj_name.c_str());
    } catch (...) {
      b = -1;
    }
    if (b < 0) {
      mj_deleteModel(model_);
      model_ = nullptr;
      throw InputError("mass_variations body: expected a payload or body name, got \"" + v.body +
                       "\"");
    }
    // the inertia is scaled by m(t) / compiled mass; a body with a joint needs a positive mass
    // (MuJoCo's mass matrix), a welded one is composed into its parent and may reach zero
    const bool welded = model_->body_jntnum[b] == 0;
    const bool reaches_zero = v.waveform == MassVariation::Waveform::Step &&
                              std::min(v.offset, v.offset + v.amplitude) <= 0;
    if (model_->body_mass[b] <= 0 || (reaches_zero && !welded)) {
      const double compiled = model_->body_mass[b];
      mj_deleteModel(model_);
      model_ = nullptr;
      throw InputError("mass_variations[" + v.body + "]: expected " +
                       (compiled <= 0
                            ? "a body with a positive compiled mass, got " + num(compiled) + " kg"
                            : std::string("a mass > 0 kg for a body with a joint (only a welded "
                                          "payload may reach 0 kg), got a step to 0 kg")));
    }
    int owner = b;
    while (owner > 0 && model_->body_jntnum[owner] == 0) owner = model_->body_parentid[owner];
    int row = -1;
    for (std::size_t j = 1; j < joint_body_.size(); ++j) {
      if (joint_body_[j] == owner) row = static_cast<int>(j) - 1;
    }
    varied_bodies_.push_back(b);
    varied_rows_.push_back(row);
    varied_mass0_.push_back(model_->body_mass[b]);
    varied_inertia0_.emplace_back(model_->body_inertia[3 * b], model_->body_inertia[3 * b + 1],
                                  model_->body_inertia[3 * b + 2]);
  }
}

// Actuator models, torque-sensor offsets and passive flags of the named joints.
void SimModel::mapActuators() {
  // the actuated joint called `name`; an unknown one frees the compiled model and names `field`
  auto index = [this](const std::string& name, const char* field) {
    const auto it = std::find(joint_names_.begin(), joint_names_.end(), name);
    if (it == joint_names_.end()) {
      mj_deleteModel(model_);
      model_ = nullptr;
      throw InputError(std::string(field) + ": expected a 1-DoF joint of " +
                       nominal_.displayName() + ", got \"" + name + "\"");
    }
    return static_cast<size_t>(it - joint_names_.begin());
  };
  actuators_.assign(joints_.size(), ActuatorModel{});
  for (const auto& [name, a] : options_.actuators) {
    actuators_[index(name, "actuators")] = a;
    has_actuators_ = true;
  }
  torque_offsets_ = Eigen::VectorXd::Zero(nu());
  for (const auto& [name, offset] : options_.torque_offsets)
    torque_offsets_[static_cast<Eigen::Index>(index(name, "torque_offsets"))] = offset;
  passive_.assign(nu(), false);
  for (const std::string& name : options_.passive_joints)
    passive_[index(name, "passive_joints")] = true;
}

double MassVariation::massAt(double t) const {
  switch (waveform) {
    case Waveform::Sine:
      return offset + amplitude * std::sin(2 * M_PI * frequency * t);
    case Waveform::Step:
      return t < step_time ? offset : offset + amplitude;
    case Waveform::Square:
      break;
  }
  // square: +1 over the first half of each period, -1 over the second
  return offset + amplitude * (std::fmod(frequency * t, 1.0) < 0.5 ? 1.0 : -1.0);
}

void SimModel::applyMassVariations(double t) {
  for (std::size_t i = 0; i < varied_bodies_.size(); ++i) {
    const int b = varied_bodies_[i];
    const double mass = options_.mass_variations[i].massAt(t);
    const double change = mass - model_->body_mass[b];
    if (change == 0) continue;
    model_->body_mass[b] = mass;
    for (int k = 0; k < 3; ++k) {
      model_->body_inertia[3 * b + k] = varied_inertia0_[i][k] * (mass / varied_mass0_[i]);
    }
    // subtree masses of the body and its ancestors, as mj_setConst computes them
    for (int a = b; a >= 0; a = a > 0 ? model_->body_parentid[a] : -1) {
      model_->body_subtreemass[a] += change;
    }
  }
}

void SimModel::applyActuators(const Eigen::VectorXd& tau_cmd, Eigen::VectorXd& tau) const {
  require(tau_cmd.size() == nu(), "tau_cmd size", std::to_string(nu()),
          std::to_string(tau_cmd.size()));
  tau.resize(nu());
  for (int k = 0; k < nu(); ++k)
    tau[k] = passive_[k] ? 0.0 : has_actuators_ ? actuators_[k].apply(tau_cmd[k]) : tau_cmd[k];
}

SimModel::~SimModel() {
  if (model_ != nullptr) mj_deleteModel(model_);
}

int SimModel::nq() const { return nominal_.pinocchio().nq; }
int SimModel::nv() const { return nominal_.pinocchio().nv; }

Eigen::MatrixXd SimModel::truthPi() const {
  const mjModel* m = model_;
  // every MuJoCo body belongs to its nearest ancestor-or-self with a joint (world: 0)
  std::vector<int> owner(m->nbody, 0);
  std::vector<pinocchio::SE3> owner_T_body(m->nbody, pinocchio::SE3::Identity());
  std::vector<pinocchio::Inertia> lumped(m->nbody, pinocchio::Inertia::Zero());
  for (int b = 1; b < m->nbody; ++b) {
    if (m->body_jntnum[b] > 0) {
      owner[b] = b;
    } else {
      const int parent = m->body_parentid[b];
      owner[b] = owner[parent];
      owner_T_body[b] = owner_T_body[parent] * mujocoBodyPlacement(m, b);
    }
    lumped[owner[b]] += owner_T_body[b].act(mujocoInertia(m, b));
  }
  const int nb = nominal_.pinocchio().njoints - 1;
  Eigen::MatrixXd pi(nb, 10);
  for (int k = 0; k < nb; ++k)
    pi.row(k) = lumped[joint_body_[k + 1]].toDynamicParameters().transpose();
  return pi;
}

SimModel::DataPtr SimModel::makeData() const {
  mjData* d = nullptr;
  guardedMujocoCallOrThrow("mj_makeData", [&] { d = mj_makeData(model_); });
  if (d == nullptr) throw SolveError("MuJoCo: mj_makeData failed");
  return DataPtr(d, &mj_deleteData);
}

void SimModel::setState(mjData* d, const Eigen::VectorXd& q, const Eigen::VectorXd& v) const {
  require(q.size() == nq(), "q size", std::to_string(nq()), std::to_string(q.size()));
  require(v.size() == nv(), "v size", std::to_string(nv()), std::to_string(v.size()));
  if (hasFreeFlyer()) {
    Eigen::Quaterniond quat(q[6], q[3], q[4], q[5]);
    quat.normalize();
    const Eigen::Matrix3d R = quat.toRotationMatrix();
    for (int k = 0; k < 3; ++k) d->qpos[k] = q[k];
    d->qpos[3] = quat.w();
    d->qpos[4] = quat.x();
    d->qpos[5] = quat.y();
    d->qpos[6] = quat.z();
    const Eigen::Vector3d linear = R * v.head<3>();  // MuJoCo: world frame
    for (int k = 0; k < 3; ++k) {
      d->qvel[k] = linear[k];
      d->qvel[3 + k] = v[3 + k];
    }
  }
  for (const auto& j : joints_) {
    d->qpos[j.mj_qpos] = j.nq == 2 ? std::atan2(q[j.idx_q + 1], q[j.idx_q]) : q[j.idx_q];
    d->qvel[j.mj_dof] = v[j.idx_v];
  }
}

void SimModel::getState(const mjData* d, Eigen::VectorXd& q, Eigen::VectorXd& v) const {
  q.resize(nq());
  v.resize(nv());
  if (hasFreeFlyer()) {
    const Eigen::Quaterniond quat(d->qpos[3], d->qpos[4], d->qpos[5], d->qpos[6]);
    const Eigen::Matrix3d R = quat.normalized().toRotationMatrix();
    for (int k = 0; k < 3; ++k) q[k] = d->qpos[k];
    q[3] = quat.x();
    q[4] = quat.y();
    q[5] = quat.z();
    q[6] = quat.w();
    v.head<3>() = R.transpose() * Eigen::Vector3d(d->qvel[0], d->qvel[1], d->qvel[2]);
    for (int k = 0; k < 3; ++k) v[3 + k] = d->qvel[3 + k];
  }
  for (const auto& j : joints_) {
    const double angle = d->qpos[j.mj_qpos];
    if (j.nq == 2) {
      q[j.idx_q] = std::cos(angle);
      q[j.idx_q + 1] = std::sin(angle);
    } else {
      q[j.idx_q] = angle;
    }
    v[j.idx_v] = d->qvel[j.mj_dof];
  }
}

void SimModel::getAcceleration(const mjData* d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                               Eigen::VectorXd& a) const {
  require(q.size() == nq(), "q size", std::to_string(nq()), std::to_string(q.size()));
  require(v.size() == nv(), "v size", std::to_string(nv()), std::to_string(v.size()));
  a.resize(nv());
  if (hasFreeFlyer()) {
    const Eigen::Matrix3d R =
        Eigen::Quaterniond(q[6], q[3], q[4], q[5]).normalized().toRotationMatrix();
    const Eigen::Vector3d world_acc(d->qacc[0], d->qacc[1], d->qacc[2]);
    // d/dt (R^T pdot) = R^T pddot - omega x (R^T pdot): Pinocchio's a is the derivative of v
    a.head<3>() = R.transpose() * world_acc - v.segment<3>(3).cross(v.head<3>());
    for (int k = 0; k < 3; ++k) a[3 + k] = d->qacc[3 + k];
  }
  for (const auto& j : joints_) a[j.idx_v] = d->qacc[j.mj_dof];
}

void SimModel::jointPositions(const Eigen::VectorXd& q,
                              Eigen::Ref<Eigen::VectorXd> positions) const {
  require(q.size() == nq(), "q size", std::to_string(nq()), std::to_string(q.size()));
  require(positions.size() == nu(), "positions size", std::to_string(nu()),
          std::to_string(positions.size()));
  for (int k = 0; k < nu(); ++k) {
    const auto& j = joints_[k];
    positions[k] = j.nq == 2 ? std::atan2(q[j.idx_q + 1], q[j.idx_q]) : q[j.idx_q];
  }
}

void SimModel::setJointTorques(mjData* d, const Eigen::VectorXd& tau) const {
  require(tau.size() == nu(), "tau size", std::to_string(nu()), std::to_string(tau.size()));
  for (int k = 0; k < nu(); ++k) d->qfrc_applied[joints_[k].mj_dof] = tau[k];
}

void SimModel::getContactForces(const mjData* d, Eigen::Ref<Eigen::VectorXd> forces,
                                std::vector<std::uint8_t>& flags) const {
  const int nc = static_cast<int>(contact_geoms_.size());
  forces.setZero();
  flags.assign(nc, 0);
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& c = d->contact[i];
    if (c.efc_address < 0) continue;  // excluded or beyond the margin: no force
    for (int k = 0; k < nc; ++k) {
      const int g = contact_geoms_[k];
      if (c.geom1 != g && c.geom2 != g) continue;
      mjtNum local[6];
      mj_contactForce(model_, d, i, local);
      // frame rows: normal (geom1 -> geom2), tangent 1, tangent 2; the force acts on geom2
      Eigen::Vector3d world = Eigen::Vector3d::Zero();
      for (int r = 0; r < 3; ++r) {
        world += local[r] * Eigen::Vector3d(c.frame[3 * r], c.frame[3 * r + 1], c.frame[3 * r + 2]);
      }
      if (c.geom1 == g) world = -world;
      forces.segment<3>(3 * k) += world;
      if (local[0] > 0) flags[k] = 1;
    }
  }
}

ImuSample SimModel::getImu(const mjData* d) const {
  if (imu_site_ < 0) throw InputError("getImu: the model has no IMU (fixed base)");
  ImuSample s;
  s.gyro = Eigen::Vector3d(d->sensordata + gyro_adr_);
  s.accel = Eigen::Vector3d(d->sensordata + accel_adr_);
  Eigen::Matrix3d R;
  const mjtNum* x = d->site_xmat + 9 * imu_site_;
  R << x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8];
  s.orientation = Eigen::Quaterniond(R).normalized();
  return s;
}

void SimModel::forward(mjData* d) const {
  const mjModel* m = model_;
  guardedMujocoCallOrThrow("mj_forward", [m, d] { mj_forward(m, d); });
}
void SimModel::step1(mjData* d) const {
  const mjModel* m = model_;
  guardedMujocoCallOrThrow("mj_step1", [m, d] { mj_step1(m, d); });
}
void SimModel::step2(mjData* d) const {
  const mjModel* m = model_;
  guardedMujocoCallOrThrow("mj_step2", [m, d] { mj_step2(m, d); });
}

long SimModel::warningCount(const mjData* d) {
  long n = 0;
  for (int i = 0; i < mjNWARNING; ++i) n += d->warning[i].number;
  return n;
}

}  // namespace heft::sim
