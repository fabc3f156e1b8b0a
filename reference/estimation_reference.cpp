// heft-reference-estimation IN OUT
//
// Crocoddyl's FDDP on heft's batch MAP estimation problem, with the parameters theta appended to
// the state (PRIME's augmented state, identity dynamics on theta). This program is the reference
// solver of tests/reference_test.cpp and bench/estimation_bench.cpp; heft writes the problem
// (heft::estimation::writeReferenceProblem), this program solves it and writes the result. It never
// links heft: crocoddyl 3.2.1 runs on libpinocchio 4.0.0 (docs/install.md).
//
// The problem (heft's Problem of MultibodyStageModel stages, include/heft/estimation/
// multibody_stage.hpp): a fixed-base robot or a free-flyer base; x = (q, v) on the robot's
// manifold, w = (w_q, w_tau) in its tangent space,
//   min 0.5 |L_x (x_0 ⊖ xbar)|^2 + 0.5 |L_theta (theta - thetabar)|^2
//       + sum_{k<N} 0.5 |r_k(x_k, w_k; theta)|^2 + 0.5 |r_N(x_N)|^2
//   s.t. x_{k+1} = f_k(x_k, w_k; theta):
//     v_s = v, or v^+ = IMPULSE(q, v; theta) at a touchdown (the new contact set stops),
//     a   = FD(q, v_s, tau_k + w_tau; theta) or the rigid contact dynamics of the stage's feet,
//     v'  = v_s + dt a,  q' = (q ⊕ dt v') ⊕ w_q.
//   r_k = [w .* process_info_k; encoders; joint velocities; gyro; IMU orientation (log3);
//          accelerometer (specific force at the IMU); motion-capture position and orientation],
//   every sensor row whitened, a missing sample weighted 0 (heft's rows, same order).
// The dynamics are Crocoddyl's own action models: DifferentialActionModelFreeFwdDynamics (flight,
// fixed base), DifferentialActionModelContactFwdDynamics with one ContactModel3D per foot
// (LOCAL_WORLD_ALIGNED, no Baumgarte gains: heft's point contacts) and
// ActionModelImpulseFwdDynamics (restitution 0) at touchdowns, on a per-stage copy of the robot
// whose identified inertias follow theta. Their derivatives in x and tau are Crocoddyl's; the theta
// derivatives use their KKT inverses: d a / d theta = -Kinv_aa Y_S(q, v_s, a) d pi / d theta
// (M^{-1} in flight), d v^+ / d theta = -Kinv_aa Y0_S(q, 0, v^+ - v) d pi / d theta with Y0 the
// regressor without gravity, pi(theta) by pinocchio::LogCholeskyParameters (the map heft uses).
//
// Crocoddyl form, T = N + 1 running nodes and a terminal node, y = [q, v, theta] on the product
// of the robot's state manifold and R^np (AugmentedState below):
//   node 0 (anchor): x0 = y_0 = [xbar, thetabar] is fixed, u = [dx, dtheta], y_1 = y_0 ⊕ u, cost
//     0.5 |L_x dx|^2 + 0.5 |L_theta dtheta|^2: x_0 = xbar ⊕ dx, theta = thetabar + dtheta, so the
//     arrival and parameter priors of heft's problem, with the same optimum;
//   node k + 1 (heft's stage k): u = w_k, y_{k+2} = [f_k(x, w; theta), theta], cost 0.5 |r_k|^2;
//   terminal node: heft's terminal stage, 0.5 |r_N|^2.
// The Hessians are Gauss-Newton (Lxx = R_y^T R_y, Luu, Lxu likewise), as heft's.
//
// Stopping: heft stops when the directional derivative of its step |d1| <= tol (1 + cost).
// Crocoddyl's stop is the predicted decrease of the full step, which at a Gauss-Newton step is
// half that directional derivative; a callback sets th_stop = 0.5 tol (1 + cost) every iteration
// (Crocoddyl tests it after the callbacks), and FDDP also needs a feasible iterate (every gap
// closed, which a full step does).
//
// IN (text; one record per line, the first token names it; numbers as written by %.17g;
// placements P are 12 numbers: the rotation row-major, then the translation, in the parent joint):
//   heft-reference-estimation 2
//   urdf PATH                          the robot (the rest of the line)
//   base fixed|free-flyer              root joint added to the URDF's tree
//   sizes nq nv np N nj
//   gravity gx gy gz                   linear gravity of heft's model [m/s^2]
//   inertia j pi_0..pi_9               one per joint j = 1..njoints-1: heft's inertias (Pinocchio
//                                      order), written over the URDF's
//   armature a_0..a_{nv-1}
//   identified j_1 .. j_{np/10}        joint indices of S (theta's blocks in this order)
//   parametrization log-cholesky
//   dt DT                              [s]
//   encoders j_1 .. j_nj               joint of each encoder row (one-coordinate joints)
//   sensors V I A M                    0|1: joint velocities, IMU (gyro and orientation),
//                                      accelerometer, motion capture
//   stds enc vel gyro orient acc mpos morient   sensor standard deviations
//   imu_frame j P                      when I: the IMU's placement on joint j (the free flyer)
//   mocap_frame j P                    when M: the tracked frame's placement on joint j
//   contact_frames m                   then m records:
//   contact_frame i j P                contact point i on joint j
//   prior_x_mean x[nq + nv]
//   prior_x_sqrt_info L[(2nv)^2]       row-major
//   prior_theta_mean t[np]
//   prior_theta_sqrt_info L[np^2]      row-major
//   theta_guess t[np]
//   then for k = 0..N (the last one terminal, without w, process_info, tau, contacts):
//   knot k x[nq + nv] w[2nv]           (terminal: "terminal N x[nq + nv]") the initial guess
//   process_info i[2nv]                1 / std of (w_q, w_tau) at this stage
//   tau t[nv]                          logged generalized force
//   joints zq[nj] (zv[nj] when V)
//   contacts impulse m c_1..c_m        impulse 0|1 (touchdown), the contact points held
//   imu g z_gyro[3] o z_quat[4] a z_acc[3]   when I: flags 0|1 and samples (quaternion x y z w)
//   mocap h p[3] quat[4]               when M
//   solver max_iterations tolerance threads repetitions
//   checks m                           then m records, each a point where stage k is evaluated:
//   check k x[nq + nv] w[2nv] theta[np]   (f(x, w; theta) and the stage cost are written back)
//   end
// OUT:
//   heft-reference-estimation-result 1
//   converged 0|1                      SolverFDDP::solve's return value (first repetition)
//   iterations n                       iterations run (directions and line searches; callbacks)
//   solver_iter i                      SolverFDDP::get_iter()
//   initial_cost J0                    ShootingProblem::calc at the initial guess
//   cost J                             SolverFDDP::get_cost() at the end
//   stop s                             SolverFDDP::get_stop() at the end
//   th_stop t                          the threshold of the last test
//   seconds s_1 .. s_R                 wall time of solve() alone, one per repetition
//   theta t[np]                        theta of the last node's state (all nodes' agree)
//   cost_history c_1 .. c_n            cost after each iteration (first repetition)
//   time_history t_1 .. t_n            seconds from the start of solve() to the end of each
//                                      iteration (first repetition; read in the callback)
//   feasible_history f_1 .. f_n        1 if the iterate after each iteration has every gap
//                                      closed (FDDP's is_feasible), else 0
//   check k xnext[nq + nv] cost        one line per check: f(x, w; theta), 0.5 |r_k(x, w)|^2
//   check_jacobians k ndx np F[ndx x (ndx + np)] G[ndx x ndx]   after each check line (ndx = 2nv):
//                                      the robot's rows of d f / d(x, theta) and d f / d w,
//                                      row-major
//   end
// Exit code 0 on success (converged or not), 2 on a malformed input.
#include <crocoddyl/core/action-base.hpp>
#include <crocoddyl/core/costs/cost-sum.hpp>
#include <crocoddyl/core/optctrl/shooting.hpp>
#include <crocoddyl/core/solver-base.hpp>
#include <crocoddyl/core/solvers/fddp.hpp>
#include <crocoddyl/core/state-base.hpp>
#include <crocoddyl/multibody/actions/contact-fwddyn.hpp>
#include <crocoddyl/multibody/actions/free-fwddyn.hpp>
#include <crocoddyl/multibody/actions/impulse-fwddyn.hpp>
#include <crocoddyl/multibody/actuations/full.hpp>
#include <crocoddyl/multibody/contacts/contact-3d.hpp>
#include <crocoddyl/multibody/contacts/multiple-contacts.hpp>
#include <crocoddyl/multibody/impulses/impulse-3d.hpp>
#include <crocoddyl/multibody/impulses/multiple-impulses.hpp>
#include <crocoddyl/multibody/states/multibody.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/multibody/joint/joint-free-flyer.hpp>
#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/spatial/explog.hpp>
#include <pinocchio/spatial/inertia.hpp>
#include <pinocchio/spatial/skew.hpp>

