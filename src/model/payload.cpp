#include "heft/model/payload.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"
#include "heft/inertia/inertia.hpp"

namespace heft::model {

namespace {
std::string num(double x) { return formatNumber(x, 6); }
}  // namespace

Payload Payload::fromPlacement(const pinocchio::SE3& body_T_payload, double mass,
                               const Vector3& com_in_payload, const Matrix3& inertia_in_payload) {
  const Matrix3& R = body_T_payload.rotation();
  Payload p;
  p.mass = mass;
  p.com = R * com_in_payload + body_T_payload.translation();
  p.inertia = R * inertia_in_payload * R.transpose();
  return p;
}

Vector10 Payload::pi() const { return inertia::piFromMassComInertia(mass, com, inertia); }

void Payload::validate() const {
  require(std::isfinite(mass) && mass > 0, "payload mass", "a finite value > 0 kg", num(mass));
  require(com.allFinite(), "payload com", "finite coordinates [m]", "non-finite values");
  require(inertia.allFinite(), "payload inertia", "finite entries [kg m^2]", "non-finite values");
  const double asym = (inertia - inertia.transpose()).cwiseAbs().maxCoeff();
  require(asym <= 1e-12 * std::max(1.0, inertia.cwiseAbs().maxCoeff()), "payload inertia",
          "a symmetric matrix", "asymmetry " + num(asym));
  // Point and line masses are realizable payloads: accept margins down to -eps instead of > 0.
  const Vector10 p = pi();
  const double eps = 1e-12 * std::max(1.0, p.cwiseAbs().maxCoeff());
  const inertia::ConsistencyReport report = inertia::checkConsistency(p, -eps);
  if (!report.consistent) {
    const auto& v = report.violations.front();
    throw InputError("payload: expected physically realizable mass and inertia, got " +
                     v.condition + " margin " + num(v.margin) + " (" + v.detail + ")");
  }
}

RobotModel attachPayload(const RobotModel& robot, const std::string& body, const Payload& payload) {
  return attachPayload(robot, robot.bodyIndex(body), payload);
}

RobotModel attachPayload(const RobotModel& robot, pinocchio::JointIndex joint,
                         const Payload& payload) {
  robot.body(joint);  // range check
  payload.validate();
  const Matrix3 symmetric = 0.5 * (payload.inertia + payload.inertia.transpose());
  const pinocchio::Inertia added(payload.mass, payload.com, pinocchio::Symmetric3(symmetric));
  RobotModel out = robot;
  out.setPi(joint, (robot.pinocchio().inertias[joint] + added).toDynamicParameters());
  return out;
}

}  // namespace heft::model
