// heft-reference-estimation IN OUT
//
// Crocoddyl's FDDP on heft's batch MAP estimation problem of a fixed-base arm, with the parameters
// theta appended to the state (PRIME's augmented state, identity dynamics on theta). This program
// is the reference solver of tests/reference_test.cpp and bench/estimation_bench.cpp; heft writes
// the problem (heft::estimation::writeReferenceProblem), this program solves it and writes the
// result. It never links heft: crocoddyl 3.2.1 runs on libpinocchio 4.0.0 (docs/install.md).
//
// The problem (heft's Problem with MultibodyStageModel, fixed base, encoders only; every joint has
// one position and one velocity coordinate, so every state is Euclidean):
//   min 0.5 |L_x (x_0 - xbar)|^2 + 0.5 |L_theta (theta - thetabar)|^2
//       + sum_{k<N} 0.5 |r_k|^2 + 0.5 |r_N|^2
//   s.t. x_{k+1} = f_k(x_k, w_k; theta), with x = (q, v), w = (w_q, w_tau) and
//   tau = tau_k + w_tau, a = ABA(q, v, tau; pi(theta)), v' = v + dt a, q' = q + dt v' + w_q,
//   r_k = [w .* process_info ; (q_enc - z_k) encoder_info],  r_N = (q_enc - z_N) encoder_info.
// Crocoddyl form, T = N + 1 running nodes and a terminal node, y = [q, v, theta]:
//   node 0 (anchor): x0 = y_0 = [xbar, thetabar] is fixed, u = [dx, dtheta], y_1 = y_0 + u,
//     cost 0.5 |L_x dx|^2 + 0.5 |L_theta dtheta|^2: x_0 = xbar + dx, theta = thetabar + dtheta, so
//     the arrival and parameter priors of heft's problem, with the same optimum;
//   node k + 1 (heft's stage k): u = w_k, y_{k+2} = [f_k(x, w; theta), theta], cost 0.5 |r_k|^2;
//   terminal node: heft's terminal stage, 0.5 |r_N|^2.
// Derivatives are analytical and Gauss-Newton (Lxx = R_y^T R_y, Luu, Lxu likewise; the residuals
// are linear here, so these Hessians are constant and built once): Pinocchio's ABA derivatives for
// q, v, tau, and d a / d theta = -M^{-1} Y_S(q, v, a) d pi / d theta with Pinocchio's joint torque
// regressor (the identified bodies' 10 columns each) and the log-Cholesky Jacobian
// (pinocchio::LogCholeskyParameters, the same map heft uses).
//
// Stopping: heft stops when the directional derivative of its step |d1| <= tol (1 + cost).
// Crocoddyl's stop is the predicted decrease of the full step, which at a Gauss-Newton step is
// half that directional derivative; a callback sets th_stop = 0.5 tol (1 + cost) every iteration
// (Crocoddyl tests it after the callbacks), and FDDP also needs a feasible iterate (every gap
// closed, which a full step does).
//
// IN (text; one record per line, the first token names it; numbers as written by %.17g):
//   heft-reference-estimation 1
//   urdf PATH                          the robot (the rest of the line); fixed base
//   sizes nq nv np N nj                np = 10 |S|, N running stages, nj encoders
//   gravity gx gy gz                   linear gravity of heft's model [m/s^2]
//   inertia j pi_0..pi_9               one per joint j = 1..njoints-1: heft's nominal inertias
//                                      (Pinocchio order), written over the URDF's
//   armature a_0..a_{nv-1}
//   identified j_1 .. j_{np/10}        joint indices of S (theta's blocks in this order)
//   parametrization log-cholesky
//   dt DT                              [s]
//   process_info i_0..i_{2nv-1}        1 / std of (w_q, w_tau)
//   encoders j_1 .. j_nj               joint of each encoder row
//   encoder_info i                     1 / encoder std [1/rad]
//   prior_x_mean x[nq + nv]
//   prior_x_sqrt_info L[(2nv)^2]       row-major
//   prior_theta_mean t[np]
//   prior_theta_sqrt_info L[np^2]      row-major
//   theta_guess t[np]
//   knot k tau[nv] z[nj] x[nq + nv] w[2nv]     k = 0..N-1: input, encoders, initial guess
//   terminal N z[nj] x[nq + nv]
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
//   end
// Exit code 0 on success (converged or not), 2 on a malformed input.
#include <crocoddyl/core/action-base.hpp>
#include <crocoddyl/core/optctrl/shooting.hpp>
#include <crocoddyl/core/solver-base.hpp>
#include <crocoddyl/core/solvers/fddp.hpp>
#include <crocoddyl/core/states/euclidean.hpp>

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

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/spatial/inertia.hpp>

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the problem file ------------------------------------------------------------------------

