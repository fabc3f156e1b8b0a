#pragma once
/// \file The `heft estimate` job: a YAML config names the robot, the log, the bodies to estimate,
/// the window, the noise model and the solver; the job builds the estimation problem from the log
/// (buildLogProblem), solves it with the parametrized Riccati solver and gathers the estimated
/// trajectory (a log), the parameters with their posterior covariance in result.json's schema,
/// errors against the log's truth group, and a new URDF. The user guide's estimate page documents
/// every config field.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "heft/estimation/log_problem.hpp"
#include "heft/estimation/riccati_solver.hpp"
#include "heft/io/data_quality.hpp"
#include "heft/io/log.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/model.hpp"
#include "heft/results/body_estimate.hpp"
#include "heft/results/truth.hpp"

namespace heft::jobs {

struct EstimateJob {
  struct Config {
    std::string source = "<config>";  ///< where it came from, for messages
    std::string robot;                ///< short name or URDF / MJCF path
    model::BaseType base = model::BaseType::Default;
    std::string log;  ///< HDF5 file or CSV folder
    /// `log` as a list: further recordings of the same robot that share the parameters. Each
    /// gets the same window (start_time, knots, exclusions) and becomes one or more segments of
    /// one problem (estimation::joinProblems).
    std::vector<std::string> more_logs;
    /// Joints held at a position (`locked_joints`): a gripper, a passive joint, a joint the log
    /// lacks. Every 1-DoF joint of the robot must be in the log or here.
    std::vector<model::LockedJoint> locked_joints;
    /// Window: first knot at the joint sample nearest to start_time (default: the first sample);
    /// `knots` running stages (default: every remaining sample / stride). problem.first_sample
    /// and problem.knots are set by the job from these.
    std::optional<double> start_time;
    std::optional<int> knots;
    /// `window.exclude`: time ranges [s from each log's first sample, as identify's] whose
    /// samples no step may use: the window is cut there into segments, each with its own arrival
    /// prior, all sharing theta. Segments of fewer than `min_segment_knots` steps are dropped
    /// (a warning says which).
    std::vector<std::pair<double, double>> exclude;
    int min_segment_knots = 10;
    /// `estimate.friction`, `estimate.armature`, `estimate.torque_offsets`: nullopt = not
    /// estimated; an empty list = all (run() resolves it against the robot: every 1-dof joint;
    /// the armature's `all` = the friction joints when there are some) into problem.actuators.
    std::optional<std::vector<std::string>> friction_joints, armature_joints, torque_offset_joints;
    estimation::LogProblemOptions problem;
    estimation::RiccatiOptions solver;
    /// Contact-implicit (`contacts.source: implicit`): a point whose reconstructed normal force
    /// exceeds this is in contact (trajectory.h5's contacts group, the state agreement) [N].
    double contact_force_threshold = 1.0;
    /// `contacts.radius`: the points are the centres of spheres of this radius (go2's feet), so
    /// the implicit step's floor is raised by it [m].
    double contact_radius = 0;
    /// Contact-implicit kappa continuation (`contacts.kappa_start`, PRIME sec. V-F): solve first
    /// with kappa_start (smoother contacts), then with kappa raised geometrically over
    /// `continuation_steps` solves of at most `continuation_iterations` iterations each, each
    /// started from the last, before the final solve at `contacts.kappa`. nullopt: none.
    std::optional<double> kappa_start;
    int continuation_steps = 3;
    int continuation_iterations = 10;
    /// `initial_guess.smoothing`: before the solve, a smoothing pass estimates the trajectory
    /// alone (theta held at the prior, no actuator terms, generalized-force noise `torque_std`,
    /// at most `max_iterations`), and the solve starts from it instead of the encoders'
    /// differences. For noisy encoders: 0.01 rad at 1 kHz differences to 14 rad/s of velocity
    /// noise, from which Gauss-Newton on the full problem wanders off (docs/estimation.md).
    struct Smoothing {
      bool enabled = false;
      double torque_std = 1.0;  ///< [N m]
      int max_iterations = 30;
    } smoothing;
    /// \throws InputError naming the field.
    void validate() const;
  };

