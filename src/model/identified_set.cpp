#include "heft/model/identified_set.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::model {

namespace {

std::string num(double x) { return formatNumber(x, 6); }

// A covariance must be finite, symmetric and positive definite (its inverse weights a residual).
template <typename Matrix>
void requireCovariance(const Matrix& S, const std::string& what) {
  require(S.allFinite(), what, "finite entries", "non-finite entries");
  const double asym = (S - S.transpose()).cwiseAbs().maxCoeff();
  require(asym <= 1e-12 * std::max(1e-300, S.cwiseAbs().maxCoeff()), what, "a symmetric matrix",
          "asymmetry " + num(asym));
  const Eigen::MatrixXd dense = S;
  const Eigen::LLT<Eigen::MatrixXd> llt(dense);
  require(llt.info() == Eigen::Success, what, "a positive definite matrix",
          "a matrix without Cholesky factor");
}

// Joints that get friction / actuator blocks: every 1-dof joint (not the free-flyer root).
std::vector<pinocchio::JointIndex> actuatedJoints(const RobotModel& robot) {
  const auto& model = robot.pinocchio();
  std::vector<pinocchio::JointIndex> out;
  for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(model.njoints); ++j)
    if (model.joints[j].nv() == 1) out.push_back(j);
  return out;
}

// Marks the blocks named in `names` (joint names or body link names) identified; all if empty.
template <typename Block>
void markIdentified(std::vector<Block>& blocks, bool identify,
                    const std::vector<std::string>& names, const RobotModel& robot,
                    const std::string& what) {
  if (!identify) return;
  if (names.empty()) {
    for (auto& b : blocks) b.identified = true;
    return;
  }
  for (const auto& name : names) {
    const pinocchio::JointIndex j = robot.bodyIndex(name);
    auto it =
        std::find_if(blocks.begin(), blocks.end(), [&](const Block& b) { return b.joint == j; });
    if (it == blocks.end()) {
      std::string valid;
      for (const auto& b : blocks) valid += (valid.empty() ? "" : ", ") + b.joint_name;
      throw InputError(what + " joint '" + name + "' in " + robot.displayName() +
                       ": expected a 1-dof joint, one of: " + valid);
    }
    it->identified = true;
  }
}

// Conditional covariance of the free entries given the held ones.
Eigen::MatrixXd conditionalCovariance(const Matrix10& S, const ParameterMask& free) {
  std::vector<int> f, c;
  for (int i = 0; i < 10; ++i) (free[i] ? f : c).push_back(i);
  Eigen::MatrixXd Sff(f.size(), f.size()), Sfc(f.size(), c.size()), Scc(c.size(), c.size());
  for (size_t a = 0; a < f.size(); ++a) {
    for (size_t b = 0; b < f.size(); ++b) Sff(a, b) = S(f[a], f[b]);
    for (size_t b = 0; b < c.size(); ++b) Sfc(a, b) = S(f[a], c[b]);
  }
  for (size_t a = 0; a < c.size(); ++a)
    for (size_t b = 0; b < c.size(); ++b) Scc(a, b) = S(c[a], c[b]);
  if (c.empty()) return Sff;
  const Eigen::MatrixXd out = Sff - Sfc * Scc.llt().solve(Sfc.transpose());
  return 0.5 * (out + out.transpose());
}

}  // namespace

// ---- masks ------------------------------------------------------------------------------------

const std::array<std::string, 10>& piEntryNames() {
  static const std::array<std::string, 10> names = {"m",   "hx",  "hy",  "hz",  "Ixx",
                                                    "Ixy", "Iyy", "Ixz", "Iyz", "Izz"};
  return names;
}

ParameterMask allParameters() {
  ParameterMask m;
  m.fill(true);
  return m;
}

int countFree(const ParameterMask& mask) {
  return static_cast<int>(std::count(mask.begin(), mask.end(), true));
}

ParameterMask parseMask(const std::string& text) {
  ParameterMask mask{};
  std::stringstream in(text);
  std::string word;
  bool any = false;
  while (std::getline(in, word, ',')) {
    word.erase(0, word.find_first_not_of(" \t"));
    word.erase(word.find_last_not_of(" \t") + 1);
    if (word.empty()) continue;
    any = true;
    if (word == "all") {
      mask = allParameters();
    } else if (word == "mass") {
      mask[0] = true;
    } else if (word == "h") {
      mask[1] = mask[2] = mask[3] = true;
    } else if (word == "inertia") {
      for (int i = 4; i < 10; ++i) mask[i] = true;
    } else {
      const auto& names = piEntryNames();
      const auto it = std::find(names.begin(), names.end(), word);
      require(it != names.end(), "parameter mask entry '" + word + "'",
              "all, mass, h, inertia, m, hx, hy, hz, Ixx, Ixy, Iyy, Ixz, Iyz or Izz", word);
      mask[it - names.begin()] = true;
    }
  }
  require(any, "parameter mask", "a comma-separated list of entries", "'" + text + "'");
  return mask;
}

