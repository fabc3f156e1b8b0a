#include "heft/estimation/reference_export.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/model/model.hpp"

namespace heft::estimation {
namespace {

void writeVector(std::ostream& out, const Eigen::Ref<const Eigen::VectorXd>& v) {
  for (Eigen::Index i = 0; i < v.size(); ++i) out << ' ' << v(i);
}

void writeMatrix(std::ostream& out, const Eigen::MatrixXd& m) {
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) out << ' ' << m(i, j);
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

double ReferenceResult::medianSeconds() const {
  require(!seconds.empty(), "reference result seconds", "at least one time", "none");
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double ReferenceResult::secondsToCost(double cost) const {
  require(
      cost_history.size() == time_history.size() && cost_history.size() == feasible_history.size(),
      "reference result histories", "one time and one feasibility flag per cost",
      std::to_string(time_history.size()) + " and " + std::to_string(feasible_history.size()));
  for (size_t i = 0; i < cost_history.size(); ++i)
    if (feasible_history[i] && cost_history[i] <= cost) return time_history[i];
  return -1;
}

namespace {

void writePlacement(std::ostream& out, const pinocchio::Model& model, pinocchio::FrameIndex frame) {
  const pinocchio::Frame& f = model.frames[frame];
  out << ' ' << f.parentJoint;
  writeMatrix(out, f.placement.rotation());
  writeVector(out, f.placement.translation());
}

void writeQuaternion(std::ostream& out, const Eigen::Quaterniond& q) {
  out << ' ' << q.x() << ' ' << q.y() << ' ' << q.z() << ' ' << q.w();
}

// What the reference can model: one-dimensional joints (and a free flyer), the log-Cholesky
// parametrization, a complete initial guess.
void checkReferenceModel(const LogProblem& lp) {
  require(lp.model && lp.dynamics && lp.sensors && lp.problem, "reference problem",
          "a built LogProblem", "null members");
  const pinocchio::Model& model = *lp.model;
  const Problem& problem = *lp.problem;
  const int np = problem.np(), N = problem.horizon();
  const bool free_flyer = model::isFreeFlyer(model, 1);
  for (int j = free_flyer ? 2 : 1; j < model.njoints; ++j)
    require(model.joints[j].nq() == 1 && model.joints[j].nv() == 1,
            "reference problem joint " + model.names[j], "one position and one velocity coordinate",
            std::to_string(model.joints[j].nq()) + " and " + std::to_string(model.joints[j].nv()));
  require(lp.dynamics->parametrization() == inertia::Parametrization::LogCholesky,
          "reference problem parametrization", "log-cholesky",
          inertia::toString(lp.dynamics->parametrization()));
  require(!lp.sensors->energy, "reference problem energy observations",
          "none (the reference has no energy rows)", "energy observations");
  require(static_cast<int>(lp.xs.size()) == N + 1 && static_cast<int>(lp.ws.size()) == N &&
              lp.theta.size() == np,
          "reference problem initial guess", "N + 1 states, N decisions and np parameters",
          std::to_string(lp.xs.size()) + ", " + std::to_string(lp.ws.size()) + ", " +
              std::to_string(lp.theta.size()));
}

// The stages, and the contact points they hold (the reference's models: rigid 3D points in
// LOCAL_WORLD_ALIGNED without Baumgarte terms, exact KKT solves, rigid touchdowns).
struct ReferenceStages {
  std::vector<const MultibodyStageModel*> stages;  ///< N + 1, the terminal last
  std::vector<std::string> contact_frames;         ///< every frame held somewhere
  std::vector<std::vector<int>> held;              ///< per running stage, into contact_frames
};

ReferenceStages referenceStages(const LogProblem& lp) {
  const Problem& problem = *lp.problem;
  const int N = problem.horizon();
  ReferenceStages r;
  std::vector<std::string>& contact_frames = r.contact_frames;
  auto contactIndex = [&](const std::string& frame) {
    auto it = std::find(contact_frames.begin(), contact_frames.end(), frame);
    if (it != contact_frames.end()) return static_cast<int>(it - contact_frames.begin());
    contact_frames.push_back(frame);
    return static_cast<int>(contact_frames.size()) - 1;
  };
  r.held.resize(N);
  for (int k = 0; k <= N; ++k) {
    const std::string stage = "reference problem stage " + std::to_string(k);
    const StageModel& s = k < N ? problem.running(k) : problem.terminal();
    const auto* m = dynamic_cast<const MultibodyStageModel*>(&s);
    require(m != nullptr, stage, "a MultibodyStageModel", "another stage");
    r.stages.push_back(m);
    if (k == N) break;
    require(m->dt() == lp.dt, stage + " dt", formatNumber(lp.dt), formatNumber(m->dt()));
    if (const dynamics::ContactDynamicsModel* c = m->contact()) {
      const dynamics::ContactOptions& o = c->options();
      require(o.baumgarte_kp == 0 && o.baumgarte_kd == 0 && o.mu == 0, stage + " contact options",
              "no Baumgarte gains and an exact solve (mu 0)", "other options");
      for (const dynamics::ContactSpec& spec : c->contacts()) {
        require(spec.type == dynamics::ContactSpec::Type::Point3D &&
                    spec.reference_frame == pinocchio::LOCAL_WORLD_ALIGNED,
                stage + " contact " + spec.frame, "a 3D point contact in LOCAL_WORLD_ALIGNED",
                "another kind");
        r.held[k].push_back(contactIndex(spec.frame));
      }
    }
    if (const dynamics::ImpulseDynamicsModel* impulse = m->impulse()) {
      require(impulse->options().restitution == 0 && impulse->options().mu == 0,
              stage + " impulse options", "restitution 0 and mu 0", "other options");
      std::vector<std::string> frames, impulse_frames;
      for (const auto& spec : m->contact()->contacts()) frames.push_back(spec.frame);
      for (const auto& spec : impulse->contacts()) impulse_frames.push_back(spec.frame);
      require(frames == impulse_frames, stage + " impulse", "the stage's contact set",
              "another set");
    }
  }
  return r;
}

// The model, the sensors, the contact frames, the priors and the parameters' initial guess.
void writeReferenceModel(std::ostream& out, const LogProblem& lp, const std::string& urdf,
                         const std::vector<std::string>& contact_frames) {
  const pinocchio::Model& model = *lp.model;
  const Problem& problem = *lp.problem;
  const MultibodySensors& sensors = *lp.sensors;
  const int nq = model.nq, nv = model.nv, np = problem.np(), N = problem.horizon();
  const int nj = static_cast<int>(sensors.encoders.size());
  const bool free_flyer = model::isFreeFlyer(model, 1);
  out << "heft-reference-estimation 2\n";
  out << "urdf " << urdf << "\n";
  out << "base " << (free_flyer ? "free-flyer" : "fixed") << "\n";
  out << "sizes " << nq << ' ' << nv << ' ' << np << ' ' << N << ' ' << nj << "\n";
  out << "gravity";
  writeVector(out, model.gravity.linear());
  out << "\n";
  for (int j = 1; j < model.njoints; ++j) {
    out << "inertia " << j;
    writeVector(out, model.inertias[j].toDynamicParameters());
    out << "\n";
  }
  out << "armature";
  writeVector(out, model.armature);
  out << "\nidentified";
  for (pinocchio::JointIndex j : lp.identified) out << ' ' << j;
  out << "\nparametrization log-cholesky\n";
  out << "dt " << lp.dt << "\n";
  out << "encoders";
  for (pinocchio::JointIndex j : sensors.encoders) out << ' ' << j;
  const bool imu = sensors.imu_frame > 0, mocap = sensors.mocap_frame > 0;
  out << "\nsensors " << sensors.joint_velocities << ' ' << imu << ' '
      << (imu && sensors.accelerometer) << ' ' << mocap << "\n";
  out << "stds " << sensors.encoder_std << ' ' << sensors.joint_velocity_std << ' '
      << sensors.gyro_std << ' ' << sensors.imu_orientation_std << ' ' << sensors.accelerometer_std
      << ' ' << sensors.mocap_position_std << ' ' << sensors.mocap_orientation_std << "\n";
  if (imu) {
    out << "imu_frame";
    writePlacement(out, model, sensors.imu_frame);
    out << "\n";
  }
  if (mocap) {
    out << "mocap_frame";
    writePlacement(out, model, sensors.mocap_frame);
    out << "\n";
  }
  out << "contact_frames " << contact_frames.size() << "\n";
  for (std::size_t i = 0; i < contact_frames.size(); ++i) {
    out << "contact_frame " << i;
    writePlacement(out, model, model.getFrameId(contact_frames[i]));
    out << "\n";
  }
  const ArrivalPrior& arrival = problem.arrival();
  out << "prior_x_mean";
  writeVector(out, arrival.x_mean);
  out << "\nprior_x_sqrt_info";
  writeMatrix(out, arrival.x_sqrt_info);
  out << "\nprior_theta_mean";
  writeVector(out, arrival.theta_mean);
  out << "\nprior_theta_sqrt_info";
  writeMatrix(out, arrival.theta_sqrt_info);
  out << "\ntheta_guess";
  writeVector(out, lp.theta);
  out << "\n";
}

// Every knot: the initial guess, the process noise, the measurements and the contacts.
void writeReferenceKnots(std::ostream& out, const LogProblem& lp, const ReferenceStages& r) {
  const MultibodySensors& sensors = *lp.sensors;
  const int N = lp.problem->horizon();
  const bool imu = sensors.imu_frame > 0, mocap = sensors.mocap_frame > 0;
  for (int k = 0; k <= N; ++k) {
    const MultibodyMeasurement& z = r.stages[k]->measurement();
    out << (k < N ? "knot " : "terminal ") << k;
    writeVector(out, lp.xs[k]);
    if (k < N) {
      writeVector(out, lp.ws[k]);
      out << "\nprocess_info";
      writeVector(out, r.stages[k]->processInfo());
      out << "\ntau";
      writeVector(out, z.tau);
    }
    out << "\njoints";
    writeVector(out, z.joint_q);
    if (sensors.joint_velocities) writeVector(out, z.joint_v);
    if (k < N) {
      out << "\ncontacts " << (r.stages[k]->impulse() != nullptr) << ' ' << r.held[k].size();
      for (int c : r.held[k]) out << ' ' << c;
    }
    if (imu) {
      out << "\nimu " << z.has_gyro;
      writeVector(out, z.gyro);
      out << ' ' << z.has_imu_orientation;
      writeQuaternion(out, z.imu_orientation.normalized());
      out << ' ' << z.has_accel;
      writeVector(out, z.accel);
    }
    if (mocap) {
      out << "\nmocap " << z.has_mocap;
      writeVector(out, z.mocap_position);
      writeQuaternion(out, z.mocap_orientation.normalized());
    }
    out << "\n";
  }
}

// The solver's settings and the points at which the reference checks heft's derivatives.
void writeReferenceSolver(std::ostream& out, const LogProblem& lp,
                          const ReferenceOptions& options) {
  const int nq = lp.model->nq, nv = lp.model->nv, np = lp.problem->np(), N = lp.problem->horizon();
  out << "solver " << options.max_iterations << ' ' << options.tolerance << ' ' << options.threads
      << ' ' << options.repetitions << "\n";
  out << "checks " << options.checks.size();
  const int ndx = 2 * nv;
  for (const ReferenceCheck& c : options.checks) {
    require(c.knot >= 0 && c.knot < N, "reference check knot", "in [0, N)", std::to_string(c.knot));
    require(c.x.size() == nq + nv && c.w.size() == ndx && c.theta.size() == np,
            "reference check sizes", "nq + nv, 2 nv and np", "other sizes");
    out << "\ncheck " << c.knot;
    writeVector(out, c.x);
    writeVector(out, c.w);
    writeVector(out, c.theta);
  }
  out << "\nend\n";
}

}  // namespace

void writeReferenceProblem(const std::string& path, const LogProblem& lp, const std::string& urdf,
                           const ReferenceOptions& options) {
  checkReferenceModel(lp);
  const ReferenceStages stages = referenceStages(lp);
  std::ofstream out(path);
  require(static_cast<bool>(out), "reference problem file", "a writable path", path);
  out << std::setprecision(17);
  writeReferenceModel(out, lp, urdf, stages.contact_frames);
  writeReferenceKnots(out, lp, stages);
  writeReferenceSolver(out, lp, options);
  require(out.good(), "reference problem file", "written", "a write error on " + path);
}

ReferenceResult readReferenceResult(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), "reference result file", "a readable file", path);
  ReferenceResult r;
  std::string line;
  bool header = false, end = false;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string tag;
    if (!(s >> tag)) continue;
    std::vector<double> values;
    for (double x; s >> x;) values.push_back(x);
    require(s.eof(), path + ": record " + tag, "numbers", line);
    auto one = [&](const char* name) {
      require(values.size() == 1, path + ": record " + name, "one number",
              std::to_string(values.size()));
      return values[0];
    };
    if (tag == "heft-reference-estimation-result") {
      header = one("heft-reference-estimation-result") == 1;
    } else if (tag == "converged") {
      r.converged = one("converged") != 0;
    } else if (tag == "iterations") {
      r.iterations = static_cast<int>(one("iterations"));
    } else if (tag == "solver_iter") {
      r.solver_iter = static_cast<int>(one("solver_iter"));
    } else if (tag == "initial_cost") {
      r.initial_cost = one("initial_cost");
    } else if (tag == "cost") {
      r.cost = one("cost");
    } else if (tag == "stop") {
      r.stop = one("stop");
    } else if (tag == "th_stop") {
      r.th_stop = one("th_stop");
    } else if (tag == "seconds") {
      r.seconds = values;
    } else if (tag == "theta") {
      r.theta = Eigen::Map<const Eigen::VectorXd>(values.data(), values.size());
    } else if (tag == "cost_history") {
      r.cost_history = values;
    } else if (tag == "time_history") {
      r.time_history = values;
    } else if (tag == "feasible_history") {
      r.feasible_history.assign(values.begin(), values.end());
      for (double f : values)
        require(f == 0 || f == 1, path + ": record feasible_history", "0 or 1", std::to_string(f));
    } else if (tag == "check") {
      require(values.size() >= 3, path + ": record check", "a knot, a state and a cost",
              std::to_string(values.size()) + " numbers");
      ReferenceResult::Check c;
      c.knot = static_cast<int>(values[0]);
      c.xnext = Eigen::Map<const Eigen::VectorXd>(values.data() + 1, values.size() - 2);
      c.cost = values.back();
      r.checks.push_back(std::move(c));
    } else if (tag == "check_jacobians") {
      require(!r.checks.empty() && !values.empty() && values[0] == r.checks.back().knot,
              path + ": record check_jacobians", "after the check of the same knot",
              line.substr(0, 40));
      // values: knot, ndx, np, then ndx (ndx + np) + ndx^2 numbers
      const int ndx = values.size() >= 3 ? static_cast<int>(values[1]) : 0;
      const int np = values.size() >= 3 ? static_cast<int>(values[2]) : -1;
      require(ndx > 0 && np >= 0 &&
                  values.size() == static_cast<size_t>(3 + ndx * (ndx + np) + ndx * ndx),
              path + ": record check_jacobians", "knot, ndx, np and ndx (ndx + np) + ndx^2 numbers",
              std::to_string(values.size()) + " numbers");
      ReferenceResult::Check& c = r.checks.back();
      c.F =
          Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
              values.data() + 3, ndx, ndx + np);
      c.G =
          Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
              values.data() + 3 + ndx * (ndx + np), ndx, ndx);
    } else if (tag == "end") {
      end = true;
    } else {
      require(false, path + ": record", "a known record", tag);
    }
  }
  require(header && end, path, "a heft-reference-estimation-result 1 file ending with 'end'",
          "a truncated or foreign file");
  return r;
}

ReferenceResult runReference(const std::string& executable, const std::string& problem_path,
                             const std::string& result_path) {
  std::remove(result_path.c_str());
  const std::string cmd =
      quoted(executable) + ' ' + quoted(problem_path) + ' ' + quoted(result_path);
  const int status = std::system(cmd.c_str());
  if (status != 0) throw SolveError(cmd + ": exit status " + std::to_string(status));
  return readReferenceResult(result_path);
}

}  // namespace heft::estimation
