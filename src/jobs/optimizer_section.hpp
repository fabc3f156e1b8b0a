#pragma once
// `optimizer:` of a job config that runs heft's CMA-ES (heft excite, heft sample).
#include <string>

#include <yaml-cpp/yaml.h>

#include "heft/common/error.hpp"
#include "heft/excite/cmaes.hpp"
#include "yaml_section.hpp"

namespace heft::jobs::yaml {

// iterations, population (0 = automatic), seed, sigma0; `docs` is the page listing the keys.
inline void readCmaesOptions(const YAML::Node& node, const std::string& source,
                             const std::string& docs, excite::CmaesOptions& o) {
  YamlSection s(node, "optimizer", source, docs);
  s.read("iterations", o.max_iterations, positiveCount);
  s.read("population", o.population, [](int n) {
    if (n != 0 && n < 2)
      throw InputError("expected 0 (automatic) or >= 2, got " + std::to_string(n));
  });
  s.read("seed", o.seed);
  s.read("sigma0", o.sigma0, positive);
  s.finish();
}

}  // namespace heft::jobs::yaml