std::string toString(const ParameterMask& mask) {
  if (countFree(mask) == 10) return "all";
  std::string out;
  for (int i = 0; i < 10; ++i)
    if (mask[i]) out += (out.empty() ? "" : ",") + piEntryNames()[i];
  return out.empty() ? "none" : out;
}

// ---- options ----------------------------------------------------------------------------------

void BodyPriorOptions::validate() const {
  requirePositive(mass_relative_std, "BodyPriorOptions::mass_relative_std");
  requirePositive(first_moment_relative_std, "BodyPriorOptions::first_moment_relative_std");
  requirePositive(inertia_relative_std, "BodyPriorOptions::inertia_relative_std");
  requirePositive(length_scale, "BodyPriorOptions::length_scale", " m");
  requirePositive(min_std, "BodyPriorOptions::min_std");
}

void FrictionPriorOptions::validate() const {
  for (int i = 0; i < 6; ++i) {
    requirePositive(gamma[i], "FrictionPriorOptions::gamma[" + std::to_string(i) + "]");
    requirePositive(log_std[i], "FrictionPriorOptions::log_std[" + std::to_string(i) + "]");
  }
}

void ActuatorPriorOptions::validate() const {
  requirePositive(gain, "ActuatorPriorOptions::gain");
  requirePositive(gain_log_std, "ActuatorPriorOptions::gain_log_std");
  requirePositive(saturation_log_std, "ActuatorPriorOptions::saturation_log_std");
  requirePositive(default_saturation, "ActuatorPriorOptions::default_saturation", " N m");
}

void IdentifiedSetOptions::validate() const {
  require(countFree(free) > 0, "IdentifiedSetOptions::free", "at least one free entry", "none");
  require(parametrization == inertia::Parametrization::LogCholesky ||
              parametrization == inertia::Parametrization::ExponentialEigenvalue,
          "IdentifiedSetOptions::parametrization", "log-cholesky or exponential-eigenvalue",
          std::to_string(static_cast<int>(parametrization)));
  body_prior.validate();
  payload_prior.validate();
  friction_prior.validate();
  actuator_prior.validate();
  const auto noDuplicates = [](const std::vector<std::string>& names, const std::string& what) {
    std::set<std::string> seen;
    for (const auto& n : names)
      require(seen.insert(n).second, what, "distinct names", "'" + n + "' twice");
  };
  noDuplicates(bodies, "IdentifiedSetOptions::bodies");
  noDuplicates(friction_joints, "IdentifiedSetOptions::friction_joints");
  noDuplicates(actuator_joints, "IdentifiedSetOptions::actuator_joints");
  // a joint list without its flag would be silently ignored
  require(identify_friction || friction_joints.empty(), "IdentifiedSetOptions::friction_joints",
          "empty unless identify_friction is set",
          std::to_string(friction_joints.size()) + " names");
  require(identify_actuators || actuator_joints.empty(), "IdentifiedSetOptions::actuator_joints",
          "empty unless identify_actuators is set",
          std::to_string(actuator_joints.size()) + " names");
}

Matrix10 defaultBodyCovariance(const Vector10& nominal, const BodyPriorOptions& o) {
  o.validate();
  require(nominal.allFinite(), "nominal pi", "finite entries", "non-finite entries");
  const double m = std::abs(nominal[0]);
  const double trace3 = std::abs(nominal[4] + nominal[6] + nominal[9]) / 3.0;
  Vector10 std_dev;
  std_dev[0] = o.mass_relative_std * m;
  for (int i = 1; i < 4; ++i)
    std_dev[i] = o.first_moment_relative_std * std::max(std::abs(nominal[i]), m * o.length_scale);
  for (int i = 4; i < 10; ++i)
    std_dev[i] = o.inertia_relative_std * std::max(std::abs(nominal[i]), trace3);
  std_dev = std_dev.cwiseMax(o.min_std);
  return std_dev.cwiseAbs2().asDiagonal();
}

