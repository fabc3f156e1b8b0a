#include "heft/sim/sensors.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/sim/random.hpp"
#include "heft/sim/sim_model.hpp"

namespace heft::sim {

namespace {

std::string num(double x) { return formatNumber(x, 6); }

// One random stream per sensor (Rng stream ids), so the sensors' noise are independent.
enum Stream : std::uint64_t {
  kEncoder = 1,
  kTorque,
  kImu,
  kMocap,
  kContact,
  kJointClock,
  kImuClock,
  kMocapClock
};

// Rotation by a rotation vector (the exponential map of SO(3)).
Eigen::Quaterniond expMap(const Eigen::Vector3d& w) {
  const double angle = w.norm();
  if (angle < 1e-300) return Eigen::Quaterniond::Identity();
  return Eigen::Quaterniond(Eigen::AngleAxisd(angle, w / angle));
}

Eigen::Vector3d normal3(Rng& rng, double sigma) {
  // evaluated in order x, y, z (function arguments have no evaluation order)
  const double x = rng.normal(sigma);
  const double y = rng.normal(sigma);
  const double z = rng.normal(sigma);
  return {x, y, z};
}

// Steps of the physics grid per sample of a sensor running at `rate`.
int decimation(double rate, double dt, const std::string& field) {
  const double steps = 1.0 / (rate * dt);
  const long rounded = std::lround(steps);
  require(rounded >= 1 && std::abs(steps - rounded) < 1e-9 * steps, field,
          "a rate that divides the physics rate " + num(1 / dt) + " Hz", num(rate) + " Hz");
  return static_cast<int>(rounded);
}

void requireJitter(double jitter, double period, const std::string& field) {
  require(jitter < 0.5 * period, field,
          "less than half the sample period " + num(period / 2) + " s", num(jitter) + " s");
}

double jittered(Rng& rng, double t, double jitter) {
  return jitter > 0 ? t + rng.uniform(-jitter, jitter) : t;
}

Eigen::Vector4d coeffs(const Eigen::Quaterniond& q) {
  // Eigen stores x y z w, as the log does; keep w >= 0 so equal rotations log equally
  Eigen::Vector4d c = q.normalized().coeffs();
  if (c[3] < 0) c = -c;
  return c;
}

}  // namespace

void TruthRecord::resize(int samples, int nu, int contacts, bool free_flyer) {
  time.resize(samples);
  joint_q.resize(samples, nu);
  joint_v.resize(samples, nu);
  joint_a.resize(samples, nu);
  tau.resize(samples, nu);
  tau_cmd.resize(samples, nu);
  const int nb = free_flyer ? samples : 0;
  base_pose.resize(nb, free_flyer ? 7 : 0);
  base_twist.resize(nb, free_flyer ? 6 : 0);
  base_acceleration.resize(nb, free_flyer ? 6 : 0);
  gyro.resize(nb, free_flyer ? 3 : 0);
  accel.resize(nb, free_flyer ? 3 : 0);
  imu_orientation.resize(nb, free_flyer ? 4 : 0);
  contact_forces.resize(samples, 3 * contacts);
  contact_flags.resize(samples, contacts);
}

void TruthRecord::truncate(int n) {
  auto keep = [n](auto& m) {
    if (m.rows() > n) m.conservativeResize(n, m.cols());
  };
  if (time.size() > n) time.conservativeResize(n);
  keep(joint_q);
  keep(joint_v);
  keep(joint_a);
  keep(tau);
  keep(tau_cmd);
  keep(base_pose);
  keep(base_twist);
  keep(base_acceleration);
  keep(contact_forces);
  keep(contact_flags);
  keep(gyro);
  keep(accel);
  keep(imu_orientation);
  keep(varying_pi);
}

std::vector<std::string> NoiseProfile::names() { return {"none", "nominal", "harsh"}; }

NoiseProfile NoiseProfile::fromName(const std::string& name) {
  NoiseProfile p;
  p.name = name;
  if (name == "none") return p;
  if (name == "nominal") {
    // a calibrated Go2-class robot in a motion-capture lab
    p.encoder_noise = 2e-5;
    p.encoder_resolution = 2 * M_PI / (1 << 18);
    p.velocity_by_differencing = true;
    p.torque_noise = 0.05;
    p.torque_bias = 0.05;
    p.joint_time_jitter = 0;
    p.imu_rate = 500;
    p.gyro_noise = 4e-3;
    p.gyro_bias = 5e-3;
    p.accel_noise = 0.03;
    p.accel_bias = 0.05;
    p.orientation_noise = 2e-3;
    p.orientation_bias = 3e-3;
    p.imu_time_jitter = 1e-4;
    p.mocap_rate = 200;
    p.mocap_position_noise = 5e-4;
    p.mocap_orientation_noise = 2e-3;
    p.mocap_position_offset = Eigen::Vector3d(0.002, -0.001, 0.003);
    p.mocap_rpy_offset = Eigen::Vector3d(0.5, 0, 0) * M_PI / 180;
    p.mocap_dropout = 0.01;
    p.mocap_time_jitter = 5e-4;
    p.contact_force_noise = 2;
    return p;
  }
  if (name == "harsh") {
    // a cheap robot: 14-bit encoders, current-based torque, vibrating IMU, quick mocap calibration
    p.encoder_noise = 2e-4;
    p.encoder_resolution = 2 * M_PI / (1 << 14);
    p.velocity_by_differencing = true;
    p.torque_noise = 0.3;
    p.torque_bias = 0.3;
    p.joint_time_jitter = 1e-4;
    p.imu_rate = 200;
    p.gyro_noise = 0.02;
    p.gyro_bias = 0.03;
    p.accel_noise = 0.15;
    p.accel_bias = 0.2;
    p.orientation_noise = 0.01;
    p.orientation_bias = 0.02;
    p.imu_time_jitter = 4e-4;
    p.mocap_rate = 100;
    p.mocap_position_noise = 2e-3;
    p.mocap_orientation_noise = 0.01;
    p.mocap_position_offset = Eigen::Vector3d(0.01, -0.005, 0.008);
    p.mocap_rpy_offset = Eigen::Vector3d(2.0, 0.5, 1.0) * M_PI / 180;
    p.mocap_dropout = 0.05;
    p.mocap_burst_probability = 0.002;
    p.mocap_burst_duration = 0.5;
    p.mocap_time_jitter = 2e-3;
    p.contact_force_noise = 8;
    return p;
  }
  throw InputError("noise profile: expected none, nominal or harsh, got \"" + name + "\"");
}

void NoiseProfile::validate() const {
  auto nonNegative = [](double x, const char* field) {
    require(std::isfinite(x) && x >= 0, field, "a finite value >= 0", num(x));
  };
  nonNegative(encoder_noise, "encoder_noise");
  nonNegative(encoder_resolution, "encoder_resolution");
  nonNegative(torque_noise, "torque_noise");
  nonNegative(torque_bias, "torque_bias");
  nonNegative(joint_time_jitter, "joint_time_jitter");
  require(std::isfinite(imu_rate) && imu_rate > 0, "imu_rate", "a value > 0 Hz", num(imu_rate));
  nonNegative(gyro_noise, "gyro_noise");
  nonNegative(gyro_bias, "gyro_bias");
  nonNegative(accel_noise, "accel_noise");
  nonNegative(accel_bias, "accel_bias");
  nonNegative(orientation_noise, "orientation_noise");
  nonNegative(orientation_bias, "orientation_bias");
  nonNegative(imu_time_jitter, "imu_time_jitter");
  require(std::isfinite(mocap_rate) && mocap_rate > 0, "mocap_rate", "a value > 0 Hz",
          num(mocap_rate));
  nonNegative(mocap_position_noise, "mocap_position_noise");
  nonNegative(mocap_orientation_noise, "mocap_orientation_noise");
  require(mocap_position_offset.allFinite() && mocap_rpy_offset.allFinite(), "mocap offsets",
          "finite values", "non-finite values");
  require(std::isfinite(mocap_dropout) && mocap_dropout >= 0 && mocap_dropout < 1, "mocap_dropout",
          "a probability in [0, 1)", num(mocap_dropout));
  require(std::isfinite(mocap_burst_probability) && mocap_burst_probability >= 0 &&
              mocap_burst_probability < 1,
          "mocap_burst_probability", "a probability in [0, 1)", num(mocap_burst_probability));
  nonNegative(mocap_burst_duration, "mocap_burst_duration");
  nonNegative(mocap_time_jitter, "mocap_time_jitter");
  nonNegative(contact_threshold, "contact_threshold");
  nonNegative(contact_force_noise, "contact_force_noise");
}

namespace {

// Joints: encoders (noise, then quantization), torque (bias + noise, then the sensor's constant
// offset), clock jitter.
io::JointSeries makeJointSeries(const SimModel& model, const TruthRecord& truth,
                                const NoiseProfile& profile, std::uint64_t seed) {
  const int n = truth.samples();
  const int nu = model.nu();
  const double dt = truth.dt;
  io::JointSeries j;
  Rng encoder(seed, kEncoder), torque(seed, kTorque), clock(seed, kJointClock);
  j.names = model.jointNames();
  j.time.resize(n);
  j.q.resize(n, nu);
  j.v.resize(n, nu);
  j.tau.resize(n, nu);
  j.tau_cmd = truth.tau_cmd;
  Eigen::VectorXd bias(nu);
  for (int i = 0; i < nu; ++i) bias[i] = torque.normal(profile.torque_bias);
  const Eigen::VectorXd& offsets = model.torqueOffsets();
  // without offsets the sum is left as it was (-0.0 + 0.0 would change a sign bit)
  const bool has_offsets = (offsets.array() != 0).any();
  for (int k = 0; k < n; ++k) {
    j.time[k] = jittered(clock, truth.time[k], profile.joint_time_jitter);
    for (int i = 0; i < nu; ++i) {
      double q = truth.joint_q(k, i) + encoder.normal(profile.encoder_noise);
      if (profile.encoder_resolution > 0) {
        q = std::round(q / profile.encoder_resolution) * profile.encoder_resolution;
      }
      j.q(k, i) = q;
      j.tau(k, i) = truth.tau(k, i) + bias[i] + torque.normal(profile.torque_noise);
      if (has_offsets) j.tau(k, i) += offsets[i];
    }
  }
  if (profile.velocity_by_differencing) {
    j.v.row(0).setZero();
    for (int k = 1; k < n; ++k) j.v.row(k) = (j.q.row(k) - j.q.row(k - 1)) / dt;
  } else {
    j.v = truth.joint_v;
  }
  return j;
}

// IMU: gyro and accelerometer with bias and noise, orientation with a constant and a white
// rotation error, at its own rate.
io::ImuSeries makeImuSeries(const SimModel& model, const TruthRecord& truth,
                            const NoiseProfile& profile, std::uint64_t seed) {
  const int n = truth.samples();
  const double dt = truth.dt;
  const int every = decimation(profile.imu_rate, dt, "imu_rate");
  requireJitter(profile.imu_time_jitter, every * dt, "imu_time_jitter");
  Rng rng(seed, kImu), clock(seed, kImuClock);
  const Eigen::Vector3d gyro_bias = normal3(rng, profile.gyro_bias);
  const Eigen::Vector3d accel_bias = normal3(rng, profile.accel_bias);
  const Eigen::Quaterniond orientation_bias = expMap(normal3(rng, profile.orientation_bias));
  io::ImuSeries imu;
  imu.frame = model.imuFrame().empty() ? model.nominal().body(1).name : model.imuFrame();
  const int m = (n + every - 1) / every;
  imu.time.resize(m);
  imu.gyro.resize(m, 3);
  imu.accel.resize(m, 3);
  imu.orientation.resize(m, 4);
  for (int s = 0; s < m; ++s) {
    const int k = s * every;
    imu.time[s] = jittered(clock, truth.time[k], profile.imu_time_jitter);
    imu.gyro.row(s) =
        truth.gyro.row(k) + (gyro_bias + normal3(rng, profile.gyro_noise)).transpose();
    imu.accel.row(s) =
        truth.accel.row(k) + (accel_bias + normal3(rng, profile.accel_noise)).transpose();
    const Eigen::Vector4d c = truth.imu_orientation.row(k).transpose();
    const Eigen::Quaterniond q(c[3], c[0], c[1], c[2]);
    const Eigen::Quaterniond measured =
        q * orientation_bias * expMap(normal3(rng, profile.orientation_noise));
    imu.orientation.row(s) = coeffs(measured).transpose();
  }
  return imu;
}

// Motion capture: the pose of a marker frame that the calibration put slightly off the base
// frame, with noise, dropouts (single and bursts) and clock jitter.
io::MocapSeries makeMocapSeries(const SimModel& model, const TruthRecord& truth,
                                const NoiseProfile& profile, std::uint64_t seed) {
  const int n = truth.samples();
  const double dt = truth.dt;
  const int mocap_every = decimation(profile.mocap_rate, dt, "mocap_rate");
  const double period = mocap_every * dt;
  requireJitter(profile.mocap_time_jitter, period, "mocap_time_jitter");
  Rng mocap_rng(seed, kMocap), mocap_clock(seed, kMocapClock);
  const Eigen::Quaterniond offset_rotation =
      Eigen::AngleAxisd(profile.mocap_rpy_offset[2], Eigen::Vector3d::UnitZ()) *
      Eigen::AngleAxisd(profile.mocap_rpy_offset[1], Eigen::Vector3d::UnitY()) *
      Eigen::AngleAxisd(profile.mocap_rpy_offset[0], Eigen::Vector3d::UnitX());
  std::vector<double> times;
  std::vector<Eigen::Vector3d> positions;
  std::vector<Eigen::Vector4d> orientations;
  int burst_left = 0;
  for (int k = 0; k < n; k += mocap_every) {
    // draw every random number of the sample whether it is dropped or not: the noise of one
    // sample does not depend on which earlier samples were dropped
    const double t = jittered(mocap_clock, truth.time[k], profile.mocap_time_jitter);
    const Eigen::Vector3d position_noise = normal3(mocap_rng, profile.mocap_position_noise);
    const Eigen::Vector3d rotation_noise = normal3(mocap_rng, profile.mocap_orientation_noise);
    const bool single_drop =
        profile.mocap_dropout > 0 && mocap_rng.uniform() < profile.mocap_dropout;
    const bool burst_start = profile.mocap_burst_probability > 0 &&
                             mocap_rng.uniform() < profile.mocap_burst_probability;
    const double burst_fraction =
        profile.mocap_burst_probability > 0 ? mocap_rng.uniform(0.2, 1.0) : 0;
    if (burst_left == 0 && burst_start) {
      burst_left =
          static_cast<int>(std::ceil(burst_fraction * profile.mocap_burst_duration / period));
    }
    const bool dropped = single_drop || burst_left > 0;
    if (burst_left > 0) --burst_left;
    if (dropped) continue;
    const Eigen::Vector3d p = truth.base_pose.row(k).head<3>().transpose();
    const Eigen::Vector4d c = truth.base_pose.row(k).tail<4>().transpose();
    const Eigen::Quaterniond R(c[3], c[0], c[1], c[2]);
    times.push_back(t);
    positions.push_back(p + R * profile.mocap_position_offset + position_noise);
    orientations.push_back(coeffs(R * offset_rotation * expMap(rotation_noise)));
  }
  io::MocapSeries mocap;
  mocap.frame = model.nominal().body(1).name;
  const int m2 = static_cast<int>(times.size());
  mocap.time.resize(m2);
  mocap.position.resize(m2, 3);
  mocap.orientation.resize(m2, 4);
  for (int s = 0; s < m2; ++s) {
    mocap.time[s] = times[s];
    mocap.position.row(s) = positions[s].transpose();
    mocap.orientation.row(s) = orientations[s].transpose();
  }
  return mocap;
}

// Contact flags from a thresholded, noisy normal force, on the joint clock.
io::ContactSeries makeContactSeries(const SimModel& model, const TruthRecord& truth,
                                    const NoiseProfile& profile, std::uint64_t seed,
                                    const Eigen::VectorXd& joint_time) {
  const int n = truth.samples();
  const int nc = static_cast<int>(model.contactNames().size());
  Rng rng(seed, kContact);
  io::ContactSeries contacts;
  contacts.time = joint_time;
  contacts.names = model.contactNames();
  // points away from a frame origin (sole corners) are defined in the log, so readers find them
  const std::vector<ContactPoint>& points = model.contactPoints();
  const bool plain_frames = std::all_of(points.begin(), points.end(), [](const ContactPoint& p) {
    return p.name == p.frame && p.offset.isZero(0.0);
  });
  if (!plain_frames && points.size() == contacts.names.size()) {
    contacts.offsets.resize(static_cast<Eigen::Index>(points.size()), 3);
    for (std::size_t c = 0; c < points.size(); ++c) {
      contacts.frames.push_back(points[c].frame);
      contacts.offsets.row(static_cast<Eigen::Index>(c)) = points[c].offset.transpose();
    }
  }
  contacts.flags.resize(n, nc);
  for (int k = 0; k < n; ++k) {
    for (int c = 0; c < nc; ++c) {
      const double fz =
          truth.contact_forces(k, 3 * c + 2) + rng.normal(profile.contact_force_noise);
      contacts.flags(k, c) = fz > profile.contact_threshold ? 1 : 0;
    }
  }
  return contacts;
}

// Truth: from MuJoCo, exact.
io::TruthSeries makeTruthSeries(const SimModel& model, const TruthRecord& truth) {
  const int nc = static_cast<int>(model.contactNames().size());
  const bool free_flyer = model.hasFreeFlyer();
  io::TruthSeries t;
  t.time = truth.time;
  t.q = truth.joint_q;
  t.v = truth.joint_v;
  t.a = truth.joint_a;
  if (free_flyer) {
    t.base_pose = truth.base_pose;
    t.base_twist = truth.base_twist;
    t.base_acceleration = truth.base_acceleration;
  }
  if (nc > 0) {
    t.contact_names = model.contactNames();
    t.contact_forces = truth.contact_forces;
    t.contact_flags = truth.contact_flags;
  }
  const pinocchio::Model& pm = model.nominal().pinocchio();
  for (int j = 1; j < pm.njoints; ++j) t.body_names.push_back(pm.names[j]);
  t.body_pi = model.truthPi();
  if (!truth.varying_rows.empty()) {
    for (int row : truth.varying_rows) t.varying_body_names.push_back(pm.names[row + 1]);
    t.varying_body_pi = truth.varying_pi;
    // the constant table holds the first sample (the model may have moved on since)
    for (std::size_t b = 0; b < truth.varying_rows.size(); ++b) {
      t.body_pi.row(truth.varying_rows[b]) = truth.varying_pi.block(0, 10 * b, 1, 10);
    }
  }
  return t;
}

}  // namespace

io::Log makeLog(const SimModel& model, const TruthRecord& truth, const NoiseProfile& profile,
                std::uint64_t seed, const std::string& scenario) {
  profile.validate();
  const int n = truth.samples();
  const int nc = static_cast<int>(model.contactNames().size());
  const bool free_flyer = model.hasFreeFlyer();
  const double dt = truth.dt;
  require(n >= 2, "truth samples", "at least 2", std::to_string(n));
  requireJitter(profile.joint_time_jitter, dt, "joint_time_jitter");

  io::Log log;
  log.meta.robot = model.nominal().shortName().empty() ? model.nominal().displayName()
                                                       : model.nominal().shortName();
  log.meta.base_type = free_flyer ? io::BaseType::FreeFlyer : io::BaseType::Fixed;
  log.meta.noise_profile = profile.name;
  log.meta.scenario = scenario;
  log.meta.seed = static_cast<std::int64_t>(seed);
  log.joints = makeJointSeries(model, truth, profile, seed);
  if (free_flyer) {
    log.imu = makeImuSeries(model, truth, profile, seed);
    log.mocap = makeMocapSeries(model, truth, profile, seed);
  }
  if (nc > 0) log.contacts = makeContactSeries(model, truth, profile, seed, log.joints.time);
  log.truth = makeTruthSeries(model, truth);
  return log;
}

}  // namespace heft::sim