struct Knot {
  VectorXd tau, z, x, w;
};

struct EstimationInput {
  std::string urdf;
  int nq = 0, nv = 0, np = 0, N = 0, nj = 0;
  Eigen::Vector3d gravity = Eigen::Vector3d::Zero();
  std::vector<std::pair<int, Eigen::Matrix<double, 10, 1>>> inertias;
  VectorXd armature;
  std::vector<int> identified;
  double dt = 0;
  VectorXd process_info;
  std::vector<int> encoders;
  double encoder_info = 0;
  VectorXd x_mean, theta_mean, theta_guess;
  MatrixXd x_sqrt_info, theta_sqrt_info;
  std::vector<Knot> knots;  // N + 1 (the last one without tau and w)
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
    } while (line.empty());
    line_.clear();
    line_.str(line);
    std::string tag;
    line_ >> tag;
    if (tag != name) throw InputError("expected record '" + name + "', got '" + tag + "'");
    name_ = name;
  }
  std::string rest() {
    std::string s;
    std::getline(line_ >> std::ws, s);
    return s;
  }
  double number() {
    double x = 0;
    if (!(line_ >> x)) throw InputError("record '" + name_ + "': missing or malformed number");
    return x;
  }
  int integer() {
    const double x = number();
    if (x != std::floor(x)) throw InputError("record '" + name_ + "': expected an integer");
    return static_cast<int>(x);
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
  std::string word() {
    std::string s;
    if (!(line_ >> s)) throw InputError("record '" + name_ + "': missing word");
    return s;
  }
  void done() {
    std::string extra;
    if (line_ >> extra) throw InputError("record '" + name_ + "': unexpected '" + extra + "'");
  }

 private:
  std::istream& in_;
  std::istringstream line_;
  std::string name_;
};

EstimationInput readInput(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot open " + path);
  Reader r(file);
  EstimationInput p;
  r.record("heft-reference-estimation");
  if (r.integer() != 1) throw InputError("unsupported format version");
  r.record("urdf");
  p.urdf = r.rest();
  r.record("sizes");
  p.nq = r.integer();
  p.nv = r.integer();
  p.np = r.integer();
  p.N = r.integer();
  p.nj = r.integer();
  r.done();
  if (p.nq != p.nv || p.np % 10 != 0 || p.N < 1 || p.nj < 0)
    throw InputError("sizes: expected nq == nv, np a multiple of 10, N >= 1");
  r.record("gravity");
  p.gravity = r.vector(3);
  r.done();
  for (int j = 1; j <= p.nv; ++j) {
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
  if (r.word() != "log-cholesky") throw InputError("parametrization: only log-cholesky");
  r.done();
  r.record("dt");
  p.dt = r.number();
  r.done();
  r.record("process_info");
  p.process_info = r.vector(2 * p.nv);
  r.done();
  r.record("encoders");
  for (int i = 0; i < p.nj; ++i) p.encoders.push_back(r.integer());
  r.done();
  r.record("encoder_info");
  p.encoder_info = r.number();
  r.done();
  r.record("prior_x_mean");
  p.x_mean = r.vector(p.nq + p.nv);
  r.done();
  r.record("prior_x_sqrt_info");
  p.x_sqrt_info = r.matrix(2 * p.nv, 2 * p.nv);
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
    r.record(terminal ? "terminal" : "knot");
    if (r.integer() != k) throw InputError("knots: expected knot " + std::to_string(k));
    Knot knot;
    if (!terminal) knot.tau = r.vector(p.nv);
    knot.z = r.vector(p.nj);
    knot.x = r.vector(p.nq + p.nv);
    if (!terminal) knot.w = r.vector(2 * p.nv);
    r.done();
    p.knots.push_back(std::move(knot));
  }
  r.record("solver");
  p.max_iterations = r.integer();
  p.tolerance = r.number();
  p.threads = r.integer();
  p.repetitions = r.integer();
  r.done();
  if (p.max_iterations < 1 || !(p.tolerance > 0) || p.threads < 1 || p.repetitions < 1)
    throw InputError("solver: expected max_iterations, threads, repetitions >= 1, tolerance > 0");
  r.record("checks");
  const int m = r.integer();
  r.done();
  for (int i = 0; i < m; ++i) {
    r.record("check");
    EstimationInput::Check c;
    c.knot = r.integer();
    if (c.knot < 0 || c.knot >= p.N) throw InputError("check: knot out of range");
    c.x = r.vector(p.nq + p.nv);
    c.w = r.vector(2 * p.nv);
    c.theta = r.vector(p.np);
    r.done();
    p.checks.push_back(std::move(c));
  }
  r.record("end");
  return p;
}

