// heft::basestate: the contact-aided invariant EKF's Jacobians against finite differences on the
// manifold, its real-time shape (no allocation in update), and the base state of MuJoCo logs
// against their truth (truth only scores).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/spatial.hpp>

#include "heft/basestate/base_state.hpp"
#include "heft/basestate/contact_ekf.hpp"
#include "heft/common/error.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/io/log.hpp"
#include "heft/model/model.hpp"
#include "heft/sim/scenario.hpp"
#include "support/malloc_counter.hpp"

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using heft::InputError;
using heft::Matrix3;
using heft::Vector3;
using heft::basestate::BaseStateErrors;
using heft::basestate::BaseStateOptions;
using heft::basestate::ContactEkf;
using heft::basestate::ContactEkfOptions;
using heft::basestate::CoreState;
using heft::basestate::Vector15;
using heft::model::ContactPoint;
using FlagVector = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, 1>;

const heft::model::RobotModel& robot(const std::string& name) {
  static const heft::model::RobotModel go2 = heft::model::loadRobot("go2");
  static const heft::model::RobotModel talos = heft::model::loadRobot("talos");
  return name == "go2" ? go2 : talos;
}

// The contact points of a scenario's log: its own points (TALOS sole corners), else the frames.
std::vector<ContactPoint> scenarioContacts(const heft::sim::Scenario& scenario,
                                           const heft::model::RobotModel& model,
                                           const heft::io::Log& log) {
  std::vector<ContactPoint> defined;
  for (const auto& p : scenario.model.contact_points)
    defined.push_back({p.name, p.frame, p.offset});
  return heft::model::resolveContactPoints(model.pinocchio(), log.contacts->names, defined,
                                           "contacts/names");
}

std::vector<ContactPoint> go2Feet() {
  std::vector<ContactPoint> points;
  for (const std::string& f : robot("go2").contactFrames())
    points.push_back({f, f, Vector3::Zero()});
  return points;
}

std::vector<ContactPoint> talosSoleCorners() {
  std::vector<ContactPoint> points;
  for (const char* side : {"left", "right"})
    for (double x : {0.1, -0.1})
      for (double y : {0.065, -0.065})
        points.push_back({std::string(side) + std::to_string(points.size()),
                          std::string(side) + "_sole_link", Vector3(x, y, 0.01)});
  return points;
}

Matrix3 randomRotation() { return pinocchio::exp3(Vector3(Vector3::Random())); }

// ---- options ----

TEST(ContactEkfOptions, ValidateNamesTheField) {
  ContactEkfOptions options;
  EXPECT_NO_THROW(options.validate());
  options.kinematics_noise = 0;
  try {
    options.validate();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("kinematics_noise"), std::string::npos) << e.what();
  }
  options = ContactEkfOptions();
  options.gyro_noise = std::nan("");
  EXPECT_THROW(options.validate(), InputError);
}

TEST(ContactEkf, RejectsBadModelFrames) {
  EXPECT_THROW(ContactEkf(robot("go2").pinocchio(), "no_such_frame", go2Feet()), InputError);
  EXPECT_THROW(ContactEkf(robot("go2").pinocchio(), "imu", {}), InputError);
  std::vector<ContactPoint> bad = go2Feet();
  bad[0].frame = "no_such_foot";
  EXPECT_THROW(ContactEkf(robot("go2").pinocchio(), "imu", bad), InputError);
}

TEST(ContactEkf, FlatFeetAreSoleFrames) {
  const ContactEkf ekf(robot("talos").pinocchio(), "imu_link", talosSoleCorners());
  ASSERT_EQ(ekf.numFeet(), 2);
  EXPECT_TRUE(ekf.feet()[0].flat);
  EXPECT_EQ(ekf.feet()[0].frame, "left_sole_link");
  EXPECT_EQ(ekf.dimension(), 15 + 6);
}

// ---- Jacobians against central differences on the manifold ----

