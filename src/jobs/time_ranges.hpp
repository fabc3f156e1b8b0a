#pragma once
// Time ranges of a job config (identify's validation, predict's ranges) checked against its logs.
#include <string>
#include <vector>

#include "heft/identify/samples.hpp"
#include "heft/io/log.hpp"

namespace heft::jobs {

// Every range must hold a sample of at least one log (times from each log's first sample); with
// `leave_some_out`, the ranges together must not cover every sample of every log. InputError
// "<where>: [a, b] s holds no sample of the log (0 to D s from its first sample)" or
// "<where>: the ranges cover the whole log (...)".
void requireRangesHoldSamples(const std::vector<identify::TimeRange>& ranges,
                              const std::vector<const io::Log*>& logs, const std::string& where,
                              bool leave_some_out);

}  // namespace heft::jobs
