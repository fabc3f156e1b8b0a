#include "heft/estimation/log_problem.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
#include "heft/estimation/inverse_dynamics_stage.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/signal.hpp"

namespace heft::estimation {
namespace {

using io::nearestSample;

// For every knot, the sample of `time` nearest to it if within half a step, else -1; a sample is
// used by one knot at most.
std::vector<int> samplesAtKnots(const Eigen::VectorXd& time, const Eigen::VectorXd& knots,
                                double dt) {
  std::vector<int> out(knots.size(), -1);
  if (time.size() == 0) return out;
  for (int k = 0; k < knots.size(); ++k) {
    const int i = nearestSample(time, knots(k));
    if (std::abs(time(i) - knots(k)) <= 0.5 * dt) out[k] = i;
  }
  return out;
}

// Mean of the rows of m whose time lies in [t0, t1) (time ascending); 0 rows: returns false.
bool meanOfRowsIn(const Eigen::VectorXd& time, const Eigen::MatrixXd& m, double t0, double t1,
                  Eigen::VectorXd& mean) {
  const double* begin = time.data();
  const double* first = std::lower_bound(begin, begin + time.size(), t0);
  const double* last = std::lower_bound(first, begin + time.size(), t1);
  if (first == last) return false;
  mean = m.middleRows(first - begin, last - first).colwise().mean().transpose();
  return true;
}

Eigen::Quaterniond quaternionRow(const Eigen::MatrixXd& m, int row) {
  return Eigen::Quaterniond(m(row, 3), m(row, 0), m(row, 1), m(row, 2)).normalized();
}

pinocchio::FrameIndex frameIndex(const pinocchio::Model& model, const std::string& name,
                                 const std::string& what) {
  require(model.existFrame(name), what, "a frame of the robot model", "\"" + name + "\"");
  return model.getFrameId(name);
}

}  // namespace

std::string toString(ContactSource source) {
  switch (source) {
    case ContactSource::Auto:
      return "auto";
    case ContactSource::Flags:
      return "flags";
    case ContactSource::Kinematic:
      return "kinematic";
    case ContactSource::Implicit:
      return "implicit";
  }
  return "?";
}

ContactSource parseContactSource(const std::string& name) {
  for (ContactSource s : {ContactSource::Auto, ContactSource::Flags, ContactSource::Kinematic,
                          ContactSource::Implicit})
    if (toString(s) == name) return s;
  throw InputError("contact source: expected auto, flags, kinematic or implicit, got \"" + name +
                   "\"");
}

std::string toString(DynamicsFormulation formulation) {
  return formulation == DynamicsFormulation::Inverse ? "inverse" : "forward";
}

DynamicsFormulation parseDynamicsFormulation(const std::string& name) {
  for (DynamicsFormulation f : {DynamicsFormulation::Forward, DynamicsFormulation::Inverse})
    if (toString(f) == name) return f;
  throw InputError("dynamics: expected forward or inverse, got \"" + name + "\"");
}

void LogProblemOptions::validate() const {
  require(!identified_bodies.empty(), "identified_bodies", "at least one body name", "none");
  require(first_sample >= 0, "first_sample", ">= 0", std::to_string(first_sample));
  require(knots >= 1, "knots", ">= 1", std::to_string(knots));
  require(stride >= 1, "stride", ">= 1", std::to_string(stride));
  requirePositive(torque_std, "torque_std", " [N m]");
  require(std::isfinite(loss_scale) && loss_scale >= 0, "loss_scale",
          "a finite value >= 0 (0: the loss's default)", std::to_string(loss_scale));
  requirePositive(base_force_std, "base_force_std", " [N]");
  requirePositive(base_moment_std, "base_moment_std", " [N m]");
  requirePositive(configuration_std, "configuration_std", " [rad]");
  requirePositive(contact_configuration_rate_std, "contact_configuration_rate_std", " [rad/s]");
  requireNonNegative(contact_damping, "contact_damping", " [1/s]");
  contact_detection.validate();
  if (std::string why; !implicit.validate(&why)) throw InputError("implicit contacts: " + why);
  requireNonNegative(transition_window, "transition_window", " [s]");
  requirePositive(transition_noise_scale, "transition_noise_scale");
  requireNonNegative(stiction_speed, "stiction_speed", " [rad/s]");
  requirePositive(stiction_torque_std, "stiction_torque_std", " [N m]");
  requirePositive(encoder_std, "encoder_std", " [rad]");
  requirePositive(velocity_std, "velocity_std", " [rad/s]");
  requirePositive(gyro_std, "gyro_std", " [rad/s]");
  requirePositive(imu_orientation_std, "imu_orientation_std", " [rad]");
  requirePositive(accelerometer_std, "accelerometer_std", " [m/s^2]");
  requirePositive(mocap_position_std, "mocap_position_std", " [m]");
  requirePositive(mocap_orientation_std, "mocap_orientation_std", " [rad]");
  requirePositive(energy_std, "energy_std", " [J]");
  require(!use_energy || contact_source != ContactSource::Implicit, "energy observations",
          "rigid contacts or none (the smoothed contact forces work at a distance)",
          "contacts implicit");
  require(!project_process_noise || dynamics == DynamicsFormulation::Inverse,
          "projected process noise", "dynamics: inverse (its stages carry the projection)",
          "dynamics: forward");
  if (dynamics == DynamicsFormulation::Inverse) {
    require(contact_source != ContactSource::Implicit, "dynamics: inverse",
            "rigid contacts or none", "contacts implicit");
  }
  requirePositive(base_state_position_std, "base_state_position_std", " [m]");
  requirePositive(base_state_orientation_std, "base_state_orientation_std", " [rad]");
  require(theta_prior_std > 0, "theta_prior_std", "a value > 0 (infinity: no prior on theta)",
          std::to_string(theta_prior_std));
  actuators.validate();
  require(std::isfinite(total_mass) && total_mass >= 0, "total_mass",
          "a finite mass >= 0 kg (0: no constraint)", std::to_string(total_mass));
}

namespace {

// Log column of every one-dimensional joint of the model, in joint order (the free flyer, when
// there is one, has none).
struct LogJointBinding {
  std::vector<pinocchio::JointIndex> joints;  ///< model joints (MultibodySensors::encoders)
  std::vector<int> columns;                   ///< their columns in the log's joint series
};

LogJointBinding bindLogJoints(const model::RobotModel& robot, bool floating,
                              const std::vector<std::string>& log_names) {
  const pinocchio::Model& pin = robot.pinocchio();
  // the encoder rows assume one position and one velocity coordinate per joint
  for (pinocchio::JointIndex j = floating ? 2 : 1; j < pin.joints.size(); ++j)
    require(pin.joints[j].nq() == 1 && pin.joints[j].nv() == 1, "joint " + pin.names[j],
            "one position and one velocity coordinate", "another joint type");
  // a loop's joints may be unlogged
  io::JointBinding binding =
      io::bindJoints(pin, log_names, "log joints/names", model::loopJoints(robot));
  return {std::move(binding.joints), std::move(binding.log_column)};
}

// The row s of m at the given columns.
Eigen::VectorXd jointRow(const Eigen::MatrixXd& m, int s, const std::vector<int>& columns) {
  const int nj = static_cast<int>(columns.size());
  Eigen::VectorXd out(nj);
  for (int i = 0; i < nj; ++i) out(i) = m(s, columns[i]);
  return out;
}

// Builds a LogProblem step by step; each step reads what the earlier ones stored here.
class LogProblemBuilder {
 public:
  LogProblemBuilder(const model::RobotModel& robot, const io::Log& log,
                    const LogProblemOptions& options)
      : robot_(robot),
        log_(log),
        options_(options),
        pin_(robot.pinocchio()),
        floating_(robot.hasFreeFlyer()),
        nv_(pin_.nv),
        nq_(pin_.nq),
        N_(options.knots) {}

