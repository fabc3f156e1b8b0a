// heft::filter: the chi-square gate, the measurement against Pinocchio's RNEA (with external
// forces through Pinocchio's own fext path), the delayed differentiator, the EKF's mechanics
// (bias calibration, gating, rate limit, reset, determinism, no allocation, no exception on bad
// input). What the filter estimates is checked on MuJoCo logs further down (different simulator,
// payloads the filter does not know).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <Eigen/SVD>
#include <string>
#include <vector>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>

#include "heft/common/error.hpp"
#include "heft/filter/chi_square.hpp"
#include "heft/filter/inertial_ekf.hpp"
#include "heft/filter/measurement.hpp"
#include "heft/filter/signal_window.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/inertia/margin_guard.hpp"
#include "heft/model/contact_points.hpp"
#include "heft/model/model.hpp"
#include "support/malloc_counter.hpp"

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;
using heft::filter::ContactPoint;
using heft::filter::InertialEkf;
using heft::filter::InertialEkfOptions;
using heft::filter::MeasurementData;
using heft::filter::MeasurementModel;
using heft::filter::UpdateStatus;

const heft::model::RobotModel& talos() {
  static const heft::model::RobotModel robot = heft::model::loadRobot("talos");
  return robot;
}
const heft::model::RobotModel& panda() {
  static const heft::model::RobotModel robot = heft::model::loadRobot("panda");
  return robot;
}

// the eight sole corners of the TALOS scenarios (docs/sim.md)
std::vector<ContactPoint> talosSoleCorners() {
  std::vector<ContactPoint> out;
  for (const std::string side : {"left", "right"}) {
    for (double x : {0.1, -0.1}) {
      for (double y : {0.065, -0.065}) {
        out.push_back(
            {side + "_" + std::to_string(out.size()), side + "_sole_link", heft::Vector3(x, y, 0)});
      }
    }
  }
  return out;
}

struct State {
  VectorXd q, v, a;
};
State randomState(const pinocchio::Model& model, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  State s;
  VectorXd step(model.nv);
  for (int i = 0; i < model.nv; ++i) step[i] = 0.5 * normal(rng);
  s.q = pinocchio::integrate(model, pinocchio::neutral(model), step);
  s.v.resize(model.nv);
  s.a.resize(model.nv);
  for (int i = 0; i < model.nv; ++i) s.v[i] = normal(rng), s.a[i] = 2 * normal(rng);
  return s;
}

// ---- chi-square
// -----------------------------------------------------------------------------------

TEST(ChiSquare, QuantilesMatchTables) {
  // NIST/SEMATECH e-Handbook, table of the chi-square distribution's upper critical values
  EXPECT_NEAR(heft::filter::chiSquareQuantile(0.95, 1), 3.841, 1e-3);
  EXPECT_NEAR(heft::filter::chiSquareQuantile(0.99, 8), 20.090, 1e-3);
  EXPECT_NEAR(heft::filter::chiSquareQuantile(0.999, 12), 32.909, 1e-3);
  EXPECT_NEAR(heft::filter::chiSquareQuantile(0.999, 100), 149.449, 1e-3);
  for (int dof : {1, 2, 5, 12, 40}) {
    for (double p : {0.01, 0.5, 0.9, 0.9999}) {
      EXPECT_NEAR(heft::filter::chiSquareCdf(heft::filter::chiSquareQuantile(p, dof), dof), p,
                  1e-10);
    }
  }
  EXPECT_THROW(heft::filter::chiSquareQuantile(1.0, 3), heft::InputError);
  EXPECT_THROW(heft::filter::chiSquareQuantile(0.5, 0), heft::InputError);
  EXPECT_THROW(heft::filter::chiSquareCdf(-1, 3), heft::InputError);
}

// ---- measurement
// ----------------------------------------------------------------------------------

TEST(Measurement, RowsAreTheSupportOfTheEstimatedBodies) {
  const pinocchio::Model& model = talos().pinocchio();
  const auto torso = model.getJointId("torso_2_joint");
  const MeasurementModel mm(model, {torso}, {});
  std::vector<int> expected{
      0, 1, 2, 3, 4, 5, model.idx_vs[model.getJointId("torso_1_joint")], model.idx_vs[torso]};
  EXPECT_EQ(mm.rows(), expected);
  EXPECT_TRUE(mm.isBaseRow(5));
  EXPECT_FALSE(mm.isBaseRow(6));
}