namespace {

using Eigen::Matrix3d;
using Eigen::MatrixXd;
using Eigen::Vector3d;
using Eigen::VectorXd;

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the problem file ------------------------------------------------------------------------

struct Knot {
  VectorXd x, w, info, tau, joint_q, joint_v;  // w, info, tau: running knots only
  bool impulse = false;
  std::vector<int> contacts;  // indices into EstimationInput::contact_frames
  bool has_gyro = false, has_orientation = false, has_accel = false, has_mocap = false;
  Vector3d gyro = Vector3d::Zero(), accel = Vector3d::Zero(), mocap_position = Vector3d::Zero();
  Eigen::Quaterniond orientation = Eigen::Quaterniond::Identity();
  Eigen::Quaterniond mocap_orientation = Eigen::Quaterniond::Identity();
};

struct FramePlacement {
  int joint = 0;
  pinocchio::SE3 placement = pinocchio::SE3::Identity();
};

struct EstimationInput {
  std::string urdf;
  bool free_flyer = false;
  int nq = 0, nv = 0, np = 0, N = 0, nj = 0;
  Vector3d gravity = Vector3d::Zero();
  std::vector<std::pair<int, Eigen::Matrix<double, 10, 1>>> inertias;
  VectorXd armature;
  std::vector<int> identified;
  double dt = 0;
  std::vector<int> encoders;
  bool joint_velocities = false, imu = false, accelerometer = false, mocap = false;
  double encoder_std = 0, velocity_std = 0, gyro_std = 0, orientation_std = 0, accel_std = 0,
         mocap_position_std = 0, mocap_orientation_std = 0;
  FramePlacement imu_frame, mocap_frame;
  std::vector<FramePlacement> contact_frames;
  VectorXd x_mean, theta_mean, theta_guess;
  MatrixXd x_sqrt_info, theta_sqrt_info;
  std::vector<Knot> knots;  // N + 1
  int max_iterations = 100, threads = 1, repetitions = 1;
  double tolerance = 1e-9;
  struct Check {
    int knot = 0;
    VectorXd x, w, theta;
  };
  std::vector<Check> checks;
};

class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}
  // Starts the next record and checks its name.
  void record(const std::string& name) {
    std::string line;
    do {
      if (!std::getline(in_, line)) throw InputError("expected record '" + name + "', got EOF");
      ++line_number_;
    } while (line.empty());
    line_.clear();
    line_.str(line);
    std::string tag;
    line_ >> tag;
    if (tag != name)
      throw InputError("line " + std::to_string(line_number_) + ": expected record '" + name +
                       "', got '" + tag + "'");
    name_ = name;
  }
  std::string rest() {
    std::string s;
    std::getline(line_ >> std::ws, s);
    return s;
  }
  double number() {
    double x = 0;
    if (!(line_ >> x)) fail("missing or malformed number");
    return x;
  }
  int integer() {
    const double x = number();
    if (x != std::floor(x)) fail("expected an integer");
    return static_cast<int>(x);
  }
  bool flag() {
    const int f = integer();
    if (f != 0 && f != 1) fail("expected 0 or 1");
    return f == 1;
  }
  VectorXd vector(int n) {
    VectorXd v(n);
    for (int i = 0; i < n; ++i) v(i) = number();
    return v;
  }
  MatrixXd matrix(int rows, int cols) {
    MatrixXd m(rows, cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) m(i, j) = number();
    return m;
  }
  Eigen::Quaterniond quaternion() {  // x y z w
    const VectorXd c = vector(4);
    Eigen::Quaterniond q(c(3), c(0), c(1), c(2));
    if (!(std::abs(q.norm() - 1) < 1e-6)) fail("expected a unit quaternion");
    return q.normalized();
  }
  FramePlacement placement() {
    FramePlacement f;
    f.joint = integer();
    const MatrixXd R = matrix(3, 3);
    const Vector3d p = vector(3);
    f.placement = pinocchio::SE3(Matrix3d(R), p);
    return f;
  }
  std::string word() {
    std::string s;
    if (!(line_ >> s)) fail("missing word");
    return s;
  }
  void done() {
    std::string extra;
    if (line_ >> extra) fail("unexpected '" + extra + "'");
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("line " + std::to_string(line_number_) + ", record '" + name_ + "': " + what);
  }

 private:
  std::istream& in_;
  std::istringstream line_;
  std::string name_;
  int line_number_ = 0;
};

