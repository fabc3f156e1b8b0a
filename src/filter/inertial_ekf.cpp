#include "heft/filter/inertial_ekf.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <pinocchio/spatial/inertia.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/filter/chi_square.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/inertia/margin_guard.hpp"

namespace heft::filter {
namespace {

// A log-Cholesky theta whose exponentials stay far from overflow (e^{2 alpha} kg, e^{d} scales):
// |alpha|, |d_i| <= 20 covers masses from 4e-18 to 2e17 kg.
bool saneLogCholesky(const Eigen::Ref<const Eigen::VectorXd>& theta) {
  for (Eigen::Index k = 0; k < theta.size(); k += 10) {
    if (theta.segment<4>(k).cwiseAbs().maxCoeff() > 20) return false;
  }
  return true;
}

}  // namespace

void InertialEkfOptions::validate() const {
  require(difference_half_width >= 1 && difference_half_width <= 1000,
          "filter option difference_half_width", "an integer in [1, 1000]",
          std::to_string(difference_half_width));
  requirePositive(max_sample_gap, "filter option max_sample_gap", " [s]");
  requireNonNegative(calibration_duration, "filter option calibration_duration", " [s]");
  requirePositive(prior_std_log, "filter option prior_std_log", "");
  requirePositive(prior_std_length, "filter option prior_std_length", " [m]");
  requireNonNegative(process_std_log, "filter option process_std_log", " [1/sqrt(s)]");
  requireNonNegative(process_std_length, "filter option process_std_length", " [m/sqrt(s)]");
  requirePositive(joint_torque_std, "filter option joint_torque_std", " [N m]");
  requirePositive(base_force_std, "filter option base_force_std", " [N]");
  requirePositive(base_moment_std, "filter option base_moment_std", " [N m]");
  require(gate_probability > 0 && gate_probability < 1, "filter option gate_probability",
          "a probability in (0, 1)", formatNumber(gate_probability));
  requireNonNegative(gate_threshold, "filter option gate_threshold", " (0: from gate_probability)");
  require(gate_max_consecutive >= 0, "filter option gate_max_consecutive", "an integer >= 0",
          std::to_string(gate_max_consecutive));
  requireNonNegative(max_mass_rate, "filter option max_mass_rate", " [kg/s] (0: no limit)");
}

std::string toString(InertialEkfOptions::State state) {
  return state == InertialEkfOptions::State::LogCholesky ? "log-cholesky" : "linear-pi";
}

InertialEkfOptions::State parseState(const std::string& name) {
  if (name == "log-cholesky") return InertialEkfOptions::State::LogCholesky;
  if (name == "linear-pi") return InertialEkfOptions::State::LinearPi;
  throw InputError("filter state: expected log-cholesky or linear-pi, got \"" + name + "\"");
}

const char* toString(UpdateStatus status) {
  switch (status) {
    case UpdateStatus::Filling:
      return "filling";
    case UpdateStatus::Calibrating:
      return "calibrating";
    case UpdateStatus::Updated:
      return "updated";
    case UpdateStatus::Gated:
      return "gated";
    case UpdateStatus::GateOverride:
      return "gate-override";
    case UpdateStatus::RejectedInput:
      return "rejected-input";
    case UpdateStatus::NumericalFailure:
      return "numerical-failure";
    case UpdateStatus::NoInformation:
      return "no-information";
  }
  return "unknown";
}

InertialEkf::InertialEkf(const pinocchio::Model& model,
                         const std::vector<pinocchio::JointIndex>& bodies,
                         const std::vector<ContactPoint>& contacts, const Eigen::VectorXd& prior_pi,
                         const InertialEkfOptions& options)
    : InertialEkf(model, bodies, contacts, ExternalInputs{}, prior_pi, options) {}

InertialEkf::InertialEkf(const pinocchio::Model& model,
                         const std::vector<pinocchio::JointIndex>& bodies,
                         const std::vector<ContactPoint>& contacts, const ExternalInputs& inputs,
                         const Eigen::VectorXd& prior_pi, const InertialEkfOptions& options)
    : options_((options.validate(), options)),
      measurement_model_(model, bodies, contacts, inputs),
      measurement_(measurement_model_),
      window_(model.nq, model.nv, measurement_model_.numForceInputs(),
              options.difference_half_width, options.max_sample_gap),
      n_(measurement_model_.numParameters()),
      m_(measurement_model_.numRows()),
      llt_(measurement_model_.numRows()),
      eigen_(std::min(measurement_model_.numRows(), kMaxProjectedRows)) {
  require(measurement_model_.numStanceFrames() == 0 || m_ <= kMaxProjectedRows,
          "filter measurement rows with stance frames",
          "at most " + std::to_string(kMaxProjectedRows), std::to_string(m_));
  require(prior_pi.size() == n_, "filter prior pi", std::to_string(n_) + " values (10 per body)",
          std::to_string(prior_pi.size()));
  require(prior_pi.allFinite(), "filter prior pi", "finite values", "NaN or Inf");
  const bool log_cholesky = options_.state == InertialEkfOptions::State::LogCholesky;
  prior_pi_ = prior_pi;
  prior_state_.resize(n_);
  Eigen::MatrixXd prior_G = Eigen::MatrixXd::Zero(n_, n_);
  Eigen::VectorXd theta_std(n_), theta_rate(n_);
  for (int k = 0; k < measurement_model_.numBodies(); ++k) {
    const Vector10 pi = prior_pi.segment<10>(10 * k);
    const std::string body = model.names[bodies[k]];
    if (log_cholesky) {
      const auto report = inertia::checkConsistency(pi);
      require(report.consistent, "filter prior of body " + body, "physically consistent pi",
              report.violations.empty() ? "inconsistent" : report.violations.front().detail);
    }
    const Vector10 theta = inertia::logCholeskyFromPi(pi);
    if (log_cholesky)
      prior_state_.segment<10>(10 * k) = theta;
    else
      prior_state_.segment<10>(10 * k) = pi;
    prior_G.block<10, 10>(10 * k, 10 * k) = inertia::logCholeskyJacobian(theta);
    // theta = [alpha, d1, d2, d3 | s12, s23, s13, t1, t2, t3]: logarithms, then lengths
    theta_std.segment<10>(10 * k) << Eigen::Vector4d::Constant(options_.prior_std_log),
        Eigen::Matrix<double, 6, 1>::Constant(options_.prior_std_length);
    theta_rate.segment<10>(10 * k) << Eigen::Vector4d::Constant(options_.process_std_log),
        Eigen::Matrix<double, 6, 1>::Constant(options_.process_std_length);
  }
  const Eigen::MatrixXd P_theta = theta_std.cwiseAbs2().asDiagonal();
  const Eigen::MatrixXd Q_theta = theta_rate.cwiseAbs2().asDiagonal();
  if (log_cholesky) {
    prior_P_ = P_theta;
    process_rate_ = Q_theta;
  } else {
    // the baseline gets the same uncertainty, mapped to pi at the prior (first order)
    prior_P_ = prior_G * P_theta * prior_G.transpose();
    process_rate_ = prior_G * Q_theta * prior_G.transpose();
  }
  R_.resize(m_);
  for (int r = 0; r < m_; ++r) {
    const int row = measurement_model_.rows()[r];
    const double std = !measurement_model_.isBaseRow(r) ? options_.joint_torque_std
                       : row < 3                        ? options_.base_force_std
                                                        : options_.base_moment_std;
    R_[r] = std * std;
  }
  gamma_ = options_.gate_threshold > 0 ? options_.gate_threshold
                                       : chiSquareQuantile(options_.gate_probability, m_);
  gamma_by_dimension_ = Eigen::VectorXd::Zero(m_ + 1);
  for (int p = 1; p <= m_; ++p) {
    gamma_by_dimension_[p] = options_.gate_threshold > 0
                                 ? options_.gate_threshold
                                 : chiSquareQuantile(options_.gate_probability, p);
  }
  const int mp = std::min(m_, kMaxProjectedRows);
  AAt_ = ProjectionMatrix::Zero(mp, mp);
  sum_projector_ = ProjectionMatrix::Zero(mp, mp);
  E_ = Eigen::MatrixXd::Identity(m_, m_);
  RN_ = Eigen::MatrixXd::Zero(m_, m_);
  HP_ = Eigen::MatrixXd::Zero(m_, n_);
  projected_ = Eigen::VectorXd::Zero(m_);
  sum_projected_residual_ = Eigen::VectorXd::Zero(m_);
  dimension_ = last_dimension_ = m_;

  state_.resize(n_);
  pi_.resize(n_);
  output_pi_.resize(n_);
  bias_ = Eigen::VectorXd::Zero(m_);
  bias_sum_ = Eigen::VectorXd::Zero(m_);
  P_.resize(n_, n_);
  G_ = Eigen::MatrixXd::Identity(n_, n_);
  innovation_.resize(m_);
  w_.resize(m_);
  step_.resize(n_);
  saved_state_.resize(n_);
  H_.resize(m_, n_);
  PHt_.resize(n_, m_);
  S_.resize(m_, m_);
  X_.resize(m_, n_);
  saved_P_.resize(n_, n_);
  sym_.resize(n_, n_);
  I_KH_.resize(n_, n_);
  KR_.resize(n_, m_);
  projected_R_.resize(m_, m_);
  reset();
}

void InertialEkf::reset() {
  window_.clear();
  state_ = prior_state_;
  P_ = prior_P_;
  piFromState();
  output_pi_ = pi_;
  bias_.setZero();
  bias_sum_.setZero();
  calibrated_ = output_caught_up_ = started_ = false;
  calibration_start_ = last_time_ = nis_ = 0;
  calibration_count_ = 0;
  consecutive_gated_ = 0;
  counters_ = Counters{};
  sum_projector_.setZero();
  sum_projected_residual_.setZero();
  dimension_ = last_dimension_ = m_;
}

void InertialEkf::project() {
  // N: the eigenvectors of A A^T whose eigenvalues vanish (relative to the largest), A the
  // stance columns; an empty stance leaves every row
  const auto& A = measurement_.constraint;
  AAt_.noalias() = A * A.transpose();
  eigen_.compute(AAt_);
  const auto& lambda = eigen_.eigenvalues();
  const double tolerance = 1e-10 * std::max(1.0, lambda[m_ - 1]);
  dimension_ = 0;
  while (dimension_ < m_ && lambda[dimension_] < tolerance) ++dimension_;
  E_ = eigen_.eigenvectors();
}

void InertialEkf::keepInsideMargin() {
  // theta's image is consistent for every finite theta, but an update can bring a body as close to
  // a line mass as it likes; twice the project's margin leaves room for the rounding of theta -> pi
  bool lifted = false;
  for (int k = 0; k < measurement_model_.numBodies(); ++k) {
    Vector10 theta = state_.segment<10>(10 * k);
    if (inertia::liftLogCholeskyToMargin(theta, 2 * inertia::kConsistencyMargin)) {
      state_.segment<10>(10 * k) = theta;
      lifted = true;
    }
  }
  if (lifted) ++counters_.guarded;
}

void InertialEkf::piFromState() {
  if (options_.state == InertialEkfOptions::State::LinearPi) {
    pi_ = state_;
    return;
  }
  for (int k = 0; k < measurement_model_.numBodies(); ++k) {
    const pinocchio::LogCholeskyParameters theta(state_.segment<10>(10 * k));
    pi_.segment<10>(10 * k) = theta.toDynamicParameters();
    G_.block<10, 10>(10 * k, 10 * k) = theta.calculateJacobian();
  }
}

UpdateStatus InertialEkf::update(double time, const Eigen::Ref<const Eigen::VectorXd>& q,
                                 const Eigen::Ref<const Eigen::VectorXd>& v,
                                 const Eigen::Ref<const Eigen::VectorXd>& tau,
                                 const Eigen::Ref<const Eigen::VectorXd>& contact_forces) {
  ++counters_.samples;
  const auto& mm = measurement_model_;
  if (q.size() != mm.nq() || v.size() != mm.nv() || tau.size() != mm.nv() ||
      contact_forces.size() != mm.numForceInputs()) {
    ++counters_.rejected;
    return UpdateStatus::RejectedInput;
  }
  const SignalWindow::Push push = window_.push(time, q, v, tau, contact_forces);
  if (push == SignalWindow::Push::Rejected) {
    ++counters_.rejected;
    return UpdateStatus::RejectedInput;
  }
  if (push == SignalWindow::Push::Filling) return UpdateStatus::Filling;

  computeMeasurement(mm, measurement_, window_.q, window_.v, window_.a, window_.tau,
                     window_.forces);
  if (projected()) project();
  if (!started_) {
    started_ = true;
    calibration_start_ = last_time_ = window_.time;
  }
  if (!calibrated_) {
    if (window_.time - calibration_start_ < options_.calibration_duration) {
      // the residual of the prior, which the estimated bodies are assumed to have meanwhile
      w_ = measurement_.delta_tau;
      w_.noalias() -= measurement_.Y * prior_pi_;
      if (projected()) {
        // only N^T r is free of contact forces: accumulate the normal equations of
        // min_b sum_k |N_k^T (r_k - b)|^2, i.e. sum N N^T and sum N N^T r
        const auto N = E_.leftCols(dimension_);
        projected_.head(dimension_).noalias() = N.transpose() * w_;
        sum_projected_residual_.noalias() += N * projected_.head(dimension_);
        sum_projector_.noalias() += N * N.transpose();
      } else {
        bias_sum_ += w_;
      }
      ++calibration_count_;
      last_time_ = window_.time;
      return UpdateStatus::Calibrating;
    }
    if (calibration_count_ > 0 && !projected()) {
      bias_ = bias_sum_ / static_cast<double>(calibration_count_);
    } else if (calibration_count_ > 0) {
      // least squares through the eigenvectors of sum N N^T, whose eigenvalue / samples is the
      // share of the calibration that saw that direction: below 10 % it is left at 0 (a
      // direction seen while the basis turned past it would divide noise by a tiny number)
      eigen_.compute(sum_projector_);
      const auto& lambda = eigen_.eigenvalues();
      const double tolerance = 0.1 * static_cast<double>(calibration_count_);
      projected_.noalias() = eigen_.eigenvectors().transpose() * sum_projected_residual_;
      for (int i = 0; i < m_; ++i)
        projected_[i] = lambda[i] > tolerance ? projected_[i] / lambda[i] : 0;
      bias_.noalias() = eigen_.eigenvectors() * projected_;
    }
    calibrated_ = true;
  }
  const double dt = window_.time - last_time_;
  last_time_ = window_.time;
  const UpdateStatus status = correct(dt);

  // output: move toward the filter's estimate, each body's mass at most max_mass_rate dt
  const bool limit =
      options_.max_mass_rate > 0 && (options_.rate_limit_always || !output_caught_up_);
  bool caught_up = true;
  for (int k = 0; k < mm.numBodies(); ++k) {
    auto out = output_pi_.segment<10>(10 * k);
    const auto target = pi_.segment<10>(10 * k);
    const double change = std::abs(target[0] - out[0]), allowed = options_.max_mass_rate * dt;
    if (!limit || change <= allowed) {
      out = target;
    } else {
      out += (allowed / change) * (target - out);
      caught_up = false;
    }
  }
  if (caught_up && status == UpdateStatus::Updated) output_caught_up_ = true;
  return status;
}

UpdateStatus InertialEkf::correct(double dt) {
  P_.noalias() += dt * process_rate_;
  innovation_ = measurement_.delta_tau - bias_;
  innovation_.noalias() -= measurement_.Y * pi_;
  for (int k = 0; k < measurement_model_.numBodies(); ++k) {
    H_.middleCols<10>(10 * k).noalias() =
        measurement_.Y.middleCols<10>(10 * k) * G_.block<10, 10>(10 * k, 10 * k);
  }
  double gamma = gamma_;
  last_dimension_ = m_;
  if (projected()) {
    // z' = N^T y, H' = N^T H, R' = N^T R N in the first p rows; the other rows are zero with unit
    // variance (S stays m x m, so nothing is reallocated, and they add nothing to the NIS or K)
    const int p = dimension_;
    last_dimension_ = p;
    if (p == 0) return UpdateStatus::NoInformation;
    const auto N = E_.leftCols(p);
    projected_.head(p).noalias() = N.transpose() * innovation_;
    innovation_.head(p) = projected_.head(p);
    innovation_.tail(m_ - p).setZero();
    HP_.topRows(p).noalias() = N.transpose() * H_;
    H_.topRows(p) = HP_.topRows(p);
    H_.bottomRows(m_ - p).setZero();
    RN_.leftCols(p).noalias() = R_.asDiagonal() * N;
    gamma = gamma_by_dimension_[p];
  }
  PHt_.noalias() = P_ * H_.transpose();
  S_.noalias() = H_ * PHt_;
  if (projected()) {
    const int p = dimension_;
    projected_R_.topLeftCorner(p, p).noalias() = E_.leftCols(p).transpose() * RN_.leftCols(p);
    S_.topLeftCorner(p, p) += projected_R_.topLeftCorner(p, p);
    S_.bottomRightCorner(m_ - p, m_ - p).diagonal().array() += 1.0;
  } else {
    S_.diagonal() += R_;
  }
  llt_.compute(S_);
  if (llt_.info() != Eigen::Success) {
    ++counters_.failures;
    return UpdateStatus::NumericalFailure;
  }
  w_ = innovation_;
  llt_.solveInPlace(w_);
  nis_ = innovation_.dot(w_);
  if (!std::isfinite(nis_)) {
    ++counters_.failures;
    return UpdateStatus::NumericalFailure;
  }
  UpdateStatus status = UpdateStatus::Updated;
  if (options_.gating && nis_ > gamma) {
    if (consecutive_gated_ < options_.gate_max_consecutive) {
      ++consecutive_gated_;
      ++counters_.gated;
      return UpdateStatus::Gated;
    }
    status = UpdateStatus::GateOverride;  // a lasting change: keep using the data
    ++counters_.overridden;
  } else {
    consecutive_gated_ = 0;
  }

  saved_state_ = state_;
  saved_P_ = P_;
  step_.noalias() = PHt_ * w_;  // K y with K = P H^T S^-1
  state_ += step_;
  X_ = PHt_.transpose();
  llt_.solveInPlace(X_);  // S^-1 H P = K^T
  // Joseph form, P = (I - K H) P (I - K H)^T + K R K^T: positive semi-definite whatever the
  // rounding, where P - K H P loses definiteness once R spans many orders of magnitude (a row
  // nearly switched off by a large std)
  I_KH_.setIdentity();
  I_KH_.noalias() -= X_.transpose() * H_;
  sym_.noalias() = I_KH_ * P_;
  P_.noalias() = sym_ * I_KH_.transpose();
  if (projected()) {
    // R = N^T R N on the first p rows; the unit rows past p have K = 0
    const int p = dimension_;
    KR_.leftCols(p).noalias() = X_.topRows(p).transpose() * projected_R_.topLeftCorner(p, p);
    P_.noalias() += KR_.leftCols(p) * X_.topRows(p);
  } else {
    KR_.noalias() = X_.transpose() * R_.asDiagonal();
    P_.noalias() += KR_ * X_;
  }
  sym_ = P_.transpose();
  P_ += sym_;
  P_ *= 0.5;
  const bool log_cholesky = options_.state == InertialEkfOptions::State::LogCholesky;
  if (!state_.allFinite() || !P_.allFinite() || (log_cholesky && !saneLogCholesky(state_))) {
    state_ = saved_state_;
    P_ = saved_P_;
    ++counters_.failures;
    return UpdateStatus::NumericalFailure;
  }
  if (log_cholesky) keepInsideMargin();
  piFromState();
  ++counters_.updated;
  return status;
}

Eigen::VectorXd InertialEkf::piStandardDeviation() const {
  // P is positive semi-definite (Joseph form); a diagonal entry rounded below zero is zero
  return (G_ * P_ * G_.transpose()).diagonal().cwiseMax(0.0).cwiseSqrt();
}

}  // namespace heft::filter
