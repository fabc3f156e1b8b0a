#include "mujoco_spec.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
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

namespace {

// The numbers of attribute `attribute` inside [begin, end) of `xml`, and where its value sits.
bool attributeValues(const std::string& xml, std::size_t begin, std::size_t end,
                     const std::string& attribute, std::size_t& value_begin, std::size_t& value_end,
                     std::vector<double>& values) {
  if (!findAttribute(xml, begin, end, attribute, value_begin, value_end)) return false;
  std::istringstream in(xml.substr(value_begin, value_end - value_begin));
  values.clear();
  for (double x; in >> x;) values.push_back(x);
  return true;
}

// Every body's pos and quat written again from the spec at 17 digits: MuJoCo's writer prints 6,
// which turns an exact 45-degree frame into one off by 4e-7 rad. A value is replaced only where the
// text agrees with the spec to the writer's rounding (else the text is left as MuJoCo wrote it).
void fullPrecisionFrames(const mjSpec* spec, std::string& xml) {
  for (mjsElement* e = mjs_firstElement(const_cast<mjSpec*>(spec), mjOBJ_BODY); e;
       e = mjs_nextElement(const_cast<mjSpec*>(spec), e)) {
    const mjsBody* body = mjs_asBody(e);
    const std::string name = mjs_getString(mjs_getName(e));
    if (!body || name.empty() || name == "world") continue;
    const std::size_t begin = xml.find("<body name=\"" + name + "\"");
    if (begin == std::string::npos) continue;
    const std::size_t end = xml.find('>', begin);
    Eigen::Quaterniond q(body->quat[0], body->quat[1], body->quat[2], body->quat[3]);
    if (q.norm() == 0) continue;
    q.normalize();
    const double quat[4] = {q.w(), q.x(), q.y(), q.z()};
    for (const auto& [attribute, spec_values, n] :
         {std::tuple<std::string, const double*, int>{"quat", quat, 4},
          std::tuple<std::string, const double*, int>{"pos", body->pos, 3}}) {
      std::size_t value_begin = 0, value_end = 0;
      std::vector<double> text;
      if (!attributeValues(xml, begin, end, attribute, value_begin, value_end, text) ||
          static_cast<int>(text.size()) != n)
        continue;
      double sign = 1, gap = 0, gap_flipped = 0;
      for (int i = 0; i < n; ++i) {
        gap = std::max(gap, std::abs(text[i] - spec_values[i]));
        gap_flipped = std::max(gap_flipped, std::abs(text[i] + spec_values[i]));
      }
      if (attribute == "quat" && gap_flipped < gap) {
        sign = -1;
        gap = gap_flipped;
      }
      if (gap >
          1e-5 * (1 + Eigen::Map<const Eigen::VectorXd>(spec_values, n).cwiseAbs().maxCoeff()))
        continue;
      double value[4];
      for (int i = 0; i < n; ++i) value[i] = sign * spec_values[i];
      xml.replace(value_begin, value_end - value_begin, fullPrecision(value, n));
    }
  }
}

}  // namespace

bool findAttribute(const std::string& xml, std::size_t begin, std::size_t end,
                   const std::string& attribute, std::size_t& value_begin, std::size_t& value_end) {
  const std::size_t at = xml.find(" " + attribute + "=\"", begin);
  if (at == std::string::npos || at >= end) return false;
  value_begin = at + attribute.size() + 3;
  value_end = xml.find('"', value_begin);
  return value_end != std::string::npos;
}

std::string fullPrecision(const double* values, int n) {
  std::ostringstream s;
  s << std::setprecision(17);
  for (int i = 0; i < n; ++i) s << (i ? " " : "") << values[i];
  return s.str();
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
  std::string xml(text.data());
  fullPrecisionFrames(spec, xml);
  return xml;
}

}  // namespace heft::sim