// ---- building ---------------------------------------------------------------------------------

IdentifiedSet IdentifiedSet::build(const RobotModel& robot, const IdentifiedSetOptions& options) {
  options.validate();
  IdentifiedSet set;
  set.parametrization = options.parametrization;
  std::vector<pinocchio::JointIndex> joints;
  if (options.bodies.empty()) {
    for (const auto& b : robot.bodies()) joints.push_back(b.joint);
  } else {
    for (const auto& name : options.bodies) joints.push_back(robot.bodyIndex(name));
  }
  for (const auto j : joints) {
    BodyBlock block;
    block.name = robot.body(j).name;
    block.joint = j;
    block.free = options.free;
    block.prior_mean = robot.pi(j);
    const bool payload = std::find(options.payload_bodies.begin(), options.payload_bodies.end(),
                                   block.name) != options.payload_bodies.end() ||
                         std::find(options.payload_bodies.begin(), options.payload_bodies.end(),
                                   robot.body(j).joint_name) != options.payload_bodies.end();
    block.prior_covariance = defaultBodyCovariance(
        block.prior_mean, payload ? options.payload_prior : options.body_prior);
    set.bodies.push_back(block);
  }
  for (const std::string& name : options.payload_bodies) {
    const pinocchio::JointIndex j = robot.bodyIndex(name);  // throws naming an unknown body
    require(std::find(joints.begin(), joints.end(), j) != joints.end(), "payload body " + name,
            "one of the identified bodies", "a body that is not identified");
  }

  const auto& model = robot.pinocchio();
  const FrictionPriorOptions& fp = options.friction_prior;
  const ActuatorPriorOptions& ap = options.actuator_prior;
  for (const auto j : actuatedJoints(robot)) {
    FrictionBlock f;
    f.joint_name = model.names[j];
    f.joint = j;
    f.idx_v = model.joints[j].idx_v();
    f.prior_gamma = fp.gamma;
    f.prior_log_covariance = fp.log_std.cwiseAbs2().asDiagonal();
    set.friction.push_back(f);

    ActuatorBlock a;
    a.joint_name = model.names[j];
    a.joint = j;
    a.idx_v = f.idx_v;
    const double limit = model.upperEffortLimit[f.idx_v];
    const double saturation = std::isfinite(limit) && limit > 0 ? limit : ap.default_saturation;
    a.prior_value = Vector2(ap.gain, saturation);
    a.prior_log_covariance =
        Vector2(ap.gain_log_std * ap.gain_log_std, ap.saturation_log_std * ap.saturation_log_std)
            .asDiagonal();
    set.actuators.push_back(a);
  }
  markIdentified(set.friction, options.identify_friction, options.friction_joints, robot,
                 "friction");
  markIdentified(set.actuators, options.identify_actuators, options.actuator_joints, robot,
                 "actuator");
  set.validate(robot);
  return set;
}

// ---- validation -------------------------------------------------------------------------------

void IdentifiedSet::validate() const {
  require(parametrization == inertia::Parametrization::LogCholesky ||
              parametrization == inertia::Parametrization::ExponentialEigenvalue,
          "IdentifiedSet::parametrization", "log-cholesky or exponential-eigenvalue",
          std::to_string(static_cast<int>(parametrization)));
  std::set<pinocchio::JointIndex> seen;
  for (const auto& b : bodies) {
    const std::string what = "identified body '" + b.name + "'";
    require(b.joint >= 1, what + " joint index", ">= 1", std::to_string(b.joint));
    require(seen.insert(b.joint).second, what, "listed once",
            "a duplicate (joint " + std::to_string(b.joint) + ")");
    require(countFree(b.free) > 0, what + " mask", "at least one free entry", "none");
    require(b.prior_mean.allFinite(), what + " prior mean", "finite entries", "non-finite entries");
    requireCovariance(b.prior_covariance, what + " prior covariance");
  }
  const auto checkJoints = [](const auto& blocks, const std::string& kind) {
    std::set<pinocchio::JointIndex> joints;
    for (const auto& b : blocks) {
      require(b.joint >= 1, kind + " '" + b.joint_name + "' joint index", ">= 1",
              std::to_string(b.joint));
      require(joints.insert(b.joint).second, kind + " '" + b.joint_name + "'", "listed once",
              "a duplicate");
      requireCovariance(b.prior_log_covariance, kind + " '" + b.joint_name + "' prior covariance");
    }
  };
  checkJoints(friction, "friction block");
  checkJoints(actuators, "actuator block");
  for (const auto& f : friction)
    for (int i = 0; i < 6; ++i)
      requirePositive(f.prior_gamma[i], "friction block '" + f.joint_name + "' prior gamma[" +
                                            std::to_string(i) + "]");
  for (const auto& a : actuators) {
    requirePositive(a.prior_value[0], "actuator block '" + a.joint_name + "' prior gain");
    requirePositive(a.prior_value[1], "actuator block '" + a.joint_name + "' prior saturation",
                    " N m");
  }
  require(layout().dimension > 0, "identified set", "at least one identified parameter",
          "none (no body, no identified friction or actuator block)");
}