// The robot: the URDF's tree with heft's inertias, armature and gravity written over it, so that
// both sides integrate the same model whatever either parser does with the file's inertials.
pinocchio::Model buildModel(const EstimationInput& p) {
  pinocchio::Model model;
  pinocchio::urdf::buildModel(p.urdf, model);
  if (model.nq != p.nq || model.nv != p.nv || model.njoints != p.nv + 1)
    throw InputError("urdf: expected a fixed-base arm with nq = nv = " + std::to_string(p.nv) +
                     ", one coordinate per joint; got nq " + std::to_string(model.nq) + ", nv " +
                     std::to_string(model.nv));
  for (int j = 1; j < model.njoints; ++j)
    if (model.nqs[j] != 1 || model.nvs[j] != 1)
      throw InputError("urdf: joint " + model.names[j] + " is not a one-coordinate joint");
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
    if (j < 1 || j >= model.njoints) throw InputError("encoders: joint out of range");
  return model;
}

// ---- the action models -----------------------------------------------------------------------

using ActionModel = crocoddyl::ActionModelAbstract;
using ActionData = crocoddyl::ActionDataAbstract;
using ActionModelBase = crocoddyl::ActionModelBase;

// What every node shares: the robot, S, the sizes.
struct Shared {
  pinocchio::Model model;  // nominal inertias
  std::vector<int> identified;
  int nq = 0, nv = 0, np = 0;
  int nx() const { return nq + nv; }
  int ny() const { return nq + nv + np; }
};

// Stage data: a model copy whose S inertias follow theta (cached), Pinocchio workspaces.
struct StageData : ActionData {
  template <class Model>
  StageData(Model* model, const Shared& shared)
      : ActionData(static_cast<ActionModel*>(model)),
        robot(shared.model),
        pin(shared.model),
        regressor(shared.model),
        theta(VectorXd::Constant(shared.np, std::numeric_limits<double>::quiet_NaN())),
        tau(shared.nv),
        a(shared.nv),
        Y(shared.nv, shared.np),
        dpi_dtheta(shared.np, shared.np),
        da_dtheta(shared.nv, shared.np) {
    dpi_dtheta.setZero();
  }
  pinocchio::Model robot;
  pinocchio::Data pin, regressor;
  VectorXd theta, tau, a;
  MatrixXd Y, dpi_dtheta, da_dtheta;
};

// heft's running stage k on the augmented state (node k + 1). u = w = (w_q, w_tau).
class StageModel : public ActionModel {
 public:
  StageModel(std::shared_ptr<crocoddyl::StateVector> state, std::shared_ptr<const Shared> shared,
             const EstimationInput& p, const Knot& knot, bool terminal)
      : ActionModel(state, terminal ? 0 : 2 * shared->nv, (terminal ? 0 : 2 * shared->nv) + p.nj),
        shared_(std::move(shared)),
        terminal_(terminal),
        dt_(p.dt),
        tau_(knot.tau),
        z_(knot.z) {
    const int nj = p.nj, ny = shared_->ny(), nu = static_cast<int>(nu_);
    const int nr = static_cast<int>(nr_);
    // The residual is affine: r = R_y y + R_u u + c, with constant Jacobians.
    R_y_ = MatrixXd::Zero(nr, ny);
    R_u_ = MatrixXd::Zero(nr, nu);
    if (!terminal) R_u_.diagonal() = p.process_info;
    for (int i = 0; i < nj; ++i) {
      enc_q_.push_back(shared_->model.idx_qs[p.encoders[i]]);
      R_y_(nu + i, enc_q_.back()) = p.encoder_info;  // q is Euclidean: y's index = q's
    }
    encoder_info_ = p.encoder_info;
    info_ = p.process_info;
    Lxx_ = R_y_.transpose() * R_y_;
    Luu_ = R_u_.transpose() * R_u_;
    Lxu_ = R_y_.transpose() * R_u_;
  }