// Foot in the IMU frame: the Jacobian with respect to the joints, stepping q by integrate. TALOS'
// IMU sits on the torso (after two torso joints), go2's on the trunk.
TEST(ContactEkf, FootJacobianMatchesFiniteDifferences) {
  std::srand(3);
  for (const std::string name : {"go2", "talos"}) {
    const pinocchio::Model& model = robot(name).pinocchio();
    ContactEkf ekf(model, name == "go2" ? "imu" : "imu_link",
                   name == "go2" ? go2Feet() : talosSoleCorners());
    const VectorXd q =
        pinocchio::randomConfiguration(model, -VectorXd::Ones(model.nq), VectorXd::Ones(model.nq));
    const double h = 1e-6;
    for (int k = 0; k < ekf.numFeet(); ++k) {
      ekf.footInImu(q, k);
      const Eigen::Matrix<double, 3, Eigen::Dynamic> J = ekf.footJacobian();
      for (int j = 6; j < model.nv; ++j) {
        VectorXd dv = VectorXd::Zero(model.nv);
        dv[j] = h;
        const Vector3 plus = ekf.footInImu(pinocchio::integrate(model, q, dv), k);
        const Vector3 minus = ekf.footInImu(pinocchio::integrate(model, q, VectorXd(-dv)), k);
        const Vector3 fd = (plus - minus) / (2 * h);
        // central difference: h^2 |f'''| (|f'''| ~ leg length 1 m) + rounding eps / h
        EXPECT_LT((fd - J.col(j)).norm(), 1e-8) << name << " foot " << k << " column " << j;
      }
      EXPECT_TRUE(J.leftCols<6>().isZero()) << name;
    }
  }
}

// A random state with every foot in contact.
struct RandomState {
  Matrix3 R = randomRotation();
  Vector3 v = Vector3::Random(), p = Vector3::Random(), bg = 0.1 * Vector3::Random(),
          ba = 0.3 * Vector3::Random();
  Eigen::Matrix<double, 3, Eigen::Dynamic> feet;
  explicit RandomState(int K) : feet(Eigen::Matrix<double, 3, Eigen::Dynamic>::Random(3, K)) {}
  void set(ContactEkf& ekf) const {
    ekf.setState(R, v, p, bg, ba, feet, std::vector<bool>(feet.cols(), true));
  }
};

// The leg-kinematics innovation r = R_hat s - (d_hat - p_hat) with s measured at the true state
// X = exp(delta) X_hat: r = H delta, H = [0, 0, -I, 0, 0, .., +I (foot k), ..].
TEST(ContactEkf, KinematicsMeasurementJacobianMatchesFiniteDifferences) {
  std::srand(5);
  ContactEkf ekf(robot("go2").pinocchio(), "imu", go2Feet());
  const int n = ekf.dimension();
  const RandomState x(ekf.numFeet());
  const double h = 1e-5;
  for (int k = 0; k < ekf.numFeet(); ++k) {
    const auto innovation = [&](const VectorXd& delta) {
      x.set(ekf);
      ekf.retract(delta);  // the true state
      const Vector3 s = ekf.rotation().transpose() * (ekf.footPosition(k) - ekf.position());
      return Vector3(x.R * s - (x.feet.col(k) - x.p));
    };
    for (int j = 0; j < n; ++j) {
      VectorXd dx = VectorXd::Zero(n);
      dx[j] = h;
      const Vector3 fd = (innovation(dx) - innovation(-dx)) / (2 * h);
      Vector3 expected = Vector3::Zero();
      if (j >= 6 && j < 9) expected[j - 6] = -1;
      if (j >= 15 + 3 * k && j < 18 + 3 * k) expected[j - 15 - 3 * k] = 1;
      // second-order terms h^2 |x| (|x| <= 2 here) and rounding eps / h
      EXPECT_LT((fd - expected).norm(), 1e-8) << "foot " << k << " column " << j;
    }
  }
}

