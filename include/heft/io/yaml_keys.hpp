#pragma once
/// \file A YAML mapping that names one key twice is bad input: yaml-cpp keeps both entries and a
/// lookup sees only the first, so the second value would be dropped without a word.
#include <yaml-cpp/yaml.h>

#include <string>

namespace heft::io {

/// Walks `node` (mappings and sequences, recursively). \throws InputError
/// "<source>:<line>: 'key' is given twice in the same mapping" at the second occurrence.
void rejectDuplicateKeys(const YAML::Node& node, const std::string& source);

}  // namespace heft::io
