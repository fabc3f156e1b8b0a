#include "mujoco_spec.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include <algorithm>
#include <limits>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/sim/mujoco_errors.hpp"

namespace heft::sim {

void setQuat(double out[4], const Eigen::Matrix3d& R) {
  Eigen::Quaterniond q(R);
  q.normalize();
  out[0] = q.w();
  out[1] = q.x();
  out[2] = q.y();
  out[3] = q.z();
}

void setInertial(mjsBody* body, const pinocchio::Inertia& inertia) {
  const Eigen::Matrix3d I = inertia.inertia().matrix();
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(0.5 * (I + I.transpose()));
  Eigen::Matrix3d R = eig.eigenvectors();
  if (R.determinant() < 0) R.col(2) = -R.col(2);  // a rotation, not a reflection
  body->mass = inertia.mass();
  for (int k = 0; k < 3; ++k) {
    body->ipos[k] = inertia.lever()[k];
    body->inertia[k] = std::max(0.0, eig.eigenvalues()[k]);
  }
  setQuat(body->iquat, R);
  // principal moments and axes replace whatever the body had (a URDF's full inertia matrix)
  for (double& entry : body->fullinertia) entry = std::numeric_limits<double>::quiet_NaN();
  body->ialt.type = mjORIENTATION_QUAT;
  body->explicitinertial = 1;
}

pinocchio::Inertia mujocoInertia(const mjModel* m, int b) {
  const mjtNum* q = m->body_iquat + 4 * b;
  const Eigen::Matrix3d R =
      Eigen::Quaterniond(q[0], q[1], q[2], q[3]).normalized().toRotationMatrix();
  const Eigen::Vector3d d(m->body_inertia[3 * b], m->body_inertia[3 * b + 1],
                          m->body_inertia[3 * b + 2]);
  const Eigen::Matrix3d Ic = R * d.asDiagonal() * R.transpose();
  const Eigen::Vector3d c(m->body_ipos[3 * b], m->body_ipos[3 * b + 1], m->body_ipos[3 * b + 2]);
  const Eigen::Matrix3d symmetric = 0.5 * (Ic + Ic.transpose());
  return pinocchio::Inertia(m->body_mass[b], c, pinocchio::Symmetric3(symmetric));
}

mjModel* compileSpec(mjSpec* spec, const std::string& name) {
  mjModel* compiled = nullptr;
  std::string message;
  const bool ok = guardedMujocoCall([&] { compiled = mj_compile(spec, nullptr); }, message);
  if (!ok || compiled == nullptr) {
    const char* err = mjs_getError(spec);
    throw InputError("MuJoCo model of " + name + ": compile failed: " +
                     (ok ? std::string(err ? err : "unknown error") : message));
  }
  if (mjs_isWarning(spec)) {
    const char* err = mjs_getError(spec);
    mj_deleteModel(compiled);
    throw InputError("MuJoCo model of " + name +
                     ": compiler warning: " + std::string(err ? err : ""));
  }
  return compiled;
}

std::string saveSpecXml(const mjSpec* spec, const std::string& name) {
  char error[1024] = "";
  std::vector<char> text(1 << 20);
  for (;;) {
    const int needed =
        mj_saveXMLString(spec, text.data(), static_cast<int>(text.size()), error, sizeof(error));
    if (needed == 0) break;
    if (needed < 0) throw SolveError(name + ": MuJoCo could not save the model: " + error);
    text.resize(static_cast<std::size_t>(needed) + 1);
  }
  return std::string(text.data());
}

}  // namespace heft::sim
