#pragma once
/// \file Held-out torque prediction: a model (the robot's rigid-body parameters, plus the friction,
/// armature and torque offsets of a linear vector) applied to samples the fit did not see.
#include <string>

#include <Eigen/Core>

#include "heft/identify/problem.hpp"
#include "heft/identify/samples.hpp"
#include "heft/results/prediction.hpp"

namespace heft::identify {

/// The prediction errors of linear vector `x` (problem.layout's order) on `problem`, built from
/// `samples`: per row, y - Phi x of torqueSystem(problem) (measured minus predicted torque in the
/// problem's rows: joints for a fixed base, contact-projected rows for a floating base), and the
/// measured torque of the row, P_k S^T tau_k. Friction enters as Coulomb + viscous (the Stribeck
/// terms of the full form are not in the linear vector).
/// \throws InputError when x does not have the layout's size.
results::TorquePrediction predictTorques(const std::string& model, const StackedProblem& problem,
                                         const Samples& samples, const Eigen::VectorXd& x);

}  // namespace heft::identify