// Y_S pi_S + tau_nom = RNEA of the full model on every row, and the contact term is Pinocchio's
// own external-force path: rnea(q, v, a, fext) = rnea(q, v, a) - sum J^T f.
TEST(Measurement, EqualsInverseDynamicsWithContactForces) {
  const pinocchio::Model& model = talos().pinocchio();
  const std::vector<pinocchio::JointIndex> bodies{model.getJointId("arm_left_4_joint"),
                                                  model.getJointId("torso_2_joint")};
  const auto contacts = talosSoleCorners();
  const MeasurementModel mm(model, bodies, contacts);
  MeasurementData md(mm);
  pinocchio::Data data(model);
  std::mt19937 rng(3);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 5; ++trial) {
    const State s = randomState(model, rng);
    VectorXd forces(3 * contacts.size());
    for (int i = 0; i < forces.size(); ++i) forces[i] = 100 * normal(rng);
    // external forces in the joint frames, as rnea's fext wants them
    pinocchio::forwardKinematics(model, data, s.q);
    pinocchio::container::aligned_vector<pinocchio::Force> fext(model.njoints,
                                                                pinocchio::Force::Zero());
    for (std::size_t c = 0; c < contacts.size(); ++c) {
      const pinocchio::Frame& frame = model.frames[model.getFrameId(contacts[c].frame)];
      const heft::Vector3 point_in_joint = frame.placement.act(contacts[c].offset);
      const heft::Vector3 f_local =
          data.oMi[frame.parentJoint].rotation().transpose() * forces.segment<3>(3 * c);
      fext[frame.parentJoint] += pinocchio::Force(f_local, point_in_joint.cross(f_local));
    }
    const VectorXd tau_obs = pinocchio::rnea(model, data, s.q, s.v, s.a, fext);
    heft::filter::computeMeasurement(mm, md, s.q, s.v, s.a, tau_obs, forces);
    const VectorXd predicted = md.Y * mm.nominalParameters();
    const double scale = md.delta_tau.cwiseAbs().maxCoeff();
    EXPECT_LT((md.delta_tau - predicted).cwiseAbs().maxCoeff(), 1e-10 * scale)
        << "trial " << trial << "\n"
        << md.delta_tau.transpose() << "\n"
        << predicted.transpose();
  }
}

// Measured wrenches at frames ([f; t] in the frame, about its origin) are Pinocchio's fext too.
TEST(Measurement, WrenchFramesEqualInverseDynamicsWithExternalWrenches) {
  const pinocchio::Model& model = talos().pinocchio();
  const std::vector<pinocchio::JointIndex> bodies{model.getJointId("arm_left_4_joint"),
                                                  model.getJointId("root_joint")};
  heft::filter::ExternalInputs inputs;
  inputs.wrench_frames = {"left_sole_link", "right_sole_link"};
  const MeasurementModel mm(model, bodies, {}, inputs);
  ASSERT_EQ(mm.numForceInputs(), 12);
  MeasurementData md(mm);
  pinocchio::Data data(model);
  std::mt19937 rng(4);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 5; ++trial) {
    const State s = randomState(model, rng);
    VectorXd wrenches(12);
    for (int i = 0; i < 12; ++i) wrenches[i] = (i % 6 < 3 ? 200 : 20) * normal(rng);
    pinocchio::forwardKinematics(model, data, s.q);
    pinocchio::container::aligned_vector<pinocchio::Force> fext(model.njoints,
                                                                pinocchio::Force::Zero());
    for (int w = 0; w < 2; ++w) {
      const pinocchio::Frame& frame = model.frames[model.getFrameId(inputs.wrench_frames[w])];
      // the wrench in the frame, moved to its joint's frame
      fext[frame.parentJoint] += frame.placement.act(
          pinocchio::Force(wrenches.segment<3>(6 * w), wrenches.segment<3>(6 * w + 3)));
    }
    const VectorXd tau_obs = pinocchio::rnea(model, data, s.q, s.v, s.a, fext);
    heft::filter::computeMeasurement(mm, md, s.q, s.v, s.a, tau_obs, wrenches);
    const double scale = md.delta_tau.cwiseAbs().maxCoeff();
    EXPECT_LT((md.delta_tau - md.Y * mm.nominalParameters()).cwiseAbs().maxCoeff(), 1e-10 * scale)
        << "trial " << trial;
  }
}