  /// `trajectory`: null, or N + 1 states that replace the encoders' initial guess.
  LogProblem build(const std::vector<Eigen::VectorXd>* trajectory) {
    createModels();
    createSensors();
    sampleKnots();
    bindBaseSensors();
    p_.sensors = sensors_;
    initialGuess();
    if (trajectory) useTrajectory(*trajectory);
    contactFlags();
    createStages();
    if (options_.dynamics == DynamicsFormulation::Inverse) inverseDynamicsGuess();
    return std::move(p_);
  }

 private:
  void createModels();
  void createSensors();
  void sampleKnots();
  void bindBaseSensors();
  void bindMocap();
  void initialGuess();
  void useTrajectory(const std::vector<Eigen::VectorXd>& trajectory);
  void closeLoopsInGuess(std::vector<Eigen::VectorXd>& qs) const;
  MultibodyNoise withStiction(const MultibodyNoise& noise, int k) const;
  Eigen::VectorXd baseConfiguration(double t) const;
  bool imuOnBase() const { return floating_ && pin_.frames[sensors_->imu_frame].parentJoint == 1; }
  void contactFlags();
  void implicitContacts();
  std::vector<bool> transitionKnots() const;
  MultibodyMeasurement measurementAt(int k) const;
  std::shared_ptr<const dynamics::ContactDynamicsModel> contactAt(int k);
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulseAt(int k);
  std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulseModelOf(int k);
  std::vector<dynamics::ContactSpec> specsOf(const std::vector<std::string>& frames) const;
  ArrivalPrior arrivalPrior();
  void createStages();
  void inverseDynamicsGuess();