// The level-ground rows r_i(X) (stance feet heights, flat soles' tilt) against central
// differences of r over retractions X = exp(delta) X_hat: dr/d delta = -h. go2's point feet and
// TALOS' flat soles, at a random state and a random joint configuration.
TEST(ContactEkf, LevelGroundRowsMatchFiniteDifferences) {
  std::srand(11);
  for (const bool flat : {false, true}) {
    const pinocchio::Model& model = robot(flat ? "talos" : "go2").pinocchio();
    ContactEkfOptions options;
    options.level_ground = true;
    ContactEkf ekf(model, flat ? "imu_link" : "imu", flat ? talosSoleCorners() : go2Feet(),
                   options);
    const int n = ekf.dimension();
    const RandomState x(ekf.numFeet());
    x.set(ekf);
    const VectorXd q =
        pinocchio::randomConfiguration(model, -VectorXd::Ones(model.nq), VectorXd::Ones(model.nq));
    ekf.footInImu(q, 0);  // the kinematics the tilt rows read
    const int rows = ekf.groundRows();
    ASSERT_EQ(rows, ekf.numFeet() - 1 + (flat ? 2 * ekf.numFeet() : 0));
    VectorXd h_row(n), unused(n);
    const double step = 1e-5;
    for (int i = 0; i < rows; ++i) {
      x.set(ekf);
      ekf.groundRow(i, h_row);
      const auto residual = [&](const VectorXd& delta) {
        x.set(ekf);
        ekf.retract(delta);
        return ekf.groundRow(i, unused);
      };
      VectorXd fd(n);
      for (int j = 0; j < n; ++j) {
        VectorXd dx = VectorXd::Zero(n);
        dx[j] = step;
        fd[j] = (residual(dx) - residual(-dx)) / (2 * step);
      }
      // The tilt rows drop their yaw column by design (contact_ekf.cpp: a level sole is level at
      // any yaw); every other column is the derivative.
      const bool tilt_row = i >= ekf.numFeet() - 1;
      if (tilt_row) {
        EXPECT_EQ(h_row[2], 0.0);
        fd[2] = 0;
      }
      // second-order terms step^2 |x| (|x| <= 3 here) and rounding eps / step
      EXPECT_LT((fd + h_row).norm(), 1e-8) << (flat ? "talos" : "go2") << " row " << i << "\nfd "
                                           << fd.transpose() << "\n-h " << -h_row.transpose();
      EXPECT_GT(h_row.norm(), 0.1);  // the row does depend on the state
    }
  }
}

// The error's propagation over dt: delta_1 = Phi delta_0 for the IMU kinematics of the mean, with
// delta measured on the manifold (localCore and the foot translations).
TEST(ContactEkf, PropagationJacobianMatchesFiniteDifferences) {
  std::srand(7);
  ContactEkf ekf(robot("go2").pinocchio(), "imu", go2Feet());
  const int n = ekf.dimension(), K = ekf.numFeet();
  const RandomState x(K);
  const Vector3 gyro(0.7, -0.4, 0.9), accel(0.5, -0.3, 9.6);
  const double dt = 1e-4;
  x.set(ekf);
  ekf.setImu(gyro, accel);
  MatrixXd Phi;
  ekf.propagationJacobian(dt, Phi);
  // the error state after one step from X = exp(delta0) X_hat
  const auto propagated = [&](const VectorXd& delta0) {
    x.set(ekf);
    ekf.setImu(gyro, accel);
    ekf.retract(delta0);
    ekf.propagateStep(dt);
    const CoreState truth = ekf.core();
    Eigen::Matrix<double, 3, Eigen::Dynamic> feet(3, K);
    for (int k = 0; k < K; ++k) feet.col(k) = ekf.footPosition(k);
    x.set(ekf);
    ekf.propagateStep(dt);
    const CoreState estimate = ekf.core();
    VectorXd delta(n);
    delta.head<15>() = heft::basestate::localCore(truth, estimate);
    const Matrix3 rotation = truth.R * estimate.R.transpose();
    Matrix3 right;
    pinocchio::Jexp3(Vector3(delta.head<3>()), right);
    for (int k = 0; k < K; ++k) {
      delta.segment<3>(15 + 3 * k) =
          right.transpose().lu().solve(Vector3(feet.col(k) - rotation * ekf.footPosition(k)));
    }
    return delta;
  };
  const double h = 1e-5;
  // Phi = exp(A dt) to second order against the discrete mean update: O(dt^2 |A|^2) per entry
  // (|A| ~ |g| + |v| + |p| ~ 12 here), far below a wrong or missing term O(dt |A|).
  const double tolerance = 3 * dt * dt * 12 * 12;
  for (int j = 0; j < n; ++j) {
    VectorXd dx = VectorXd::Zero(n);
    dx[j] = h;
    const VectorXd fd = (propagated(dx) - propagated(-dx)) / (2 * h);
    EXPECT_LT((fd - Phi.col(j)).norm(), tolerance)
        << "column " << j << "\nfd  " << fd.transpose() << "\nPhi " << Phi.col(j).transpose();
  }
  EXPECT_GT((Phi - MatrixXd::Identity(n, n)).norm(), 100 * tolerance);  // the test can fail
}