void IdentifiedSet::validate(const RobotModel& robot) const {
  validate();
  const auto& model = robot.pinocchio();
  const auto nj = static_cast<pinocchio::JointIndex>(model.njoints);
  for (const auto& b : bodies) {
    require(b.joint < nj, "identified body '" + b.name + "' joint index",
            "< " + std::to_string(nj) + " in " + robot.displayName(), std::to_string(b.joint));
    require(robot.body(b.joint).name == b.name, "identified body joint " + std::to_string(b.joint),
            "body '" + robot.body(b.joint).name + "' in " + robot.displayName(),
            "'" + b.name + "'");
  }
  const auto checkJoints = [&](const auto& blocks, const std::string& kind) {
    for (const auto& b : blocks) {
      require(b.joint < nj && model.names[b.joint] == b.joint_name,
              kind + " '" + b.joint_name + "'", "a joint of " + robot.displayName(),
              "joint index " + std::to_string(b.joint));
      require(model.joints[b.joint].nv() == 1 && model.joints[b.joint].idx_v() == b.idx_v,
              kind + " '" + b.joint_name + "' idx_v",
              "a 1-dof joint at v index " + std::to_string(model.joints[b.joint].idx_v()),
              std::to_string(b.idx_v));
    }
  };
  checkJoints(friction, "friction block");
  checkJoints(actuators, "actuator block");
}

// ---- layout -----------------------------------------------------------------------------------

Layout IdentifiedSet::layout() const {
  Layout l;
  for (const auto& b : bodies) {
    l.body_offset.push_back(l.dimension);
    l.body_size.push_back(countFree(b.free));
    l.dimension += l.body_size.back();
  }
  for (const auto& f : friction) {
    l.friction_offset.push_back(f.identified ? l.dimension : -1);
    if (f.identified) l.dimension += 6;
  }
  for (const auto& a : actuators) {
    l.actuator_offset.push_back(a.identified ? l.dimension : -1);
    if (a.identified) l.dimension += 2;
  }
  return l;
}

ParameterValues IdentifiedSet::priorValues() const {
  ParameterValues v;
  for (const auto& b : bodies) v.pi.push_back(b.prior_mean);
  for (const auto& f : friction) v.friction_gamma.push_back(f.prior_gamma);
  for (const auto& a : actuators) v.actuator.push_back(a.prior_value);
  return v;
}

ParameterValues IdentifiedSet::valuesFrom(const RobotModel& robot) const {
  ParameterValues v = priorValues();
  for (size_t i = 0; i < bodies.size(); ++i) v.pi[i] = robot.pi(bodies[i].joint);
  return v;
}

void IdentifiedSet::applyTo(const ParameterValues& values, RobotModel& robot) const {
  require(values.pi.size() == bodies.size(), "ParameterValues::pi size",
          std::to_string(bodies.size()), std::to_string(values.pi.size()));
  for (size_t i = 0; i < bodies.size(); ++i) robot.setPi(bodies[i].joint, values.pi[i]);
}

namespace {
void requireSizes(const IdentifiedSet& set, const ParameterValues& v) {
  require(v.pi.size() == set.bodies.size(), "ParameterValues::pi size",
          std::to_string(set.bodies.size()) + " (one per body block)", std::to_string(v.pi.size()));
  require(v.friction_gamma.size() == set.friction.size(), "ParameterValues::friction_gamma size",
          std::to_string(set.friction.size()) + " (one per friction block)",
          std::to_string(v.friction_gamma.size()));
  require(v.actuator.size() == set.actuators.size(), "ParameterValues::actuator size",
          std::to_string(set.actuators.size()) + " (one per actuator block)",
          std::to_string(v.actuator.size()));
}

bool useTheta(const BodyBlock& b, BodyCoordinates c) {
  return c == BodyCoordinates::Theta && countFree(b.free) == 10;
}
}  // namespace