// Unknown contact wrenches, stance frames: with the true parameters, Delta tau - Y pi is exactly
// -A lambda (A the stance columns, lambda the world-aligned wrench at each sole origin), so its
// projection on the left null space of A vanishes; an algebraic check, no differences.
TEST(Measurement, ProjectedResidualVanishesWithTheTrueParameters) {
  const pinocchio::Model& model = talos().pinocchio();
  const auto trunk = model.getJointId("root_joint");
  heft::filter::ExternalInputs inputs;
  inputs.stance_frames = heft::model::groupContactFrames(talosSoleCorners());
  ASSERT_EQ(inputs.stance_frames.size(), 2u);
  ASSERT_TRUE(inputs.stance_frames[0].flat && inputs.stance_frames[1].flat);
  const MeasurementModel mm(model, {trunk}, {}, inputs);
  EXPECT_EQ(mm.numRows(), 18);  // the base and the twelve leg joints that hold the soles
  EXPECT_EQ(mm.maxConstraintColumns(), 12);
  MeasurementData md(mm);
  pinocchio::Data data(model);
  std::mt19937 rng(6);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 6; ++trial) {
    const State s = randomState(model, rng);
    pinocchio::forwardKinematics(model, data, s.q);
    // the right foot lifts on odd trials
    const bool right = trial % 2 == 0;
    VectorXd lambda = VectorXd::Zero(12);
    pinocchio::container::aligned_vector<pinocchio::Force> fext(model.njoints,
                                                                pinocchio::Force::Zero());
    for (int f = 0; f < (right ? 2 : 1); ++f) {
      for (int i = 0; i < 6; ++i) lambda[6 * f + i] = (i < 3 ? 300 : 30) * normal(rng);
      const pinocchio::Frame& frame = model.frames[model.getFrameId(inputs.stance_frames[f].frame)];
      const pinocchio::SE3 oMf = data.oMi[frame.parentJoint] * frame.placement;
      // world-aligned at the sole origin -> the joint frame
      const pinocchio::SE3 aligned(Eigen::Matrix3d::Identity(), oMf.translation());
      fext[frame.parentJoint] += data.oMi[frame.parentJoint].actInv(
          aligned.act(pinocchio::Force(lambda.segment<3>(6 * f), lambda.segment<3>(6 * f + 3))));
    }
    const VectorXd tau_obs = pinocchio::rnea(model, data, s.q, s.v, s.a, fext);
    const VectorXd flags = (VectorXd(2) << 1, right ? 1 : 0).finished();
    heft::filter::computeMeasurement(mm, md, s.q, s.v, s.a, tau_obs, flags);
    ASSERT_EQ(md.active_constraints, right ? 12 : 6);
    const VectorXd residual = md.delta_tau - md.Y * mm.nominalParameters();
    const double scale = residual.cwiseAbs().maxCoeff();
    EXPECT_GT(scale, 10);  // the contact wrenches are in it
    EXPECT_LT((residual + md.constraint * lambda).cwiseAbs().maxCoeff(), 1e-10 * scale);
    // N from an SVD: the projected residual vanishes, and p = m - rank(A)
    const Eigen::JacobiSVD<MatrixXd> svd(md.constraint, Eigen::ComputeFullU);
    const int rank = (svd.singularValues().array() > 1e-9 * svd.singularValues()[0]).count();
    EXPECT_EQ(rank, md.active_constraints);
    const MatrixXd N = svd.matrixU().rightCols(mm.numRows() - rank);
    EXPECT_LT((N.transpose() * residual).cwiseAbs().maxCoeff(), 1e-10 * scale);
    EXPECT_GT((N.transpose() * md.Y).norm(), 1e-3);  // and the parameters are still seen
  }
}

TEST(Measurement, FixedBaseArmWithoutContacts) {
  const pinocchio::Model& model = panda().pinocchio();
  const auto link7 = model.getJointId("panda_joint7");
  const MeasurementModel mm(model, {link7}, {});
  EXPECT_EQ(mm.numRows(), 7);  // joints 1-7; the fingers do not support link 7
  MeasurementData md(mm);
  pinocchio::Data data(model);
  std::mt19937 rng(5);
  const State s = randomState(model, rng);
  const VectorXd tau = pinocchio::rnea(model, data, s.q, s.v, s.a);
  heft::filter::computeMeasurement(mm, md, s.q, s.v, s.a, tau, VectorXd());
  EXPECT_LT((md.delta_tau - md.Y * mm.nominalParameters()).cwiseAbs().maxCoeff(),
            1e-10 * md.delta_tau.cwiseAbs().maxCoeff());
}

TEST(Measurement, BadBodiesAndContactsAreInputErrors) {
  const pinocchio::Model& model = talos().pinocchio();
  EXPECT_THROW(MeasurementModel(model, {}, {}), heft::InputError);
  EXPECT_THROW(MeasurementModel(model, {1000}, {}), heft::InputError);
  EXPECT_THROW(MeasurementModel(model, {3, 3}, {}), heft::InputError);
  EXPECT_THROW(MeasurementModel(model, {3}, {{"foot", "no_such_frame", heft::Vector3::Zero()}}),
               heft::InputError);
}

// ---- delayed differentiator
// -----------------------------------------------------------------------

