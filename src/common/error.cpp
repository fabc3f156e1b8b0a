#include "heft/common/error.hpp"

namespace heft {

void require(bool condition, const std::string& what, const std::string& expected,
             const std::string& got) {
  if (!condition) throw InputError(what + ": expected " + expected + ", got " + got);
}

}  // namespace heft