EstimationInput readInput(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot open " + path);
  Reader r(file);
  EstimationInput p;
  r.record("heft-reference-estimation");
  if (r.integer() != 2) r.fail("unsupported format version (expected 2)");
  r.record("urdf");
  p.urdf = r.rest();
  r.record("base");
  const std::string base = r.word();
  if (base != "fixed" && base != "free-flyer") r.fail("expected fixed or free-flyer");
  p.free_flyer = base == "free-flyer";
  r.done();
  r.record("sizes");
  p.nq = r.integer();
  p.nv = r.integer();
  p.np = r.integer();
  p.N = r.integer();
  p.nj = r.integer();
  r.done();
  if (p.nq < p.nv || p.nv < 1 || p.np % 10 != 0 || p.N < 1 || p.nj < 0)
    r.fail("expected nq >= nv >= 1, np a multiple of 10, N >= 1, nj >= 0");
  r.record("gravity");
  p.gravity = r.vector(3);
  r.done();
  const int joints = p.free_flyer ? p.nv - 5 : p.nv;  // one-coordinate joints (checked later)
  for (int j = 1; j <= joints; ++j) {
    r.record("inertia");
    const int joint = r.integer();
    p.inertias.emplace_back(joint, r.vector(10));
    r.done();
  }
  r.record("armature");
  p.armature = r.vector(p.nv);
  r.done();
  r.record("identified");
  for (int k = 0; k < p.np / 10; ++k) p.identified.push_back(r.integer());
  r.done();
  r.record("parametrization");
  if (r.word() != "log-cholesky") r.fail("only log-cholesky");
  r.done();
  r.record("dt");
  p.dt = r.number();
  r.done();
  r.record("encoders");
  for (int i = 0; i < p.nj; ++i) p.encoders.push_back(r.integer());
  r.done();
  r.record("sensors");
  p.joint_velocities = r.flag();
  p.imu = r.flag();
  p.accelerometer = r.flag();
  p.mocap = r.flag();
  r.done();
  if (p.accelerometer && !p.imu) r.fail("an accelerometer needs the IMU");
  r.record("stds");
  for (double* s : {&p.encoder_std, &p.velocity_std, &p.gyro_std, &p.orientation_std, &p.accel_std,
                    &p.mocap_position_std, &p.mocap_orientation_std}) {
    *s = r.number();
    if (!(*s > 0)) r.fail("expected standard deviations > 0");
  }
  r.done();
  if (p.imu) {
    r.record("imu_frame");
    p.imu_frame = r.placement();
    r.done();
  }
  if (p.mocap) {
    r.record("mocap_frame");
    p.mocap_frame = r.placement();
    r.done();
  }
  r.record("contact_frames");
  const int m = r.integer();
  r.done();
  for (int i = 0; i < m; ++i) {
    r.record("contact_frame");
    if (r.integer() != i) r.fail("expected contact frame " + std::to_string(i));
    p.contact_frames.push_back(r.placement());
    r.done();
  }
  const int ndx = 2 * p.nv;
  r.record("prior_x_mean");
  p.x_mean = r.vector(p.nq + p.nv);
  r.done();
  r.record("prior_x_sqrt_info");
  p.x_sqrt_info = r.matrix(ndx, ndx);
  r.done();
  r.record("prior_theta_mean");
  p.theta_mean = r.vector(p.np);
  r.done();
  r.record("prior_theta_sqrt_info");
  p.theta_sqrt_info = r.matrix(p.np, p.np);
  r.done();
  r.record("theta_guess");
  p.theta_guess = r.vector(p.np);
  r.done();
  for (int k = 0; k <= p.N; ++k) {
    const bool terminal = k == p.N;
    Knot knot;
    r.record(terminal ? "terminal" : "knot");
    if (r.integer() != k) r.fail("expected knot " + std::to_string(k));
    knot.x = r.vector(p.nq + p.nv);
    if (!terminal) knot.w = r.vector(ndx);
    r.done();
    if (!terminal) {
      r.record("process_info");
      knot.info = r.vector(ndx);
      r.done();
      r.record("tau");
      knot.tau = r.vector(p.nv);
      r.done();
    }
    r.record("joints");
    knot.joint_q = r.vector(p.nj);
    if (p.joint_velocities) knot.joint_v = r.vector(p.nj);
    r.done();
    if (!terminal) {
      r.record("contacts");
      knot.impulse = r.flag();
      const int held = r.integer();
      for (int i = 0; i < held; ++i) {
        const int c = r.integer();
        if (c < 0 || c >= m) r.fail("contact index out of range");
        knot.contacts.push_back(c);
      }
      r.done();
      if (knot.impulse && knot.contacts.empty()) r.fail("an impulse needs contacts");
    }
    if (p.imu) {
      r.record("imu");
      knot.has_gyro = r.flag();
      knot.gyro = r.vector(3);
      knot.has_orientation = r.flag();
      knot.orientation = r.quaternion();
      knot.has_accel = r.flag();
      knot.accel = r.vector(3);
      r.done();
    }
    if (p.mocap) {
      r.record("mocap");
      knot.has_mocap = r.flag();
      knot.mocap_position = r.vector(3);
      knot.mocap_orientation = r.quaternion();
      r.done();
    }
    p.knots.push_back(std::move(knot));
  }
  r.record("solver");
  p.max_iterations = r.integer();
  p.tolerance = r.number();
  p.threads = r.integer();
  p.repetitions = r.integer();
  r.done();
  if (p.max_iterations < 1 || !(p.tolerance > 0) || p.threads < 1 || p.repetitions < 1)
    r.fail("expected max_iterations, threads, repetitions >= 1, tolerance > 0");
  r.record("checks");
  const int n_checks = r.integer();
  r.done();
  for (int i = 0; i < n_checks; ++i) {
    r.record("check");
    EstimationInput::Check c;
    c.knot = r.integer();
    if (c.knot < 0 || c.knot >= p.N) r.fail("knot out of range");
    c.x = r.vector(p.nq + p.nv);
    c.w = r.vector(ndx);
    c.theta = r.vector(p.np);
    r.done();
    p.checks.push_back(std::move(c));
  }
  r.record("end");
  return p;
}

// ---- the robot -------------------------------------------------------------------------------

// Frames the problem names, added under names of their own so that both sides use the same
// placements whatever either URDF parser does with the file's links.
struct Frames {
  pinocchio::FrameIndex imu = 0, mocap = 0;
  std::vector<pinocchio::FrameIndex> contacts;
};

// The URDF's tree with heft's inertias, armature and gravity written over it, so that both sides
// integrate the same model whatever either parser does with the file's inertials.
pinocchio::Model buildModel(const EstimationInput& p, Frames& frames) {
  pinocchio::Model model;
  if (p.free_flyer)
    pinocchio::urdf::buildModel(p.urdf, pinocchio::JointModelFreeFlyer(), model);
  else
    pinocchio::urdf::buildModel(p.urdf, model);
  if (model.nq != p.nq || model.nv != p.nv)
    throw InputError("urdf: expected nq " + std::to_string(p.nq) + ", nv " + std::to_string(p.nv) +
                     "; the file gives nq " + std::to_string(model.nq) + ", nv " +
                     std::to_string(model.nv));
  const int first = p.free_flyer ? 2 : 1;  // the first one-coordinate joint
  if (model.njoints - 1 != static_cast<int>(p.inertias.size()))
    throw InputError("inertia: expected one record per joint");
  for (int j = first; j < model.njoints; ++j)
    if (model.nqs[j] != 1 || model.nvs[j] != 1)
      throw InputError("urdf: joint " + model.names[j] + " is not a one-coordinate joint");
  auto add = [&](const FramePlacement& f, const std::string& name) {
    if (f.joint < 0 || f.joint >= model.njoints) throw InputError(name + ": joint out of range");
    return model.addFrame(pinocchio::Frame(name, static_cast<pinocchio::JointIndex>(f.joint),
                                           f.placement, pinocchio::OP_FRAME));
  };
  if (p.imu) frames.imu = add(p.imu_frame, "heft_imu");
  if (p.mocap) frames.mocap = add(p.mocap_frame, "heft_mocap");
  for (std::size_t i = 0; i < p.contact_frames.size(); ++i)
    frames.contacts.push_back(add(p.contact_frames[i], "heft_contact_" + std::to_string(i)));
  if ((p.imu && p.imu_frame.joint != 1) || (p.mocap && p.mocap_frame.joint != 1) ||
      ((p.imu || p.mocap) && !p.free_flyer))
    throw InputError("imu_frame, mocap_frame: expected frames on the free flyer (joint 1)");
  for (const auto& [joint, pi] : p.inertias) {
    if (joint < 1 || joint >= model.njoints) throw InputError("inertia: joint out of range");
    model.inertias[joint] = pinocchio::Inertia::FromDynamicParameters(pi);
  }
  model.armature = p.armature;
  model.gravity.linear(p.gravity);
  model.gravity.angular().setZero();
  for (int j : p.identified)
    if (j < 1 || j >= model.njoints) throw InputError("identified: joint out of range");
  for (int j : p.encoders)
    if (j < first || j >= model.njoints) throw InputError("encoders: joint out of range");
  return model;
}

Matrix3d baseRotation(const Eigen::Ref<const VectorXd>& x) {
  // Pinocchio's free-flyer quaternion is stored x, y, z, w at q[3..6].
  return Eigen::Quaterniond(x(6), x(3), x(4), x(5)).normalized().toRotationMatrix();
}