// For v(t) quadratic the least-squares slope over a symmetric window is the derivative at its
// centre, exactly; every output refers to the centre sample, h samples ago.
TEST(SignalWindow, SlopeOfAQuadraticIsTheDerivativeAtTheCentre) {
  const int h = 4;
  heft::filter::SignalWindow window(1, 1, 0, h, 0.1);
  const double dt = 1e-3;
  auto v = [](double t) { return 2 + 3 * t - 7 * t * t; };
  for (int k = 0; k < 30; ++k) {
    const double t = 0.2 + k * dt;
    const auto result = window.push(t, VectorXd::Constant(1, t), VectorXd::Constant(1, v(t)),
                                    VectorXd::Constant(1, 5.0), VectorXd());
    if (k < 2 * h) {
      EXPECT_EQ(result, heft::filter::SignalWindow::Push::Filling);
      continue;
    }
    ASSERT_EQ(result, heft::filter::SignalWindow::Push::Ready);
    const double centre = t - h * dt;
    EXPECT_NEAR(window.time, centre, 1e-15);
    EXPECT_NEAR(window.q[0], centre, 1e-15);
    EXPECT_NEAR(window.a[0], 3 - 14 * centre, 1e-8);
    EXPECT_DOUBLE_EQ(window.tau[0], 5.0);
  }
}

// tau = m dv/dt for a cubic v (an acceleration that curves): the window's tau must be m times its
// a, which holds when tau is averaged with the weights the slope puts on the interval
// accelerations. A boxcar mean of tau is off by m v''' (var_box - var_slope) / 2, here
// 1.5 * 240 * (10 ms)^2 (1/3 - 1/5) / 2 = 2.4e-3 on a uniform grid; what remains is the trapezoid
// rule's error on each interval, m v''' dt^2 / 12 = 3e-5 (uniform grid; about as much with 20 %
// jitter).
TEST(SignalWindow, AveragedTorqueMatchesTheSlopeForACurvingAcceleration) {
  const int h = 10;
  const double m = 1.5, tolerance = 1e-4;  // about 3x the trapezoid error
  auto v = [](double t) { return 2 + 3 * t - 7 * t * t + 40 * t * t * t; };
  auto dv = [](double t) { return 3 - 14 * t + 120 * t * t; };
  for (const double jitter : {0.0, 0.2}) {
    heft::filter::SignalWindow window(1, 1, 0, h, 0.1);
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> uniform(-jitter, jitter);
    std::vector<double> taus;
    int ready = 0;
    double t = 0.2;
    for (int k = 0; k < 60; ++k) {
      t += 1e-3 * (1 + uniform(rng));
      taus.push_back(m * dv(t));
      const auto result = window.push(t, VectorXd::Constant(1, t), VectorXd::Constant(1, v(t)),
                                      VectorXd::Constant(1, m * dv(t)), VectorXd());
      if (result != heft::filter::SignalWindow::Push::Ready) continue;
      ++ready;
      EXPECT_NEAR(window.tau[0], m * window.a[0], tolerance) << "jitter " << jitter << ", k " << k;
      // the negative control: the boxcar mean the window used to take misses by far more (with
      // jitter the window's ends move, and the miss varies between 6e-4 and 2.4e-3)
      double boxcar = 0;
      for (int i = 0; i <= 2 * h; ++i) boxcar += taus[taus.size() - 1 - i] / (2 * h + 1);
      EXPECT_GT(std::abs(boxcar - m * window.a[0]), 5 * tolerance) << "jitter " << jitter;
    }
    EXPECT_EQ(ready, 60 - 2 * h);
  }
}

TEST(SignalWindow, RejectsBadSamplesAndRestartsAfterAGap) {
  heft::filter::SignalWindow window(1, 1, 0, 1, 0.01);
  const VectorXd one = VectorXd::Ones(1);
  using Push = heft::filter::SignalWindow::Push;
  EXPECT_EQ(window.push(0.0, one, one, one, VectorXd()), Push::Filling);
  EXPECT_EQ(window.push(0.0, one, one, one, VectorXd()), Push::Rejected);  // not after
  EXPECT_EQ(window.push(0.001, one * NAN, one, one, VectorXd()), Push::Rejected);
  EXPECT_EQ(window.push(0.001, one, one, one, VectorXd()), Push::Filling);
  EXPECT_EQ(window.push(0.002, one, one, one, VectorXd()), Push::Ready);
  EXPECT_EQ(window.push(0.5, one, one, one, VectorXd()), Push::Filling);  // gap: starts over
  EXPECT_THROW(heft::filter::SignalWindow(1, 1, 0, 0, 0.01), heft::InputError);
}

// ---- the filter's mechanics
// -----------------------------------------------------------------------

// A smooth motion of every joint, x_j(t) = amp sin(w_j t + j), w_j = 2 pi (f0 + df j): the
// displacement from the neutral configuration (integrate it for q), its rate and its
// acceleration (a = dv/dt exactly).
struct SineMotion {
  VectorXd step, v, a;
};
SineMotion sineMotion(int nv, double t, double f0, double df, double amp) {
  SineMotion m{VectorXd(nv), VectorXd(nv), VectorXd(nv)};
  for (int j = 0; j < nv; ++j) {
    const double w = 2 * M_PI * (f0 + df * j);
    m.step[j] = amp * std::sin(w * t + j);
    m.v[j] = amp * w * std::cos(w * t + j);
    m.a[j] = -amp * w * w * std::sin(w * t + j);
  }
  return m;
}

