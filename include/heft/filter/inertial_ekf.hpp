#pragma once
/// \file Online, physically consistent estimation of the inertial parameters of a few bodies
/// (online EKF paper, sec. III): an extended Kalman filter on log-Cholesky parameters theta
/// (eqs. 16-21), random-walk process model theta_k = theta_{k-1} + eta_k (eq. 18), measurement
/// Delta tau = Y_S g(theta) + nu (eq. 19, measurement.hpp), innovation gating (eq. 22), a start-up
/// window that calibrates a constant residual bias (sec. IV-B), rate-limited output, and
/// accelerations by finite differences with the matching delay (signal_window.hpp).
/// The paper's baseline, a linear Kalman filter on pi itself (eqs. 12, 15), is the same filter with
/// State::LinearPi: same measurement, noises, gating and bias, no parametrization.
///
/// Real-time shape: every buffer is allocated in the constructor; update() allocates nothing,
/// throws nothing (it returns a status) and is deterministic. Choices where the paper is silent are
/// in docs/filter.md.
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>

#include "heft/filter/measurement.hpp"
#include "heft/filter/signal_window.hpp"

namespace heft::filter {

struct InertialEkfOptions {
  enum class State { LogCholesky, LinearPi };
  /// LogCholesky: the paper's EKF; LinearPi: the baseline KF on pi (may go non-physical).
  State state = State::LogCholesky;

  // ---- signals ----
  /// h: window 2h + 1 samples, delay h samples (80 = 80 ms at 1 kHz; docs/filter.md, tuning)
  int difference_half_width = 80;
  double max_sample_gap = 0.01;  ///< [s] a larger gap restarts the window

  // ---- start-up bias ----
  /// [s] after the first full window: the mean of Delta tau - Y_S pi_prior over this window is
  /// subtracted from every later measurement (the paper's start-up calibration). The estimated
  /// bodies must be at their prior during it. 0: no calibration.
  double calibration_duration = 0.5;

  // ---- prior and process noise, per body, in theta (log-Cholesky) ----
  /// One-sigma of the prior of the dimensionless theta entries (alpha, d1, d2, d3: logarithms of
  /// scale, e.g. 0.5 = mass known within a factor e) and of the length entries (s12, s23, s13
  /// [m], t1, t2, t3 = COM [m]).
  double prior_std_log = 0.5;
  double prior_std_length = 0.1;
  /// Random-walk intensities: Q = diag(q^2) dt for a time step dt [1/sqrt(s)], [m/sqrt(s)].
  /// Defaults: Q/R sets the bandwidth, the common scale of Q and R was set so that the mean NIS
  /// without gating equals the number of rows on a MuJoCo stepping log (docs/filter.md).
  double process_std_log = 0.045;
  double process_std_length = 0.003;

  // ---- measurement noise (R diagonal) ----
  double joint_torque_std = 0.15;  ///< joint rows [N m] (or [N] for a prismatic joint)
  double base_force_std = 1.5;     ///< free-flyer force rows [N]
  double base_moment_std = 0.45;   ///< free-flyer moment rows [N m]

  // ---- innovation gating (eq. 22) ----
  bool gating = true;
  /// Gate: reject when y^T S^-1 y > gamma, gamma = the chi-square quantile of this probability
  /// with m degrees of freedom, unless gate_threshold > 0 sets gamma directly.
  double gate_probability = 0.999;
  double gate_threshold = 0;
  /// After this many rejections in a row the change is taken as real (a new load, not an
  /// impact): measurements are used again until one passes the gate.
  int gate_max_consecutive = 50;

  // ---- output ----
  /// Largest rate of change of each body's output mass [kg/s] (the paper: 3 kg/s), by a convex
  /// combination of the last output and the filter's estimate (consistent if both are). 0: none.
  double max_mass_rate = 3.0;
  /// false: only until the output first reaches the filter's estimate after start-up (the paper's
  /// activation ramp); true: always.
  bool rate_limit_always = false;

  /// Throws InputError naming the first field out of range.
  void validate() const;
};
std::string toString(InertialEkfOptions::State state);  ///< "log-cholesky" / "linear-pi"
InertialEkfOptions::State parseState(const std::string& name);

/// What one update() did (stored per sample by the replay; values are stable).
enum class UpdateStatus : std::uint8_t {
  Filling = 0,           ///< the difference window is not full yet: no output
  Calibrating = 1,       ///< accumulating the start-up bias: estimate held at the prior
  Updated = 2,           ///< measurement used
  Gated = 3,             ///< measurement rejected by the innovation gate
  GateOverride = 4,      ///< above the gate but used: too many rejections in a row
  RejectedInput = 5,     ///< NaN / Inf input or time not increasing: sample ignored
  NumericalFailure = 6,  ///< S not positive definite or a non-finite step: estimate kept
  /// projected measurement (stance frames) with no row left: every row carries contact forces
  NoInformation = 7,
};
const char* toString(UpdateStatus status);

class InertialEkf {
 public:
  /// Most measurement rows a filter with stance frames may have.
  static constexpr int kMaxProjectedRows = 48;