// ---- the augmented state: the robot's (q, v) times R^np --------------------------------------

class AugmentedState : public crocoddyl::StateAbstract {
 public:
  AugmentedState(std::shared_ptr<crocoddyl::StateMultibody> robot, int np)
      : crocoddyl::StateAbstract(robot->get_nx() + np, robot->get_ndx() + np),
        robot_(std::move(robot)),
        np_(np),
        nx_robot_(static_cast<int>(robot_->get_nx())),
        ndx_robot_(static_cast<int>(robot_->get_ndx())) {
    lb_ = VectorXd::Constant(nx_, -std::numeric_limits<double>::infinity());
    ub_ = -lb_;
    has_limits_ = false;
  }
  VectorXd zero() const override {
    VectorXd y(nx_);
    y << robot_->zero(), VectorXd::Zero(np_);
    return y;
  }
  VectorXd rand() const override {
    VectorXd y(nx_);
    y << robot_->rand(), VectorXd::Random(np_);
    return y;
  }
  void diff(const Eigen::Ref<const VectorXd>& y0, const Eigen::Ref<const VectorXd>& y1,
            Eigen::Ref<VectorXd> dy) const override {
    robot_->diff(y0.head(nx_robot_), y1.head(nx_robot_), dy.head(ndx_robot_));
    dy.tail(np_) = y1.tail(np_) - y0.tail(np_);
  }
  void integrate(const Eigen::Ref<const VectorXd>& y, const Eigen::Ref<const VectorXd>& dy,
                 Eigen::Ref<VectorXd> y1) const override {
    robot_->integrate(y.head(nx_robot_), dy.head(ndx_robot_), y1.head(nx_robot_));
    y1.tail(np_) = y.tail(np_) + dy.tail(np_);
  }
  void Jdiff(const Eigen::Ref<const VectorXd>& y0, const Eigen::Ref<const VectorXd>& y1,
             Eigen::Ref<MatrixXd> Jfirst, Eigen::Ref<MatrixXd> Jsecond,
             const crocoddyl::Jcomponent which) const override {
    const bool first = which != crocoddyl::second, second = which != crocoddyl::first;
    if (first) Jfirst.setZero();
    if (second) Jsecond.setZero();
    robot_->Jdiff(y0.head(nx_robot_), y1.head(nx_robot_),
                  Jfirst.topLeftCorner(first ? ndx_robot_ : 0, first ? ndx_robot_ : 0),
                  Jsecond.topLeftCorner(second ? ndx_robot_ : 0, second ? ndx_robot_ : 0), which);
    if (first) Jfirst.bottomRightCorner(np_, np_).diagonal().setConstant(-1);
    if (second) Jsecond.bottomRightCorner(np_, np_).diagonal().setConstant(1);
  }
  void Jintegrate(const Eigen::Ref<const VectorXd>& y, const Eigen::Ref<const VectorXd>& dy,
                  Eigen::Ref<MatrixXd> Jfirst, Eigen::Ref<MatrixXd> Jsecond,
                  const crocoddyl::Jcomponent which,
                  const crocoddyl::AssignmentOp op) const override {
    const bool first = which != crocoddyl::second, second = which != crocoddyl::first;
    robot_->Jintegrate(y.head(nx_robot_), dy.head(ndx_robot_),
                       Jfirst.topLeftCorner(first ? ndx_robot_ : 0, first ? ndx_robot_ : 0),
                       Jsecond.topLeftCorner(second ? ndx_robot_ : 0, second ? ndx_robot_ : 0),
                       which, op);
    const double sign = op == crocoddyl::rmfrom ? -1 : 1;
    for (Eigen::Ref<MatrixXd>* J : {first ? &Jfirst : nullptr, second ? &Jsecond : nullptr}) {
      if (J == nullptr) continue;
      auto block = J->bottomRightCorner(np_, np_).diagonal();
      if (op == crocoddyl::setto)
        block.setConstant(1);
      else
        block.array() += sign;
    }
  }
  void JintegrateTransport(const Eigen::Ref<const VectorXd>& y,
                           const Eigen::Ref<const VectorXd>& dy, Eigen::Ref<MatrixXd> Jin,
                           const crocoddyl::Jcomponent which) const override {
    // theta is Euclidean: its rows are transported unchanged
    robot_->JintegrateTransport(y.head(nx_robot_), dy.head(ndx_robot_), Jin.topRows(ndx_robot_),
                                which);
  }
  std::shared_ptr<crocoddyl::StateBase> cloneAsDouble() const override {
    return std::make_shared<AugmentedState>(*this);
  }
  std::shared_ptr<crocoddyl::StateBase> cloneAsFloat() const override {
    throw std::logic_error("heft-reference-estimation: no float states");
  }

 private:
  std::shared_ptr<crocoddyl::StateMultibody> robot_;
  int np_, nx_robot_, ndx_robot_;
};

// ---- the action models -----------------------------------------------------------------------

using ActionModel = crocoddyl::ActionModelAbstract;
using ActionData = crocoddyl::ActionDataAbstract;
using ActionModelBase = crocoddyl::ActionModelBase;
using DifferentialModel = crocoddyl::DifferentialActionModelAbstract;
using DifferentialData = crocoddyl::DifferentialActionDataAbstract;

// What every node shares: the problem, the nominal robot, the frames.
struct Shared {
  const EstimationInput* input = nullptr;
  pinocchio::Model model;  // nominal inertias, the problem's frames added
  Frames frames;
  int nq = 0, nv = 0, np = 0;
  int nx() const { return nq + nv; }
  int ny() const { return nq + nv + np; }
  int ndy() const { return 2 * nv + np; }
};

// Sensor rows of a stage (heft's order): encoders, joint velocities, gyro, orientation,
// accelerometer (running stages), motion capture.
int sensorRows(const EstimationInput& p, bool terminal) {
  return p.nj * (p.joint_velocities ? 2 : 1) + (p.imu ? 6 : 0) +
         (p.accelerometer && !terminal ? 3 : 0) + (p.mocap ? 6 : 0);
}

struct StageData : ActionData {
  template <class Model>
  StageData(Model* model, const Shared& shared)
      : ActionData(static_cast<ActionModel*>(model)),
        regressor(model->robot()),
        R_y(MatrixXd::Zero(model->get_nr(), shared.ndy())),
        R_u(MatrixXd::Zero(model->get_nr(), model->get_nu())),
        tau(shared.nv),
        v_start(shared.nv),
        v_jump(shared.nv),
        zero_velocity(VectorXd::Zero(shared.nv)),
        x_start(shared.nx()),
        v_next(shared.nv),
        dq(shared.nv),
        q_next(shared.nq),
        dvs_dx(MatrixXd::Zero(shared.nv, 2 * shared.nv)),
        dvs_dtheta(MatrixXd::Zero(shared.nv, shared.np)),
        da_dx(shared.nv, 2 * shared.nv),
        da_dtheta(shared.nv, shared.np),
        dv_dx(shared.nv, 2 * shared.nv),
        dv_dtheta(shared.nv, shared.np),
        dv_dw(shared.nv, shared.nv),
        Y(shared.nv, shared.np),
        dpi_dtheta(MatrixXd::Zero(shared.np, shared.np)),
        // zero: pinocchio::dIntegrate writes the joints' diagonal blocks only
        A1(MatrixXd::Zero(shared.nv, shared.nv)),
        B1(MatrixXd::Zero(shared.nv, shared.nv)),
        A2(MatrixXd::Zero(shared.nv, shared.nv)),
        B2(MatrixXd::Zero(shared.nv, shared.nv)),
        A2B1(shared.nv, shared.nv),
        acc_dv(Eigen::MatrixXd::Zero(3, shared.nv)),
        acc_da(Eigen::MatrixXd::Zero(3, shared.nv)) {
    if (model->dynamics()) dynamics = model->dynamics()->createData();
    if (model->impulse()) {
      impulse = model->impulse()->createData();
      regressor_no_gravity = std::make_unique<pinocchio::Data>(*model->robotWithoutGravity());
    }
  }
  std::shared_ptr<DifferentialData> dynamics;
  std::shared_ptr<ActionData> impulse;
  pinocchio::Data regressor;
  std::unique_ptr<pinocchio::Data> regressor_no_gravity;  // touchdown stages only
  MatrixXd R_y, R_u;
  // x_start = (q, v_start); v_jump = v^+ - v at a touchdown
  VectorXd tau, v_start, v_jump, zero_velocity, x_start, v_next, dq, q_next;
  MatrixXd dvs_dx, dvs_dtheta, da_dx, da_dtheta, dv_dx, dv_dtheta, dv_dw, Y, dpi_dtheta;
  MatrixXd A1, B1, A2, B2, A2B1;  // A2B1 = dt A2 B1
  // d acc_b / d v_start and d acc_b / d a: only the base's six columns are ever nonzero
  Eigen::Matrix<double, 3, Eigen::Dynamic> acc_dv, acc_da;
};