// A stream for the panda's last link from Pinocchio's RNEA with a heavier link 7 after
// `switch_time`. Only for mechanics (status codes, allocation, determinism): estimates are
// validated on MuJoCo.
struct PandaStream {
  std::vector<double> time;
  std::vector<VectorXd> q, v, tau;
};
PandaStream pandaStream(double duration, double switch_time, double added_mass) {
  const pinocchio::Model& nominal = panda().pinocchio();
  pinocchio::Model heavy = nominal;
  const auto link7 = nominal.getJointId("panda_joint7");
  heavy.inertias[link7] =
      heavy.inertias[link7] +
      pinocchio::Inertia::FromSphere(added_mass, 0.05)
          .se3Action(pinocchio::SE3(Eigen::Matrix3d::Identity(), Eigen::Vector3d(0.02, 0.0, 0.08)));
  pinocchio::Data dn(nominal), dh(heavy);
  PandaStream s;
  const double dt = 1e-3;
  for (double t = 0; t < duration; t += dt) {
    const SineMotion m = sineMotion(nominal.nv, t, 0.3, 0.11, 0.5);
    const VectorXd &q = m.step, &v = m.v, &a = m.a;  // the panda: q = the displacement
    s.time.push_back(t);
    s.q.push_back(q);
    s.v.push_back(v);
    s.tau.push_back(t < switch_time ? pinocchio::rnea(nominal, dn, q, v, a)
                                    : pinocchio::rnea(heavy, dh, q, v, a));
  }
  return s;
}

InertialEkf pandaFilter(const InertialEkfOptions& options) {
  const pinocchio::Model& model = panda().pinocchio();
  const auto link7 = model.getJointId("panda_joint7");
  return InertialEkf(model, {link7}, {},
                     heft::filter::MeasurementModel(model, {link7}, {}).nominalParameters(),
                     options);
}

TEST(InertialEkf, StatusSequenceCalibrationThenUpdates) {
  InertialEkfOptions options;
  options.difference_half_width = 3;
  options.calibration_duration = 0.05;
  InertialEkf filter = pandaFilter(options);
  const PandaStream s = pandaStream(0.2, 10, 0);
  std::vector<UpdateStatus> seen;
  for (std::size_t k = 0; k < s.time.size(); ++k)
    seen.push_back(filter.update(s.time[k], s.q[k], s.v[k], s.tau[k], VectorXd()));
  for (int k = 0; k < 6; ++k) EXPECT_EQ(seen[k], UpdateStatus::Filling) << k;
  EXPECT_EQ(seen[6], UpdateStatus::Calibrating);
  EXPECT_EQ(seen[6 + 50], UpdateStatus::Updated);
  // the centre sample is h = 3 samples old
  EXPECT_NEAR(filter.estimateTime(), s.time.back() - 3e-3, 1e-12);
  // the stream is the nominal model: the bias is the finite-difference error only, small
  EXPECT_LT(filter.bias().cwiseAbs().maxCoeff(), 0.05);
  const auto& c = filter.counters();
  EXPECT_EQ(c.samples, static_cast<long>(s.time.size()));
  EXPECT_EQ(c.rejected, 0);
  EXPECT_EQ(c.failures, 0);
}

TEST(InertialEkf, BadInputIsAStatusNotAnException) {
  InertialEkf filter = pandaFilter({});
  const PandaStream s = pandaStream(0.05, 10, 0);
  VectorXd q = s.q[0];
  q[2] = NAN;
  EXPECT_EQ(filter.update(0, q, s.v[0], s.tau[0], VectorXd()), UpdateStatus::RejectedInput);
  EXPECT_EQ(filter.update(0, s.q[0].head(3), s.v[0], s.tau[0], VectorXd()),
            UpdateStatus::RejectedInput);
  EXPECT_EQ(filter.update(0, s.q[0], s.v[0], s.tau[0], VectorXd::Zero(3)),
            UpdateStatus::RejectedInput);
  EXPECT_EQ(filter.counters().rejected, 3);
}

TEST(InertialEkf, OptionsAndPriorAreValidated) {
  InertialEkfOptions bad;
  bad.gate_probability = 1.5;
  EXPECT_THROW(bad.validate(), heft::InputError);
  bad = {};
  bad.joint_torque_std = 0;
  EXPECT_THROW(bad.validate(), heft::InputError);
  const pinocchio::Model& model = panda().pinocchio();
  const auto link7 = model.getJointId("panda_joint7");
  heft::Vector10 inconsistent = model.inertias[link7].toDynamicParameters();
  inconsistent[4] = -1;  // I_xx < 0
  EXPECT_THROW(InertialEkf(model, {link7}, {}, inconsistent), heft::InputError);
  EXPECT_THROW(InertialEkf(model, {link7}, {}, VectorXd::Zero(7)), heft::InputError);
}

