// heft::jobs' shared pieces (Progress, OutputFolder) and the shared vocabulary below the jobs:
// io::bindJoints and results::bodyError. The jobs themselves: tests/*_job_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/jobs/job.hpp"
#include "heft/model/model.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/truth.hpp"
#include "support/scratch.hpp"

namespace heft::jobs {
namespace {

namespace fs = std::filesystem;

TEST(Progress, SilentByDefaultWithoutAStream) {
  Progress silent;
  EXPECT_EQ(silent.stream(), nullptr);
  EXPECT_NO_THROW(silent.say("nobody hears this"));
}

TEST(Progress, StampsLinesAndForwardsASolversStreamLineByLine) {
  std::vector<std::string> lines;
  Progress progress([&](const std::string& line) { lines.push_back(line); });
  progress.start();
  progress.say("reading");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("[", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(" s] reading"), std::string::npos) << lines[0];
  std::ostream* stream = progress.stream();
  ASSERT_NE(stream, nullptr);
  *stream << "iteration 1, cost " << 2.5 << "\niteration 2";
  ASSERT_EQ(lines.size(), 2u);  // the unfinished line waits for its newline
  EXPECT_EQ(lines[1], "iteration 1, cost 2.5");
  *stream << "\n";
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "iteration 2");
}

TEST(Progress, ToAStreamWritesThere) {
  std::ostringstream out;
  Progress progress = Progress::to(out);
  EXPECT_EQ(progress.stream(), &out);
  progress.say("done");
  EXPECT_NE(out.str().find(" s] done\n"), std::string::npos) << out.str();
}

TEST(OutputFolder, CreatesTheFolderAndRefusesExistingOutputsAndTheInput) {
  const fs::path dir = test::scratchPath("jobs", "output-folder-" + std::to_string(::getpid()));
  const OutputFolder folder(dir.string(), {"result.json"}, {}, WriteOptions{});
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(folder.path("result.json"), (dir / "result.json").string());
  std::ofstream(dir / "result.json") << "{}";
  try {
    OutputFolder again(dir.string(), {"result.json"}, {}, WriteOptions{});
    FAIL() << "an existing output was accepted without overwrite";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  WriteOptions overwrite;
  overwrite.overwrite = true;
  EXPECT_NO_THROW(OutputFolder(dir.string(), {"result.json"}, {}, overwrite));
  // an output that is the input log is refused even with overwrite
  const std::string log = (dir / "log.h5").string();
  std::ofstream(log) << "not really a log";
  EXPECT_THROW(OutputFolder(dir.string(), {"log.h5"}, {log}, overwrite), InputError);
  // any of several inputs (a job's list of recordings)
  const std::string other = (dir / "other.h5").string();
  std::ofstream(other) << "not really a log either";
  EXPECT_THROW(OutputFolder(dir.string(), {"other.h5"}, {log, other}, overwrite), InputError);
  EXPECT_NO_THROW(OutputFolder(dir.string(), {"result.json"}, {log, other}, overwrite));
}

TEST(JointBinding, BindsEveryOneDofJointInModelOrderAndNamesAMissingOne) {
  const model::RobotModel robot = model::loadRobot("go2");
  const pinocchio::Model& pin = robot.pinocchio();
  std::vector<std::string> names;
  for (pinocchio::JointIndex j = 2; j < pin.joints.size(); ++j) names.push_back(pin.names[j]);
  std::vector<std::string> shuffled(names.rbegin(), names.rend());  // log order differs
  const io::JointBinding binding = io::bindJoints(pin, shuffled);
  ASSERT_EQ(binding.size(), static_cast<int>(names.size()));  // the free flyer is not bound
  for (int j = 0; j < binding.size(); ++j) {
    EXPECT_EQ(binding.names[j], names[j]);
    EXPECT_EQ(shuffled[binding.log_column[j]], names[j]);
    EXPECT_EQ(binding.idx_v[j], pin.joints[binding.joints[j]].idx_v());
    EXPECT_EQ(binding.idx_q[j], pin.joints[binding.joints[j]].idx_q());
  }
  shuffled.erase(shuffled.begin() + 3);
  try {
    io::bindJoints(pin, shuffled, "run.h5: joints/names");
    FAIL() << "a missing joint was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run.h5: joints/names"), std::string::npos) << what;
    EXPECT_NE(what.find(names[names.size() - 4]), std::string::npos) << what;
  }
}

TEST(BodyError, MetricsOfOneBody) {
  Vector10 truth;
  truth << 2.0, 0.2, 0.0, -0.1, 0.05, 0.001, 0.06, 0.0, 0.002, 0.07;
  ASSERT_TRUE(inertia::checkConsistency(truth).consistent);
  Vector10 estimate = truth;
  estimate[0] = 2.2;  // mass +10 %, the first moment unchanged: the COM moves by c / 11
  const results::BodyError e = results::bodyError("trunk", estimate, truth);
  EXPECT_EQ(e.name, "trunk");
  EXPECT_DOUBLE_EQ(e.mass_true, 2.0);
  EXPECT_DOUBLE_EQ(e.mass_estimate, 2.2);
  EXPECT_NEAR(e.mass_relative, 0.1, 1e-15);
  const Vector3 c = truth.segment<3>(1) / 2.0;
  EXPECT_NEAR(e.com_error, (c - truth.segment<3>(1) / 2.2).norm(), 1e-15);
  const results::BodyError same = results::bodyError("trunk", truth, truth);
  EXPECT_EQ(same.mass_relative, 0.0);
  EXPECT_EQ(same.com_error, 0.0);
  EXPECT_EQ(same.inertia_relative, 0.0);
  Vector10 massless = truth;
  massless[0] = 0;
  EXPECT_TRUE(std::isinf(results::bodyError("trunk", massless, truth).com_error));
}

// A real log has no truth group, so no bundled example may take an input from it (`base_state:
// truth`, `contact_forces: truth`, `acceleration: truth`, ...); a `truth:` section that only scores
// the result is allowed. Every value of every example config, comments left out.
TEST(BundledExamples, ReadNoInputFromTheTruthGroup) {
  const std::regex truth_value(R"(:\s*\[?\s*truth\s*[,}\]]?\s*$|:\s*truth\s*[,}])");
  int configs = 0;
  for (const auto& entry :
       fs::directory_iterator(fs::path(HEFT_SOURCE_DIR) / "data" / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const std::string code = line.substr(0, line.find('#'));
      EXPECT_FALSE(std::regex_search(code, truth_value))
          << entry.path().filename().string() << ":" << number << ": " << line;
    }
    ++configs;
  }
  EXPECT_GE(configs, 8);
}

}  // namespace
}  // namespace heft::jobs