// heft's stage k on the augmented state (node k + 1). u = w = (w_q, w_tau).
class StageModel : public ActionModel {
 public:
  StageModel(std::shared_ptr<AugmentedState> state, std::shared_ptr<const Shared> shared, int k,
             bool terminal)
      : ActionModel(state, terminal ? 0 : 2 * shared->nv,
                    (terminal ? 0 : 2 * shared->nv) + sensorRows(*shared->input, terminal)),
        shared_(std::move(shared)),
        knot_(shared_->input->knots[k]),
        terminal_(terminal),
        dt_(shared_->input->dt),
        robot_(std::make_shared<pinocchio::Model>(shared_->model)),
        theta_(VectorXd::Constant(shared_->np, std::numeric_limits<double>::quiet_NaN())) {
    const EstimationInput& p = *shared_->input;
    for (int j : p.encoders) {
      q_index_.push_back(robot_->idx_qs[j]);
      v_index_.push_back(robot_->idx_vs[j]);
    }
    int row = terminal ? 0 : 2 * shared_->nv;
    encoder_row_ = row;
    row += p.nj;
    if (p.joint_velocities) {
      velocity_row_ = row;
      row += p.nj;
    }
    if (p.imu) {
      gyro_row_ = row;
      row += 6;
      gyro_info_ = knot_.has_gyro ? 1 / p.gyro_std : 0;
      orientation_info_ = knot_.has_orientation ? 1 / p.orientation_std : 0;
      if (p.accelerometer && !terminal) {
        accel_row_ = row;
        row += 3;
        accel_info_ = knot_.has_accel ? 1 / p.accel_std : 0;
      }
    }
    if (p.mocap) {
      mocap_row_ = row;
      row += 6;
      mocap_position_info_ = knot_.has_mocap ? 1 / p.mocap_position_std : 0;
      mocap_orientation_info_ = knot_.has_mocap ? 1 / p.mocap_orientation_std : 0;
    }
    if (terminal) return;
    // The stage's dynamics: Crocoddyl's models on this stage's copy of the robot.
    const int nv = shared_->nv;
    auto robot_state = std::make_shared<crocoddyl::StateMultibody>(robot_);
    auto actuation = std::make_shared<crocoddyl::ActuationModelFull>(robot_state);
    auto no_costs = std::make_shared<crocoddyl::CostModelSum>(robot_state, nv);
    if (knot_.contacts.empty()) {
      dynamics_ = std::make_shared<crocoddyl::DifferentialActionModelFreeFwdDynamics>(
          robot_state, actuation, no_costs);
    } else {
      auto contacts = std::make_shared<crocoddyl::ContactModelMultiple>(robot_state, nv);
      for (int c : knot_.contacts)
        contacts->addContact("contact_" + std::to_string(c),
                             std::make_shared<crocoddyl::ContactModel3D>(
                                 robot_state, shared_->frames.contacts[c], Vector3d::Zero(),
                                 pinocchio::LOCAL_WORLD_ALIGNED, nv));
      dynamics_ = std::make_shared<crocoddyl::DifferentialActionModelContactFwdDynamics>(
          robot_state, actuation, contacts, no_costs);
      if (knot_.impulse) {
        auto impulses = std::make_shared<crocoddyl::ImpulseModelMultiple>(robot_state);
        for (int c : knot_.contacts)
          impulses->addImpulse(
              "impulse_" + std::to_string(c),
              std::make_shared<crocoddyl::ImpulseModel3D>(robot_state, shared_->frames.contacts[c],
                                                          pinocchio::LOCAL_WORLD_ALIGNED));
        impulse_ = std::make_shared<crocoddyl::ActionModelImpulseFwdDynamics>(
            robot_state, impulses, std::make_shared<crocoddyl::CostModelSum>(robot_state, 0));
        robot_no_gravity_ = std::make_unique<pinocchio::Model>(shared_->model);
        robot_no_gravity_->gravity.setZero();
      }
    }
  }

  const pinocchio::Model& robot() const { return *robot_; }
  /// The robot without gravity (the impulse's regressor), at touchdown stages only; else null.
  const pinocchio::Model* robotWithoutGravity() const { return robot_no_gravity_.get(); }
  const std::shared_ptr<DifferentialModel>& dynamics() const { return dynamics_; }
  const std::shared_ptr<crocoddyl::ActionModelImpulseFwdDynamics>& impulse() const {
    return impulse_;
  }

  std::shared_ptr<ActionData> createData() override {
    return std::allocate_shared<StageData>(Eigen::aligned_allocator<StageData>(), this, *shared_);
  }

  void calc(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y,
            const Eigen::Ref<const VectorXd>& u) override {
    auto& d = static_cast<StageData&>(*data);
    const int nv = shared_->nv, nq = shared_->nq, np = shared_->np;
    const auto x = y.head(shared_->nx());
    const auto q = x.head(nq);
    const auto theta = y.tail(np);
    if (!terminal_) {
      updateInertias(theta);
      d.tau = knot_.tau + u.tail(nv);
      if (impulse_) {
        impulse_->calc(d.impulse, x);
        d.v_start = d.impulse->xnext.tail(nv);
      } else {
        d.v_start = x.tail(nv);
      }
      d.x_start << q, d.v_start;
      dynamics_->calc(d.dynamics, d.x_start, d.tau);
      const VectorXd& a = d.dynamics->xout;
      d.v_next = d.v_start + dt_ * a;
      d.dq = dt_ * d.v_next;
      pinocchio::integrate(*robot_, q, d.dq, d.q_next);
      pinocchio::integrate(*robot_, d.q_next, u.head(nv), d.xnext.head(nq));
      d.xnext.segment(nq, nv) = d.v_next;
      d.xnext.tail(np) = theta;
      d.r.head(2 * nv) = knot_.info.cwiseProduct(u);
      if (accel_row_ >= 0) accelerometerResidual(d, x, a);
    } else {
      d.xnext = y;
    }
    sensorResiduals(d, x);
    d.cost = 0.5 * d.r.squaredNorm();
  }
  void calc(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y) override {
    calc(data, y, unone_);
  }