  /// One contiguous stretch of one log on which the trajectory was estimated (a segment of the
  /// joined problem), with what was reconstructed on it.
  struct Window {
    std::string log;
    int knots = 0, contact_phases = 0, touchdowns = 0;
    bool contacts_detected = false;
    double start_time = 0, end_time = 0;
    /// The estimated trajectory at the knots as a log: joints (q, v, and tau = logged torque +
    /// the estimated generalized-force noise), the base pose and twist on a floating base, the
    /// contact flags used, and an estimates group with the parameters and their standard
    /// deviations.
    io::Log trajectory;
    std::optional<results::TrajectoryErrors> trajectory_errors;
    /// Contact-implicit: the reconstructed contact forces against the truth's (simulated logs),
    /// and the steps whose Newton solve did not converge at the solution.
    std::optional<results::ContactForceErrors> contact_force_errors;
    /// The same per contact frame (points on one frame summed: a sole's corners against the sum
    /// of the truth's), when some frame holds several points.
    std::optional<results::ContactForceErrors> contact_force_errors_per_frame;
    int unconverged_contact_steps = 0;
  };

  struct Result {
    Config config;  ///< what ran
    std::string robot, log, scenario;
    std::string parametrization;
    estimation::RiccatiSummary summary;
    /// The smoothing pass's (initial_guess.smoothing), when it ran.
    std::optional<estimation::RiccatiSummary> smoothing;
    int stride = 0;
    double dt = 0;
    double time_s = 0;  ///< whole job, log reading and problem building included
    std::vector<results::BodyEstimate> bodies;
    std::vector<std::string> names;  ///< of `linear`: "m[base]", ..., "coulomb[joint]", ...
    /// pi of every estimated body, in the config's order, then the joint-side terms in
    /// results::ParameterLayout's order (coulomb, viscous per friction joint; armature; offsets)
    Eigen::VectorXd linear;
    Eigen::MatrixXd covariance;  ///< of `linear`: J(theta) Sigma_theta J^T
    Eigen::VectorXd theta;
    Eigen::MatrixXd theta_covariance;
    /// The joint-side terms (theta's tail) with their standard deviations (delta method through
    /// exp for the log-parametrized friction and armature).
    std::vector<results::JointFrictionEstimate> friction;
    std::vector<results::JointScalarEstimate> armature, torque_offsets;
    std::optional<results::TruthErrors> truth;
    /// Every segment in order (logs in the config's order, then time); at least one.
    std::vector<Window> windows;
    bool contacts_implicit = false;
    int totalKnots() const;
    std::vector<std::string> warnings;  ///< the data-quality warnings among them
    /// io::assessDataQuality of the log's joint group (against the robot's effort limits).
    std::optional<io::DataQualityReport> data_quality;

    /// True when the URDF may be written: converged or iteration-limited, every body consistent.
    bool writable() const;
    /// Why the URDF may not be written (empty when writable()), for the CLI's message.
    std::string refusal() const;
    std::string report() const;
    /// result.json: the common schema (method "riccati-map") plus an "estimation" object.
    nlohmann::json toJson() const;
  };

  /// Reads a YAML config: unknown keys, wrong types and out-of-range values are InputErrors naming
  /// the file, the line and the field. Relative paths are relative to the config's folder.
  static Config load(const std::string& path);
  static Config parse(const std::string& yaml_text, const std::string& source,
                      const std::string& base_dir);

  /// Runs the job; per-iteration progress lines go to `progress`.
  /// \throws InputError for a bad config, robot, log or window. A failed solve is a result whose
  /// summary says why, with the last accepted iterate.
  static Result run(const Config& config, Progress& progress);
  static Result run(const Config& config) {
    Progress silent;
    return run(config, silent);
  }

  /// The trajectory file of window i (0-based): trajectory.h5, trajectory_2.h5, ...
  static std::string trajectoryFileName(int i);

  /// Writes DIR/result.json, DIR/trajectory.h5 (trajectory_2.h5, ... for further windows) and, when
  /// result.writable() and the robot came from a URDF, DIR/robot.urdf, each atomically; refuses to
  /// replace existing outputs unless options.overwrite, and never writes over the input log.
  /// Returns the paths written.
  static std::vector<std::string> write(const Result& result, const std::string& out_dir,
                                        const WriteOptions& options = {});
};

}  // namespace heft::jobs