TEST(ContactEkf, LocalInvertsRetract) {
  std::srand(9);
  CoreState x;
  x.R = randomRotation();
  x.v = Vector3::Random();
  x.p = Vector3::Random();
  const Vector15 delta = 0.5 * Vector15::Random();
  const Vector15 back = heft::basestate::localCore(heft::basestate::retractCore(x, delta), x);
  EXPECT_LT((back - delta).norm(), 1e-12);
}

// ---- logs from MuJoCo (truth only scores) ----

struct SimulatedRun {
  heft::io::Log log;
  std::vector<ContactPoint> contacts;
};

SimulatedRun simulate(const std::string& scenario_name, double duration, const std::string& noise) {
  heft::sim::SimulationOptions options;
  options.duration = duration;
  options.noise = noise;
  options.seed = 4242;
  const heft::sim::Scenario& scenario = heft::sim::findScenario(scenario_name);
  heft::sim::SimulationResult result = heft::sim::simulate(scenario, options);
  EXPECT_TRUE(result.summary.ok()) << result.summary.report();
  SimulatedRun run;
  run.contacts = scenarioContacts(scenario, robot(scenario.robot), result.log);
  run.log = std::move(result.log);
  return run;
}

BaseStateErrors score(const std::string& scenario, double duration, const std::string& noise,
                      bool smooth = true, bool level_ground = false) {
  const SimulatedRun run = simulate(scenario, duration, noise);
  BaseStateOptions options;
  options.smooth = smooth;
  options.filter.level_ground = level_ground;
  const auto trajectory = heft::basestate::estimateBaseState(
      robot(heft::sim::findScenario(scenario).robot).pinocchio(), run.log, run.contacts, options);
  const BaseStateErrors e = heft::basestate::compareWithTruth(run.log, trajectory);
  std::printf(
      "%s %s %s%s: orientation %.3f deg (roll %.3f pitch %.3f yaw %.3f), velocity %.4f m/s, "
      "angular %.4f rad/s, drift %.4f m/min\n",
      scenario.c_str(), noise.c_str(), smooth ? "smoothed" : "forward",
      level_ground ? " level ground" : "", e.orientation_rmse_deg, e.roll_rmse_deg,
      e.pitch_rmse_deg, e.yaw_rmse_deg, e.velocity_rmse, e.angular_velocity_rmse,
      e.position_drift_per_minute);
  return e;
}

// Bounds: the values measured on these logs (seed 4242) times 1.5. Roll and pitch are observable
// through gravity (their error is mostly the accelerometer bias, which a static tilt cannot tell
// apart); yaw is not, so only roll, pitch and velocity are bounded.
TEST(BaseState, Go2TrotNominalAgainstTruth) {
  const BaseStateErrors forward = score("go2-trot", 5, "nominal", false);
  const BaseStateErrors smoothed = score("go2-trot", 5, "nominal");
  // measured: roll 0.338, pitch 0.156 deg, velocity 0.0017 m/s (forward 0.0055)
  EXPECT_LT(smoothed.roll_rmse_deg, 0.51);
  EXPECT_LT(smoothed.pitch_rmse_deg, 0.24);
  EXPECT_LT(smoothed.velocity_rmse, 0.0026);
  EXPECT_LT(forward.velocity_rmse, 0.0083);
  EXPECT_LT(smoothed.velocity_rmse, forward.velocity_rmse);
  EXPECT_GT(smoothed.samples, 4900);
}