  // Crocoddyl's convention: calc ran at (y, u) on this data just before.
  void calcDiff(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y,
                const Eigen::Ref<const VectorXd>& u) override {
    auto& d = static_cast<StageData&>(*data);
    const int nv = shared_->nv, nq = shared_->nq, np = shared_->np, nx = shared_->nx();
    const int ndx = 2 * nv;
    const auto x = y.head(nx);
    const auto q = x.head(nq);
    const auto theta = y.tail(np);
    sensorJacobians(d, x);
    if (!terminal_) {
      updateInertias(theta);
      for (std::size_t k = 0; k < shared_->input->identified.size(); ++k) {
        const pinocchio::LogCholeskyParameters lc(theta.segment<10>(10 * k));
        d.dpi_dtheta.block<10, 10>(10 * k, 10 * k) = lc.calculateJacobian();
      }
      // v_start: v^+(q, v; theta) at a touchdown, else v
      if (impulse_) {
        impulse_->calcDiff(d.impulse, x);
        const auto& I = static_cast<crocoddyl::ActionDataImpulseFwdDynamics&>(*d.impulse);
        d.dvs_dx = I.Fx.bottomRows(nv);
        // M (v^+ - v) = J^T Lambda: theta moves v^+ through Y0(q, 0, v^+ - v) pi
        d.v_jump = d.v_start - x.tail(nv);
        selectColumns(
            pinocchio::computeJointTorqueRegressor(*robot_no_gravity_, *d.regressor_no_gravity, q,
                                                   d.zero_velocity, d.v_jump),
            d.Y);
        d.dvs_dtheta.noalias() = -I.Kinv.topLeftCorner(nv, nv) * (d.Y * d.dpi_dtheta);
      } else {
        d.dvs_dx.leftCols(nv).setZero();
        d.dvs_dx.rightCols(nv).setIdentity();
        d.dvs_dtheta.setZero();
      }
      d.x_start << q, d.v_start;
      dynamics_->calcDiff(d.dynamics, d.x_start, d.tau);
      const VectorXd& a = d.dynamics->xout;
      // a(q, v_start, tau; theta): M a + h = tau (+ J^T lambda) moves with theta through Y_S pi
      selectColumns(pinocchio::computeJointTorqueRegressor(*robot_, d.regressor, q, d.v_start, a),
                    d.Y);
      const MatrixXd& da_dtau = d.dynamics->Fu;  // Kinv_aa or M^{-1}: Crocoddyl's d a / d tau
      d.da_dtheta.noalias() = -da_dtau * (d.Y * d.dpi_dtheta);
      const auto Fq = d.dynamics->Fx.leftCols(nv), Fv = d.dynamics->Fx.rightCols(nv);
      d.da_dx.leftCols(nv) = Fq;
      d.da_dx.rightCols(nv).setZero();
      d.da_dx.noalias() += Fv * d.dvs_dx;
      d.da_dtheta.noalias() += Fv * d.dvs_dtheta;
      // v' = v_start + dt a
      d.dv_dx = d.dvs_dx + dt_ * d.da_dx;
      d.dv_dtheta = d.dvs_dtheta + dt_ * d.da_dtheta;
      d.dv_dw = dt_ * da_dtau;
      // q' = (q ⊕ dt v') ⊕ w_q
      pinocchio::dIntegrate(*robot_, q, d.dq, d.A1, pinocchio::ARG0);
      pinocchio::dIntegrate(*robot_, q, d.dq, d.B1, pinocchio::ARG1);
      pinocchio::dIntegrate(*robot_, d.q_next, u.head(nv), d.A2, pinocchio::ARG0);
      pinocchio::dIntegrate(*robot_, d.q_next, u.head(nv), d.B2, pinocchio::ARG1);
      d.A2B1.noalias() = dt_ * d.A2 * d.B1;
      d.Fx.setZero();
      d.Fx.topLeftCorner(nv, ndx).noalias() = d.A2B1 * d.dv_dx;
      d.Fx.topLeftCorner(nv, nv).noalias() += d.A2 * d.A1;
      d.Fx.block(0, ndx, nv, np).noalias() = d.A2B1 * d.dv_dtheta;
      d.Fx.block(nv, 0, nv, ndx) = d.dv_dx;
      d.Fx.block(nv, ndx, nv, np) = d.dv_dtheta;
      d.Fx.bottomRightCorner(np, np).setIdentity();
      d.Fu.setZero();
      d.Fu.topLeftCorner(nv, nv) = d.B2;
      d.Fu.topRightCorner(nv, nv).noalias() = d.A2B1 * d.dv_dw;
      d.Fu.block(nv, nv, nv, nv) = d.dv_dw;
      d.R_u.topRows(ndx).diagonal() = knot_.info;
      if (accel_row_ >= 0) accelerometerJacobians(d, x, da_dtau);
    }
    // Gauss-Newton
    d.Lx.noalias() = d.R_y.transpose() * d.r;
    d.Lxx.noalias() = d.R_y.transpose() * d.R_y;
    if (terminal_) return;
    d.Lu.noalias() = d.R_u.transpose() * d.r;
    d.Luu.noalias() = d.R_u.transpose() * d.R_u;
    d.Lxu.noalias() = d.R_y.transpose() * d.R_u;
  }
  void calcDiff(const std::shared_ptr<ActionData>& data,
                const Eigen::Ref<const VectorXd>& y) override {
    calcDiff(data, y, unone_);
  }

  std::shared_ptr<ActionModelBase> cloneAsDouble() const override {
    throw std::logic_error("heft-reference-estimation: no model copies");
  }
  std::shared_ptr<ActionModelBase> cloneAsFloat() const override {
    throw std::logic_error("heft-reference-estimation: no float models");
  }

 private:
  void updateInertias(const Eigen::Ref<const VectorXd>& theta) {
    if ((theta_.array() == theta.array()).all()) return;
    theta_ = theta;
    const std::vector<int>& identified = shared_->input->identified;
    for (std::size_t k = 0; k < identified.size(); ++k) {
      const pinocchio::LogCholeskyParameters lc(theta.segment<10>(10 * k));
      const pinocchio::Inertia inertia =
          pinocchio::Inertia::FromDynamicParameters(lc.toDynamicParameters());
      robot_->inertias[identified[k]] = inertia;
      if (robot_no_gravity_) robot_no_gravity_->inertias[identified[k]] = inertia;
    }
  }

  // The identified joints' 10 columns of Pinocchio's joint torque regressor.
  void selectColumns(const MatrixXd& Y_all, MatrixXd& Y) const {
    const std::vector<int>& identified = shared_->input->identified;
    for (std::size_t k = 0; k < identified.size(); ++k)
      Y.middleCols<10>(10 * k) = Y_all.middleCols<10>(10 * (identified[k] - 1));
  }

  void sensorResiduals(StageData& d, const Eigen::Ref<const VectorXd>& x) const {
    const EstimationInput& p = *shared_->input;
    const auto q = x.head(shared_->nq);
    const auto v = x.tail(shared_->nv);
    for (int i = 0; i < p.nj; ++i) {
      d.r(encoder_row_ + i) = (q(q_index_[i]) - knot_.joint_q(i)) / p.encoder_std;
      if (velocity_row_ >= 0)
        d.r(velocity_row_ + i) = (v(v_index_[i]) - knot_.joint_v(i)) / p.velocity_std;
    }
    if (gyro_row_ < 0 && mocap_row_ < 0) return;
    const Matrix3d R_wb = baseRotation(x);
    if (gyro_row_ >= 0) {
      const Matrix3d& R_bi = robot_->frames[shared_->frames.imu].placement.rotation();
      d.r.segment<3>(gyro_row_) = gyro_info_ * (R_bi.transpose() * v.segment<3>(3) - knot_.gyro);
      const Matrix3d E = knot_.orientation.toRotationMatrix().transpose() * R_wb * R_bi;
      d.r.segment<3>(gyro_row_ + 3) = orientation_info_ * pinocchio::log3(E);
    }
    if (mocap_row_ >= 0) {
      const pinocchio::SE3& bMf = robot_->frames[shared_->frames.mocap].placement;
      d.r.segment<3>(mocap_row_) =
          mocap_position_info_ * (q.head<3>() + R_wb * bMf.translation() - knot_.mocap_position);
      const Matrix3d E =
          knot_.mocap_orientation.toRotationMatrix().transpose() * R_wb * bMf.rotation();
      d.r.segment<3>(mocap_row_ + 3) = mocap_orientation_info_ * pinocchio::log3(E);
    }
  }