  /// \param model the robot (nominal inertias of every body outside S are taken as known).
  /// \param bodies S, joint indices. \param contacts points whose forces update() receives.
  /// \param prior_pi pi_S of the prior (10|S|), strictly physically consistent for LogCholesky.
  /// \throws InputError on bad options, bodies, contacts, or an inconsistent prior.
  InertialEkf(const pinocchio::Model& model, const std::vector<pinocchio::JointIndex>& bodies,
              const std::vector<ContactPoint>& contacts, const Eigen::VectorXd& prior_pi,
              const InertialEkfOptions& options = {});
  /// With wrench frames (measured wrenches) and stance frames (contact forces projected out):
  /// update()'s force input is then MeasurementModel::numForceInputs() long. With stance frames
  /// the measurement is z' = N^T (Delta tau - b), H' = N^T Y_S G, R' = N^T R N, N an orthonormal
  /// basis of the left null space of the stance columns of J_c^T on the rows (a frame counts as
  /// in stance when its flag is > 0 anywhere in the difference window); its dimension p varies per
  /// sample (0..m), the gate uses p degrees of freedom, and the start-up bias b is the
  /// least-squares constant whose projections best fit the projected residuals.
  InertialEkf(const pinocchio::Model& model, const std::vector<pinocchio::JointIndex>& bodies,
              const std::vector<ContactPoint>& contacts, const ExternalInputs& inputs,
              const Eigen::VectorXd& prior_pi, const InertialEkfOptions& options = {});

  /// One sample of the control loop: time [s], q (nq), v (nv), generalized forces tau (nv, the
  /// measured joint torques on the joint rows, 0 on free-flyer rows), contact forces (3 per
  /// contact, world frame, on the robot). Allocation-free, never throws.
  UpdateStatus update(double time, const Eigen::Ref<const Eigen::VectorXd>& q,
                      const Eigen::Ref<const Eigen::VectorXd>& v,
                      const Eigen::Ref<const Eigen::VectorXd>& tau,
                      const Eigen::Ref<const Eigen::VectorXd>& contact_forces);

  /// Restarts from the prior (window, bias, covariance, counters).
  void reset();

  // ---- results (valid once a sample left the window, else the prior) ----
  /// The output pi_S (10|S|): the filter's estimate through the rate limiter.
  const Eigen::VectorXd& estimate() const { return output_pi_; }
  /// The filter's own pi_S = g(theta) (or the state itself for LinearPi).
  /// True once the rate-limited output first reached the filter's estimate (then it follows
  /// it unlimited unless rate_limit_always).
  bool outputCaughtUp() const { return output_caught_up_; }
  const Eigen::VectorXd& filterEstimate() const { return pi_; }
  /// State (theta for LogCholesky, pi for LinearPi) and its covariance.
  const Eigen::VectorXd& state() const { return state_; }
  const Eigen::MatrixXd& covariance() const { return P_; }
  /// One-sigma of pi_S, linearized: sqrt(diag(G P G^T)). Computed on demand (allocates).
  Eigen::VectorXd piStandardDeviation() const;
  /// Time the estimate refers to: the centre of the difference window (h samples ago).
  double estimateTime() const { return window_.time; }
  double lastNis() const { return nis_; }          ///< normalized innovation squared, last update
  double gateThreshold() const { return gamma_; }  ///< gamma (all m rows)
  /// Rows of the last measurement: m, or p after the projection of the stance frames.
  int lastMeasurementDimension() const { return last_dimension_; }
  const Eigen::VectorXd& bias() const { return bias_; }  ///< m, calibrated residual bias
  const MeasurementModel& measurementModel() const { return measurement_model_; }
  const InertialEkfOptions& options() const { return options_; }
  struct Counters {
    long samples = 0, updated = 0, gated = 0, overridden = 0, rejected = 0, failures = 0;
    /// updates after which a body was lifted back to the consistency margin (log-Cholesky state)
    long guarded = 0;
  };
  const Counters& counters() const { return counters_; }

 private:
  void piFromState();       // pi_ and G_ from state_
  void keepInsideMargin();  // lifts bodies whose relative margin fell below the project's
  void project();           // E_ and dimension_ from the stance columns of the measurement
  bool projected() const { return measurement_model_.numStanceFrames() > 0; }
  UpdateStatus correct(double dt);

  InertialEkfOptions options_;
  MeasurementModel measurement_model_;
  MeasurementData measurement_;
  SignalWindow window_;
  int n_, m_;
  double gamma_ = 0;
  Eigen::VectorXd prior_pi_, prior_state_;
  Eigen::MatrixXd prior_P_;
  Eigen::MatrixXd process_rate_;  ///< n x n: Q per second
  Eigen::VectorXd R_;             ///< m: diag of R
  // state
  Eigen::VectorXd state_, pi_, output_pi_, bias_, bias_sum_;
  Eigen::MatrixXd P_, G_;  ///< G_: d pi / d state (block diagonal, 10 x 10 blocks)
  bool calibrated_ = false, output_caught_up_ = false, started_ = false;
  double calibration_start_ = 0, last_time_ = 0, nis_ = 0;
  long calibration_count_ = 0;
  int consecutive_gated_ = 0;
  Counters counters_;
  // workspaces
  Eigen::VectorXd innovation_, w_, step_, saved_state_;
  Eigen::MatrixXd H_, PHt_, S_, X_, saved_P_, sym_, I_KH_, KR_, projected_R_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  // projection (stance frames): eigenvectors of A A^T, ascending, the first dimension_ span N.
  // A bounded size keeps the eigensolver's temporaries off the heap (it allocates for MatrixXd).
  using ProjectionMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor,
                                         kMaxProjectedRows, kMaxProjectedRows>;
  Eigen::SelfAdjointEigenSolver<ProjectionMatrix> eigen_;
  ProjectionMatrix AAt_, sum_projector_;
  Eigen::MatrixXd E_, RN_, HP_;
  Eigen::VectorXd projected_, sum_projected_residual_, gamma_by_dimension_;
  int dimension_ = 0, last_dimension_ = 0;
};

}  // namespace heft::filter