// Same samples, same numbers, bit for bit; reset() restarts from the prior.
TEST(InertialEkf, DeterministicAndResettable) {
  const PandaStream s = pandaStream(0.6, 0.3, 2.0);
  auto run = [&](InertialEkf& f) {
    for (std::size_t k = 0; k < s.time.size(); ++k)
      f.update(s.time[k], s.q[k], s.v[k], s.tau[k], VectorXd());
    return VectorXd(f.estimate());
  };
  InertialEkfOptions options;
  options.calibration_duration = 0.1;
  InertialEkf a = pandaFilter(options), b = pandaFilter(options);
  const VectorXd first = run(a);
  EXPECT_EQ(first, run(b));
  a.reset();
  EXPECT_EQ(a.estimate(), pandaFilter(options).estimate());
  EXPECT_EQ(run(a), first);
}

// update() allocates nothing, in every branch it takes (filling, calibrating, updating, gating).
TEST(InertialEkf, UpdateDoesNotAllocate) {
#if !defined(HEFT_CAN_COUNT_MALLOCS)
  GTEST_SKIP() << "malloc cannot be counted on this C library";
#endif
  const PandaStream s = pandaStream(0.6, 0.3, 3.0);
  for (const auto state :
       {InertialEkfOptions::State::LogCholesky, InertialEkfOptions::State::LinearPi}) {
    InertialEkfOptions options;
    options.state = state;
    options.calibration_duration = 0.1;
    options.gate_threshold = 2;  // so that some updates are gated
    InertialEkf filter = pandaFilter(options);
    long statuses[8] = {0};
    const long mallocs = heft::test::countMallocs([&] {
      for (std::size_t k = 0; k < s.time.size(); ++k)
        ++statuses[static_cast<int>(
            filter.update(s.time[k], s.q[k], s.v[k], s.tau[k], VectorXd()))];
    });
    EXPECT_EQ(mallocs, 0) << heft::filter::toString(state);
    for (auto st : {UpdateStatus::Filling, UpdateStatus::Calibrating, UpdateStatus::Updated,
                    UpdateStatus::Gated}) {
      EXPECT_GT(statuses[static_cast<int>(st)], 0) << heft::filter::toString(st);
    }
  }
}

// Projected measurement (stance frames) on TALOS: exact signals of the nominal model with unknown
// sole wrenches; one foot lifts now and then, so the dimension changes. update() allocates nothing
// in any branch, the gate uses the projected dimension, and the trunk estimate stays at the truth.
TEST(InertialEkf, ProjectedUpdateDoesNotAllocateAndStaysAtTheTruth) {
  const pinocchio::Model& model = talos().pinocchio();
  const auto trunk = model.getJointId("root_joint");
  heft::filter::ExternalInputs inputs;
  inputs.stance_frames = heft::model::groupContactFrames(talosSoleCorners());
  const VectorXd prior = MeasurementModel(model, {trunk}, {}, inputs).nominalParameters();
  pinocchio::Data data(model);
  std::vector<VectorXd> qs, vs, taus, flags;
  std::vector<double> times;
  const double dt = 1e-3;
  for (double t = 0; t < 0.6; t += dt) {
    const SineMotion m = sineMotion(model.nv, t, 0.4, 0.07, 0.3);
    const VectorXd &v = m.v, &a = m.a;
    const VectorXd q = pinocchio::integrate(model, pinocchio::neutral(model), m.step);
    // q is only a configuration here: the filter differentiates v, and a is dv/dt
    pinocchio::forwardKinematics(model, data, q);
    const bool right = std::fmod(t, 0.2) < 0.12;  // the right foot lifts for 80 ms of every 200
    pinocchio::container::aligned_vector<pinocchio::Force> fext(model.njoints,
                                                                pinocchio::Force::Zero());
    for (int f = 0; f < (right ? 2 : 1); ++f) {
      const pinocchio::Frame& frame = model.frames[model.getFrameId(inputs.stance_frames[f].frame)];
      fext[frame.parentJoint] +=
          pinocchio::Force(heft::Vector3(10 * std::sin(3 * t + f), 5, 400 + 50 * std::cos(5 * t)),
                           heft::Vector3(2 * std::sin(7 * t), 3, 1));
    }
    // the base rows keep what RNEA needs there (a fictitious base wrench): the algebra under test
    // does not need the stream to be a physical motion
    const VectorXd tau = pinocchio::rnea(model, data, q, v, a, fext);
    times.push_back(t);
    qs.push_back(q);
    vs.push_back(v);
    taus.push_back(tau);
    flags.push_back((VectorXd(2) << 1, right ? 1 : 0).finished());
  }
  InertialEkfOptions options;
  options.difference_half_width = 2;
  options.calibration_duration = 0.05;
  options.gate_threshold = 0;
  InertialEkf filter(model, {trunk}, {}, inputs, prior, options);
  long statuses[8] = {0};
  std::vector<int> dimensions;
  dimensions.reserve(times.size());
  const long mallocs = heft::test::countMallocs([&] {
    for (std::size_t k = 0; k < times.size(); ++k) {
      ++statuses[static_cast<int>(filter.update(times[k], qs[k], vs[k], taus[k], flags[k]))];
      dimensions.push_back(filter.lastMeasurementDimension());
    }
  });
#if defined(HEFT_CAN_COUNT_MALLOCS)
  EXPECT_EQ(mallocs, 0);
#else
  (void)mallocs;
#endif
  EXPECT_GT(statuses[static_cast<int>(UpdateStatus::Updated)], 300);
  EXPECT_EQ(statuses[static_cast<int>(UpdateStatus::NumericalFailure)], 0);
  // 18 rows: 6 left with both soles down, 12 with one
  EXPECT_NE(std::find(dimensions.begin(), dimensions.end(), 6), dimensions.end());
  EXPECT_NE(std::find(dimensions.begin(), dimensions.end(), 12), dimensions.end());
  // nominal data: the estimate stays at the prior (the truth) within 1 % of the mass
  EXPECT_NEAR(filter.estimate()[0] / prior[0], 1.0, 0.01);
}