Eigen::VectorXd IdentifiedSet::stack(const ParameterValues& values,
                                     BodyCoordinates coordinates) const {
  requireSizes(*this, values);
  const Layout l = layout();
  Eigen::VectorXd x(l.dimension);
  for (size_t i = 0; i < bodies.size(); ++i) {
    const BodyBlock& b = bodies[i];
    if (useTheta(b, coordinates)) {
      x.segment<10>(l.body_offset[i]) = inertia::thetaFromPi(parametrization, values.pi[i]);
      continue;
    }
    int k = l.body_offset[i];
    for (int e = 0; e < 10; ++e)
      if (b.free[e]) x[k++] = values.pi[i][e];
  }
  for (size_t i = 0; i < friction.size(); ++i) {
    if (l.friction_offset[i] < 0) continue;
    const Vector6& g = values.friction_gamma[i];
    for (int e = 0; e < 6; ++e)
      requirePositive(g[e],
                      "friction '" + friction[i].joint_name + "' gamma[" + std::to_string(e) + "]");
    x.segment<6>(l.friction_offset[i]) = g.array().log().matrix();
  }
  for (size_t i = 0; i < actuators.size(); ++i) {
    if (l.actuator_offset[i] < 0) continue;
    const Vector2& a = values.actuator[i];
    requirePositive(a[0], "actuator '" + actuators[i].joint_name + "' gain");
    requirePositive(a[1], "actuator '" + actuators[i].joint_name + "' saturation", " N m");
    x.segment<2>(l.actuator_offset[i]) = a.array().log().matrix();
  }
  return x;
}

ParameterValues IdentifiedSet::unstack(const Eigen::VectorXd& x, const ParameterValues& fixed,
                                       BodyCoordinates coordinates) const {
  requireSizes(*this, fixed);
  const Layout l = layout();
  require(x.size() == l.dimension, "parameter vector size", std::to_string(l.dimension),
          std::to_string(x.size()));
  require(x.allFinite(), "parameter vector", "finite entries", "non-finite entries");
  ParameterValues v = fixed;
  for (size_t i = 0; i < bodies.size(); ++i) {
    const BodyBlock& b = bodies[i];
    if (useTheta(b, coordinates)) {
      v.pi[i] = inertia::piFromTheta(parametrization, x.segment<10>(l.body_offset[i]));
      continue;
    }
    int k = l.body_offset[i];
    for (int e = 0; e < 10; ++e)
      if (b.free[e]) v.pi[i][e] = x[k++];
  }
  for (size_t i = 0; i < friction.size(); ++i)
    if (l.friction_offset[i] >= 0)
      v.friction_gamma[i] = x.segment<6>(l.friction_offset[i]).array().exp().matrix();
  for (size_t i = 0; i < actuators.size(); ++i)
    if (l.actuator_offset[i] >= 0)
      v.actuator[i] = x.segment<2>(l.actuator_offset[i]).array().exp().matrix();
  return v;
}

Eigen::VectorXd IdentifiedSet::priorMean() const { return stack(priorValues()); }

Eigen::MatrixXd IdentifiedSet::priorCovariance() const {
  const Layout l = layout();
  Eigen::MatrixXd S = Eigen::MatrixXd::Zero(l.dimension, l.dimension);
  for (size_t i = 0; i < bodies.size(); ++i)
    S.block(l.body_offset[i], l.body_offset[i], l.body_size[i], l.body_size[i]) =
        conditionalCovariance(bodies[i].prior_covariance, bodies[i].free);
  for (size_t i = 0; i < friction.size(); ++i)
    if (l.friction_offset[i] >= 0)
      S.block<6, 6>(l.friction_offset[i], l.friction_offset[i]) = friction[i].prior_log_covariance;
  for (size_t i = 0; i < actuators.size(); ++i)
    if (l.actuator_offset[i] >= 0)
      S.block<2, 2>(l.actuator_offset[i], l.actuator_offset[i]) = actuators[i].prior_log_covariance;
  return S;
}

std::string IdentifiedSet::summary() const {
  const Layout l = layout();
  int nf = 0, na = 0;
  for (int o : l.friction_offset) nf += o >= 0;
  for (int o : l.actuator_offset) na += o >= 0;
  return std::to_string(l.dimension) + " parameters: " + std::to_string(bodies.size()) +
         " bodies (" + inertia::toString(parametrization) + "), " + std::to_string(nf) +
         " friction and " + std::to_string(na) + " actuator blocks";
}

}  // namespace heft::model
