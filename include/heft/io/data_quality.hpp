#pragma once
/// \file Data quality of a log's joint group: what a syntactically valid log can still get wrong
/// physically. Held (exactly repeated) samples, the time steps (jitter, gaps, order, rate changes),
/// saturated torques (and torques at the model's effort limits), and whether positions agree with
/// integrated velocities (joints and, when logged, the base), with the clock-scale factor that
/// would reconcile them. Every finding is a count, the rows concerned (0-based sample index; a
/// finding about the step from row i - 1 to row i names row i) and a one-line text; a warning
/// means the estimators' results may be wrong, an info line says what was checked and found fine.
/// The statistics and thresholds, with their reasons: docs/io.md, "Data quality".
#include <cstddef>
#include <string>
#include <vector>

#include <pinocchio/multibody/model.hpp>

#include "heft/io/log.hpp"

namespace heft::io {

struct DataQualityOptions {
  /// Rows listed per finding (the counts cover every row). >= 1.
  int max_rows = 5;
  /// A time step is jittered when it is longer than jitter_factor x the median step of its rate
  /// segment (and not a gap) or shorter than that median / jitter_factor. 1.5 is far outside the
  /// timer noise of a real-time loop and inside the 0.7..8.8 ms spread of a logger that stamps
  /// late. > 1.
  double jitter_factor = 1.5;
  /// A time step is a gap when it is longer than gap_factor x the median step of its rate
  /// segment. 2.5, as
  /// SummaryOptions::dropout_factor (heft validate-log sets both from --dropout-factor), so a
  /// single missed sample (2 periods) is jitter and two missed samples are a gap. > jitter_factor.
  double gap_factor = 2.5;
  /// Rate changes are looked for in blocks of this many time steps: a block whose median step
  /// differs from the current segment's by more than rate_change_tolerance (relative) starts a
  /// new segment, so no segment is shorter than a block. 50 steps keep the block median robust to
  /// jitter. >= 5.
  int rate_block = 50;
  /// Relative difference of median steps that is a rate change: 0.2 separates 1 kHz from 800 Hz
  /// and ignores drift. In (0, 1).
  double rate_change_tolerance = 0.2;
  /// A joint torque is saturated when |tau| equals its largest value over the log in at least
  /// this many consecutive samples (a measured torque repeats exactly only when clamped).
  /// >= 2.
  int saturation_run = 10;
  /// Position/velocity agreement is measured over windows of this many time steps: the noise of
  /// a position difference stays the same while the motion grows with the window. 20 steps (20 ms
  /// at 1 kHz) bring encoder noise far below the motion of a moving joint. >= 1.
  int consistency_window = 20;
  /// A joint (or the base) disagrees when || dq - integral v || / max(|| dq ||, || integral v ||)
  /// over the windows exceeds this: 0 on a consistent log, 0.8 / 0.9 with a 5x / 10x clock error,
  /// 1 when one of them does not move, 2 for a sign error. In (0, 2).
  double consistency_threshold = 0.2;
  /// A joint (or the base) is judged only when its windowed motion (RMS of max(|Dq|, |Iv|)) is at
  /// least this many times the noise of Dq - Iv over a window, estimated from second differences
  /// of q and v (a smooth motion leaves them near 0, whatever the relation of q and v). A joint at
  /// rest is then not reported, and noise alone gives a judged joint a disagreement of about
  /// 1 / motion_to_noise = 0.1, half the threshold. >= 1.
  double motion_to_noise = 10.0;
  /// A step is a jump when |dq - c integral v| (c: the clock factor) exceeds jump_factor x the
  /// larger of the joint's typical step (RMS of c integral v) and its per-step noise, and at least
  /// min_jump. 10: a smooth trajectory's largest step is about 1.5 typical ones, and an
  /// integrator's velocity change at an impact stays below min_jump at 1 kHz. > 1.
  double jump_factor = 10.0;
  /// Smallest jump reported [rad or m]: encoder ticks and noise stay below 0.01. >= 0.
  double min_jump = 1e-2;
  /// The clock factor is a warning when it differs from 1 by more than this (relative). (0, 1).
  double clock_tolerance = 0.1;
  /// Throws InputError naming the field when an option is out of range.
  void validate() const;
};

enum class Severity { Info, Warning };
/// "info" / "warning".
std::string toString(Severity severity);

/// One line of the report.
struct DataQualityFinding {
  /// "held-samples", "time-steps", "jitter", "gaps", "time-order", "rate-changes", "saturation",
  /// "effort-limits", "position-velocity", "base-position-velocity".
  std::string check;
  Severity severity = Severity::Info;
  long count = 0;          ///< rows, samples or joints concerned, as the text says
  std::vector<long> rows;  ///< the first (or worst, as the text says) rows, at most max_rows
  std::string text;        ///< one line
};

/// Rows whose every joint q, v and tau equals the previous row's exactly.
struct HeldSamples {
  long rows = 0;                ///< held rows (a run of k held rows repeats one sample k times)
  long runs = 0;                ///< runs of consecutive held rows
  long longest_run = 0;         ///< rows in the longest run
  long longest_run_first = -1;  ///< its first held row
  std::vector<long> run_first;  ///< first held row of the first max_rows runs
};

/// The joint clock. Steps are time(i) - time(i - 1); statistics use the positive steps.
struct TimeSteps {
  double median = 0, min = 0, max = 0;  ///< [s]
  long min_row = -1, max_row = -1;      ///< row ending the shortest / longest step
  /// Robust relative spread: 1.4826 x median(|step - median|) / median (0 on a uniform clock).
  double spread = 0;
  /// Steps outside [m / jitter_factor, jitter_factor x m], m the median of their rate segment,
  /// gaps excluded.
  long jittered = 0;
  std::vector<long> jittered_rows;  ///< the first max_rows
  long gaps = 0;                    ///< steps longer than gap_factor x their segment's median
  double gap_time = 0;              ///< [s] inside them
  std::vector<long> gap_rows;       ///< the longest max_rows, longest first
  long duplicated = 0;              ///< time(i) == time(i - 1) (validateLog's error)
  long backwards = 0;               ///< time(i) < time(i - 1): a clock reset (validateLog's error)
  std::vector<long> order_rows;     ///< first max_rows of both
};

/// A stretch of the log at one rate.
struct RateSegment {
  long first_row = 0, last_row = 0;  ///< rows [first_row, last_row]
  double median_step = 0;            ///< [s]
};

/// A joint torque held at its extreme.
struct TorqueSaturation {
  std::string joint;
  double value = 0;      ///< the saturated tau [N m or N] (signed)
  long samples = 0;      ///< samples in runs of at least saturation_run at |value|
  long longest_run = 0;  ///< samples
  long first_row = -1;   ///< first row of the first such run
};

/// A joint torque at or beyond the model's effort limits.
struct EffortLimitExcess {
  std::string joint;
  double lower = 0, upper = 0;  ///< model.lowerEffortLimit, upperEffortLimit [N m or N]
  double max_abs = 0;           ///< largest |tau|
  long samples = 0;             ///< samples with tau >= upper or tau <= lower
  long first_row = -1;
};

/// Agreement of one position channel (a joint, or the base position in 3 components) with its
/// integrated velocity. dq_k = q(k) - q(k - 1), iv_k = (t_k - t_{k-1}) (v_{k-1} + v_k) / 2
/// (trapezoid; the base velocity rotated to the world frame); Dq, Iv: their sums over windows of
/// consistency_window steps, leaving out windows with a jump, a held row or a clock break.
struct PositionVelocityChannel {
  std::string name;
  bool judged = false;          ///< enough motion above noise to judge (motion_to_noise)
  double disagreement = 0;      ///< || Dq - Iv || / max(|| Dq ||, || Iv ||), or NaN if not judged
  double clock_factor = 0;      ///< sum(Dq Iv) / sum(Iv^2), or NaN without motion
  long jumps = 0;               ///< steps with |dq - c iv| above the jump threshold
  std::vector<long> jump_rows;  ///< the largest max_rows, largest first
  double largest_jump = 0;      ///< |dq - c iv| of the largest one [rad, m]
};

struct PositionVelocity {
  /// Least-squares ratio of Dq to Iv pooled over the judged joints: ~1 on a right clock, 5 on a
  /// 200 Hz log read as 1 kHz. NaN when no joint is judged.
  double clock_factor = 0;
  /// Per stretch between rate changes and jumps (empty with a single stretch): rows and factor.
  struct Segment {
    long first_row = 0, last_row = 0;
    double clock_factor = 0;
  };
  std::vector<Segment> segments;
  std::vector<PositionVelocityChannel> joints;
  long joint_jump_rows = 0;      ///< rows where at least one joint jumps
  bool has_base = false;         ///< joints/base_pose and joints/base_twist were logged
  PositionVelocityChannel base;  ///< "base", when has_base
};

struct DataQualityReport {
  long samples = 0;  ///< rows of the joint group
  TimeSteps time_steps;
  std::vector<RateSegment> rate_segments;  ///< one per rate (one on a steady clock)
  HeldSamples held;
  std::vector<TorqueSaturation> saturation;
  bool effort_limits_checked = false;  ///< a model was given
  std::vector<EffortLimitExcess> effort_limits;
  PositionVelocity position_velocity;
  /// One line per check, in the order above (info when fine).
  std::vector<DataQualityFinding> findings;

  /// True when no finding is a warning.
  bool ok() const;
  long warnings() const;
  /// The warnings' texts.
  std::vector<std::string> warningTexts() const;
  /// "data quality: ..." then one line per finding ("  warning  held samples: ...").
  std::string report() const;
};

/// Assesses the joint group of `log` (the other groups have their own clocks and are left to the
/// summary). The log should pass validateLog; a clock that is not strictly increasing is reported
/// (time-order), not thrown. \throws InputError when q, v, tau (or base_pose, base_twist) do not
/// match joints/time and joints/names in size, or for bad options.
DataQualityReport assessDataQuality(const Log& log, const DataQualityOptions& options = {});

/// The same, and torques at or beyond `model`'s lowerEffortLimit / upperEffortLimit (joints
/// matched by name; a log joint the model lacks, or without finite limits lower < 0 < upper, is
/// not checked).
DataQualityReport assessDataQuality(const Log& log, const pinocchio::Model& model,
                                    const DataQualityOptions& options = {});

}  // namespace heft::io