  std::shared_ptr<ActionData> createData() override {
    return std::allocate_shared<StageData>(Eigen::aligned_allocator<StageData>(), this, *shared_);
  }

  void calc(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y,
            const Eigen::Ref<const VectorXd>& u) override {
    auto& d = static_cast<StageData&>(*data);
    const int nv = shared_->nv, nq = shared_->nq, nu = static_cast<int>(nu_);
    const auto q = y.head(nq);
    const auto v = y.segment(nq, nv);
    const auto theta = y.tail(shared_->np);
    if (!terminal_) {
      updateInertias(d, theta);
      d.tau = tau_ + u.tail(nv);
      d.a = pinocchio::aba(d.robot, d.pin, q, v, d.tau, pinocchio::Convention::WORLD);
      // v' = v + dt a;  q' = q + dt v' + w_q;  theta' = theta
      d.xnext.segment(nq, nv) = v + dt_ * d.a;
      d.xnext.head(nq) = q + dt_ * d.xnext.segment(nq, nv) + u.head(nv);
      d.xnext.tail(shared_->np) = theta;
      d.r.head(nu) = info_.cwiseProduct(u);
    } else {
      d.xnext = y;
    }
    for (std::size_t i = 0; i < enc_q_.size(); ++i)
      d.r(nu + i) = (q(enc_q_[i]) - z_(i)) * encoder_info_;
    d.cost = 0.5 * d.r.squaredNorm();
  }
  void calc(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y) override {
    calc(data, y, unone_);
  }

  void calcDiff(const std::shared_ptr<ActionData>& data, const Eigen::Ref<const VectorXd>& y,
                const Eigen::Ref<const VectorXd>& u) override {
    auto& d = static_cast<StageData&>(*data);
    d.Lx.noalias() = R_y_.transpose() * d.r;
    d.Lxx = Lxx_;
    if (terminal_) return;
    d.Lu.noalias() = R_u_.transpose() * d.r;
    d.Luu = Luu_;
    d.Lxu = Lxu_;

    const int nv = shared_->nv, nq = shared_->nq, np = shared_->np;
    const auto q = y.head(nq);
    const auto v = y.segment(nq, nv);
    const auto theta = y.tail(np);
    updateInertias(d, theta);
    // a, da/dq, da/dv and M^{-1} (symmetric: Pinocchio fills both triangles here).
    pinocchio::computeABADerivatives(d.robot, d.pin, q, v, d.tau);
    d.a = d.pin.ddq;
    // da/dtheta = -M^{-1} Y_S(q, v, a) dpi/dtheta; Y does not depend on the inertias.
    const MatrixXd& Y_all = pinocchio::computeJointTorqueRegressor(d.robot, d.regressor, q, v, d.a);
    for (std::size_t k = 0; k < shared_->identified.size(); ++k) {
      d.Y.middleCols<10>(10 * k) = Y_all.middleCols<10>(10 * (shared_->identified[k] - 1));
      const pinocchio::LogCholeskyParameters lc(theta.segment<10>(10 * k));
      d.dpi_dtheta.block<10, 10>(10 * k, 10 * k) = lc.calculateJacobian();
    }
    d.da_dtheta.noalias() = -d.pin.Minv * (d.Y * d.dpi_dtheta);

    // y' = [q + dt v' + w_q ; v + dt a ; theta]
    const MatrixXd& da_dq = d.pin.ddq_dq;
    const MatrixXd& da_dv = d.pin.ddq_dv;
    const MatrixXd& Minv = d.pin.Minv;
    auto Fvq = d.Fx.block(nq, 0, nv, nq);
    auto Fvv = d.Fx.block(nq, nq, nv, nv);
    auto Fvt = d.Fx.block(nq, nq + nv, nv, np);
    Fvq = dt_ * da_dq;
    Fvv = dt_ * da_dv;
    Fvv.diagonal().array() += 1;
    Fvt = dt_ * d.da_dtheta;
    d.Fx.block(0, 0, nq, nq) = dt_ * Fvq;
    d.Fx.block(0, 0, nq, nq).diagonal().array() += 1;
    d.Fx.block(0, nq, nq, nv) = dt_ * Fvv;
    d.Fx.block(0, nq + nv, nq, np) = dt_ * Fvt;
    d.Fx.bottomRows(np).setZero();
    d.Fx.bottomRightCorner(np, np).setIdentity();
    d.Fu.setZero();
    d.Fu.block(0, 0, nq, nv).setIdentity();
    d.Fu.block(0, nv, nq, nv) = (dt_ * dt_) * Minv;
    d.Fu.block(nq, nv, nv, nv) = dt_ * Minv;
  }
  void calcDiff(const std::shared_ptr<ActionData>& data,
                const Eigen::Ref<const VectorXd>& y) override {
    calcDiff(data, y, unone_);
  }