  const model::RobotModel& robot_;
  const io::Log& log_;
  const LogProblemOptions& options_;
  const pinocchio::Model& pin_;
  const bool floating_;
  const int nv_, nq_, N_;
  LogProblem p_;
  std::shared_ptr<const ParameterConstraints> constraints_;
  std::shared_ptr<MultibodySensors> sensors_;
  std::vector<int> column_;  // log column of each encoder
  int nj_ = 0;
  std::vector<int> imu_at_, mocap_at_;
  pinocchio::SE3 mocap_in_base_ = pinocchio::SE3::Identity();
  bool base_from_log_ = false;  // initial base state from joints/base_pose (no motion capture)
  std::set<std::string> flat_frames_;  // contact frames that are flat feet (6D contacts)
  std::vector<std::vector<bool>> flags_at_;
  std::vector<std::vector<std::string>> frames_at_;  // the frames in contact at each knot
  // Contact and impulse models, one per contact set.
  std::map<std::vector<std::string>, std::shared_ptr<const dynamics::ContactDynamicsModel>> phases_;
  std::map<std::vector<std::string>, std::shared_ptr<const dynamics::ImpulseDynamicsModel>>
      impulses_;
};

// The model, the identified bodies, the dynamics and the state.
void LogProblemBuilder::createModels() {
  p_.model = std::make_shared<pinocchio::Model>(pin_);
  for (const auto& name : options_.identified_bodies)
    p_.identified.push_back(robot_.bodyIndex(name));
  p_.dynamics = std::make_shared<dynamics::ForwardDynamicsModel>(*p_.model, p_.identified,
                                                                 options_.parametrization);
  p_.state = std::make_shared<MultibodyState>(p_.model);
  if (!options_.actuators.empty())
    p_.actuators = std::make_shared<ActuatorTermsModel>(*p_.model, options_.actuators);
  // checked here, before the stages: a contradictory set is bad input, not a failed solve
  constraints_ = makeParameterConstraints(robot_, options_);
  if (!robot_.loops().empty())
    require(options_.dynamics == DynamicsFormulation::Inverse, "dynamics",
            "inverse for " + robot_.displayName() + ", a robot with closed loops (" +
                robot_.loops().front().name + "; the forward stage has no loop rows)",
            "forward");
}

// The encoders (bound to the log's joint columns) and the sensors' noise.
void LogProblemBuilder::createSensors() {
  sensors_ = std::make_shared<MultibodySensors>();
  LogJointBinding binding = bindLogJoints(robot_, floating_, log_.joints.names);
  sensors_->encoders = std::move(binding.joints);
  column_ = std::move(binding.columns);
  nj_ = static_cast<int>(column_.size());
  sensors_->joint_velocities = options_.use_logged_velocity;
  sensors_->encoder_std = options_.encoder_std;
  sensors_->joint_velocity_std = options_.velocity_std;
  sensors_->gyro_std = options_.gyro_std;
  sensors_->imu_orientation_std = options_.imu_orientation_std;
  sensors_->accelerometer_std = options_.accelerometer_std;
  sensors_->mocap_position_std = options_.mocap_position_std;
  sensors_->mocap_orientation_std = options_.mocap_orientation_std;
  sensors_->energy = options_.use_energy;
  sensors_->energy_std = options_.energy_std;
  sensors_->loss = options_.loss;
  sensors_->loss_scale = options_.loss_scale;
}

// Knot times and samples: every stride-th joint sample, uniformly sampled.
void LogProblemBuilder::sampleKnots() {
  const io::JointSeries& joints = log_.joints;
  const int last = options_.first_sample + N_ * options_.stride;
  const double period = joints.time(1) - joints.time(0);
  for (int s = options_.first_sample; s < last; ++s) {
    const double step = joints.time(s + 1) - joints.time(s);
    require(std::abs(step - period) <= 1e-6 * period,
            "log joints/time row " + std::to_string(s + 1),
            "uniform sampling at " + std::to_string(period) + " s", std::to_string(step) + " s");
  }
  p_.dt = options_.stride * period;
  p_.time.resize(N_ + 1);
  for (int k = 0; k <= N_; ++k) {
    p_.samples.push_back(options_.first_sample + k * options_.stride);
    p_.time(k) = joints.time(p_.samples.back());
  }
}

// Floating base: the motion capture's frame (the base's initial guess), and the IMU and motion
// capture samples at the knots when they are measurements.
void LogProblemBuilder::bindBaseSensors() {
  if (!floating_) return;
  const io::Log& log = log_;
  const bool has_mocap = log.mocap.has_value() && log.mocap->time.size() > 0;
  if (!has_mocap) {
    // no motion capture: the robot's own state estimator (joints/base_pose) is the initial guess
    require(log.joints.base_pose.rows() > 0, "log joints/base_pose",
            "a base pose for the initial guess: motion capture (the mocap group) or a state "
            "estimator's joints/base_pose and base_twist (heft base-state writes them)",
            "neither");
    base_from_log_ = true;
  } else {
    bindMocap();
  }
  if (options_.use_imu && log.imu.has_value() && log.imu->time.size() > 0) {
    const std::string imu = log.imu->frame.empty() ? robot_.body(1).name : log.imu->frame;
    sensors_->imu_frame = frameIndex(pin_, imu, "log imu frame");
    sensors_->accelerometer = options_.use_accelerometer && log.imu->accel.rows() > 0;
    // the accelerometer's rows model an IMU on the floating base only (the gyro and orientation
    // rows take any body)
    require(!sensors_->accelerometer || imuOnBase(),
            "use_accelerometer (heft estimate: measurements.accelerometer)",
            "false for an IMU that is not on the floating base (" + imu + " is on joint " +
                pin_.names[pin_.frames[sensors_->imu_frame].parentJoint] + ")",
            "true");
    imu_at_ = samplesAtKnots(log.imu->time, p_.time, p_.dt);
  }
}

void LogProblemBuilder::bindMocap() {
  const io::Log& log = log_;
  const std::string name = log.mocap->frame.empty() ? robot_.body(1).name : log.mocap->frame;
  const pinocchio::FrameIndex mocap_frame = frameIndex(pin_, name, "log mocap frame");
  require(pin_.frames[mocap_frame].parentJoint == 1, "log mocap frame " + name,
          "a frame on the floating base", "a frame on another body");
  mocap_in_base_ = pin_.frames[mocap_frame].placement;
  if (options_.use_mocap) {
    sensors_->mocap_frame = mocap_frame;
    mocap_at_ = samplesAtKnots(log.mocap->time, p_.time, p_.dt);
  }
}

// The base's configuration at time t: the tracked frame's pose interpolated (linear position,
// slerp): the motion capture is slower than the joints, and a held pose would make spiky
// velocities.
Eigen::VectorXd LogProblemBuilder::baseConfiguration(double t) const {
  const io::MocapSeries& mocap = *log_.mocap;
  int a = nearestSample(mocap.time, t);
  if (mocap.time(a) > t && a > 0) --a;
  const int b = std::min<int>(a + 1, mocap.time.size() - 1);
  const double span = mocap.time(b) - mocap.time(a);
  const double s = span > 0 ? std::clamp((t - mocap.time(a)) / span, 0.0, 1.0) : 0.0;
  const Eigen::Vector3d position =
      (1 - s) * mocap.position.row(a).transpose() + s * mocap.position.row(b).transpose();
  const Eigen::Quaterniond orientation =
      quaternionRow(mocap.orientation, a).slerp(s, quaternionRow(mocap.orientation, b));
  const pinocchio::SE3 oMf(orientation.toRotationMatrix(), position);
  const pinocchio::SE3 oMb = oMf * mocap_in_base_.inverse();
  const Eigen::Quaterniond quat(oMb.rotation());
  Eigen::VectorXd q(7);
  q.head<3>() = oMb.translation();
  q.tail<4>() = quat.coeffs();  // x, y, z, w as Pinocchio stores it
  return q;
}

// Initial guess: configurations, then central-difference velocities on the manifold. With a robust
// loss each encoder's guess is the median of the five nearest knots' readings: a glitch the loss
// is meant to ignore must not start the solve bent towards it (its velocities by differences
// would be a hundred times the motion's).
void LogProblemBuilder::initialGuess() {
  std::vector<Eigen::VectorXd> qs(N_ + 1, Eigen::VectorXd::Zero(nq_));
  Eigen::MatrixXd encoders(N_ + 1, nj_);
  for (int k = 0; k <= N_; ++k)
    encoders.row(k) = jointRow(log_.joints.q, p_.samples[k], column_).transpose();
  if (options_.loss != RobustLoss::None && N_ >= 4) {
    const Eigen::MatrixXd raw = encoders;
    std::array<double, 5> window{};
    for (int k = 0; k <= N_; ++k) {
      const int first = std::clamp(k - 2, 0, N_ - 4);
      for (int i = 0; i < nj_; ++i) {
        for (int m = 0; m < 5; ++m) window[m] = raw(first + m, i);
        std::nth_element(window.begin(), window.begin() + 2, window.end());
        encoders(k, i) = window[2];
      }
    }
  }
  for (int k = 0; k <= N_; ++k) {
    Eigen::VectorXd& q = qs[k];
    if (floating_ && base_from_log_) {
      q.head<7>() = log_.joints.base_pose.row(p_.samples[k]).transpose();
      q.segment<4>(3).normalize();
    } else if (floating_) {
      q.head<7>() = baseConfiguration(p_.time(k));
    }
    for (int i = 0; i < nj_; ++i) q(pin_.joints[sensors_->encoders[i]].idx_q()) = encoders(k, i);
  }
  if (!robot_.loops().empty()) closeLoopsInGuess(qs);
  // Joint velocities by central differences over one knot; the base's linear velocity over
  // +-20 ms (differencing the motion capture's 0.5 mm noise over 5 ms would give 0.1 m/s) and its
  // angular velocity from the gyro when there is one (differenced orientation noise is worse).
  const int base_span = std::max(1, static_cast<int>(std::lround(0.02 / p_.dt)));
  Eigen::VectorXd dq(nv_);
  for (int k = 0; k <= N_; ++k) {
    Eigen::VectorXd x(nq_ + nv_);
    x.head(nq_) = qs[k];
    int lo = std::max(0, k - 1), hi = std::min(N_, k + 1);
    pinocchio::difference(pin_, qs[lo], qs[hi], dq);
    x.tail(nv_) = dq / (p_.time(hi) - p_.time(lo));
    if (floating_) {
      lo = std::max(0, k - base_span);
      hi = std::min(N_, k + base_span);
      pinocchio::difference(pin_, qs[lo], qs[hi], dq);
      x.segment<6>(nq_) = dq.head<6>() / (p_.time(hi) - p_.time(lo));
      if (base_from_log_ && log_.joints.base_twist.rows() > 0)
        x.segment<6>(nq_) = log_.joints.base_twist.row(p_.samples[k]).transpose();
      if (!imu_at_.empty() && imuOnBase()) {
        const int i = nearestSample(log_.imu->time, p_.time(k));
        x.segment<3>(nq_ + 3) = pin_.frames[sensors_->imu_frame].placement.rotation() *
                                log_.imu->gyro.row(i).transpose();
      }
    }
    p_.xs.push_back(x);
  }
  p_.ws.assign(N_, Eigen::VectorXd::Zero(2 * nv_));
}

// The joints no encoder reads (a loop's passive joints) from the loops' closure at every knot,
// the logged joints and the base held, each knot starting from the one before.
void LogProblemBuilder::closeLoopsInGuess(std::vector<Eigen::VectorXd>& qs) const {
  std::vector<bool> fixed(nv_, false);
  for (int i = 0; i < (floating_ ? 6 : 0); ++i) fixed[i] = true;
  for (pinocchio::JointIndex j : sensors_->encoders) fixed[pin_.joints[j].idx_v()] = true;
  for (int k = 0; k <= N_; ++k) {
    Eigen::VectorXd& q = qs[k];
    if (k > 0)
      for (pinocchio::JointIndex j = 1; j < pin_.joints.size(); ++j)
        if (pin_.joints[j].nv() == 1 && !fixed[pin_.joints[j].idx_v()])
          q(pin_.joints[j].idx_q()) = qs[k - 1](pin_.joints[j].idx_q());
    const double gap = model::closeLoops(robot_, q, fixed);
    require(gap <= 1e3 * model::RobotModel::closureTolerance(),
            "log joints/q sample " + std::to_string(p_.samples[k]),
            "logged joint angles at which the loops close (" + robot_.loops().front().name + ")",
            "anchors " + std::to_string(gap) + " m apart at best");
  }
}

void LogProblemBuilder::useTrajectory(const std::vector<Eigen::VectorXd>& trajectory) {
  require(static_cast<int>(trajectory.size()) == N_ + 1, "initial trajectory",
          std::to_string(N_ + 1) + " states (knots + 1)", std::to_string(trajectory.size()));
  for (const Eigen::VectorXd& x : trajectory)
    require(x.size() == nq_ + nv_ && x.allFinite(), "initial trajectory",
            "finite states of size nq + nv = " + std::to_string(nq_ + nv_),
            "a state of size " + std::to_string(x.size()));
  p_.xs = trajectory;
}

// The stiction band: a friction joint slower than stiction_speed at knot k (initial guess) gets
// the stiction torque's share of noise.
MultibodyNoise LogProblemBuilder::withStiction(const MultibodyNoise& noise, int k) const {
  if (options_.stiction_speed <= 0 || !p_.actuators) return noise;
  MultibodyNoise out = noise;
  for (int i = 0; i < p_.actuators->numFriction(); ++i) {
    const int v = p_.actuators->frictionIndex()[i];
    if (std::abs(p_.xs[k](nq_ + v)) < options_.stiction_speed)
      out.generalized_force(v) =
          std::hypot(noise.generalized_force(v), options_.stiction_torque_std);
  }
  return out;
}

// Contact set of every knot: the log's flags (nearest sample at or before the knot) or kinematic
// thresholds on the initial guess; and the frames in contact at each knot.
void LogProblemBuilder::contactFlags() {
  std::vector<std::string> contact_names;
  flags_at_.assign(N_ + 1, {});
  const io::Log& log = log_;
  const bool have_flags = log.contacts.has_value() && log.contacts->time.size() > 0;
  require(floating_ || options_.contact_source != ContactSource::Implicit,
          "contacts source implicit",
          "a robot with a floating base (the smoothed contact step lifts the whole robot)",
          "a fixed base");
  if (floating_) {
    const ContactSource source =
        options_.contact_source == ContactSource::Auto
            ? (have_flags ? ContactSource::Flags : ContactSource::Kinematic)
            : options_.contact_source;
    if (source == ContactSource::Implicit) {
      implicitContacts();
    } else if (source == ContactSource::Flags) {
      require(have_flags, "log contacts group", "contact flags (contact_source flags)", "none");
      const io::ContactSeries& c = *log.contacts;
      const std::vector<model::ContactFrame> groups =
          model::groupContactFrames(model::resolveContactPoints(
              pin_, c.names, model::configOverLogPoints(options_.contact_points, c.definedPoints()),
              "contacts/names"));
      for (const auto& g : groups) {
        require(g.flat || g.offset.isZero(0.0), "contact " + g.frame,
                "a contact at the frame origin or a flat foot (heft estimate's point contacts "
                "hold a frame origin still)",
                "a point away from the origin");
        contact_names.push_back(g.frame);
        if (g.flat) flat_frames_.insert(g.frame);
      }
      for (int k = 0; k <= N_; ++k) {
        int i = nearestSample(c.time, p_.time(k));
        if (c.time(i) > p_.time(k) + 1e-9 && i > 0) --i;
        flags_at_[k].assign(groups.size(), false);
        for (std::size_t g = 0; g < groups.size(); ++g)
          for (const int point : groups[g].points)
            flags_at_[k][g] = flags_at_[k][g] || c.flags(i, point) != 0;
      }
    } else {
      p_.contacts_detected = true;
      contact_names = robot_.contactFrames();
      require(!contact_names.empty(), "robot " + robot_.displayName(),
              "contact frames for kinematic contact detection", "none");
      for (const auto& frame : contact_names) {
        std::vector<model::ContactPoint> on_frame;
        for (const auto& p : options_.contact_points)
          if (p.frame == frame) on_frame.push_back(p);
        if (!on_frame.empty() && model::groupContactFrames(on_frame).front().flat)
          flat_frames_.insert(frame);
      }
      std::vector<pinocchio::FrameIndex> frames;
      for (const auto& name : contact_names)
        frames.push_back(frameIndex(pin_, name, "contact frame"));
      pinocchio::Data data(pin_);
      for (int k = 0; k <= N_; ++k) {
        const std::vector<std::uint8_t> f = state::detectContacts(
            pin_, data, frames, p_.xs[k].head(nq_), p_.xs[k].tail(nv_), options_.contact_detection);
        flags_at_[k].assign(f.begin(), f.end());
      }
    }
  }
  frames_at_.assign(N_ + 1, {});
  for (int k = 0; k <= N_ && floating_; ++k)
    for (std::size_t j = 0; j < contact_names.size(); ++j)
      if (flags_at_[k][j]) frames_at_[k].push_back(contact_names[j]);
}

// Contact-implicit: no flags; the contact points are the log's named points (its contacts group's
// names, resolved through the config's and the log's point definitions, as for flags) when it
// has them, else the config's points, else the robot's contact frames.
void LogProblemBuilder::implicitContacts() {
  std::vector<std::string> names;
  std::vector<model::ContactPoint> defined = options_.contact_points;
  if (log_.contacts.has_value() && !log_.contacts->names.empty()) {
    names = log_.contacts->names;
    defined = model::configOverLogPoints(options_.contact_points, log_.contacts->definedPoints());
  } else if (!options_.contact_points.empty()) {
    for (const auto& p : options_.contact_points) names.push_back(p.name);
  } else {
    names = robot_.contactFrames();
  }
  require(!names.empty(), "robot " + robot_.displayName(),
          "contact points for contacts implicit (the log's, the config's or the robot's)", "none");
  const std::vector<model::ContactPoint> points =
      model::resolveContactPoints(pin_, names, defined, "contact points");
  p_.smoothed = std::make_shared<dynamics::SmoothedContactModel>(
      *p_.model, points, p_.identified, options_.parametrization, options_.implicit);
}

std::vector<dynamics::ContactSpec> LogProblemBuilder::specsOf(
    const std::vector<std::string>& frames) const {
  std::vector<dynamics::ContactSpec> specs;
  for (const std::string& frame : frames) {
    frameIndex(pin_, frame, "contact names");
    const auto type = flat_frames_.count(frame) ? dynamics::ContactSpec::Type::Surface6D
                                                : dynamics::ContactSpec::Type::Point3D;
    specs.push_back({frame, type, pinocchio::LOCAL_WORLD_ALIGNED});
  }
  return specs;
}

// Knot k's contact model (cached per contact set); null without contacts.
std::shared_ptr<const dynamics::ContactDynamicsModel> LogProblemBuilder::contactAt(int k) {
  if (frames_at_[k].empty()) return nullptr;
  auto& model = phases_[frames_at_[k]];
  if (!model) {
    dynamics::ContactOptions contact_options;
    contact_options.baumgarte_kd = options_.contact_damping;
    model = std::make_shared<dynamics::ContactDynamicsModel>(
        *p_.model, specsOf(frames_at_[k]), p_.identified, options_.parametrization,
        contact_options);
  }
  return model;
}

// A knot whose set closes a contact open at the previous knot starts with the set's impulse
// (touchdown); null otherwise.
std::shared_ptr<const dynamics::ImpulseDynamicsModel> LogProblemBuilder::impulseAt(int k) {
  if (!options_.touchdown_impulses || k == 0) return nullptr;
  bool closes = false;  // a frame held now that was not held at the previous knot
  for (const std::string& frame : frames_at_[k])
    closes = closes || std::find(frames_at_[k - 1].begin(), frames_at_[k - 1].end(), frame) ==
                           frames_at_[k - 1].end();
  if (!closes) return nullptr;
  return impulseModelOf(k);
}

// The impulse model of knot k's contact set (one per set): a touchdown's reset map, and the
// projector of the inverse stages' configuration noise (eq. 36: zero restitution).
std::shared_ptr<const dynamics::ImpulseDynamicsModel> LogProblemBuilder::impulseModelOf(int k) {
  auto& model = impulses_[frames_at_[k]];
  if (!model)
    model = std::make_shared<dynamics::ImpulseDynamicsModel>(
        *p_.model, specsOf(frames_at_[k]), p_.identified, options_.parametrization);
  return model;
}

// Knots near a contact-set change: the rigid contact model misses the soft transient there
// (MuJoCo's, a real foot's), so their generalized-force noise is inflated.
std::vector<bool> LogProblemBuilder::transitionKnots() const {
  std::vector<bool> transition(N_ + 1, false);
  if (options_.transition_noise_scale != 1 && floating_) {
    const int half = static_cast<int>(std::lround(options_.transition_window / p_.dt));
    for (int k = 1; k <= N_; ++k) {
      if (flags_at_[k] == flags_at_[k - 1]) continue;
      for (int i = std::max(0, k - half); i <= std::min(N_, k + half); ++i) transition[i] = true;
    }
  }
  return transition;
}

// Knot k's measurements: encoders (and logged velocities), IMU and motion capture; the torque
// (running knots) is set by createStages.
MultibodyMeasurement LogProblemBuilder::measurementAt(int k) const {
  const int s = p_.samples[k];
  MultibodyMeasurement z;
  z.joint_q = jointRow(log_.joints.q, s, column_);
  if (options_.use_logged_velocity) z.joint_v = jointRow(log_.joints.v, s, column_);
  if (!imu_at_.empty() && imu_at_[k] >= 0) {
    const io::ImuSeries& imu = *log_.imu;
    z.has_gyro = true;
    z.gyro = imu.gyro.row(imu_at_[k]).transpose();
    if (sensors_->accelerometer) {
      z.has_accel = true;
      z.accel = imu.accel.row(imu_at_[k]).transpose();
      // Steps of several samples: semi-implicit Euler applies one acceleration over the whole
      // step, so it must match the mean over [t_k, t_k+1), not the value at t_k (at 10 ms a
      // trot's touchdown transients make the two differ by metres per second squared).
      Eigen::VectorXd mean;
      if (options_.stride > 1 && k < N_ &&
          meanOfRowsIn(imu.time, imu.accel, p_.time(k) - 1e-9, p_.time(k + 1) - 1e-9, mean))
        z.accel = mean;
    }
    if (imu.orientation.rows() > 0) {
      z.has_imu_orientation = true;
      z.imu_orientation = quaternionRow(imu.orientation, imu_at_[k]);
    }
  }
  if (!mocap_at_.empty() && mocap_at_[k] >= 0) {
    z.has_mocap = true;
    z.mocap_position = log_.mocap->position.row(mocap_at_[k]).transpose();
    z.mocap_orientation = quaternionRow(log_.mocap->orientation, mocap_at_[k]);
  }
  return z;
}

// The arrival prior on x_0 (around the initial guess) and on theta (around the nominal model);
// sets p_.theta.
ArrivalPrior LogProblemBuilder::arrivalPrior() {
  ArrivalPrior arrival;
  arrival.x_mean = p_.xs[0];
  arrival.x_sqrt_info = Eigen::MatrixXd::Zero(2 * nv_, 2 * nv_);
  Eigen::VectorXd sd(2 * nv_);
  sd.head(nv_).setConstant(options_.encoder_std);
  if (floating_) {
    sd.head<3>().setConstant(base_from_log_ ? options_.base_state_position_std
                                            : options_.mocap_position_std);
    sd.segment<3>(3).setConstant(base_from_log_ ? options_.base_state_orientation_std
                                                : options_.mocap_orientation_std);
  }
  // The joint velocities' mean is a difference of two encoder readings one knot apart: its own
  // std sqrt(2) sigma_enc / dt (14 rad/s for 0.01 rad at 1 kHz) can far exceed velocity_std, and
  // holding v_0 to such a mean within velocity_std would bend the whole trajectory towards noise.
  const double differenced_std = std::sqrt(2.0) * options_.encoder_std / (p_.time(1) - p_.time(0));
  sd.tail(nv_).setConstant(std::max(options_.velocity_std, differenced_std));
  if (floating_)
    sd.segment<6>(nv_).setConstant(options_.velocity_std);  // the base: not differenced
  arrival.x_sqrt_info.diagonal() = sd.cwiseInverse();
  const Eigen::VectorXd theta_S = p_.dynamics->nominalTheta();
  const int ns = static_cast<int>(theta_S.size());
  const int na = p_.actuators ? p_.actuators->numParameters() : 0;
  p_.theta.resize(ns + na);
  p_.theta.head(ns) = theta_S;
  Eigen::VectorXd sqrt_info = Eigen::VectorXd::Constant(ns + na, 1 / options_.theta_prior_std);
  if (p_.actuators) {  // their own priors; the initial guess at the prior's median
    p_.theta.tail(na) = p_.actuators->priorMean();
    sqrt_info.tail(na) = p_.actuators->priorSqrtInfo();
  }
  arrival.theta_mean = p_.theta;
  arrival.theta_sqrt_info = sqrt_info.asDiagonal();
  return arrival;
}

// One stage per knot (its contact phase, impulse and noise), and the problem.
void LogProblemBuilder::createStages() {
  MultibodyNoise noise;
  noise.configuration = Eigen::VectorXd::Constant(nv_, options_.configuration_std);
  noise.generalized_force = Eigen::VectorXd::Constant(nv_, options_.torque_std);
  if (floating_) {
    noise.generalized_force.head<3>().setConstant(options_.base_force_std);
    noise.generalized_force.segment<3>(3).setConstant(options_.base_moment_std);
  }
  const std::vector<bool> transition = transitionKnots();
  MultibodyNoise transition_noise = noise;
  transition_noise.generalized_force *= options_.transition_noise_scale;
  MultibodyNoise contact_noise = noise, contact_transition_noise = transition_noise;
  const double contact_configuration_std = options_.contact_configuration_rate_std * p_.dt;
  contact_noise.configuration.setConstant(contact_configuration_std);
  contact_transition_noise.configuration.setConstant(contact_configuration_std);

  const io::JointSeries& joints = log_.joints;
  std::vector<std::shared_ptr<const StageModel>> running;
  running.reserve(N_);
  const dynamics::ContactDynamicsModel* previous = nullptr;
  // contact-implicit: any knot may be in contact, so every knot gets the contact knots' slack
  if (p_.smoothed) noise = contact_noise;
  for (int k = 0; k <= N_; ++k) {
    const int s = p_.samples[k];
    MultibodyMeasurement z = measurementAt(k);
    const bool terminal = k == N_;
    std::shared_ptr<const dynamics::ContactDynamicsModel> contact;
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse;
    if (!terminal) {
      z.tau = Eigen::VectorXd::Zero(nv_);
      // the mean torque over the step's samples, for the same reason as the accelerometer's
      Eigen::VectorXd tau = jointRow(joints.tau, s, column_);
      for (int j = 1; j < options_.stride; ++j) tau += jointRow(joints.tau, s + j, column_);
      tau /= options_.stride;
      for (int i = 0; i < nj_; ++i) z.tau(pin_.joints[sensors_->encoders[i]].idx_v()) = tau(i);
      contact = contactAt(k);
      if (contact) impulse = impulseAt(k);
      if (impulse) ++p_.touchdowns;
      if (k > 0 && contact.get() != previous) ++p_.contact_phases;
      previous = contact.get();
    }
    const MultibodyNoise knot_noise =
        withStiction(contact ? (transition[k] ? contact_transition_noise : contact_noise)
                             : (transition[k] ? transition_noise : noise),
                     k);
    if (transition[k] && !terminal) ++p_.transition_knots;
    // A touchdown under inverse dynamics: v+ and the impulses are decisions of its stage, the
    // reset map its equality rows (the forward stage solves the same map inside its step).
    if (!terminal && options_.dynamics == DynamicsFormulation::Inverse) {
      require(!p_.smoothed, "dynamics: inverse", "rigid contacts (flags or kinematic detection)",
              "contacts implicit");
      running.push_back(std::make_shared<InverseDynamicsStageModel>(
          p_.dynamics, p_.state, sensors_, knot_noise, std::move(z), p_.dt, p_.actuators, contact,
          robot_.loops(), LoopGains{},
          options_.project_process_noise && contact && robot_.loops().empty() ? impulseModelOf(k)
                                                                              : nullptr,
          impulse, options_.project_process_noise && !robot_.loops().empty()));
      continue;
    }
    auto stage = std::make_shared<MultibodyStageModel>(p_.dynamics, contact, p_.state, sensors_,
                                                       knot_noise, std::move(z), p_.dt, terminal,
                                                       impulse, p_.actuators, p_.smoothed);
    if (terminal) {
      auto problem = std::make_shared<Problem>(p_.state, running, stage, arrivalPrior());
      problem->setParameterConstraints(constraints_);
      problem->setInertiaParametrization(options_.parametrization,
                                         static_cast<int>(p_.identified.size()));
      p_.problem = problem;
    } else {
      running.push_back(stage);
    }
  }
}

// w = (0, a, e, lambda) per inverse-dynamics stage: a from the guess's velocities, lambda the
// contact forces nearest (least squares) to the torque balance's remainder at lambda = 0, and e
// what is left of it (the balance rows hold at the guess; the contact rows generally not). At a
// touchdown, first v+ and the impulses from the reset map at the guess's (q, v) (its rows hold),
// and a from v+.
void LogProblemBuilder::inverseDynamicsGuess() {
  StageWorkspace workspace;
  for (int k = 0; k < N_; ++k) {
    const auto* inverse = dynamic_cast<const InverseDynamicsStageModel*>(&p_.problem->running(k));
    if (!inverse) continue;
    const InverseDynamicsStageModel& stage = *inverse;
    const int nc = stage.numForces();  // the contacts' and the loops' forces
    Eigen::VectorXd w = Eigen::VectorXd::Zero(stage.nw());
    const auto data = stage.createDataSharing(workspace);
    Eigen::VectorXd v_start = p_.xs[k].tail(nv_);
    if (stage.hasImpulse()) {
      // [M -J^T; J 0] [v+; Lambda] = [M v; 0]: the rows are linear in (v+, Lambda)
      const int start = stage.impulseStart(), ni = stage.nw() - start - nv_, row = nv_ + nc;
      w.segment(start, nv_) = v_start;
      stage.calc(*data, p_.xs[k], w, p_.theta);
      stage.calcDiff(*data, p_.xs[k], w, p_.theta);
      const Eigen::MatrixXd K = data->H_w.block(row, start, nv_ + ni, nv_ + ni);
      const Eigen::VectorXd h = data->h.segment(row, nv_ + ni);
      w.segment(start, nv_ + ni) -= K.partialPivLu().solve(h);
      v_start = w.segment(start, nv_);
    }
    w.segment(nv_, nv_) = (p_.xs[k + 1].tail(nv_) - v_start) / p_.dt;
    stage.calc(*data, p_.xs[k], w, p_.theta);
    Eigen::VectorXd remainder = data->h.head(nv_);
    if (nc > 0) {
      stage.calcDiff(*data, p_.xs[k], w, p_.theta);
      const Eigen::MatrixXd Jt = -data->H_w.block(0, 3 * nv_, nv_, nc);  // J^T
      w.segment(3 * nv_, nc) = Jt.colPivHouseholderQr().solve(remainder);
      remainder -= Jt * w.segment(3 * nv_, nc);
    }
    w.segment(2 * nv_, nv_) = remainder;
    p_.ws[k] = std::move(w);
  }
}

}  // namespace

namespace {

LogProblem buildChecked(const model::RobotModel& robot, const io::Log& log,
                        const LogProblemOptions& options,
                        const std::vector<Eigen::VectorXd>* trajectory) {
  options.validate();
  const int last = options.first_sample + options.knots * options.stride;
  require(last < log.joints.time.size(), "log joint samples",
          "at least " + std::to_string(last + 1) + " (first_sample + knots * stride + 1)",
          std::to_string(log.joints.time.size()));
  return LogProblemBuilder(robot, log, options).build(trajectory);
}

}  // namespace

LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options) {
  return buildChecked(robot, log, options, nullptr);
}

