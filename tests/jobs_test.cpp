// heft::jobs' shared pieces (Progress, OutputFolder) and the shared vocabulary below the jobs:
// io::bindJoints and results::bodyError. The jobs themselves: tests/*_job_test.cpp.
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Geometry>
#include <nlohmann/json.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"
#include "heft/io/joint_binding.hpp"
#include "heft/jobs/job.hpp"
#include "heft/jobs/mjcf_export.hpp"
#include "heft/model/model.hpp"
#include "heft/model/robots.hpp"
#include "heft/results/truth.hpp"
#include "heft/sim/sim_model.hpp"
#include "support/heft_cli.hpp"
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
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(\[[0-9]+\.[0-9]{2} s\] reading)")))
      << lines[0] << ": seconds in fixed point with two decimals";
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
  EXPECT_NEAR(same.pseudo_inertia_distance, 0.0, 1e-12);
  Vector10 massless = truth;
  massless[0] = 0;
  EXPECT_TRUE(std::isinf(results::bodyError("trunk", massless, truth).com_error));
  EXPECT_TRUE(std::isinf(results::bodyError("trunk", massless, truth).pseudo_inertia_distance));
}

TEST(BodyError, PseudoInertiaDistanceIsAffineInvariant) {
  Vector10 truth;
  truth << 2.0, 0.2, 0.0, -0.1, 0.05, 0.001, 0.06, 0.0, 0.002, 0.07;
  const Matrix4 J = inertia::pseudoInertiaFromPi(truth);
  // the whole body scaled by s (mass and every moment): each generalized eigenvalue is s
  EXPECT_NEAR(results::bodyError("b", 1.1 * truth, truth).pseudo_inertia_distance,
              2 * std::log(1.1), 1e-12);
  // a payload-like change, then the same pair seen in another frame (J -> T J T^T, any
  // invertible T of a rigid motion): the distance does not change, and it is symmetric
  Matrix4 D = Matrix4::Zero();
  D.diagonal() << 0.004, 0.001, 0.002, 0.3;
  D(0, 3) = D(3, 0) = 0.02;
  const Matrix4 K = J + D;
  Matrix4 T = Matrix4::Identity();
  T.topLeftCorner<3, 3>() =
      Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, -1).normalized()).toRotationMatrix();
  T.topRightCorner<3, 1>() << 0.3, -0.1, 0.2;
  const double d = results::pseudoInertiaDistance(K, J);
  EXPECT_GT(d, 0.01);
  EXPECT_NEAR(results::pseudoInertiaDistance(T * K * T.transpose(), T * J * T.transpose()), d,
              1e-10);
  EXPECT_NEAR(results::pseudoInertiaDistance(J, K), d, 1e-10);
  EXPECT_NEAR(
      results::bodyError("b", inertia::piFromPseudoInertia(K), truth).pseudo_inertia_distance, d,
      1e-10);
  // an estimate outside the consistent set has no distance
  EXPECT_TRUE(
      std::isinf(results::pseudoInertiaDistance(J - 2 * D.cwiseAbs() - Matrix4::Identity(), J)));
  EXPECT_THROW(results::pseudoInertiaDistance(J, -J), InputError);
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

// ---- heft mjcf ----------------------------------------------------------------------------------