// Rows whose noise differs by orders of magnitude (a user who all but switches off the base
// moment rows) must not break the covariance: the short form P - K H P loses definiteness there
// (NaN standard deviations, then a Cholesky failure at every later update); the Joseph form does
// not. TALOS forearm, a 5 kg payload after 0.3 s, exact RNEA torques (fictitious base wrench).
TEST(InertialEkf, CovarianceStaysPositiveWithRowNoiseOrdersOfMagnitudeApart) {
  const pinocchio::Model& model = talos().pinocchio();
  const auto forearm = model.getJointId("arm_left_4_joint");
  pinocchio::Model heavy = model;
  heavy.inertias[forearm] =
      heavy.inertias[forearm] + pinocchio::Inertia::FromSphere(5.0, 0.05).se3Action(pinocchio::SE3(
                                    Eigen::Matrix3d::Identity(), Eigen::Vector3d(0, 0, -0.25)));
  const VectorXd prior = MeasurementModel(model, {forearm}, {}).nominalParameters();
  pinocchio::Data dn(model), dh(heavy);
  for (const auto state :
       {InertialEkfOptions::State::LogCholesky, InertialEkfOptions::State::LinearPi}) {
    InertialEkfOptions options;
    options.state = state;
    options.difference_half_width = 5;
    options.calibration_duration = 0.05;
    options.base_force_std = 1e4;
    options.base_moment_std = 1e4;
    options.joint_torque_std = 1e-3;
    InertialEkf filter(model, {forearm}, {}, prior, options);
    long failures = 0;
    bool finite_std = true;
    std::mt19937 rng(3);
    std::normal_distribution<double> noise;
    for (double t = 0; t < 3.0; t += 1e-3) {
      const SineMotion m = sineMotion(model.nv, t, 0.5, 0.05, 0.3);
      VectorXd v = m.v;
      const VectorXd& a = m.a;
      const VectorXd q = pinocchio::integrate(model, pinocchio::neutral(model), m.step);
      VectorXd tau =
          t < 0.3 ? pinocchio::rnea(model, dn, q, v, a) : pinocchio::rnea(heavy, dh, q, v, a);
      for (int j = 0; j < model.nv; ++j) tau[j] += 0.05 * noise(rng);
      v[3] += 4e-3 * noise(rng);  // a gyro's noise on the base roll rate
      failures += filter.update(t, q, v, tau, VectorXd()) == UpdateStatus::NumericalFailure;
      const VectorXd std = filter.piStandardDeviation();
      finite_std = finite_std && std.allFinite();
    }
    EXPECT_EQ(failures, 0) << static_cast<int>(state);
    EXPECT_TRUE(finite_std) << static_cast<int>(state);
    // the covariance's smallest eigenvalue stays >= 0 up to rounding of its largest
    const Eigen::SelfAdjointEigenSolver<MatrixXd> eigen(filter.covariance());
    EXPECT_GE(eigen.eigenvalues().minCoeff(), -1e-12 * eigen.eigenvalues().maxCoeff())
        << static_cast<int>(state);
  }
}