  std::shared_ptr<ActionModelBase> cloneAsDouble() const override {
    return std::make_shared<StageModel>(*this);
  }
  std::shared_ptr<ActionModelBase> cloneAsFloat() const override {
    throw std::logic_error("heft-reference-estimation: no float models");
  }

 private:
  void updateInertias(StageData& d, const Eigen::Ref<const VectorXd>& theta) const {
    if ((d.theta.array() == theta.array()).all()) return;
    d.theta = theta;
    for (std::size_t k = 0; k < shared_->identified.size(); ++k) {
      const pinocchio::LogCholeskyParameters lc(theta.segment<10>(10 * k));
      d.robot.inertias[shared_->identified[k]] =
          pinocchio::Inertia::FromDynamicParameters(lc.toDynamicParameters());
    }
  }

  std::shared_ptr<const Shared> shared_;
  bool terminal_;
  double dt_;
  VectorXd tau_, z_, info_;
  std::vector<int> enc_q_;
  double encoder_info_ = 0;
  MatrixXd R_y_, R_u_, Lxx_, Luu_, Lxu_;
};

// Node 0: the arrival and parameter priors. u = [dx, dtheta], y' = y + u.
class AnchorModel : public ActionModel {
 public:
  AnchorModel(std::shared_ptr<crocoddyl::StateVector> state, const EstimationInput& p)
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
    d->xnext = y + u;
    d->r.noalias() = R_u_ * u;
    d->cost = 0.5 * d->r.squaredNorm();
  }
  void calc(const std::shared_ptr<ActionData>& d, const Eigen::Ref<const VectorXd>& y) override {
    calc(d, y, unone_);
  }
  void calcDiff(const std::shared_ptr<ActionData>& d, const Eigen::Ref<const VectorXd>&,
                const Eigen::Ref<const VectorXd>&) override {
    d->Fx.setIdentity();
    d->Fu.setIdentity();
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
  shared->model = buildModel(p);
  shared->identified = p.identified;
  shared->nq = p.nq;
  shared->nv = p.nv;
  shared->np = p.np;
  const int nx = shared->nx(), ny = shared->ny(), ndx = 2 * p.nv;

  auto state = std::make_shared<crocoddyl::StateVector>(ny);
  std::vector<std::shared_ptr<ActionModel>> running;
  running.push_back(std::make_shared<AnchorModel>(state, p));
  for (int k = 0; k < p.N; ++k)
    running.push_back(std::make_shared<StageModel>(state, shared, p, p.knots[k], false));
  auto terminal = std::make_shared<StageModel>(state, shared, p, p.knots[p.N], true);

  VectorXd anchor(ny);
  anchor << p.x_mean, p.theta_mean;
  auto problem = std::make_shared<crocoddyl::ShootingProblem>(anchor, running, terminal);
  problem->set_nthreads(p.threads);

  // The initial guess: heft's, with the anchor's control at its offset from the prior means.
  std::vector<VectorXd> xs(p.N + 2, VectorXd(ny)), us;
  xs[0] = anchor;
  VectorXd u0(ndx + p.np);
  u0 << p.knots[0].x - p.x_mean, p.theta_guess - p.theta_mean;
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
  try {
    return run(argv[1], argv[2]);
  } catch (const InputError& e) {
    std::cerr << "heft-reference-estimation: " << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
}