namespace mjcf_test {

// The panda's URDF without its meshes (MuJoCo reads URDF; the meshes' package:// paths it does
// not resolve), and a result.json in the jobs' schema: two bodies (panda_link7 with the hand and
// link8 welded to it), friction on joint 2, armature on joint 4, a torque offset.
struct Case {
  fs::path model, result, out;
  Vector10 link3, link7;
};

Case writeCase(const std::string& name) {
  const fs::path dir = test::scratchPath("jobs", name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const model::RobotModel robot = model::loadRobot("panda");
  std::string urdf = io::readTextFile(robot.source());
  urdf = std::regex_replace(urdf, std::regex("<visual>[\\s\\S]*?</visual>"), "");
  urdf = std::regex_replace(urdf, std::regex("<collision>[\\s\\S]*?</collision>"), "");
  Case c;
  c.model = dir / "panda.urdf";
  std::ofstream(c.model) << urdf;
  c.link3 = robot.pi("panda_link3");
  c.link3 *= 1.2;  // a heavier link, COM unchanged
  c.link7 = robot.pi("panda_link7");
  c.link7(3) += 0.02 * c.link7(0);  // its COM 2 cm along z
  auto body = [](const Vector10& pi) {
    nlohmann::json b;
    b["pi"] = std::vector<double>(pi.data(), pi.data() + 10);
    return b;
  };
  nlohmann::json j;
  j["schema_version"] = 1;
  j["parameters"]["panda_link3"] = body(c.link3);
  j["parameters"]["panda_link7"] = body(c.link7);
  j["friction"]["panda_joint2"] = {{"coulomb", 0.5}, {"viscous", 0.3}};
  j["armature"]["panda_joint4"] = 0.05;
  j["torque_offsets"]["panda_joint1"] = {{"offset", 0.3}, {"std", 0.01}};
  c.result = dir / "result.json";
  std::ofstream(c.result) << j.dump(2);
  c.out = dir / "panda_identified.xml";
  return c;
}

// The mass of body b and of every body welded to it (no joint in between) in a compiled model.
double rigidMass(const mjModel* m, int b) {
  double mass = m->body_mass[b];
  for (int c = b + 1; c < m->nbody; ++c) {
    int p = c;
    while (p != b && p > 0 && m->body_jntnum[p] == 0) p = m->body_parentid[p];
    if (p == b) mass += m->body_mass[c];
  }
  return mass;
}

}  // namespace mjcf_test

// The estimate lands in the MuJoCo model (the panda's URDF, which MuJoCo reads with the hand fused
// into panda_link7, as Pinocchio lumps it): the identified bodies' mass, COM and inertia at full
// precision, the friction joint's frictionloss and damping, the armature; the other bodies keep
// theirs; the torque offset is a note, not a model field.
TEST(MjcfExport, IdentifiedParametersReplaceTheModelsAndNothingElse) {
  const mjcf_test::Case c = mjcf_test::writeCase("mjcf");
  const std::vector<std::string> notes =
      jobs::MjcfExport::write(c.result.string(), c.model.string(), c.out.string());
  auto contains = [&](const std::string& text) {
    return std::any_of(notes.begin(), notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(contains("torque offsets"));

  char error[1000] = "";
  mjModel* in = mj_loadXML(c.model.string().c_str(), nullptr, error, sizeof(error));
  ASSERT_NE(in, nullptr) << error;
  mjModel* out = mj_loadXML(c.out.string().c_str(), nullptr, error, sizeof(error));
  ASSERT_NE(out, nullptr) << error;
  const int link3 = mj_name2id(out, mjOBJ_BODY, "panda_link3");
  const int link7 = mj_name2id(out, mjOBJ_BODY, "panda_link7");
  const int link1 = mj_name2id(out, mjOBJ_BODY, "panda_link1");
  ASSERT_GE(link3, 0);
  ASSERT_GE(link7, 0);
  EXPECT_NEAR(out->body_mass[link3], c.link3(0), 1e-9);
  for (int k = 0; k < 3; ++k)
    EXPECT_NEAR(out->body_ipos[3 * link3 + k], c.link3(1 + k) / c.link3(0), 1e-9);
  // the rotational inertia about the COM: principal moments and axes back to the matrix
  const mjtNum* q = out->body_iquat + 4 * link3;
  const Eigen::Matrix3d R = Eigen::Quaterniond(q[0], q[1], q[2], q[3]).toRotationMatrix();
  const Eigen::Matrix3d Ic =
      R *
      Eigen::Vector3d(out->body_inertia[3 * link3], out->body_inertia[3 * link3 + 1],
                      out->body_inertia[3 * link3 + 2])
          .asDiagonal() *
      R.transpose();
  const pinocchio::Inertia expected = pinocchio::Inertia::FromDynamicParameters(c.link3);
  EXPECT_LE((Ic - expected.inertia().matrix()).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_NEAR(mjcf_test::rigidMass(out, link7), c.link7(0), 1e-9);
  // what was not identified is as MuJoCo's writer prints it: 6 significant digits
  const double mass1 = in->body_mass[mj_name2id(in, mjOBJ_BODY, "panda_link1")];
  EXPECT_NEAR(out->body_mass[link1], mass1, 5e-6 * mass1);
  const int dof2 = out->jnt_dofadr[mj_name2id(out, mjOBJ_JOINT, "panda_joint2")];
  const int dof4 = out->jnt_dofadr[mj_name2id(out, mjOBJ_JOINT, "panda_joint4")];
  EXPECT_DOUBLE_EQ(out->dof_frictionloss[dof2], 0.5);
  EXPECT_DOUBLE_EQ(out->dof_damping[dof2], 0.3);
  EXPECT_DOUBLE_EQ(out->dof_armature[dof4], 0.05);
  EXPECT_DOUBLE_EQ(out->dof_armature[dof2], in->dof_armature[dof2]);
  mj_deleteModel(in);
  mj_deleteModel(out);

  // never over an existing file without overwrite, never over an input
  EXPECT_THROW(jobs::MjcfExport::write(c.result.string(), c.model.string(), c.out.string()),
               InputError);
  EXPECT_THROW(jobs::MjcfExport::write(c.result.string(), c.model.string(), c.model.string(),
                                       jobs::WriteOptions{true}),
               InputError);
}

// An MJCF that keeps a tool welded to the link as a body of its own: the estimate (which lumps the
// tool) goes into the link and the tool becomes massless, so the rigid body weighs the estimate.
TEST(MjcfExport, WeldedBodiesBecomeMasslessAndTheEstimateHoldsTheirMass) {
  const fs::path dir = test::scratchPath("jobs", "mjcf-welded-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "arm.xml") << R"(<mujoco model="arm">
  <worldbody>
    <body name="link1">
      <joint name="joint1" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0.1" mass="1" diaginertia="0.01 0.01 0.001"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.02"/>
      <body name="tool" pos="0 0 0.2">
        <inertial pos="0 0 0.05" mass="0.5" diaginertia="0.001 0.001 0.0005"/>
        <geom type="sphere" size="0.03"/>
      </body>
    </body>
  </worldbody>
</mujoco>
)";
  std::ofstream(dir / "result.json") << R"({"schema_version": 1, "parameters": {"link1": {"pi":
      [1.6, 0, 0, 0.24, 0.06, 0, 0.06, 0, 0, 0.002]}}, "armature": {"joint1": 0.02}})";
  const std::vector<std::string> notes = jobs::MjcfExport::write(
      (dir / "result.json").string(), (dir / "arm.xml").string(), (dir / "out.xml").string());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("tool"), std::string::npos) << notes[0];
  char error[1000] = "";
  mjModel* out = mj_loadXML((dir / "out.xml").string().c_str(), nullptr, error, sizeof(error));
  ASSERT_NE(out, nullptr) << error;
  const int link1 = mj_name2id(out, mjOBJ_BODY, "link1"),
            tool = mj_name2id(out, mjOBJ_BODY, "tool");
  EXPECT_DOUBLE_EQ(out->body_mass[link1], 1.6);
  EXPECT_NEAR(out->body_ipos[3 * link1 + 2], 0.15, 1e-15);
  EXPECT_EQ(out->body_mass[tool], 0);
  EXPECT_DOUBLE_EQ(mjcf_test::rigidMass(out, link1), 1.6);
  EXPECT_DOUBLE_EQ(out->dof_armature[0], 0.02);
  mj_deleteModel(out);
}

