#pragma once
/// \file The four-bar knee leg's MJCF (data/robots/fourbar_leg.xml) made into a loop that cannot
/// close, for the bad-input tests of the loader and of `heft estimate`.
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace heft::test {

/// The leg with explicit anchors (sites) 0.5 m down the coupler where 0.3 m fits.
/// \throws std::runtime_error when the file no longer has the lines this edits.
inline std::string fourBarWithLongRod() {
  std::ifstream in(std::string(HEFT_SOURCE_DIR) + "/data/robots/fourbar_leg.xml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"(body1="coupler" body2="shank" anchor="0.01 0 -0.3")", R"(site1="rod" site2="lever")"},
      {R"(<joint name="coupler_hinge" type="hinge" axis="0 1 0"/>)",
       R"(<joint name="coupler_hinge" type="hinge" axis="0 1 0"/><site name="rod" pos="0.01 0 -0.5"/>)"},
      {R"(<joint name="knee" type="hinge" axis="0 1 0"/>)",
       R"(<joint name="knee" type="hinge" axis="0 1 0"/><site name="lever" pos="0.05 0 0"/>)"}};
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    if (at == std::string::npos) throw std::runtime_error("fourbar_leg.xml lacks: " + from);
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace heft::test
