#pragma once
/// \file What heft::sampling identifies and how a search vector becomes a candidate model
/// (docs/sample.md): each chosen body's inertia in the log-Cholesky coordinates of its
/// pseudo-inertia (spi-active eq. 2, Pinocchio's order [alpha, d1, d2, d3, s12, s23, s13, t1, t2,
/// t3]: every candidate is physically consistent), the gain and tanh saturation kappa of each
/// actuator group (eq. 3), and MuJoCo's joint damping, dry friction and armature. CMA-ES searches a
/// normalized vector x: each coordinate is its start value plus a fixed step times x_i, so one
/// sigma fits all of them. The sampling ranges (spi-active Table 4) are bounds: a candidate outside
/// them is not simulated.
#include <string>
#include <vector>

#include <Eigen/Core>
#include <pinocchio/multibody/fwd.hpp>

#include "heft/common/types.hpp"
#include "heft/sim/sim_model.hpp"

namespace heft::sampling {

/// The box a body's candidates must lie in.
struct BodyRange {
  double mass_min = 0, mass_max = 0;  ///< [kg], 0 < min < max
  Vector3 com_min = Vector3::Zero();  ///< body (joint) frame [m]
  Vector3 com_max = Vector3::Zero();
  /// Principal moments of the rotational inertia about the COM [kg m^2], 0 < min < max.
  double inertia_min = 0, inertia_max = 0;
};

/// One body whose inertia is sampled.
struct SampledBody {
  std::string name;                      ///< as the user named it (a joint or its link)
  pinocchio::JointIndex joint = 0;       ///< Pinocchio joint of the body
  Vector10 start_pi = Vector10::Zero();  ///< the search starts here (the nominal model's pi)
  BodyRange range;
};

/// Default range around a nominal body: mass [0.5, 3] times, COM within 0.1 m of the nominal in
/// each axis, principal moments from a fifth of the smallest nominal one to five times the largest
/// plus what the largest mass at the farthest COM adds.
BodyRange defaultBodyRange(const Vector10& nominal_pi);

/// Joints that share one actuator model (spi-active assigns one kappa per motor type: hip, thigh,
/// calf): tau = gain kappa tanh(tau_cmd / kappa).
struct ActuatorGroup {
  std::string name;
  std::vector<int> joints;  ///< actuated joints, indices in sim::SimModel::jointNames()
  bool sample_gain = true;
  bool sample_saturation = true;
  double gain = 1;         ///< start (and the value when not sampled), > 0
  double saturation = 25;  ///< kappa [N m] start; 0 = no saturation (only when not sampled)
  double gain_min = 0.5, gain_max = 1.5;            ///< spi-active Table 4
  double saturation_min = 10, saturation_max = 40;  ///< [N m], spi-active Table 4
};

/// Friction and rotor inertia of one joint, as MuJoCo models them (damping: viscous [N m s/rad],
/// frictionloss: dry [N m], armature [kg m^2]); each sampled in [0, max] when its max > 0.
struct SampledJoint {
  std::string name;
  int joint = 0;  ///< index in sim::SimModel::jointNames()
  sim::JointFriction start;
  double damping_max = 0, frictionloss_max = 0, armature_max = 0;
};

/// A candidate model: what x means.
struct Candidate {
  std::vector<Vector10> body_pi;           ///< per SampledBody, Pinocchio order, joint frame
  std::vector<sim::ActuatorModel> groups;  ///< per ActuatorGroup
  std::vector<sim::JointFriction> joints;  ///< per SampledJoint
  /// [m] added to the logged (grounded) base heights: where the floor is relative to them
  /// (ParameterSpace's floor_offset_range).
  double floor_offset = 0;
};

/// The search space: sizes, names and the map x -> candidate.
class ParameterSpace {
 public:
  /// `floor_offset_range` > 0 samples the floor's height under a floating base's logged heights
  /// in [-range, range] [m], from 0 (step 2 mm): MuJoCo's soft contacts sink the feet into the
  /// floor by a few millimetres under load, which feet grounded at z = 0 (groundBaseHeight) miss,
  /// and a trunk whose start sinks would be fitted lighter to sink less.
  /// \throws InputError when a start value lies outside its range, a range is empty, a body or
  /// joint is listed twice, or nothing is sampled.
  ParameterSpace(std::vector<SampledBody> bodies, std::vector<ActuatorGroup> groups,
                 std::vector<SampledJoint> joints, double floor_offset_range = 0);

  int dimension() const { return dimension_; }
  /// One name per coordinate of x: "alpha[base]", ..., "gain[calf]", "damping[FL_hip_joint]".
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<SampledBody>& bodies() const { return bodies_; }
  const std::vector<ActuatorGroup>& groups() const { return groups_; }
  const std::vector<SampledJoint>& joints() const { return joints_; }
  double floorOffsetRange() const { return floor_offset_range_; }

  /// Each coordinate's step: its value's change per unit of x (log-Cholesky units for bodies, N m
  /// for kappa, m for the floor offset, ...).
  Eigen::VectorXd steps() const;
  /// The candidate at x (dimension() entries); x = 0 is the start.
  Candidate candidate(const Eigen::VectorXd& x) const;
  /// Whether every value of `c` lies in its range; otherwise `why` names the first that does not.
  bool inRange(const Candidate& c, std::string* why = nullptr) const;

 private:
  std::vector<SampledBody> bodies_;
  std::vector<ActuatorGroup> groups_;
  std::vector<SampledJoint> joints_;
  double floor_offset_range_ = 0;
  std::vector<Vector10> start_log_cholesky_;
  std::vector<std::string> names_;
  int dimension_ = 0;
};

/// The step of each log-Cholesky coordinate per unit of x: 0.1 for alpha and the d_i (about 20 %
/// in mass, 10 % in the size of the body), 0.01 m for the s_ij, 0.02 m for the COM t_i.
Vector10 logCholeskySteps();

}  // namespace heft::sampling
