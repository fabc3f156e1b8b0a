#pragma once
/// \file Errors heft reports to its callers. A library never exits; the CLI maps these to exit
/// codes.
#include <stdexcept>
#include <string>

namespace heft {

/// Bad input: a file, field, row or argument that is not what was expected. The message names the
/// place (file, line, field, row) and what was expected. The CLI exits with code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// A computation that could not produce a trustworthy answer (a failed solve, a singular system).
/// The CLI exits with code 1.
class SolveError : public std::runtime_error {
 public:
  explicit SolveError(const std::string& message) : std::runtime_error(message) {}
};

/// Throws InputError("<what>: expected <expected>, got <got>") when `condition` is false.
void require(bool condition, const std::string& what, const std::string& expected,
             const std::string& got);

/// require() for a number that must be finite and > 0 (>= 0): "<what>: expected a finite value > 0
/// <unit>, got <x>". `unit` is appended as is, e.g. " [s]".
void requirePositive(double x, const std::string& what, const std::string& unit = "");
void requireNonNegative(double x, const std::string& what, const std::string& unit = "");

}  // namespace heft
