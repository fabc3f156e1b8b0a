// heft import: ROS 2 bags written here with rosbags (tests/support/write_test_bag.py, the library
// heft's reader uses) from a simulated go2 log: joint states at 500 Hz, IMU at 400 Hz, four foot
// force sensors at 1 kHz, odometry at 100 Hz, motion capture at 200 Hz. The writer also assembles
// the same data as a heft log in numpy; the import must give that log, and identify must give the
// same answer on both.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "heft/io/log_io.hpp"
#include "heft/io/summary.hpp"
#include "heft/io/validation.hpp"
#include "heft/jobs/identify_job.hpp"
#include "heft/jobs/import_bag_job.hpp"
#include "heft/model/model.hpp"
#include "support/heft_cli.hpp"
#include "support/scratch.hpp"

namespace fs = std::filesystem;
using heft::jobs::IdentifyJob;
using heft::jobs::ImportBagJob;

namespace {

constexpr double kContactThreshold = 15.0;  // [N], as the go2 demo's contact flags

void writeText(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A go2 with a 2.5 kg box at its rear left (a payload away from the demo's), 2 s at 2 kHz with the
// IMU at 2 kHz and foot force sensors, through heft base-state (the odometry a robot's state
// estimator would publish: no truth goes into the bag), as a CSV log.
fs::path sourceLog(const fs::path& dir) {
  fs::create_directories(dir);
  writeText(dir / "scenario.yaml",
            "name: go2-bag-source\nrobot: go2\nduration: 2\nseed: 7\n"
            "noise: {base: nominal, name: nominal-2khz, imu_rate: 2000}\n"
            "sensors: {force_torque: true}\n"
            "model:\n  timestep: 0.0005\n  payloads:\n"
            "    - {name: payload, body: base, mass: 2.5, com: [-0.12, 0.06, 0.05], "
            "box: [0.1, 0.08, 0.05]}\n"
            "motion:\n  type: stance\n"
            "  posture: [0, 0.8, -1.6, 0, 0.8, -1.6, 0, 0.8, -1.6, 0, 0.8, -1.6]\n"
            "gains: {kp: 60, kd: 1.5}\n");
  const fs::path err = dir / "stderr.txt";
  EXPECT_EQ(heft::test::runHeft("simulate " + (dir / "scenario.yaml").string() + " --out " +
                                    (dir / "sim.h5").string(),
                                err),
            0);
  EXPECT_EQ(heft::test::runHeft("base-state " + (dir / "sim.h5").string() + " --robot go2 --out " +
                                    (dir / "source").string(),
                                err),
            0);
  return dir / "source";
}

std::string bagPython() {
  const char* env = std::getenv("HEFT_PYTHON");
  return env != nullptr ? env : std::string(HEFT_SOURCE_DIR) + "/.deps/venv-tools/bin/python";
}

// Writes BAG and REFERENCE (a CSV log) from the source log.
void writeBag(const fs::path& source, const fs::path& bag, const fs::path& reference,
              const std::string& storage) {
  ASSERT_EQ(shell(bagPython() + " " + HEFT_SOURCE_DIR + "/tests/support/write_test_bag.py " +
                  source.string() + " " + bag.string() + " " + reference.string() + " " + storage +
                  " " + std::to_string(kContactThreshold)),
            0)
      << "the bag writer failed (scripts/bootstrap.sh installs .deps/venv-tools)";
}

const char* kMapping =
    "robot: go2\n"
    "joints: {topic: /joint_states, commands: /joint_commands}\n"
    "imu: {topic: /imu}\n"
    "force_torque:\n"
    "  - {topic: /ft/FL_foot}\n  - {topic: /ft/FR_foot}\n"
    "  - {topic: /ft/RL_foot}\n  - {topic: /ft/RR_foot}\n"
    "contacts: {force_threshold: 15}\n"
    "base: {topic: /odom}\n"
    "mocap: {topic: /mocap, frame: base}\n";

ImportBagJob::Config mapping(const fs::path& bag, const std::string& text = kMapping) {
  ImportBagJob::Config config;
  ImportBagJob::parseMapping(text, "mapping.yaml", ".", config);
  config.bag = bag.string();
  return config;
}

// The go2 demo's identify job (data/examples/go2_payload_identify.yaml) on `log`.
IdentifyJob::Config identifyConfig(const fs::path& log) {
  return IdentifyJob::parse(
      "robot: go2\nlog: " + log.string() +
          "\nmethod: map\nidentify:\n  bodies: [base]\n  parameters: all\n"
          "  parametrization: log-cholesky\npreparation:\n  acceleration: sg-derivative\n"
          "  window: 41\n  order: 3\n  decimation: 5\n  widen_contacts: true\n"
          "problem:\n  projection: contact\n  contact_offset: 0.022\n",
      "identify.yaml", ".");
}

double maxAbs(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return 1e300;
  return (a - b).cwiseAbs().maxCoeff();
}

}  // namespace

TEST(ImportBag, McapAndSqliteBagsGiveTheLogOfTheirDataAndIdentifyAgreesWithTheHdf5) {
  const fs::path dir =
      heft::test::scratchPath("import_bag", "roundtrip-" + std::to_string(::getpid()));
  const fs::path source = sourceLog(dir);
  const heft::model::RobotModel go2 = heft::model::loadRobot("go2");
  heft::io::Log imported_mcap;
  for (const std::string storage : {"mcap", "sqlite3"}) {
    SCOPED_TRACE(storage);
    const fs::path bag = dir / ("bag-" + storage), reference_csv = dir / ("reference-" + storage);
    writeBag(source, bag, reference_csv, storage);
    const ImportBagJob::Result result = ImportBagJob::run(mapping(bag));
    const heft::io::Log& log = result.log;
    EXPECT_TRUE(heft::io::validateLog(log, go2.pinocchio()).ok());
    const heft::io::Log reference = heft::io::readLog(reference_csv.string());

    // Every stream at its rate, on the bag's clock from its earliest stamp.
    ASSERT_EQ(result.streams.size(), 9u);
    // The nominal profile jitters IMU stamps by U(+-0.1 ms): its 2.5 ms intervals by up to 8 %,
    // their median by well under 1 %. The other streams are on the simulator's clock.
    for (const auto& [group, rate, tolerance] :
         std::vector<std::tuple<std::string, double, double>>{{"joints", 500, 1e-6},
                                                              {"imu", 400, 1e-2},
                                                              {"force_torque/FL_foot", 1000, 1e-6},
                                                              {"base", 100, 1e-6}})
      for (const auto& s : result.streams)
        if (s.group == group) EXPECT_NEAR(s.median_rate_hz, rate, tolerance * rate) << group;

    // Everything but the interpolated base is the data bit for bit; the base agrees with numpy's
    // interpolation to round-off.
    heft::io::Log same = log;
    same.joints.base_pose = reference.joints.base_pose;
    same.joints.base_twist = reference.joints.base_twist;
    same.joints.tau_cmd = reference.joints.tau_cmd;
    same.meta = reference.meta;
    EXPECT_EQ(heft::io::firstDifference(same, reference), "");
    EXPECT_LT(maxAbs(log.joints.base_pose, reference.joints.base_pose), 1e-14);
    EXPECT_LT(maxAbs(log.joints.base_twist, reference.joints.base_twist), 1e-14);
    EXPECT_LT(maxAbs(log.joints.tau_cmd, reference.joints.tau_cmd), 1e-14);
    EXPECT_EQ(log.meta.robot, "go2");
    EXPECT_EQ(log.meta.base_type, heft::io::BaseType::FreeFlyer);
    EXPECT_EQ(log.imu->frame, "imu");
    EXPECT_EQ(log.force_torque->frames.size(), 4u);
    // validate-log's summary shows every group the import made.
    std::vector<std::string> groups;
    for (const auto& g : heft::io::summarize(log).groups) groups.push_back(g.name);
    EXPECT_EQ(groups,
              (std::vector<std::string>{"joints", "imu", "mocap", "force_torque", "contacts"}));

    if (storage == "mcap") {
      imported_mcap = log;
      // Receive times (0.3 ms after every header stamp) give the same log from another origin.
      const ImportBagJob::Result received =
          ImportBagJob::run(mapping(bag, std::string(kMapping) + "time: receive\n"));
      EXPECT_EQ(received.origin_ns - result.origin_ns, 300000);
      EXPECT_EQ(heft::io::firstDifference(received.log, log), "");
      // The motion capture as a tf transform: the same mocap group.
      std::string tf_mapping = kMapping;
      tf_mapping.replace(tf_mapping.find("mocap:"), std::string::npos,
                         "mocap: {topic: /tf, parent: world, child: base}\n");
      EXPECT_EQ(heft::io::firstDifference(ImportBagJob::run(mapping(bag, tf_mapping)).log, log),
                "");
      // The bundled example mapping is this one.
      ImportBagJob::Config example;
      ImportBagJob::loadMapping(
          std::string(HEFT_SOURCE_DIR) + "/data/examples/go2_bag_mapping.yaml", example);
      example.bag = bag.string();
      EXPECT_EQ(heft::io::firstDifference(ImportBagJob::run(example).log, log), "");
      // Identify on the imported log and on the same data given as HDF5.
      const auto written = ImportBagJob::write(result, (dir / "imported.h5").string());
      ASSERT_EQ(written.size(), 1u);
      heft::io::writeLog(reference, (dir / "reference.h5").string());
      const IdentifyJob::Result from_bag = IdentifyJob::run(identifyConfig(dir / "imported.h5"));
      const IdentifyJob::Result from_hdf5 = IdentifyJob::run(identifyConfig(dir / "reference.h5"));
      ASSERT_TRUE(from_bag.writable()) << from_bag.report();
      ASSERT_EQ(from_bag.linear.size(), from_hdf5.linear.size());
      EXPECT_EQ(from_bag.samples, from_hdf5.samples);
      for (Eigen::Index i = 0; i < from_bag.linear.size(); ++i)
        EXPECT_NEAR(from_bag.linear[i], from_hdf5.linear[i],
                    1e-9 * std::max(1.0, std::abs(from_hdf5.linear[i])))
            << from_bag.names[static_cast<std::size_t>(i)];
      // The payload is found: the trunk's mass is the nominal one plus about 2.5 kg.
      const double nominal = go2.pi("base")[0];
      EXPECT_NEAR(from_bag.bodies.front().pi[0] - nominal, 2.5, 0.25) << from_bag.report();
    } else {
      // The two storage formats hold the same messages: the same log, bit for bit.
      EXPECT_EQ(heft::io::firstDifference(log, imported_mcap), "");
    }
  }
}

TEST(ImportBag, BadInputIsOneLineNamingTheFieldAndExitTwo) {
  const fs::path dir = heft::test::scratchPath("import_bag", "bad-" + std::to_string(::getpid()));
  const fs::path source = sourceLog(dir);
  const fs::path bag = dir / "bag";
  writeBag(source, bag, dir / "reference", "sqlite3");
  const fs::path err = dir / "stderr.txt";
  struct Case {
    std::string name, mapping, bag, expected;
  };
  const std::string good_joints = "robot: go2\njoints: {topic: /joint_states}\n";
  const std::vector<Case> cases{
      {"a mapped topic the bag lacks", good_joints + "imu: {topic: /imu_missing}\n", bag.string(),
       "no topic /imu_missing"},
      {"a topic of another type", "robot: go2\njoints: {topic: /imu}\n", bag.string(),
       "is sensor_msgs/msg/Imu, expected sensor_msgs/msg/JointState"},
      {"a rename to a joint the model lacks",
       "robot: go2\njoints:\n  topic: /joint_states\n  rename: {FL_hip_joint: FL_shoulder}\n",
       bag.string(), "joints.rename: joints the model go2 lacks: FL_shoulder"},
      {"bag joints the model lacks", "robot: panda\njoints: {topic: /joint_states}\n", bag.string(),
       "lacks: FL_hip_joint"},
      {"a frame the model lacks", good_joints + "imu: {topic: /imu, frame: imu_link}\n",
       bag.string(), "imu.frame: 'imu_link' is not a frame"},
      {"an unknown key", good_joints + "odometry: {topic: /odom}\n", bag.string(),
       "odometry: unknown key"},
      {"every joint ignored",
       "robot: go2\njoints:\n  topic: /joint_states\n  ignore: [FL_hip_joint, FL_thigh_joint, "
       "FL_calf_joint, FR_hip_joint, FR_thigh_joint, FR_calf_joint, RL_hip_joint, RL_thigh_joint, "
       "RL_calf_joint, RR_hip_joint, RR_thigh_joint, RR_calf_joint]\n",
       bag.string(), "expected joint states of go2's joints, got none"},
      {"a path that is not a bag", good_joints, (dir / "reference").string(),
       "not a readable ROS 2 bag"},
      {"a bag that does not exist", good_joints, (dir / "nothing").string(), "no such bag"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    writeText(dir / "mapping.yaml", c.mapping);
    EXPECT_EQ(heft::test::runHeft("import " + c.bag + " --map " + (dir / "mapping.yaml").string() +
                                      " --out " + (dir / "out.h5").string(),
                                  err),
              2);
    std::ifstream in(err);
    std::string first, second;
    std::getline(in, first);
    EXPECT_NE(first.find(c.expected), std::string::npos) << first;
    EXPECT_FALSE(std::getline(in, second)) << "one line, got also: " << second;
    EXPECT_FALSE(fs::exists(dir / "out.h5"));
  }
}
