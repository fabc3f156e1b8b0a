#pragma once
// robot.urdf and result.json of a batch estimate, written the same way by every batch job.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "heft/io/data_quality.hpp"
#include "heft/io/log.hpp"
#include "heft/io/log_io.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/model.hpp"
#include "heft/results/body_estimate.hpp"

namespace heft::jobs {

// Writes `urdf_out` (the robot's URDF, `locked` joints held as the job held them, with the bodies'
// <inertial> replaced) unless `not_writable`
// says why not, and records the outcome in json["urdf"] and the writer's warnings in
// json["warnings"]; appends the path to `written`. A URDF the writer refuses (a link on the edge of
// physical consistency) is recorded as "refused: ..." and returns false: the estimate is not bad
// input and must not be lost, so the caller writes result.json and then calls
// throwIfUrdfRefused.
bool writeUrdf(nlohmann::json& json, const std::string& robot, model::BaseType base,
               const std::vector<model::LockedJoint>& locked,
               const std::vector<results::BodyEstimate>& bodies, const std::string& not_writable,
               const std::string& urdf_out, bool overwrite, std::vector<std::string>& written);

// Why no URDF is written, for writeUrdf's `not_writable`: "" when the estimate may be written,
// else an inconsistent estimate of a solve that ended usably, or a failed solve.
std::string urdfRefusal(bool writable, bool solve_usable);

// Writes `log` to `path` (HDF5) and returns the outcome for the job's JSON: {"path": path,
// "status": "written"} (and path appended to `written`), or {"path": "", "status": "not written:
// <why>"} with <why> in `why`. A writer's refusal is recorded, not thrown: a computed estimate is
// not bad input, so the caller writes its JSON anyway and then fails with exit 1.
nlohmann::json writeLogRecorded(const io::Log& log, const std::string& path,
                                const io::WriteOptions& options, std::vector<std::string>& written,
                                std::string& why);

// The data-quality warnings of a job's log appended to its warnings, each prefixed
// "data quality: ".
void appendDataQualityWarnings(const io::DataQualityReport& report,
                               std::vector<std::string>& warnings);

// A heft result.json read for another job: InputError naming the file when it is not JSON or has
// no schema_version.
nlohmann::json readResultJson(const std::string& path);
// A number of such a file: InputError "<where>: expected a number, got <value>" otherwise.
double resultNumber(const nlohmann::json& value, const std::string& where);
// The number `key` of an object of such a file: InputError "<where>: expected an object with
// "<key>", got <value>" when `value` is not an object, resultNumber's when the member is not a
// number (or missing).
double resultMemberNumber(const nlohmann::json& value, const std::string& key,
                          const std::string& where);

// A refused URDF, after result.json is written: SolveError (exit 1) naming both files.
void throwIfUrdfRefused(const nlohmann::json& json, const std::string& json_out);

// A design job's outputs in `folder`: the named texts only when the design is `usable`, then
// result.json always (it says why a design was refused). Returns the paths, result.json last.
std::vector<std::string> writeDesignFiles(
    const OutputFolder& folder, bool usable,
    const std::vector<std::pair<std::string, const std::string*>>& texts,
    const nlohmann::json& result, bool overwrite);

}  // namespace heft::jobs