TEST(MjcfExport, ABodyOrJointTheModelLacksIsAnInputErrorNamingIt) {
  const mjcf_test::Case c = mjcf_test::writeCase("mjcf-bad");
  std::string json = io::readTextFile(c.result.string());
  json = std::regex_replace(json, std::regex("panda_link3"), "go2_trunk");
  const fs::path other = c.result.parent_path() / "other.json";
  std::ofstream(other) << json;
  try {
    jobs::MjcfExport::write(other.string(), c.model.string(), c.out.string());
    FAIL() << "a body the model lacks was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("go2_trunk"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(c.out));
  try {
    jobs::MjcfExport::write(c.result.string(), (c.model.parent_path() / "none.xml").string(),
                            c.out.string());
    FAIL() << "a missing model was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("none.xml"), std::string::npos) << e.what();
  }
}

// heft's own MuJoCo model of a robot, written out: the simulator's model (same bodies, masses,
// joints, contact spheres and sensors, to MuJoCo's 6 printed digits), and with a result the
// estimate written into it as into a user's model; the temporary model file is gone.
TEST(MjcfExport, TheSimulationModelIsTheSimulatorsOwnAndTakesAResult) {
  const mjcf_test::Case c = mjcf_test::writeCase("mjcf-sim");
  for (const std::string robot_name : {"go2", "panda"}) {
    const fs::path out = c.out.parent_path() / (robot_name + "_sim.xml");
    jobs::MjcfExport::writeSimulationModel(robot_name, "", out.string());
    char error[1000] = "";
    mjModel* m = mj_loadXML(out.string().c_str(), nullptr, error, sizeof(error));
    ASSERT_NE(m, nullptr) << error;
    const sim::SimModel sim(model::loadRobot(robot_name));
    const mjModel* s = sim.mujoco();
    EXPECT_EQ(m->nbody, s->nbody);
    EXPECT_EQ(m->nq, s->nq);
    EXPECT_EQ(m->nv, s->nv);
    EXPECT_EQ(m->ngeom, s->ngeom);
    EXPECT_EQ(m->nsensor, s->nsensor);
    EXPECT_EQ(m->nu, 0);
    EXPECT_EQ(m->opt.timestep, s->opt.timestep);
    for (int b = 0; b < s->nbody; ++b) {
      EXPECT_STREQ(mj_id2name(m, mjOBJ_BODY, b), mj_id2name(s, mjOBJ_BODY, b));
      EXPECT_NEAR(m->body_mass[b], s->body_mass[b], 5e-6 * s->body_mass[b]);
    }
    for (int j = 0; j < s->njnt; ++j)
      EXPECT_STREQ(mj_id2name(m, mjOBJ_JOINT, j), mj_id2name(s, mjOBJ_JOINT, j));
    mj_deleteModel(m);
  }
  const fs::path patched = c.out.parent_path() / "panda_sim_identified.xml";
  jobs::MjcfExport::writeSimulationModel("panda", c.result.string(), patched.string());
  char error[1000] = "";
  mjModel* m = mj_loadXML(patched.string().c_str(), nullptr, error, sizeof(error));
  ASSERT_NE(m, nullptr) << error;
  EXPECT_NEAR(m->body_mass[mj_name2id(m, mjOBJ_BODY, "panda_link3")], c.link3(0), 1e-9);
  const int dof2 = m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "panda_joint2")];
  EXPECT_DOUBLE_EQ(m->dof_damping[dof2], 0.3);
  mj_deleteModel(m);
  for (const auto& entry : fs::directory_iterator(c.out.parent_path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  EXPECT_THROW(jobs::MjcfExport::writeSimulationModel("panda", "", patched.string()), InputError);
}

// panda-friction's identified model (the bundled identify example: every arm link, friction and
// armature) written as heft's MuJoCo model of the panda: MuJoCo loads it, and its joint-space mass
// matrix at random joint positions is Pinocchio's of the identified URDF plus the identified
// armature on the diagonal.
TEST(MjcfExport, PandaFrictionIdentifiedMassMatrixIsPinocchios) {
  const fs::path dir = test::scratchPath("jobs", "mjcf-mass-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_EQ(test::runHeft("identify " + std::string(HEFT_SOURCE_DIR) +
                              "/data/examples/panda_friction_identify.yaml --out " +
                              (dir / "id").string() + " --quiet",
                          dir / "err.txt"),
            0);
  const fs::path xml = dir / "panda.xml";
  ASSERT_EQ(test::runHeft("mjcf " + (dir / "id" / "result.json").string() +
                              " --robot panda --out " + xml.string(),
                          dir / "err.txt"),
            0);
  char error[1000] = "";
  mjModel* m = mj_loadXML(xml.string().c_str(), nullptr, error, sizeof(error));
  ASSERT_NE(m, nullptr) << error;
  mjData* d = mj_makeData(m);
  const model::RobotModel identified =
      model::loadRobot((dir / "id" / "robot.urdf").string(), {model::BaseType::Fixed});
  const pinocchio::Model& pm = identified.pinocchio();
  pinocchio::Data pd(pm);
  std::ifstream in(dir / "id" / "result.json");
  const nlohmann::json result = nlohmann::json::parse(in);
  ASSERT_EQ(m->nv, pm.nv);
  std::srand(7);
  double worst = 0, largest = 0;
  for (int trial = 0; trial < 20; ++trial) {
    Eigen::VectorXd q = pinocchio::randomConfiguration(pm);
    Eigen::MatrixXd armature = Eigen::MatrixXd::Zero(pm.nv, pm.nv);
    mju_zero(d->qpos, m->nq);
    for (pinocchio::JointIndex j = 1; j < pm.joints.size(); ++j) {
      const int mj = mj_name2id(m, mjOBJ_JOINT, pm.names[j].c_str());
      ASSERT_GE(mj, 0) << pm.names[j];
      d->qpos[m->jnt_qposadr[mj]] = q[pm.joints[j].idx_q()];
      if (result["armature"].contains(pm.names[j]))
        armature(pm.joints[j].idx_v(), pm.joints[j].idx_v()) =
            result["armature"][pm.names[j]].get<double>();
    }
    mj_forward(m, d);
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> M_mj(m->nv, m->nv);
    mj_fullM(m, M_mj.data(), d->qM);
    // MuJoCo's dof order against Pinocchio's
    Eigen::MatrixXd M_mj_pin(pm.nv, pm.nv);
    std::vector<int> dof(static_cast<std::size_t>(pm.nv));
    for (pinocchio::JointIndex j = 1; j < pm.joints.size(); ++j)
      dof[static_cast<std::size_t>(pm.joints[j].idx_v())] =
          m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, pm.names[j].c_str())];
    for (int r = 0; r < pm.nv; ++r)
      for (int c = 0; c < pm.nv; ++c) M_mj_pin(r, c) = M_mj(dof[r], dof[c]);
    pinocchio::crba(pm, pd, q);
    Eigen::MatrixXd M = pd.M;
    M.triangularView<Eigen::StrictlyLower>() = M.transpose().triangularView<Eigen::StrictlyLower>();
    M += armature;
    worst = std::max(worst, (M_mj_pin - M).cwiseAbs().maxCoeff());
    largest = std::max(largest, M.cwiseAbs().maxCoeff());
  }
  std::ostringstream gap;
  gap << worst;
  RecordProperty("max_abs_gap", gap.str());  // docs/guide/mjcf.md quotes it
  EXPECT_LE(worst, 1e-9) << "largest entry " << largest;
  mj_deleteData(d);
  mj_deleteModel(m);
}

// The CLI: exactly one of --model (with a RESULT) and --robot, else one error line and exit 2.
TEST(MjcfExport, CliTakesEitherAModelOrARobot) {
  const mjcf_test::Case c = mjcf_test::writeCase("mjcf-cli");
  const fs::path err = c.out.parent_path() / "stderr.txt";
  const std::string out = " --out " + c.out.string();
  for (const std::string& args :
       {std::string("mjcf") + out, "mjcf --robot panda --model " + c.model.string() + out,
        "mjcf --model " + c.model.string() + out}) {
    EXPECT_EQ(test::runHeft(args, err), 2) << args;
    const std::string message = io::readTextFile(err.string());
    EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
    EXPECT_NE(message.find("--model"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(c.out)) << args;
  }
  EXPECT_EQ(test::runHeft("mjcf --robot panda" + out, err), 0);
  EXPECT_TRUE(fs::exists(c.out));
}

}  // namespace
}  // namespace heft::jobs
