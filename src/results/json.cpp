#include "heft/results/json.hpp"

#include <cmath>

namespace heft::results {

nlohmann::json jsonArray(const Eigen::VectorXd& v) {
  nlohmann::json j = nlohmann::json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) j.push_back(std::isfinite(v[i]) ? v[i] : 0.0);
  return j;
}

nlohmann::json jsonArray(const Eigen::MatrixXd& m) {
  nlohmann::json j = nlohmann::json::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) j.push_back(jsonArray(Eigen::VectorXd(m.row(r))));
  return j;
}

nlohmann::json parametersJson(const std::vector<BodyEstimate>& bodies) {
  nlohmann::json parameters = nlohmann::json::object();
  for (const BodyEstimate& b : bodies) {
    nlohmann::json body;
    body["mass"] = b.mass;
    body["com"] = jsonArray(Eigen::VectorXd(b.com));
    body["inertia"] = jsonArray(Eigen::MatrixXd(b.inertia));
    body["pi"] = jsonArray(Eigen::VectorXd(b.pi));
    body["prior_pi"] = jsonArray(Eigen::VectorXd(b.prior_pi));
    body["consistent"] = b.consistent;
    body["relative_margin"] =
        std::isfinite(b.relative_margin) ? nlohmann::json(b.relative_margin) : nlohmann::json();
    body["std"] = {{"mass", b.mass_std},
                   {"com", jsonArray(Eigen::VectorXd(b.com_std))},
                   {"inertia", jsonArray(Eigen::MatrixXd(b.inertia_std))},
                   {"pi", jsonArray(Eigen::VectorXd(b.pi_std))}};
    parameters[b.name] = body;
  }
  return parameters;
}

nlohmann::json frictionJson(const std::vector<JointFrictionEstimate>& friction) {
  nlohmann::json out = nlohmann::json::object();
  for (const JointFrictionEstimate& f : friction) {
    out[f.joint] = {{"coulomb", f.coulomb},
                    {"viscous", f.viscous},
                    {"std", {{"coulomb", f.coulomb_std}, {"viscous", f.viscous_std}}},
                    {"prior", {{"coulomb", f.coulomb_prior}, {"viscous", f.viscous_prior}}}};
    if (!f.gamma.empty()) out[f.joint]["gamma"] = f.gamma;
  }
  return out;
}

nlohmann::json truthErrorsJson(const TruthErrors& truth) {
  nlohmann::json bodies = nlohmann::json::object();
  for (const BodyError& e : truth.bodies)
    bodies[e.name] = {{"mass_relative", e.mass_relative},
                      {"com_error_m", std::isfinite(e.com_error) ? e.com_error : -1.0},
                      {"inertia_relative", e.inertia_relative},
                      {"mass_true", e.mass_true},
                      {"mass_estimate", e.mass_estimate}};
  nlohmann::json joints = nlohmann::json::object();
  for (const JointError& e : truth.joints)
    joints[e.joint] = {{"coulomb_relative", e.coulomb_relative},
                       {"viscous_relative", e.viscous_relative},
                       {"armature_relative", e.armature_relative}};
  return {{"bodies", bodies}, {"friction", joints}};
}

nlohmann::json predictionJson(const TorquePrediction& p) {
  nlohmann::json channels = nlohmann::json::object();
  for (size_t c = 0; c < p.channels.size(); ++c)
    channels[p.channels[c]] = {
        {"rmse", p.rmse[c]}, {"rms_measured", p.rms_measured[c]}, {"relative", p.relative[c]}};
  return {{"model", p.model},       {"samples", p.samples},           {"rows", p.rows},
          {"rmse_all", p.rmse_all}, {"relative_all", p.relative_all}, {"channels", channels}};
}

nlohmann::json trajectoryErrorsJson(const TrajectoryErrors& e) {
  nlohmann::json out = {{"joint_position_rad", e.joint_position},
                        {"joint_position_raw_rad", e.joint_position_raw},
                        {"joint_velocity_rad_s", e.joint_velocity},
                        {"joint_velocity_raw_rad_s", e.joint_velocity_raw}};
  if (e.has_base) {
    out["base_position_m"] = e.base_position;
    out["base_position_raw_m"] = e.base_position_raw;
    out["base_rotation_rad"] = e.base_rotation;
    out["base_rotation_raw_rad"] = e.base_rotation_raw;
  }
  return out;
}

}  // namespace heft::results
