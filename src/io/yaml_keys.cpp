#include "heft/io/yaml_keys.hpp"

#include <set>

#include "heft/common/error.hpp"

namespace heft::io {

void rejectDuplicateKeys(const YAML::Node& node, const std::string& source) {
  if (node.IsSequence()) {
    for (const auto& item : node) rejectDuplicateKeys(item, source);
    return;
  }
  if (!node.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (entry.first.IsScalar() && !seen.insert(entry.first.Scalar()).second)
      throw InputError(source + ":" + std::to_string(entry.first.Mark().line + 1) + ": '" +
                       entry.first.Scalar() + "' is given twice in the same mapping");
    rejectDuplicateKeys(entry.second, source);
  }
}

}  // namespace heft::io