std::shared_ptr<const ParameterConstraints> makeParameterConstraints(
    const model::RobotModel& robot, const LogProblemOptions& options) {
  if (!options.hasParameterConstraints()) return nullptr;
  const std::vector<std::string>& names = options.identified_bodies;
  std::vector<pinocchio::JointIndex> bodies;
  for (const std::string& name : names) bodies.push_back(robot.bodyIndex(name));
  std::vector<model::LinearConstraint> constraints;
  if (options.total_mass > 0)
    constraints.push_back(model::totalMassConstraint(robot, bodies, options.total_mass));
  for (const auto& [left, right] : options.symmetric)
    constraints.push_back(model::symmetryConstraint(names, left, right));
  for (const auto& b : options.mass_bounds)
    constraints.push_back(model::massBoundsConstraint(names, b.body, b.lower, b.upper));
  const int nb = static_cast<int>(bodies.size());
  Eigen::VectorXd nominal(10 * nb);
  for (int b = 0; b < nb; ++b) nominal.segment<10>(10 * b) = robot.pi(bodies[b]);
  return std::make_shared<ParameterConstraints>(
      options.parametrization, 10 * nb + options.actuators.numParameters(), constraints, nominal);
}

LogProblemOptions smoothingPassOptions(const LogProblemOptions& options, double torque_std) {
  LogProblemOptions held = options;
  held.actuators = {};
  held.use_energy = false;  // without the friction terms their dissipation would be the noise's
  held.total_mass = 0;
  held.symmetric.clear();
  held.mass_bounds.clear();
  held.theta_prior_std = 1e-6;  // held: a prior far tighter than any data
  held.torque_std = torque_std;
  return held;
}

// At 0.1 rad and 1 kHz the differences are 141 rad/s of noise, where the Coriolis terms make the
// linearization useless (the line search failed from there).
std::vector<Eigen::VectorXd> jointsAtRest(std::vector<Eigen::VectorXd> xs,
                                          const pinocchio::Model& pin) {
  const int base = pin.njoints > 1 && model::isFreeFlyer(pin, 1) ? 6 : 0;
  for (Eigen::VectorXd& x : xs) x.tail(pin.nv - base).setZero();
  return xs;
}

LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options,
                           const std::vector<Eigen::VectorXd>& trajectory) {
  return buildChecked(robot, log, options, &trajectory);
}

}  // namespace heft::estimation