TEST(BaseState, Go2StandNominalAgainstTruth) {
  const BaseStateErrors e = score("go2-stand", 5, "nominal");
  // measured: roll 0.337, pitch 0.158 deg, velocity 0.0012 m/s, drift 0.017 m/min
  EXPECT_LT(e.roll_rmse_deg, 0.51);
  EXPECT_LT(e.pitch_rmse_deg, 0.24);
  EXPECT_LT(e.velocity_rmse, 0.0018);
  EXPECT_LT(e.position_drift_per_minute, 0.026);
}

TEST(BaseState, Go2TrotHarshAgainstTruth) {
  const BaseStateErrors e = score("go2-trot", 5, "harsh");
  // measured: roll 1.644, pitch 0.394 deg, velocity 0.0106 m/s
  EXPECT_LT(e.roll_rmse_deg, 2.47);
  EXPECT_LT(e.pitch_rmse_deg, 0.59);
  EXPECT_LT(e.velocity_rmse, 0.016);
}

// TALOS: the IMU on the torso (two joints above the base), flat feet from sole corners, stepping.
TEST(BaseState, TalosSteppingAgainstTruth) {
  const BaseStateErrors e = score("talos-step-mass-wave", 6, "nominal");
  // measured: roll 0.349, pitch 0.080 deg, velocity 0.0030 m/s
  EXPECT_LT(e.roll_rmse_deg, 0.52);
  EXPECT_LT(e.pitch_rmse_deg, 0.12);
  EXPECT_LT(e.velocity_rmse, 0.0045);
}

// A level floor as a measurement (level_ground): the stance feet's heights and the soles' tilt
// separate roll and pitch from the accelerometer's bias, which the robot's small rotations do not.
// Bounds: the level-ground values measured on these logs (seed 4242) times 1.5; each is also below
// the estimate without the floor.
TEST(BaseState, LevelGroundSeparatesTiltFromTheAccelerometerBias) {
  const BaseStateErrors talos = score("talos-step-mass-wave", 6, "nominal", true, false);
  const BaseStateErrors talos_level = score("talos-step-mass-wave", 6, "nominal", true, true);
  // measured: roll 0.076, pitch 0.037 deg, velocity 0.0069 m/s (without the floor: 0.349, 0.080,
  // 0.0030: the sole tilt rows cost velocity while stepping, docs/basestate.md)
  EXPECT_LT(talos_level.roll_rmse_deg, 0.114);
  EXPECT_LT(talos_level.pitch_rmse_deg, 0.056);
  EXPECT_LT(talos_level.velocity_rmse, 0.0104);
  EXPECT_LT(talos_level.roll_rmse_deg, talos.roll_rmse_deg);
  const BaseStateErrors go2 = score("go2-stand", 5, "nominal", true, false);
  const BaseStateErrors go2_level = score("go2-stand", 5, "nominal", true, true);
  // measured: roll 0.0037, pitch 0.0056 deg, velocity 0.0014 m/s
  EXPECT_LT(go2_level.roll_rmse_deg, 0.0056);
  EXPECT_LT(go2_level.pitch_rmse_deg, 0.0084);
  EXPECT_LT(go2_level.velocity_rmse, 0.0021);
  EXPECT_LT(go2_level.roll_rmse_deg, go2.roll_rmse_deg);
}

