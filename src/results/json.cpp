#include "heft/results/json.hpp"

#include <cmath>

namespace heft::results {

nlohmann::json finiteOrNull(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}

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
    body["prior_std"] = jsonArray(Eigen::VectorXd(b.prior_std));
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

nlohmann::json armatureJson(const std::vector<JointScalarEstimate>& armature) {
  nlohmann::json out = nlohmann::json::object();
  for (const JointScalarEstimate& a : armature) out[a.joint] = a.value;
  return out;
}

nlohmann::json armatureStdJson(const std::vector<JointScalarEstimate>& armature) {
  nlohmann::json out = nlohmann::json::object();
  for (const JointScalarEstimate& a : armature) out[a.joint] = a.std;
  return out;
}

nlohmann::json torqueOffsetsJson(const std::vector<JointScalarEstimate>& torque_offsets) {
  nlohmann::json out = nlohmann::json::object();
  for (const JointScalarEstimate& o : torque_offsets)
    out[o.joint] = {{"offset", o.value}, {"std", o.std}};
  return out;
}

nlohmann::json truthErrorsJson(const TruthErrors& truth) {
  nlohmann::json bodies = nlohmann::json::object();
  for (const BodyError& e : truth.bodies)
    bodies[e.name] = {{"mass_relative", e.mass_relative},
                      {"com_error_m", std::isfinite(e.com_error) ? e.com_error : -1.0},
                      {"inertia_relative", e.inertia_relative},
                      {"pseudo_inertia_distance",
                       std::isfinite(e.pseudo_inertia_distance) ? e.pseudo_inertia_distance : -1.0},
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

nlohmann::json contactForceErrorsJson(const ContactForceErrors& e) {
  return {
      {"force_rmse_n", e.rmse},
      {"relative_error", std::isfinite(e.relative) ? nlohmann::json(e.relative) : nlohmann::json()},
      {"state_agreement", e.state_agreement},
      {"contact_threshold_n", e.threshold},
      {"points", e.points},
      {"knots", e.knots}};
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

namespace {

nlohmann::json numberOrNull(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}

nlohmann::json channelJson(const io::PositionVelocityChannel& c) {
  return {{"name", c.name},
          {"judged", c.judged},
          {"disagreement", numberOrNull(c.disagreement)},
          {"clock_factor", numberOrNull(c.clock_factor)},
          {"jumps", c.jumps},
          {"jump_rows", c.jump_rows},
          {"largest_jump", c.largest_jump}};
}

}  // namespace

nlohmann::json dataQualityJson(const io::DataQualityReport& report) {
  nlohmann::json j;
  j["ok"] = report.ok();
  j["samples"] = report.samples;
  j["findings"] = nlohmann::json::array();
  for (const io::DataQualityFinding& f : report.findings) {
    j["findings"].push_back({{"check", f.check},
                             {"severity", io::toString(f.severity)},
                             {"count", f.count},
                             {"rows", f.rows},
                             {"text", f.text}});
  }
  const io::TimeSteps& t = report.time_steps;
  j["time_steps"] = {{"median", t.median},
                     {"min", t.min},
                     {"max", t.max},
                     {"min_row", t.min_row},
                     {"max_row", t.max_row},
                     {"spread", t.spread},
                     {"jittered", t.jittered},
                     {"jittered_rows", t.jittered_rows},
                     {"gaps", t.gaps},
                     {"gap_time", t.gap_time},
                     {"gap_rows", t.gap_rows},
                     {"duplicated", t.duplicated},
                     {"backwards", t.backwards},
                     {"order_rows", t.order_rows}};
  j["rate_segments"] = nlohmann::json::array();
  for (const io::RateSegment& s : report.rate_segments) {
    j["rate_segments"].push_back(
        {{"first_row", s.first_row}, {"last_row", s.last_row}, {"median_step", s.median_step}});
  }
  const io::HeldSamples& h = report.held;
  j["held_samples"] = {{"rows", h.rows},
                       {"runs", h.runs},
                       {"longest_run", h.longest_run},
                       {"longest_run_first", h.longest_run_first},
                       {"run_first", h.run_first}};
  j["saturation"] = nlohmann::json::array();
  for (const io::TorqueSaturation& s : report.saturation) {
    j["saturation"].push_back({{"joint", s.joint},
                               {"value", s.value},
                               {"samples", s.samples},
                               {"longest_run", s.longest_run},
                               {"first_row", s.first_row}});
  }
  if (report.effort_limits_checked) {
    j["effort_limits"] = nlohmann::json::array();
    for (const io::EffortLimitExcess& e : report.effort_limits) {
      j["effort_limits"].push_back({{"joint", e.joint},
                                    {"lower", e.lower},
                                    {"upper", e.upper},
                                    {"max_abs", e.max_abs},
                                    {"samples", e.samples},
                                    {"first_row", e.first_row}});
    }
  } else {
    j["effort_limits"] = nullptr;
  }
  const io::PositionVelocity& pv = report.position_velocity;
  nlohmann::json p;
  p["clock_factor"] = numberOrNull(pv.clock_factor);
  p["segments"] = nlohmann::json::array();
  for (const auto& s : pv.segments) {
    p["segments"].push_back({{"first_row", s.first_row},
                             {"last_row", s.last_row},
                             {"clock_factor", numberOrNull(s.clock_factor)}});
  }
  p["joint_jump_rows"] = pv.joint_jump_rows;
  p["joints"] = nlohmann::json::array();
  for (const auto& c : pv.joints) p["joints"].push_back(channelJson(c));
  p["base"] = pv.has_base ? channelJson(pv.base) : nlohmann::json();
  j["position_velocity"] = p;
  return j;
}

}  // namespace heft::results
