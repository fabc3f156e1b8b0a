#pragma once
// Console output as usual, then a summary: each benchmark's median real time (or its single run)
// and its ratio to a baseline measured in the same run. Machines are noisy; ratios within one run
// are what the docs quote.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace heft::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  /// `baseline_of(name)`: the name of the benchmark `name` is compared with ("" for none).
  RatioReporter(std::string title, std::function<std::string(const std::string&)> baseline_of)
      : title_(std::move(title)), baseline_of_(std::move(baseline_of)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const bool single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
      if (median || single)
        times_ns_.emplace_back(run.run_name.function_name,
                               run.GetAdjustedRealTime() * unitToNs(run.time_unit));
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nSummary (median real time; %s):\n", title_.c_str());
    for (const auto& [name, ns] : times_ns_) {
      const double* base = find(baseline_of_(name));
      if (base == nullptr) continue;
      std::printf("  %-48s %12.3f us  x%7.2f\n", name.c_str(), ns * 1e-3, ns / *base);
    }
  }

 private:
  const double* find(const std::string& name) const {
    for (const auto& [n, ns] : times_ns_)
      if (n == name) return &ns;
    return nullptr;
  }
  static double unitToNs(benchmark::TimeUnit unit) {
    switch (unit) {
      case benchmark::kNanosecond:
        return 1.0;
      case benchmark::kMicrosecond:
        return 1e3;
      case benchmark::kMillisecond:
        return 1e6;
      case benchmark::kSecond:
        return 1e9;
    }
    return 1.0;
  }
  std::string title_;
  std::function<std::string(const std::string&)> baseline_of_;
  std::vector<std::pair<std::string, double>> times_ns_;  // in the order they ran
};

}  // namespace heft::bench