TEST(BaseState, BadLogsNameTheField) {
  const SimulatedRun run = simulate("go2-stand", 0.3, "nominal");
  const pinocchio::Model& model = robot("go2").pinocchio();
  const auto expectError = [&](heft::io::Log log, const std::string& field) {
    try {
      heft::basestate::estimateBaseState(model, log, run.contacts);
      ADD_FAILURE() << "expected InputError naming " << field;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field, 0), 0u) << e.what();
    }
  };
  heft::io::Log no_imu = run.log;
  no_imu.imu.reset();
  expectError(no_imu, "imu");
  heft::io::Log bad_frame = run.log;
  bad_frame.imu->frame = "no_such_link";
  expectError(bad_frame, "imu/frame");
  heft::io::Log no_touchdown = run.log;
  no_touchdown.contacts->flags.setZero();
  expectError(no_touchdown, "contacts/flags");
  heft::io::Log no_contacts = run.log;
  no_contacts.contacts.reset();
  expectError(no_contacts, "contacts");
}

// A job's contact_points redefine a point the log also defines: the config wins, as in identify
// and estimate (docs/guide/identify.md), so that all of one run's users agree on the points.
TEST(BaseState, ConfigContactPointsOverrideTheLogs) {
  heft::io::Log log;
  log.contacts.emplace();
  log.contacts->names = {"left_heel", "right_heel"};
  log.contacts->frames = {"left_sole_link", "right_sole_link"};
  log.contacts->offsets = Eigen::MatrixXd::Zero(2, 3);
  log.contacts->offsets.col(0).setConstant(-0.1);
  const std::vector<ContactPoint> config = {
      {"left_heel", "left_sole_link", Vector3(-0.08, 0.0, 0.01)}};
  const auto points = heft::basestate::logContactPoints(robot("talos").pinocchio(), log, config);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].offset, Vector3(-0.08, 0.0, 0.01));
  EXPECT_EQ(points[1].frame, "right_sole_link");
  EXPECT_EQ(points[1].offset, Vector3(-0.1, 0.0, 0.0));
}

// update() and the IMU propagation allocate nothing, through touchdowns, lift-offs and flight.
TEST(ContactEkf, UpdateDoesNotAllocate) {
#if !defined(HEFT_CAN_COUNT_MALLOCS)
  GTEST_SKIP() << "malloc cannot be counted on this C library";
#endif
  const SimulatedRun run = simulate("go2-trot", 1.0, "nominal");
  const pinocchio::Model& model = robot("go2").pinocchio();
  ContactEkf ekf(model, run.log.imu->frame, run.contacts);
  const heft::io::JointBinding binding = heft::io::bindJoints(model, run.log.joints.names);
  const auto& joints = run.log.joints;
  const auto& imu = *run.log.imu;
  const auto& contacts = *run.log.contacts;
  VectorXd q = pinocchio::neutral(model);
  FlagVector flags(run.contacts.size());
  ekf.initialize(joints.time[0], Matrix3::Identity(), Vector3::Zero(), Vector3::Zero());
  long statuses[4] = {0};
  Eigen::Index i = 0, c = 0;
  const long mallocs = heft::test::countMallocs([&] {
    for (Eigen::Index k = 0; k < joints.time.size(); ++k) {
      const double t = joints.time[k];
      for (; i < imu.time.size() && imu.time[i] <= t; ++i) {
        ekf.propagateTo(imu.time[i]);
        ekf.setImu(imu.gyro.row(i).transpose(), imu.accel.row(i).transpose());
      }
      while (c + 1 < contacts.time.size() && contacts.time[c + 1] <= t) ++c;
      // every 50 ms a 10 ms flight, so lift-off and touchdown run inside the guard
      if (k % 50 < 10)
        flags.setZero();
      else
        flags = contacts.flags.row(c).transpose();
      for (int j = 0; j < binding.size(); ++j)
        q[binding.idx_q[j]] = joints.q(k, binding.log_column[j]);
      ++statuses[static_cast<int>(ekf.update(t, q, flags))];
    }
  });
  EXPECT_EQ(mallocs, 0);
  EXPECT_GT(statuses[static_cast<int>(heft::basestate::ContactEkfStatus::Updated)], 0);
  EXPECT_GT(statuses[static_cast<int>(heft::basestate::ContactEkfStatus::NoContact)], 0);
  EXPECT_GT(ekf.counters().touchdowns, 4);
}

}  // namespace