// The log-Cholesky state keeps every estimate consistent even when the data push hard (a gain
// far too high, a wrong prior): the baseline on pi is allowed to leave the set, this one is not.
TEST(InertialEkf, LogCholeskyEstimateIsAlwaysConsistent) {
  const PandaStream s = pandaStream(1.0, 0.2, 4.0);
  InertialEkfOptions options;
  options.calibration_duration = 0.05;
  options.process_std_log = 5;
  options.process_std_length = 0.5;
  options.joint_torque_std = 0.01;
  options.gating = false;
  InertialEkf filter = pandaFilter(options);
  for (std::size_t k = 0; k < s.time.size(); ++k) {
    filter.update(s.time[k], s.q[k], s.v[k], s.tau[k], VectorXd());
    ASSERT_TRUE(heft::inertia::checkConsistency(filter.estimate().head<10>()).consistent) << k;
    ASSERT_TRUE(heft::inertia::checkConsistency(filter.filterEstimate().head<10>()).consistent)
        << k;
  }
}

// Output rate limit: the output mass moves at most max_mass_rate dt per update until it first
// reaches the filter's estimate.
TEST(InertialEkf, OutputMassRateIsLimited) {
  const PandaStream s = pandaStream(1.0, 0.1, 3.0);
  InertialEkfOptions options;
  options.calibration_duration = 0.05;
  options.max_mass_rate = 1.0;
  options.rate_limit_always = true;
  options.process_std_log = 2;
  InertialEkf filter = pandaFilter(options);
  double last_mass = filter.estimate()[0], last_time = 0;
  bool limited = false;
  for (std::size_t k = 0; k < s.time.size(); ++k) {
    const auto st = filter.update(s.time[k], s.q[k], s.v[k], s.tau[k], VectorXd());
    if (st == UpdateStatus::Filling || st == UpdateStatus::Calibrating) {
      last_time = filter.estimateTime();
      continue;
    }
    const double dt = filter.estimateTime() - last_time;
    EXPECT_LE(std::abs(filter.estimate()[0] - last_mass), 1.0 * dt + 1e-12) << k;
    limited = limited || std::abs(filter.estimate()[0] - filter.filterEstimate()[0]) > 1e-6;
    last_mass = filter.estimate()[0];
    last_time = filter.estimateTime();
  }
  EXPECT_TRUE(limited) << "the test should exercise the limiter";
}

// The EKF's margin guard on a body next to a line mass (principal moments about the COM 1e-12, 0.1,
// 0.1 kg m^2): the relative margin read off theta equals checkConsistency's; the lift brings it to
// the target exactly, adds the same amount to each principal moment, keeps mass and COM, and
// allocates nothing; a body already inside is left bit for bit.
TEST(InertialEkf, MarginGuardLiftsALineMassAndKeepsMassAndCom) {
  const double target = 2 * heft::inertia::kConsistencyMargin;
  const heft::Vector10 thin = heft::inertia::piFromMassComInertia(
      2.0, heft::Vector3(0.1, -0.05, 0.2), heft::Vector3(1e-12, 0.1, 0.1).asDiagonal());
  heft::Vector10 theta = heft::inertia::logCholeskyFromPi(thin);
  const heft::inertia::ConsistencyReport before = heft::inertia::checkConsistency(thin);
  EXPECT_NEAR(heft::inertia::logCholeskyRelativeMargin(theta), before.relative_margin, 1e-12);
  EXPECT_FALSE(heft::inertia::checkConsistencyMargin(thin).consistent);
  bool lifted = false;
  const long mallocs = heft::test::countMallocs(
      [&] { lifted = heft::inertia::liftLogCholeskyToMargin(theta, target); });
#if defined(HEFT_CAN_COUNT_MALLOCS)
  EXPECT_EQ(mallocs, 0);
#endif
  ASSERT_TRUE(lifted);
  const heft::Vector10 pi = heft::inertia::piFromLogCholesky(theta);
  const heft::inertia::ConsistencyReport after = heft::inertia::checkConsistencyMargin(pi);
  EXPECT_TRUE(after.consistent);
  EXPECT_NEAR(after.relative_margin, target, 1e-9 * target);
  EXPECT_NEAR(heft::inertia::mass(pi), 2.0, 1e-12);
  EXPECT_LT((heft::inertia::centerOfMass(pi) - heft::Vector3(0.1, -0.05, 0.2)).norm(), 1e-12);
  const heft::Vector3 growth = after.principal_moments - before.principal_moments;
  EXPECT_NEAR(growth[0], growth[1], 1e-12);
  EXPECT_NEAR(growth[1], growth[2], 1e-12);
  EXPECT_GT(growth[0], 0);

  heft::Vector10 inside = heft::inertia::logCholeskyFromPi(heft::inertia::piFromMassComInertia(
      1.0, heft::Vector3::Zero(), heft::Vector3(0.01, 0.02, 0.025).asDiagonal()));
  const heft::Vector10 copy = inside;
  EXPECT_FALSE(heft::inertia::liftLogCholeskyToMargin(inside, target));
  EXPECT_EQ(inside, copy);
}

}  // namespace