  void sensorJacobians(StageData& d, const Eigen::Ref<const VectorXd>& x) const {
    const EstimationInput& p = *shared_->input;
    const int nv = shared_->nv;
    for (int i = 0; i < p.nj; ++i) {
      d.R_y(encoder_row_ + i, v_index_[i]) = 1 / p.encoder_std;
      if (velocity_row_ >= 0) d.R_y(velocity_row_ + i, nv + v_index_[i]) = 1 / p.velocity_std;
    }
    if (gyro_row_ < 0 && mocap_row_ < 0) return;
    // Free-flyer tangent: (dp, domega) in the base frame, p' = p + R dp, R' = R Exp(domega).
    const Matrix3d R_wb = baseRotation(x);
    Matrix3d Jlog;
    if (gyro_row_ >= 0) {
      const Matrix3d& R_bi = robot_->frames[shared_->frames.imu].placement.rotation();
      d.R_y.block<3, 3>(gyro_row_, nv + 3) = gyro_info_ * R_bi.transpose();
      const Matrix3d E = knot_.orientation.toRotationMatrix().transpose() * R_wb * R_bi;
      pinocchio::Jlog3(E, Jlog);
      d.R_y.block<3, 3>(gyro_row_ + 3, 3) = orientation_info_ * Jlog * R_bi.transpose();
    }
    if (mocap_row_ >= 0) {
      const pinocchio::SE3& bMf = robot_->frames[shared_->frames.mocap].placement;
      d.R_y.block<3, 3>(mocap_row_, 0) = mocap_position_info_ * R_wb;
      d.R_y.block<3, 3>(mocap_row_, 3) =
          -mocap_position_info_ * R_wb * pinocchio::skew(bMf.translation());
      const Matrix3d E =
          knot_.mocap_orientation.toRotationMatrix().transpose() * R_wb * bMf.rotation();
      pinocchio::Jlog3(E, Jlog);
      d.R_y.block<3, 3>(mocap_row_ + 3, 3) =
          mocap_orientation_info_ * Jlog * bMf.rotation().transpose();
    }
  }

  // The IMU's specific force in its frame: with the base twist (v_lin, omega) and acceleration
  // (a_lin, alpha) in the base frame, acc_b = a_lin + alpha x p + omega x (v_lin + omega x p).
  void accelerometerResidual(StageData& d, const Eigen::Ref<const VectorXd>& x,
                             const VectorXd& a) const {
    const pinocchio::SE3& bMi = robot_->frames[shared_->frames.imu].placement;
    const Vector3d& p = bMi.translation();
    const Vector3d v_lin = d.v_start.head<3>(), omega = d.v_start.segment<3>(3);
    const Vector3d acc_b =
        a.head<3>() + a.segment<3>(3).cross(p) + omega.cross(v_lin + omega.cross(p));
    const Vector3d g_b = baseRotation(x).transpose() * robot_->gravity.linear();
    d.r.segment<3>(accel_row_) =
        accel_info_ * (bMi.rotation().transpose() * (acc_b - g_b) - knot_.accel);
  }

  void accelerometerJacobians(StageData& d, const Eigen::Ref<const VectorXd>& x,
                              const MatrixXd& da_dtau) const {
    const int nv = shared_->nv, ndx = 2 * nv;
    const pinocchio::SE3& bMi = robot_->frames[shared_->frames.imu].placement;
    const Vector3d& p = bMi.translation();
    const Vector3d v_lin = d.v_start.head<3>(), omega = d.v_start.segment<3>(3);
    const Matrix3d S = accel_info_ * bMi.rotation().transpose();
    auto& acc_dv = d.acc_dv;
    auto& acc_da = d.acc_da;
    acc_dv.leftCols<3>() = S * pinocchio::skew(omega);
    acc_dv.middleCols<3>(3) = -S * (pinocchio::skew(v_lin) + pinocchio::skew(omega.cross(p)) +
                                    pinocchio::skew(omega) * pinocchio::skew(p));
    acc_da.leftCols<3>() = S;
    acc_da.middleCols<3>(3) = -S * pinocchio::skew(p);
    auto R_x = d.R_y.block(accel_row_, 0, 3, ndx);
    R_x.noalias() = acc_dv * d.dvs_dx;
    R_x.noalias() += acc_da * d.da_dx;
    // -R^T g under R' = R Exp(domega): d(R^T g) = [R^T g]x domega
    const Vector3d g_b = baseRotation(x).transpose() * robot_->gravity.linear();
    R_x.middleCols<3>(3) -= S * pinocchio::skew(g_b);
    d.R_y.block(accel_row_, ndx, 3, shared_->np).noalias() =
        acc_dv * d.dvs_dtheta + acc_da * d.da_dtheta;
    d.R_u.block(accel_row_, 0, 3, nv).setZero();
    d.R_u.block(accel_row_, nv, 3, nv).noalias() = acc_da * da_dtau;
  }

  std::shared_ptr<const Shared> shared_;
  const Knot& knot_;
  bool terminal_;
  double dt_;
  std::shared_ptr<pinocchio::Model> robot_;             // this stage's copy: inertias follow theta
  std::unique_ptr<pinocchio::Model> robot_no_gravity_;  // touchdowns: the impulse's regressor
  VectorXd theta_;                                      // theta of robot_'s inertias
  std::shared_ptr<DifferentialModel> dynamics_;
  std::shared_ptr<crocoddyl::ActionModelImpulseFwdDynamics> impulse_;
  std::vector<int> q_index_, v_index_;
  int encoder_row_ = 0, velocity_row_ = -1, gyro_row_ = -1, accel_row_ = -1, mocap_row_ = -1;
  double gyro_info_ = 0, orientation_info_ = 0, accel_info_ = 0, mocap_position_info_ = 0,
         mocap_orientation_info_ = 0;
};

