#include "heft/estimation/log_problem.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/common/error.hpp"
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
  }
  return "?";
}

ContactSource parseContactSource(const std::string& name) {
  for (ContactSource s : {ContactSource::Auto, ContactSource::Flags, ContactSource::Kinematic})
    if (toString(s) == name) return s;
  throw InputError("contact source: expected auto, flags or kinematic, got \"" + name + "\"");
}

void LogProblemOptions::validate() const {
  require(!identified_bodies.empty(), "identified_bodies", "at least one body name", "none");
  require(first_sample >= 0, "first_sample", ">= 0", std::to_string(first_sample));
  require(knots >= 1, "knots", ">= 1", std::to_string(knots));
  require(stride >= 1, "stride", ">= 1", std::to_string(stride));
  requirePositive(torque_std, "torque_std", " [N m]");
  requirePositive(base_force_std, "base_force_std", " [N]");
  requirePositive(base_moment_std, "base_moment_std", " [N m]");
  requirePositive(configuration_std, "configuration_std", " [rad]");
  requirePositive(contact_configuration_rate_std, "contact_configuration_rate_std", " [rad/s]");
  requireNonNegative(contact_damping, "contact_damping", " [1/s]");
  contact_detection.validate();
  requireNonNegative(transition_window, "transition_window", " [s]");
  requirePositive(transition_noise_scale, "transition_noise_scale");
  requirePositive(encoder_std, "encoder_std", " [rad]");
  requirePositive(velocity_std, "velocity_std", " [rad/s]");
  requirePositive(gyro_std, "gyro_std", " [rad/s]");
  requirePositive(imu_orientation_std, "imu_orientation_std", " [rad]");
  requirePositive(accelerometer_std, "accelerometer_std", " [m/s^2]");
  requirePositive(mocap_position_std, "mocap_position_std", " [m]");
  requirePositive(mocap_orientation_std, "mocap_orientation_std", " [rad]");
  require(theta_prior_std > 0, "theta_prior_std", "a value > 0 (infinity: no prior on theta)",
          std::to_string(theta_prior_std));
}

