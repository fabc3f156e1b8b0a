#include "heft/sampling/rollout.hpp"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/sim/mujoco_errors.hpp"
#include "heft/sim/random.hpp"

namespace heft::sampling {

namespace {

// The log's contact flags held at each joint sample, per contact sphere of `sim` (by name); empty
// when the log has no contacts group or names none of the spheres.
std::vector<std::vector<bool>> heldContactFlags(const sim::SimModel& sim, const io::Log& log) {
  std::vector<std::vector<bool>> held;
  if (!log.contacts || log.contacts->time.size() == 0) return held;
  const io::ContactSeries& c = *log.contacts;
  std::vector<int> column(sim.contactNames().size(), -1);
  bool any = false;
  for (std::size_t g = 0; g < column.size(); ++g) {
    const auto it = std::find(c.names.begin(), c.names.end(), sim.contactNames()[g]);
    if (it != c.names.end()) {
      column[g] = static_cast<int>(it - c.names.begin());
      any = true;
    }
  }
  if (!any) return held;
  const Eigen::VectorXd& time = log.joints.time;
  held.assign(time.size(), std::vector<bool>(column.size(), false));
  int row = 0;
  for (int i = 0; i < time.size(); ++i) {
    while (row + 1 < c.time.size() && c.time[row + 1] <= time[i]) ++row;
    for (std::size_t g = 0; g < column.size(); ++g)
      held[i][g] = column[g] >= 0 && c.flags(row, column[g]) != 0;
  }
  return held;
}

}  // namespace

void groundBaseHeight(const sim::SimModel& sim, const io::Log& log, ReplayData& data) {
  const int n = data.samples();
  const std::vector<int>& geoms = sim.contactGeoms();
  if (!sim.hasFreeFlyer() || geoms.empty()) return;
  const std::vector<std::vector<bool>> flags = heldContactFlags(sim, log);
  const mjModel* m = sim.mujoco();
  sim::SimModel::DataPtr d = sim.makeData();
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(sim.nv());
  Eigen::VectorXd shift = Eigen::VectorXd::Zero(n);
  std::vector<bool> known(n, false);
  for (int i = 0; i < n; ++i) {
    sim.setState(d.get(), data.q.col(i), v);
    mj_kinematics(m, d.get());
    double lowest = std::numeric_limits<double>::infinity(), sum = 0;
    int touching = 0;
    for (std::size_t g = 0; g < geoms.size(); ++g) {
      const double bottom = d->geom_xpos[3 * geoms[g] + 2] - m->geom_size[3 * geoms[g]];
      lowest = std::min(lowest, bottom);
      if (!flags.empty() && flags[i][g]) {
        sum += bottom;
        ++touching;
      }
    }
    if (flags.empty()) {  // no flags: the lowest sphere stands on the floor
      shift[i] = -lowest;
      known[i] = true;
    } else if (touching > 0) {
      shift[i] = -sum / touching;
      known[i] = true;
    }
  }
  // in flight the shift is held from the last touchdown (the first one before any)
  int first = 0;
  while (first < n && !known[first]) ++first;
  if (first == n) return;  // never in contact: the log's heights are all there is
  for (int i = 0; i < n; ++i) {
    if (!known[i]) shift[i] = i < first ? shift[first] : shift[i - 1];
  }
  data.q.row(2) += shift.transpose();
}

ReplayData ReplayData::fromLog(const sim::SimModel& sim, const io::Log& log, bool ground) {
  const pinocchio::Model& model = sim.nominal().pinocchio();
  const io::JointSeries& j = log.joints;
  const int n = static_cast<int>(j.time.size());
  if (n < 2) throw InputError("joints/time: expected at least 2 samples, got " + std::to_string(n));
  if (j.tau_cmd.rows() != n)
    throw InputError(
        "joints/tau_cmd: expected the commanded torques (the rollouts replay them), but the log "
        "has none");
  if (sim.hasFreeFlyer() && (j.base_pose.rows() != n || j.base_twist.rows() != n))
    throw InputError(
        "joints/base_pose, joints/base_twist: expected the base state of a floating-base log (the "
        "rollouts start from it); `heft base-state` estimates it from the IMU and the legs");
  ReplayData data;
  data.time = j.time;
  const int nu = sim.nu();
  data.q.resize(sim.nq(), n);
  data.v.resize(sim.nv(), n);
  data.tau.resize(nu, n);
  data.tau_cmd.resize(nu, n);
  data.q.setZero();
  data.v.setZero();
  if (sim.hasFreeFlyer()) {
    data.q.topRows(7) = j.base_pose.transpose();
    data.v.topRows(6) = j.base_twist.transpose();
  }
  for (int k = 0; k < nu; ++k) {
    const std::string& name = sim.jointNames()[k];
    const auto it = std::find(j.names.begin(), j.names.end(), name);
    if (it == j.names.end())
      throw InputError("joints/names: expected joint \"" + name +
                       "\" of the model (every actuated joint is simulated), the log lacks it");
    const int column = static_cast<int>(it - j.names.begin());
    const auto& joint = model.joints[model.getJointId(name)];
    if (joint.nq() == 2) {
      data.q.row(joint.idx_q()) = j.q.col(column).array().cos().transpose();
      data.q.row(joint.idx_q() + 1) = j.q.col(column).array().sin().transpose();
    } else {
      data.q.row(joint.idx_q()) = j.q.col(column).transpose();
    }
    data.v.row(joint.idx_v()) = j.v.col(column).transpose();
    data.tau.row(k) = j.tau.col(column).transpose();
    data.tau_cmd.row(k) = j.tau_cmd.col(column).transpose();
  }
  if (!data.q.allFinite() || !data.v.allFinite())
    throw InputError("joints: non-finite positions, velocities or base state");
  if (ground) groundBaseHeight(sim, log, data);
  return data;
}

void ReplayData::append(const ReplayData& other) {
  require(other.q.rows() == q.rows() && other.v.rows() == v.rows() &&
              other.tau.rows() == tau.rows() && other.tau_cmd.rows() == tau_cmd.rows(),
          "appended log", "the same robot's coordinates", "other sizes");
  require(samples() >= 2 && other.samples() >= 2, "appended log", "at least 2 samples each",
          std::to_string(std::min(samples(), other.samples())));
  const int n = samples(), m = other.samples();
  std::vector<double> steps(n - 1);
  for (int k = 0; k + 1 < n; ++k) steps[k] = time[k + 1] - time[k];
  std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
  const double shift = time[n - 1] + steps[steps.size() / 2] - other.time[0];
  const auto grow = [n, m](Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
    a.conservativeResize(Eigen::NoChange, n + m);
    a.rightCols(m) = b;
  };
  time.conservativeResize(n + m);
  time.tail(m) = other.time.array() + shift;
  grow(q, other.q);
  grow(v, other.v);
  grow(tau, other.tau);
  grow(tau_cmd, other.tau_cmd);
  joins.push_back(n);
  for (int j : other.joins) joins.push_back(n + j);
}

int ReplayData::recordingOf(int k) const {
  return static_cast<int>(std::upper_bound(joins.begin(), joins.end(), k) - joins.begin());
}

std::vector<Clip> drawClips(int samples, int count, int min_steps, int max_steps,
                            std::uint64_t seed, const std::vector<int>& joins) {
  require(count >= 1, "clips", ">= 1", std::to_string(count));
  require(min_steps >= 1 && min_steps <= max_steps, "clip steps", "1 <= min <= max",
          std::to_string(min_steps) + ", " + std::to_string(max_steps));
  if (samples < max_steps + 1)
    throw InputError("log: " + std::to_string(samples) + " samples, fewer than the longest clip (" +
                     std::to_string(max_steps + 1) + " samples)");
  // some recording must hold the longest clip, or the redraws below would never end
  int longest = 0, begin = 0;
  for (int j : joins) {
    if (j <= 0 || j >= samples) continue;
    longest = std::max(longest, j - begin);
    begin = j;
  }
  longest = std::max(longest, samples - begin);
  if (longest < max_steps + 1)
    throw InputError("log: the longest recording has " + std::to_string(longest) +
                     " samples, fewer than the longest clip (" + std::to_string(max_steps + 1) +
                     " samples)");
  const auto crosses = [&joins](const Clip& c) {
    for (int j : joins)
      if (c.start < j && j <= c.start + c.steps) return true;
    return false;
  };
  sim::Rng rng(seed, 0x5a3f);
  std::vector<Clip> clips(count);
  for (Clip& c : clips) {
    do {
      c.steps = min_steps + static_cast<int>(rng.uniform() * (max_steps - min_steps + 1));
      c.steps = std::min(c.steps, max_steps);
      const int last_start = samples - 1 - c.steps;
      c.start = std::min(last_start, static_cast<int>(rng.uniform() * (last_start + 1)));
    } while (crosses(c));
  }
  return clips;
}

namespace {

// Sums (or counts) per recording of the same data: the same shape, or one of them still empty.
template <typename Matrix>
void addSums(Matrix& into, const Matrix& other) {
  if (into.size() == 0) {
    into = other;
  } else if (other.size() > 0) {
    require(into.rows() == other.rows() && into.cols() == other.cols(), "cost terms",
            "sums over the same recordings",
            std::to_string(other.cols()) + " recordings added to " + std::to_string(into.cols()));
    into += other;
  }
}

}  // namespace

CostTerms& CostTerms::operator+=(const CostTerms& o) {
  base_position += o.base_position;
  base_orientation += o.base_orientation;
  base_velocity += o.base_velocity;
  base_angular_velocity += o.base_angular_velocity;
  joint_position += o.joint_position;
  joint_velocity += o.joint_velocity;
  joint_torque += o.joint_torque;
  addSums(joint_torque_sum, o.joint_torque_sum);
  addSums(recording_steps, o.recording_steps);
  actuator_torque += o.actuator_torque;
  addSums(actuator_torque_sum, o.actuator_torque_sum);
  addSums(actuator_recording_samples, o.actuator_recording_samples);
  actuator_samples += o.actuator_samples;
  steps += o.steps;
  max_tilt = std::max(max_tilt, o.max_tilt);
  min_base_height = std::min(min_base_height, o.min_base_height);
  finite = finite && o.finite;
  return *this;
}

namespace {

// Per recording (column) its sum over its count; a recording without any takes the pooled mean.
Eigen::MatrixXd meanOf(const Eigen::MatrixXd& sum, const Eigen::VectorXd& counts) {
  if (sum.size() == 0 || counts.size() != sum.cols() || counts.sum() <= 0) return Eigen::MatrixXd();
  const Eigen::VectorXd pooled = sum.rowwise().sum() / counts.sum();
  Eigen::MatrixXd mean(sum.rows(), sum.cols());
  for (Eigen::Index r = 0; r < sum.cols(); ++r)
    mean.col(r) = counts[r] > 0 ? Eigen::VectorXd(sum.col(r) / counts[r]) : pooled;
  return mean;
}

// sum_r sum_k |r_k - d_r|^2 from sum_k |r_k|^2, each recording's sum_k r_k and count
double squaresLess(double squares, const Eigen::MatrixXd& sum, const Eigen::VectorXd& counts,
                   const Eigen::MatrixXd& d) {
  if (d.size() == 0 || sum.size() == 0) return squares;
  require(d.rows() == sum.rows() && d.cols() == sum.cols(), "mean_residual",
          std::to_string(sum.rows()) + " joints x " + std::to_string(sum.cols()) + " recordings",
          std::to_string(d.rows()) + " x " + std::to_string(d.cols()));
  double less = squares;
  for (Eigen::Index r = 0; r < sum.cols(); ++r)
    less += counts[r] * d.col(r).squaredNorm() - 2 * d.col(r).dot(sum.col(r));
  // a rounding-level negative when every residual equals its mean
  return std::max(0.0, less);
}

}  // namespace

Eigen::MatrixXd CostTerms::meanTorqueResidual() const {
  return meanOf(joint_torque_sum, recording_steps);
}

double CostTerms::jointTorqueLess(const Eigen::MatrixXd& d) const {
  return squaresLess(joint_torque, joint_torque_sum, recording_steps, d);
}

double CostTerms::jointTorqueBeyondOffsets() const { return jointTorqueLess(meanTorqueResidual()); }

Eigen::MatrixXd CostTerms::meanActuatorResidual() const {
  return meanOf(actuator_torque_sum, actuator_recording_samples);
}

double CostTerms::actuatorTorqueLess(const Eigen::MatrixXd& d) const {
  return squaresLess(actuator_torque, actuator_torque_sum, actuator_recording_samples, d);
}

double CostTerms::actuatorTorqueBeyondOffsets() const {
  return actuatorTorqueLess(meanActuatorResidual());
}

CostTerms actuatorTerms(const ParameterSpace& space, const Candidate& candidate,
                        const ReplayData& data, int begin, int end) {
  CostTerms terms;
  const Eigen::Index nu = data.tau.rows();
  const int recordings = data.recordings();
  terms.actuator_torque_sum = Eigen::MatrixXd::Zero(nu, recordings);
  terms.actuator_recording_samples = Eigen::VectorXd::Zero(recordings);
  begin = std::max(0, begin);
  end = std::min(end, data.samples());
  if (end <= begin) return terms;
  // [begin, end) cut at the recordings' starts: each piece's sums go to its own column
  for (int piece = begin; piece < end;) {
    const int r = data.recordingOf(piece);
    const int piece_end =
        r < static_cast<int>(data.joins.size()) ? std::min(end, data.joins[r]) : end;
    for (std::size_t g = 0; g < space.groups().size(); ++g) {
      const sim::ActuatorModel& actuator = candidate.groups[g];
      for (int j : space.groups()[g].joints) {
        double squares = 0, sum = 0;
        for (int k = piece; k < piece_end; ++k) {
          const double res = actuator.apply(data.tau_cmd(j, k)) - data.tau(j, k);
          squares += res * res;
          sum += res;
        }
        terms.actuator_torque += squares;
        terms.actuator_torque_sum(j, r) += sum;
      }
    }
    terms.actuator_recording_samples[r] += piece_end - piece;
    piece = piece_end;
  }
  terms.actuator_samples = end - begin;
  terms.finite = std::isfinite(terms.actuator_torque);
  return terms;
}

void CostWeights::validate() const {
  const auto check = [](double w, const char* name) {
    require(std::isfinite(w) && w >= 0, std::string("weights.") + name, "a finite value >= 0",
            formatNumber(w));
  };
  check(base_position, "base_position");
  check(base_velocity, "base_velocity");
  check(base_orientation, "base_orientation");
  check(base_angular_velocity, "base_angular_velocity");
  check(joint_position, "joint_position");
  check(joint_velocity, "joint_velocity");
  check(joint_torque, "joint_torque");
  check(actuator_torque, "actuator_torque");
}

double weightedCost(const CostTerms& t, const CostTerms& ref, const CostWeights& w) {
  if (!t.finite || t.steps == 0) return std::numeric_limits<double>::infinity();
  double cost = 0;
  const auto add = [&](double weight, double term, double reference) {
    if (weight > 0 && reference > 0) cost += weight * (term / t.steps) / (reference / ref.steps);
  };
  add(w.base_position, t.base_position, ref.base_position);
  add(w.base_orientation, t.base_orientation, ref.base_orientation);
  add(w.base_velocity, t.base_velocity, ref.base_velocity);
  add(w.base_angular_velocity, t.base_angular_velocity, ref.base_angular_velocity);
  add(w.joint_position, t.joint_position, ref.joint_position);
  add(w.joint_velocity, t.joint_velocity, ref.joint_velocity);
  if (w.torque_offsets)
    add(w.joint_torque, t.jointTorqueBeyondOffsets(), ref.jointTorqueBeyondOffsets());
  else
    add(w.joint_torque, t.joint_torque, ref.joint_torque);
  // per sample, not per rollout step: its own counts
  if (w.actuator_torque > 0 && t.actuator_samples > 0 && ref.actuator_samples > 0) {
    const double term = w.torque_offsets ? t.actuatorTorqueBeyondOffsets() : t.actuator_torque;
    const double reference =
        w.torque_offsets ? ref.actuatorTorqueBeyondOffsets() : ref.actuator_torque;
    if (reference > 0)
      cost += w.actuator_torque * (term / t.actuator_samples) / (reference / ref.actuator_samples);
  }
  return std::isfinite(cost) ? cost : std::numeric_limits<double>::infinity();
}

Rollout::Rollout(const sim::SimModel& sim, const ParameterSpace& space)
    : sim_(sim), space_(space), data_(nullptr, mj_deleteData) {
  sim::installMujocoHandlers();
  sim::guardedMujocoCallOrThrow("mj_copyModel",
                                [this] { model_ = mj_copyModel(nullptr, sim_.mujoco()); });
  if (!model_) throw SolveError("MuJoCo could not copy the model");
  data_ = sim::SimModel::DataPtr(mj_makeData(model_), mj_deleteData);
  if (!data_) throw SolveError("MuJoCo could not allocate data for the model");
  const int nu = sim_.nu();
  actuators_.assign(nu, sim::ActuatorModel{});
  for (int k = 0; k < nu; ++k) {
    const auto it = sim_.options().actuators.find(sim_.jointNames()[k]);
    if (it != sim_.options().actuators.end()) actuators_[k] = it->second;
  }
  q_.resize(sim_.nq());
  v_.resize(sim_.nv());
  tau_cmd_.resize(nu);
  tau_.resize(nu);
  positions_.resize(nu);
  positions_log_.resize(nu);
}

Rollout::~Rollout() {
  data_.reset();
  if (model_) mj_deleteModel(model_);
}

void Rollout::apply(const Candidate& c) {
  for (std::size_t b = 0; b < space_.bodies().size(); ++b) {
    const Vector10& pi = c.body_pi[b];
    const int body = sim_.mujocoBody(space_.bodies()[b].joint);
    const double mass = inertia::mass(pi);
    const Vector3 com = inertia::centerOfMass(pi);
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(inertia::rotationalInertiaAtCom(pi));
    Eigen::Matrix3d axes = eig.eigenvectors();
    if (axes.determinant() < 0) axes.col(2) *= -1;  // a rotation, so MuJoCo's quaternion exists
    const Eigen::Quaterniond frame(axes);
    model_->body_mass[body] = mass;
    for (int i = 0; i < 3; ++i) {
      model_->body_ipos[3 * body + i] = com[i];
      model_->body_inertia[3 * body + i] = eig.eigenvalues()[i];
    }
    model_->body_iquat[4 * body + 0] = frame.w();
    model_->body_iquat[4 * body + 1] = frame.x();
    model_->body_iquat[4 * body + 2] = frame.y();
    model_->body_iquat[4 * body + 3] = frame.z();
  }
  for (std::size_t g = 0; g < space_.groups().size(); ++g) {
    for (int k : space_.groups()[g].joints) actuators_[k] = c.groups[g];
  }
  floor_offset_ = c.floor_offset;
  for (std::size_t j = 0; j < space_.joints().size(); ++j) {
    const int dof = sim_.mujocoDof(space_.joints()[j].joint);
    model_->dof_damping[dof] = c.joints[j].damping;
    model_->dof_frictionloss[dof] = c.joints[j].frictionloss;
    model_->dof_armature[dof] = c.joints[j].armature;
  }
  // subtree masses, the inverse weights that scale the contact solver's regularization, ...
  mjModel* m = model_;
  mjData* d = data_.get();
  sim::guardedMujocoCallOrThrow("mj_setConst", [m, d] { mj_setConst(m, d); });
}

int Rollout::residualSize() const { return (sim_.hasFreeFlyer() ? 9 : 0) + 3 * sim_.nu(); }

CostTerms Rollout::run(const ReplayData& data, const Clip& clip, const Replay& replay,
                       Eigen::VectorXd* residuals) {
  CostTerms terms;
  const int per_step = residualSize();
  if (residuals && residuals->size() != clip.steps * per_step)
    residuals->resize(clip.steps * per_step);
  require(clip.start >= 0 && clip.steps >= 1 && clip.start + clip.steps < data.samples(), "clip",
          "within the log", std::to_string(clip.start) + " + " + std::to_string(clip.steps));
  mjModel* m = model_;
  mjData* d = data_.get();
  mj_resetData(m, d);
  const bool free_flyer = sim_.hasFreeFlyer();
  q_ = data.q.col(clip.start);
  v_ = data.v.col(clip.start);
  const Vector3 floor_shift(0, 0, free_flyer ? floor_offset_ : 0.0);
  if (free_flyer) q_.head<3>() += floor_shift;
  sim_.setState(d, q_, v_);
  const int nu = sim_.nu();
  const int offset = sim_.actuatedOffset();
  const int recording = data.recordingOf(clip.start);  // a clip never crosses a join
  terms.joint_torque_sum = Eigen::MatrixXd::Zero(nu, data.recordings());
  terms.recording_steps = Eigen::VectorXd::Zero(data.recordings());
  std::string message;
  const auto fail = [&terms] {
    terms.finite = false;
    return terms;
  };
  for (int k = 0; k < clip.steps; ++k) {
    const int idx = clip.start + k;
    m->opt.timestep = data.time[idx + 1] - data.time[idx];
    if (!sim::guardedMujocoCall([m, d] { mj_step1(m, d); }, message)) return fail();
    tau_cmd_ = data.tau_cmd.col(idx);
    if (replay.closedLoop()) {
      sim_.getState(d, q_, v_);
      sim_.jointPositions(q_, positions_);
      q_ = data.q.col(idx);  // q_ as scratch for the log's angles; v_ keeps the simulated rates
      sim_.jointPositions(q_, positions_log_);
      for (int i = 0; i < nu; ++i) {
        tau_cmd_[i] += replay.kp[i] * (positions_log_[i] - positions_[i]) +
                       replay.kd[i] * (data.v(offset + i, idx) - v_[offset + i]);
      }
    }
    for (int i = 0; i < nu; ++i) tau_[i] = actuators_[i].apply(tau_cmd_[i]);
    sim_.setJointTorques(d, tau_);
    terms.joint_torque += (tau_ - data.tau.col(idx)).squaredNorm();
    terms.joint_torque_sum.col(recording) += tau_ - data.tau.col(idx);
    double* r = residuals ? residuals->data() + static_cast<Eigen::Index>(k) * per_step : nullptr;
    if (r) Eigen::Map<Eigen::VectorXd>(r + per_step - nu, nu) = tau_ - data.tau.col(idx);
    if (!sim::guardedMujocoCall([m, d] { mj_step2(m, d); }, message)) return fail();
    if (sim::SimModel::warningCount(d) > 0) return fail();  // MuJoCo reset a diverged state
    sim_.getState(d, q_, v_);
    if (!q_.allFinite() || !v_.allFinite()) return fail();
    const int next = idx + 1;
    if (free_flyer) {
      const Vector3 position_error = q_.head<3>() - data.q.col(next).head<3>() - floor_shift;
      const Eigen::Matrix<double, 6, 1> twist_error = v_.head<6>() - data.v.col(next).head<6>();
      terms.base_position += position_error.squaredNorm();
      const double dot = q_.segment<4>(3).dot(data.q.col(next).segment<4>(3));
      terms.base_orientation += 1.0 - dot * dot;
      terms.base_velocity += twist_error.head<3>().squaredNorm();
      terms.base_angular_velocity += twist_error.tail<3>().squaredNorm();
      const double qx = q_[3], qy = q_[4];  // z axis tilt: cos = 1 - 2 (qx^2 + qy^2)
      terms.max_tilt =
          std::max(terms.max_tilt, std::acos(std::clamp(1 - 2 * (qx * qx + qy * qy), -1.0, 1.0)));
      terms.min_base_height = std::min(terms.min_base_height, q_[2] - floor_shift.z());
      if (r) {
        Eigen::Map<Eigen::VectorXd>(r, 3) = position_error;
        Eigen::Map<Eigen::VectorXd>(r + 3, 6) = twist_error;
      }
    }
    sim_.jointPositions(q_, positions_);
    v_.tail(nu) -= data.v.col(next).tail(nu);
    terms.joint_velocity += v_.tail(nu).squaredNorm();
    q_ = data.q.col(next);
    sim_.jointPositions(q_, positions_log_);
    terms.joint_position += (positions_ - positions_log_).squaredNorm();
    if (r) {
      const int base = free_flyer ? 9 : 0;
      Eigen::Map<Eigen::VectorXd>(r + base, nu) = positions_ - positions_log_;
      Eigen::Map<Eigen::VectorXd>(r + base + nu, nu) = v_.tail(nu);
    }
    ++terms.steps;
    terms.recording_steps[recording] += 1;
  }
  return terms;
}

}  // namespace heft::sampling