// Node 0: the arrival and parameter priors. u = [dx, dtheta], y' = y ⊕ u.
class AnchorModel : public ActionModel {
 public:
  AnchorModel(std::shared_ptr<AugmentedState> state, const EstimationInput& p)
      : ActionModel(state, state->get_ndx(), state->get_ndx()) {
    const int ndx = 2 * p.nv, np = p.np;
    R_u_ = MatrixXd::Zero(ndx + np, ndx + np);
    R_u_.topLeftCorner(ndx, ndx) = p.x_sqrt_info;
    R_u_.bottomRightCorner(np, np) = p.theta_sqrt_info;
    Luu_ = R_u_.transpose() * R_u_;
  }
  std::shared_ptr<ActionData> createData() override {
    return std::allocate_shared<ActionData>(Eigen::aligned_allocator<ActionData>(),
                                            static_cast<ActionModel*>(this));
  }
  void calc(const std::shared_ptr<ActionData>& d, const Eigen::Ref<const VectorXd>& y,
            const Eigen::Ref<const VectorXd>& u) override {
    state_->integrate(y, u, d->xnext);
    d->r.noalias() = R_u_ * u;
    d->cost = 0.5 * d->r.squaredNorm();
  }
  void calc(const std::shared_ptr<ActionData>& d, const Eigen::Ref<const VectorXd>& y) override {
    calc(d, y, unone_);
  }
  void calcDiff(const std::shared_ptr<ActionData>& d, const Eigen::Ref<const VectorXd>& y,
                const Eigen::Ref<const VectorXd>& u) override {
    d->Fx.setZero();
    d->Fu.setZero();
    state_->Jintegrate(y, u, d->Fx, d->Fu, crocoddyl::both, crocoddyl::setto);
    d->Lx.setZero();
    d->Lxx.setZero();
    d->Lxu.setZero();
    d->Lu.noalias() = R_u_.transpose() * d->r;
    d->Luu = Luu_;
  }
  void calcDiff(const std::shared_ptr<ActionData>& d,
                const Eigen::Ref<const VectorXd>& y) override {
    calcDiff(d, y, unone_);
  }
  std::shared_ptr<ActionModelBase> cloneAsDouble() const override {
    return std::make_shared<AnchorModel>(*this);
  }
  std::shared_ptr<ActionModelBase> cloneAsFloat() const override {
    throw std::logic_error("heft-reference-estimation: no float models");
  }

 private:
  MatrixXd R_u_, Luu_;
};

// Records the cost of each iteration and applies heft's relative stopping rule.
// The time of each iteration is read here too (one clock read per iteration).
class Monitor : public crocoddyl::CallbackAbstract {
 public:
  explicit Monitor(double tolerance) : tolerance_(tolerance) {}
  void operator()(crocoddyl::SolverAbstract& solver) override {
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    costs.push_back(solver.get_cost());
    feasible.push_back(solver.get_is_feasible() ? 1 : 0);
    solver.set_th_stop(0.5 * tolerance_ * (1 + solver.get_cost()));
  }
  std::chrono::steady_clock::time_point start;  ///< set just before solve()
  std::vector<double> costs, times;
  std::vector<int> feasible;

 private:
  double tolerance_;
};

int run(const std::string& in_path, const std::string& out_path) {
  const EstimationInput p = readInput(in_path);
  auto shared = std::make_shared<Shared>();
  shared->input = &p;
  shared->model = buildModel(p, shared->frames);
  shared->nq = p.nq;
  shared->nv = p.nv;
  shared->np = p.np;
  const int nx = shared->nx(), ny = shared->ny();

  auto robot_state = std::make_shared<crocoddyl::StateMultibody>(
      std::make_shared<pinocchio::Model>(shared->model));
  auto state = std::make_shared<AugmentedState>(robot_state, p.np);
  std::vector<std::shared_ptr<ActionModel>> running;
  running.push_back(std::make_shared<AnchorModel>(state, p));
  for (int k = 0; k < p.N; ++k)
    running.push_back(std::make_shared<StageModel>(state, shared, k, false));
  auto terminal = std::make_shared<StageModel>(state, shared, p.N, true);

  VectorXd anchor(ny);
  anchor << p.x_mean, p.theta_mean;
  auto problem = std::make_shared<crocoddyl::ShootingProblem>(anchor, running, terminal);
  problem->set_nthreads(p.threads);

  // The initial guess: heft's, with the anchor's control at its offset from the prior means.
  std::vector<VectorXd> xs(p.N + 2, VectorXd(ny)), us;
  xs[0] = anchor;
  VectorXd u0(state->get_ndx());
  robot_state->diff(p.x_mean, p.knots[0].x, u0.head(2 * p.nv));
  u0.tail(p.np) = p.theta_guess - p.theta_mean;
  us.push_back(u0);
  for (int k = 0; k <= p.N; ++k) {
    xs[k + 1] << p.knots[k].x, p.theta_guess;
    if (k < p.N) us.push_back(p.knots[k].w);
  }
  const double initial_cost = problem->calc(xs, us);

  std::ofstream out(out_path);
  out << std::setprecision(17);
  out << "heft-reference-estimation-result 1\n";
  // The checks, on data of their own.
  std::vector<std::string> checks;
  for (const EstimationInput::Check& c : p.checks) {
    const auto& model = problem->get_runningModels()[c.knot + 1];
    const auto data = model->createData();
    VectorXd y(ny);
    y << c.x, c.theta;
    model->calc(data, y, c.w);
    std::ostringstream line;
    line << std::setprecision(17) << "check " << c.knot << " " << data->xnext.head(nx).transpose()
         << " " << data->cost << "\n";
    // The robot's rows of the Jacobians, [Fx_x Fx_theta] and Fu, row-major (heft compares them
    // with its own, which its finite-difference tests cover).
    model->calcDiff(data, y, c.w);
    const int ndx = 2 * p.nv;
    line << "check_jacobians " << c.knot << " " << ndx << " " << p.np;
    for (int i = 0; i < ndx; ++i)
      for (int j = 0; j < ndx + p.np; ++j) line << " " << data->Fx(i, j);
    for (int i = 0; i < ndx; ++i)
      for (int j = 0; j < ndx; ++j) line << " " << data->Fu(i, j);
    line << "\n";
    checks.push_back(line.str());
  }

  std::vector<double> seconds;
  bool converged = false;
  int iterations = 0, solver_iter = 0;
  double cost = 0, stop = 0, th_stop = 0;
  VectorXd theta;
  std::vector<double> history, times;
  std::vector<int> feasible;
  for (int rep = 0; rep < p.repetitions; ++rep) {
    crocoddyl::SolverFDDP solver(problem);
    auto monitor = std::make_shared<Monitor>(p.tolerance);
    solver.setCallbacks({monitor});
    const auto t0 = std::chrono::steady_clock::now();
    monitor->start = t0;
    const bool ok = solver.solve(xs, us, static_cast<std::size_t>(p.max_iterations), false);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (rep == 0) {
      converged = ok;
      iterations = static_cast<int>(monitor->costs.size());
      solver_iter = static_cast<int>(solver.get_iter());
      cost = solver.get_cost();
      stop = solver.get_stop();
      th_stop = solver.get_th_stop();
      theta = solver.get_xs().back().tail(p.np);
      history = monitor->costs;
      times = monitor->times;
      feasible = monitor->feasible;
    }
  }

  out << "converged " << converged << "\n";
  out << "iterations " << iterations << "\n";
  out << "solver_iter " << solver_iter << "\n";
  out << "initial_cost " << initial_cost << "\n";
  out << "cost " << cost << "\n";
  out << "stop " << stop << "\n";
  out << "th_stop " << th_stop << "\n";
  out << "seconds";
  for (double s : seconds) out << " " << s;
  out << "\ntheta " << theta.transpose() << "\n";
  out << "cost_history";
  for (double c : history) out << " " << c;
  out << "\ntime_history";
  for (double t : times) out << " " << t;
  out << "\nfeasible_history";
  for (int f : feasible) out << " " << f;
  out << "\n";
  for (const std::string& c : checks) out << c;
  out << "end\n";
  return out.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: heft-reference-estimation IN OUT\n";
    return 2;
  }
  // The wheel's headers build this program with OpenMP, which lets Eigen split large products over
  // every core; heft's solver runs on one thread, and OpenMP's spinning workers slowed FDDP 25-fold
  // on a loaded 2-core machine. Crocoddyl's own node loop follows the problem's `threads`.
  Eigen::setNbThreads(1);
  try {
    return run(argv[1], argv[2]);
  } catch (const InputError& e) {
    std::cerr << "heft-reference-estimation: " << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
}