LogProblem buildLogProblem(const model::RobotModel& robot, const io::Log& log,
                           const LogProblemOptions& options) {
  options.validate();
  const bool floating = robot.hasFreeFlyer();
  const io::JointSeries& joints = log.joints;
  const pinocchio::Model& pin = robot.pinocchio();
  const int nv = pin.nv, nq = pin.nq, N = options.knots;
  const int last = options.first_sample + N * options.stride;
  require(last < joints.time.size(), "log joint samples",
          "at least " + std::to_string(last + 1) + " (first_sample + knots * stride + 1)",
          std::to_string(joints.time.size()));

  LogProblem p;
  p.model = std::make_shared<pinocchio::Model>(pin);
  for (const auto& name : options.identified_bodies) p.identified.push_back(robot.bodyIndex(name));
  p.dynamics = std::make_shared<dynamics::ForwardDynamicsModel>(*p.model, p.identified,
                                                                options.parametrization);
  p.state = std::make_shared<MultibodyState>(p.model);

  // Log column of every one-dimensional joint of the model, in joint order.
  auto sensors = std::make_shared<MultibodySensors>();
  std::vector<int> column;
  for (pinocchio::JointIndex j = floating ? 2 : 1; j < pin.joints.size(); ++j) {
    require(pin.joints[j].nq() == 1 && pin.joints[j].nv() == 1, "joint " + pin.names[j],
            "one position and one velocity coordinate", "another joint type");
    const auto it = std::find(joints.names.begin(), joints.names.end(), pin.names[j]);
    require(it != joints.names.end(), "log joints/names", "the joint " + pin.names[j],
            "no such column");
    sensors->encoders.push_back(j);
    column.push_back(static_cast<int>(it - joints.names.begin()));
  }
  const int nj = static_cast<int>(column.size());
  sensors->joint_velocities = options.use_logged_velocity;
  sensors->encoder_std = options.encoder_std;
  sensors->joint_velocity_std = options.velocity_std;
  sensors->gyro_std = options.gyro_std;
  sensors->imu_orientation_std = options.imu_orientation_std;
  sensors->accelerometer_std = options.accelerometer_std;
  sensors->mocap_position_std = options.mocap_position_std;
  sensors->mocap_orientation_std = options.mocap_orientation_std;

  const double period = joints.time(1) - joints.time(0);
  for (int s = options.first_sample; s < last; ++s) {
    const double step = joints.time(s + 1) - joints.time(s);
    require(std::abs(step - period) <= 1e-6 * period,
            "log joints/time row " + std::to_string(s + 1),
            "uniform sampling at " + std::to_string(period) + " s", std::to_string(step) + " s");
  }
  p.dt = options.stride * period;
  p.time.resize(N + 1);
  for (int k = 0; k <= N; ++k) {
    p.samples.push_back(options.first_sample + k * options.stride);
    p.time(k) = joints.time(p.samples.back());
  }
  auto jointRow = [&](const Eigen::MatrixXd& m, int s) {
    Eigen::VectorXd out(nj);
    for (int i = 0; i < nj; ++i) out(i) = m(s, column[i]);
    return out;
  };

  // Floating base: sensors, the base's initial guess from the motion capture, contact phases.
  std::vector<int> imu_at, mocap_at;
  pinocchio::SE3 mocap_in_base = pinocchio::SE3::Identity();
  pinocchio::FrameIndex mocap_frame = 0;
  if (floating) {
    require(log.mocap.has_value() && log.mocap->time.size() > 0, "log mocap group",
            "motion capture of the base (the base's initial guess; IMU-only initialization is "
            "not implemented)",
            "none");
    const std::string name = log.mocap->frame.empty() ? robot.body(1).name : log.mocap->frame;
    mocap_frame = frameIndex(pin, name, "log mocap frame");
    require(pin.frames[mocap_frame].parentJoint == 1, "log mocap frame " + name,
            "a frame on the floating base", "a frame on another body");
    mocap_in_base = pin.frames[mocap_frame].placement;
    if (options.use_mocap) {
      sensors->mocap_frame = mocap_frame;
      mocap_at = samplesAtKnots(log.mocap->time, p.time, p.dt);
    }
    if (options.use_imu && log.imu.has_value() && log.imu->time.size() > 0) {
      const std::string imu = log.imu->frame.empty() ? robot.body(1).name : log.imu->frame;
      sensors->imu_frame = frameIndex(pin, imu, "log imu frame");
      sensors->accelerometer = options.use_accelerometer && log.imu->accel.rows() > 0;
      imu_at = samplesAtKnots(log.imu->time, p.time, p.dt);
    }
  }
  p.sensors = sensors;

  // Initial guess: configurations, then central-difference velocities on the manifold.
  std::vector<Eigen::VectorXd> qs(N + 1, Eigen::VectorXd::Zero(nq));
  for (int k = 0; k <= N; ++k) {
    Eigen::VectorXd& q = qs[k];
    if (floating) {
      // The tracked frame's pose interpolated at the knot (linear position, slerp): the motion
      // capture is slower than the joints, and a held pose would make spiky velocities.
      const io::MocapSeries& mocap = *log.mocap;
      const double t = p.time(k);
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
      const pinocchio::SE3 oMb = oMf * mocap_in_base.inverse();
      const Eigen::Quaterniond quat(oMb.rotation());
      q.head<3>() = oMb.translation();
      q.segment<4>(3) = quat.coeffs();  // x, y, z, w as Pinocchio stores it
    }
    const Eigen::VectorXd encoders = jointRow(joints.q, p.samples[k]);
    for (int i = 0; i < nj; ++i) q(pin.joints[sensors->encoders[i]].idx_q()) = encoders(i);
  }
  // Joint velocities by central differences over one knot; the base's linear velocity over
  // +-20 ms (differencing the motion capture's 0.5 mm noise over 5 ms would give 0.1 m/s) and its
  // angular velocity from the gyro when there is one (differenced orientation noise is worse).
  const int base_span = std::max(1, static_cast<int>(std::lround(0.02 / p.dt)));
  Eigen::VectorXd dq(nv);
  for (int k = 0; k <= N; ++k) {
    Eigen::VectorXd x(nq + nv);
    x.head(nq) = qs[k];
    int lo = std::max(0, k - 1), hi = std::min(N, k + 1);
    pinocchio::difference(pin, qs[lo], qs[hi], dq);
    x.tail(nv) = dq / (p.time(hi) - p.time(lo));
    if (floating) {
      lo = std::max(0, k - base_span);
      hi = std::min(N, k + base_span);
      pinocchio::difference(pin, qs[lo], qs[hi], dq);
      x.segment<6>(nq) = dq.head<6>() / (p.time(hi) - p.time(lo));
      if (!imu_at.empty()) {
        const int i = nearestSample(log.imu->time, p.time(k));
        x.segment<3>(nq + 3) =
            pin.frames[sensors->imu_frame].placement.rotation() * log.imu->gyro.row(i).transpose();
      }
    }
    p.xs.push_back(x);
  }
  p.ws.assign(N, Eigen::VectorXd::Zero(2 * nv));

  // Contact set of every knot: the log's flags (nearest sample at or before the knot) or kinematic
  // thresholds on the initial guess. Models are cached per set; a knot whose set closes a contact
  // open at the previous knot starts with the set's impulse (touchdown).
  std::vector<std::string> contact_names;
  std::vector<std::vector<bool>> flags_at(N + 1);
  const bool have_flags = log.contacts.has_value() && log.contacts->time.size() > 0;
  if (floating) {
    const ContactSource source =
        options.contact_source == ContactSource::Auto
            ? (have_flags ? ContactSource::Flags : ContactSource::Kinematic)
            : options.contact_source;
    if (source == ContactSource::Flags) {
      require(have_flags, "log contacts group", "contact flags (contact_source flags)", "none");
      const io::ContactSeries& c = *log.contacts;
      contact_names = c.names;
      for (int k = 0; k <= N; ++k) {
        int i = nearestSample(c.time, p.time(k));
        if (c.time(i) > p.time(k) + 1e-9 && i > 0) --i;
        flags_at[k].resize(contact_names.size());
        for (std::size_t j = 0; j < contact_names.size(); ++j) flags_at[k][j] = c.flags(i, j) != 0;
      }
    } else {
      p.contacts_detected = true;
      contact_names = robot.contactFrames();
      require(!contact_names.empty(), "robot " + robot.displayName(),
              "contact frames for kinematic contact detection", "none");
      std::vector<pinocchio::FrameIndex> frames;
      for (const auto& name : contact_names)
        frames.push_back(frameIndex(pin, name, "contact frame"));
      pinocchio::Data data(pin);
      for (int k = 0; k <= N; ++k) {
        const std::vector<std::uint8_t> f = state::detectContacts(
            pin, data, frames, p.xs[k].head(nq), p.xs[k].tail(nv), options.contact_detection);
        flags_at[k].assign(f.begin(), f.end());
      }
    }
  }
  // The frames in contact at each knot.
  std::vector<std::vector<std::string>> frames_at(N + 1);
  for (int k = 0; k <= N && floating; ++k)
    for (std::size_t j = 0; j < contact_names.size(); ++j)
      if (flags_at[k][j]) frames_at[k].push_back(contact_names[j]);
  std::map<std::vector<std::string>, std::shared_ptr<const dynamics::ContactDynamicsModel>> phases;
  std::map<std::vector<std::string>, std::shared_ptr<const dynamics::ImpulseDynamicsModel>>
      impulses;
  auto specsOf = [&](const std::vector<std::string>& frames) {
    std::vector<dynamics::ContactSpec> specs;
    for (const std::string& frame : frames) {
      frameIndex(pin, frame, "contact names");
      specs.push_back(
          {frame, dynamics::ContactSpec::Type::Point3D, pinocchio::LOCAL_WORLD_ALIGNED});
    }
    return specs;
  };
  auto contactAt = [&](int k) -> std::shared_ptr<const dynamics::ContactDynamicsModel> {
    if (frames_at[k].empty()) return nullptr;
    auto& model = phases[frames_at[k]];
    if (!model) {
      dynamics::ContactOptions contact_options;
      contact_options.baumgarte_kd = options.contact_damping;
      model = std::make_shared<dynamics::ContactDynamicsModel>(
          *p.model, specsOf(frames_at[k]), p.identified, options.parametrization, contact_options);
    }
    return model;
  };
  auto impulseAt = [&](int k) -> std::shared_ptr<const dynamics::ImpulseDynamicsModel> {
    if (!options.touchdown_impulses || k == 0) return nullptr;
    bool closes = false;  // a frame held now that was not held at the previous knot
    for (const std::string& frame : frames_at[k])
      closes = closes || std::find(frames_at[k - 1].begin(), frames_at[k - 1].end(), frame) ==
                             frames_at[k - 1].end();
    if (!closes) return nullptr;
    auto& model = impulses[frames_at[k]];
    if (!model)
      model = std::make_shared<dynamics::ImpulseDynamicsModel>(
          *p.model, specsOf(frames_at[k]), p.identified, options.parametrization);
    return model;
  };

  MultibodyNoise noise;
  noise.configuration = Eigen::VectorXd::Constant(nv, options.configuration_std);
  noise.generalized_force = Eigen::VectorXd::Constant(nv, options.torque_std);
  if (floating) {
    noise.generalized_force.head<3>().setConstant(options.base_force_std);
    noise.generalized_force.segment<3>(3).setConstant(options.base_moment_std);
  }

  // Knots near a contact-set change: the rigid contact model misses the soft transient there
  // (MuJoCo's, a real foot's), so their generalized-force noise is inflated.
  std::vector<bool> transition(N + 1, false);
  if (options.transition_noise_scale != 1 && floating) {
    const int half = static_cast<int>(std::lround(options.transition_window / p.dt));
    for (int k = 1; k <= N; ++k) {
      if (flags_at[k] == flags_at[k - 1]) continue;
      for (int i = std::max(0, k - half); i <= std::min(N, k + half); ++i) transition[i] = true;
    }
  }
  MultibodyNoise transition_noise = noise;
  transition_noise.generalized_force *= options.transition_noise_scale;
  MultibodyNoise contact_noise = noise, contact_transition_noise = transition_noise;
  const double contact_configuration_std = options.contact_configuration_rate_std * p.dt;
  contact_noise.configuration.setConstant(contact_configuration_std);
  contact_transition_noise.configuration.setConstant(contact_configuration_std);

  std::vector<std::shared_ptr<const StageModel>> running;
  running.reserve(N);
  const dynamics::ContactDynamicsModel* previous = nullptr;
  for (int k = 0; k <= N; ++k) {
    const int s = p.samples[k];
    MultibodyMeasurement z;
    z.joint_q = jointRow(joints.q, s);
    if (options.use_logged_velocity) z.joint_v = jointRow(joints.v, s);
    if (!imu_at.empty() && imu_at[k] >= 0) {
      const io::ImuSeries& imu = *log.imu;
      z.has_gyro = true;
      z.gyro = imu.gyro.row(imu_at[k]).transpose();
      if (sensors->accelerometer) {
        z.has_accel = true;
        z.accel = imu.accel.row(imu_at[k]).transpose();
        // Steps of several samples: semi-implicit Euler applies one acceleration over the whole
        // step, so it must match the mean over [t_k, t_k+1), not the value at t_k (at 10 ms a
        // trot's touchdown transients make the two differ by metres per second squared).
        Eigen::VectorXd mean;
        if (options.stride > 1 && k < N &&
            meanOfRowsIn(imu.time, imu.accel, p.time(k) - 1e-9, p.time(k + 1) - 1e-9, mean))
          z.accel = mean;
      }
      if (imu.orientation.rows() > 0) {
        z.has_imu_orientation = true;
        z.imu_orientation = quaternionRow(imu.orientation, imu_at[k]);
      }
    }
    if (!mocap_at.empty() && mocap_at[k] >= 0) {
      z.has_mocap = true;
      z.mocap_position = log.mocap->position.row(mocap_at[k]).transpose();
      z.mocap_orientation = quaternionRow(log.mocap->orientation, mocap_at[k]);
    }
    const bool terminal = k == N;
    std::shared_ptr<const dynamics::ContactDynamicsModel> contact;
    std::shared_ptr<const dynamics::ImpulseDynamicsModel> impulse;
    if (!terminal) {
      z.tau = Eigen::VectorXd::Zero(nv);
      // the mean torque over the step's samples, for the same reason as the accelerometer's
      Eigen::VectorXd tau = jointRow(joints.tau, s);
      for (int j = 1; j < options.stride; ++j) tau += jointRow(joints.tau, s + j);
      tau /= options.stride;
      for (int i = 0; i < nj; ++i) z.tau(pin.joints[sensors->encoders[i]].idx_v()) = tau(i);
      contact = contactAt(k);
      if (contact) impulse = impulseAt(k);
      if (impulse) ++p.touchdowns;
      if (k > 0 && contact.get() != previous) ++p.contact_phases;
      previous = contact.get();
    }
    auto stage = std::make_shared<MultibodyStageModel>(
        p.dynamics, contact, p.state, sensors,
        contact ? (transition[k] ? contact_transition_noise : contact_noise)
                : (transition[k] ? transition_noise : noise),
        std::move(z), p.dt, terminal, impulse);
    if (transition[k] && !terminal) ++p.transition_knots;
    if (terminal) {
      ArrivalPrior arrival;
      arrival.x_mean = p.xs[0];
      arrival.x_sqrt_info = Eigen::MatrixXd::Zero(2 * nv, 2 * nv);
      Eigen::VectorXd sd(2 * nv);
      sd.head(nv).setConstant(options.encoder_std);
      if (floating) {
        sd.head<3>().setConstant(options.mocap_position_std);
        sd.segment<3>(3).setConstant(options.mocap_orientation_std);
      }
      sd.tail(nv).setConstant(options.velocity_std);
      arrival.x_sqrt_info.diagonal() = sd.cwiseInverse();
      p.theta = p.dynamics->nominalTheta();
      arrival.theta_mean = p.theta;
      arrival.theta_sqrt_info =
          Eigen::MatrixXd::Identity(p.theta.size(), p.theta.size()) / options.theta_prior_std;
      p.problem = std::make_shared<Problem>(p.state, running, stage, arrival);
    } else {
      running.push_back(stage);
    }
  }
  return p;
}

}  // namespace heft::estimation
