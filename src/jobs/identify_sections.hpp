#pragma once
// The `preparation:` and `problem:` sections of an identify config, also read by heft predict
// (their keys: docs/guide/identify.md).
#include <yaml-cpp/yaml.h>

#include <string>

#include "heft/identify/problem.hpp"
#include "heft/identify/samples.hpp"

namespace heft::jobs {

void readPreparationSection(const YAML::Node& node, const std::string& source,
                            identify::PreparationOptions& preparation);
void readProblemSection(const YAML::Node& node, const std::string& source,
                        identify::ProblemOptions& problem);

}  // namespace heft::jobs
