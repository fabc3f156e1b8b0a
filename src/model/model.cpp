#include "heft/model/model.hpp"

#include <unistd.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/model.hpp>
#include <pinocchio/parsers/mjcf.hpp>
#include <pinocchio/parsers/urdf.hpp>
#include <random>
#include <regex>
#include <sstream>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::model {

namespace {

std::string num(double x) { return formatNumber(x, 6); }

// Collapses an exception text to one line. Pinocchio's PINOCCHIO_THROW_PRETTY messages are
// "From file: ...\nin function: ...\nat line: ...\nmessage:\n<text>": keep <text>.
std::string oneLine(const std::string& text) {
  std::string body = text;
  const auto pos = body.find("message:");
  if (pos != std::string::npos) body = body.substr(pos + 8);
  std::string out;
  bool space = false;
  for (char c : body) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// What a parser printed on stderr while it ran, split into errors and warnings.
struct ParserOutput {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::string errorText() const {
    std::string out;
    for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e;
    return out;
  }
};

// Redirects file descriptor 2 into a temporary file while alive. urdfdom reports through
// console_bridge, which prints to stderr and, for some errors (a mass that is not a number), drops
// the element and carries on: reading what it printed is the only way to know, and it keeps the
// CLI's stderr to one line. Loading is serialized by a mutex; other threads' stderr output during
// a load would be captured too (loading happens at start-up).
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    if (file_ == nullptr) return;
    saved_ = dup(STDERR_FILENO);
    if (saved_ < 0 || dup2(fileno(file_), STDERR_FILENO) < 0) restore();
  }
  ~StderrCapture() { restore(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores stderr and parses what was written: console_bridge lines start with "Error:" or
  // "Warning:", followed by an "at line N in <source file>" line that we drop.
  ParserOutput finish() {
    restore();
    ParserOutput out;
    if (file_ == nullptr) return out;
    std::rewind(file_);
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) text.append(buffer, n);
    std::fclose(file_);
    file_ = nullptr;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      const std::string clean = oneLine(line);
      if (clean.empty() || clean.rfind("at line ", 0) == 0) continue;
      if (clean.rfind("Error:", 0) == 0)
        out.errors.push_back(oneLine(clean.substr(6)));
      else if (clean.rfind("Warning:", 0) == 0)
        out.warnings.push_back(oneLine(clean.substr(8)));
      else
        out.warnings.push_back(clean);
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, STDERR_FILENO);
      close(saved_);
      saved_ = -1;
    }
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

std::mutex& loadMutex() {
  static std::mutex m;
  return m;
}

enum class Format { Urdf, Mjcf };

// Reads the root element name (<robot> or <mujoco>); the extension decides otherwise.
Format detectFormat(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError("robot file '" + path +
                     "': cannot be read (expected a readable URDF or MJCF file)");
  std::string head(4096, '\0');
  in.read(&head[0], static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError("robot file '" + path +
                     "' is empty: expected a URDF <robot> or an MJCF <mujoco> XML document");
  static const std::regex root(R"(<\s*(robot|mujoco)[\s>/])");
  std::smatch match;
  if (std::regex_search(head, match, root))
    return match[1] == "robot" ? Format::Urdf : Format::Mjcf;
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".urdf") return Format::Urdf;
  if (ext == ".xml" || ext == ".mjcf") return Format::Mjcf;
  throw InputError("robot file '" + path +
                   "': expected a URDF <robot> or an MJCF <mujoco> XML document, found neither "
                   "root element");
}

// One MJCF <connect>: Pinocchio's point anchor constraint (joints and placements).
struct ParsedLoop {
  std::string name;
  pinocchio::JointIndex joint1 = 0, joint2 = 0;
  pinocchio::SE3 placement1, placement2;
};

// ---- a URDF's loop file ----------------------------------------------------------------------
// URDF describes trees only; the loops of a URDF robot sit beside it in <stem>.loops.xml
// (docs/model.md, "Closed loops"):
//   <loops>
//     <loop name="knee_linkage">
//       <anchor link="coupler" xyz="0.01 0 -0.3"/>
//       <anchor link="shank"/>            <!-- xyz left out: where the first is at q = neutral -->
//     </loop>
//   </loops>

// The link's joint and its frame in that joint, or an InputError naming the link.
std::pair<pinocchio::JointIndex, pinocchio::SE3> linkFrame(const pinocchio::Model& model,
                                                           const std::string& link,
                                                           const std::string& where) {
  if (link == "world" || link == model.frames[0].name) return {0, pinocchio::SE3::Identity()};
  if (!model.existFrame(link, pinocchio::BODY)) {
    std::string names;
    for (const auto& f : model.frames)
      if (f.type == pinocchio::BODY) names += (names.empty() ? "" : ", ") + f.name;
    throw InputError(where + ": link '" + link + "' is not a link of the robot (links: " + names +
                     ", or world)");
  }
  const pinocchio::Frame& f = model.frames[model.getFrameId(link, pinocchio::BODY)];
  return {f.parentJoint, f.placement};
}

Eigen::Vector3d readXyz(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  Eigen::Vector3d p;
  std::string rest;
  if (!(in >> p.x() >> p.y() >> p.z()) || (in >> rest) || !p.allFinite())
    throw InputError(where + ": xyz=\"" + text + "\": expected three finite numbers [m]");
  return p;
}

std::vector<ParsedLoop> readLoopFile(const std::string& path, const pinocchio::Model& model) {
  namespace pt = boost::property_tree;
  pt::ptree tree;
  try {
    pt::read_xml(path, tree, pt::xml_parser::no_comments);
  } catch (const pt::xml_parser_error& e) {
    throw InputError("loop file '" + path + "', line " + std::to_string(e.line()) +
                     ": not well-formed XML: " + e.message());
  }
  const std::string file = "loop file '" + path + "'";
  if (tree.size() != 1 || tree.front().first != "loops")
    throw InputError(file + ": expected one root element <loops>");
  std::vector<ParsedLoop> loops;
  int index = 0;
  for (const auto& [tag, node] : tree.front().second) {
    if (tag == "<xmlattr>") continue;
    if (tag != "loop")
      throw InputError(file + ": unexpected element <" + tag + "> in <loops>, expected <loop>");
    ++index;
    ParsedLoop loop;
    loop.name = node.get<std::string>("<xmlattr>.name", "");
    const std::string where = file + ", loop " + std::to_string(index) +
                              (loop.name.empty() ? "" : " (" + loop.name + ")");
    std::vector<const pt::ptree*> anchors;
    for (const auto& [child, value] : node) {
      if (child == "<xmlattr>") continue;
      if (child != "anchor")
        throw InputError(where + ": unexpected element <" + child + ">, expected <anchor>");
      anchors.push_back(&value);
    }
    if (anchors.size() != 2)
      throw InputError(where + ": expected two <anchor> elements, found " +
                       std::to_string(anchors.size()));
    pinocchio::SE3 placements[2];
    pinocchio::JointIndex joints[2] = {0, 0};
    for (int a = 0; a < 2; ++a) {
      const std::string at = where + ", anchor " + std::to_string(a + 1);
      const auto link = anchors[a]->get_optional<std::string>("<xmlattr>.link");
      if (!link) throw InputError(at + ": expected a link attribute (a link name or world)");
      const auto [joint, frame] = linkFrame(model, *link, at);
      joints[a] = joint;
      const auto xyz = anchors[a]->get_optional<std::string>("<xmlattr>.xyz");
      if (!xyz && a == 0)
        throw InputError(at + ": expected xyz, the anchor point in the link's frame [m]");
      if (xyz) {
        placements[a] = frame * pinocchio::SE3(Eigen::Matrix3d::Identity(), readXyz(*xyz, at));
      } else {  // the first anchor's point at the neutral configuration, in this joint's frame
        pinocchio::Data data(model);
        pinocchio::forwardKinematics(model, data, pinocchio::neutral(model));
        const Eigen::Vector3d p = data.oMi[joints[0]].act(placements[0].translation());
        placements[a] = pinocchio::SE3(Eigen::Matrix3d::Identity(), data.oMi[joint].actInv(p));
      }
    }
    loop.joint1 = joints[0];
    loop.joint2 = joints[1];
    loop.placement1 = placements[0];
    loop.placement2 = placements[1];
    loops.push_back(loop);
  }
  if (loops.empty()) throw InputError(file + ": expected at least one <loop> in <loops>");
  return loops;
}

// Parses the file with Pinocchio, turning every failure into an InputError naming the file.
pinocchio::Model parse(const std::string& path, Format format, bool free_flyer,
                       std::vector<std::string>& warnings, std::vector<ParsedLoop>& loops) {
  const std::string what = format == Format::Urdf ? "URDF" : "MJCF";
  pinocchio::Model model;
  std::lock_guard<std::mutex> lock(loadMutex());
  StderrCapture capture;
  std::string failure;
  try {
    if (format == Format::Urdf) {
      if (free_flyer)
        pinocchio::urdf::buildModel(path, pinocchio::JointModelFreeFlyer(), model);
      else
        pinocchio::urdf::buildModel(path, model);
    } else {
      std::vector<pinocchio::PointAnchorConstraintModel> points;
      std::vector<pinocchio::FrameAnchorConstraintModel> frames;
      if (free_flyer)
        pinocchio::mjcf::buildModel(path, pinocchio::JointModelFreeFlyer(), model, points, frames);
      else
        pinocchio::mjcf::buildModel(path, model, points, frames);
      if (!frames.empty())
        failure =
            "a <weld> equality (" + frames.front().name + "): only <connect> loops are supported";
      for (const auto& c : points)
        loops.push_back({c.name, c.joint1_id, c.joint2_id, c.joint1_placement, c.joint2_placement});
    }
  } catch (const std::exception& e) {
    failure = oneLine(e.what());
    if (failure.empty()) failure = "parser error";
  }
  const ParserOutput printed = capture.finish();
  if (!failure.empty() || !printed.errors.empty()) {
    // What the parser printed is the cause; Pinocchio's own message then only repeats the path.
    throw InputError("robot file '" + path + "' is not a valid " + what +
                     " model: " + (printed.errors.empty() ? failure : printed.errorText()));
  }
  warnings = printed.warnings;
  return model;
}

bool isIdentityPlacement(const pinocchio::SE3& placement) { return placement.isIdentity(1e-12); }

}  // namespace

bool isFreeFlyer(const pinocchio::Model& model, pinocchio::JointIndex j) {
  return j < model.joints.size() && model.joints[j].shortname() == "JointModelFreeFlyer";
}

void LoadOptions::validate() const {
  require(base == BaseType::Default || base == BaseType::FreeFlyer || base == BaseType::Fixed,
          "LoadOptions::base", "default, free-flyer or fixed",
          std::to_string(static_cast<int>(base)));
}

// ---- RobotModel -------------------------------------------------------------------------------

RobotModel::RobotModel(pinocchio::Model model, std::string source, std::string short_name,
                       std::vector<std::string> contact_frames, std::vector<std::string> warnings)
    : model_(std::move(model)),
      source_(std::move(source)),
      short_name_(std::move(short_name)),
      contact_frames_(std::move(contact_frames)),
      warnings_(std::move(warnings)) {
  if (model_.njoints < 2)
    throw InputError("robot '" + source_ +
                     "': expected at least one body (a movable joint or a free-flyer base), got "
                     "none; a robot without joints needs --free-flyer");
  for (pinocchio::JointIndex j = 0; j < static_cast<pinocchio::JointIndex>(model_.njoints); ++j) {
    const auto& Y = model_.inertias[j];
    if (!std::isfinite(Y.mass()) || !Y.lever().allFinite() || !Y.inertia().data().allFinite())
      throw InputError("robot '" + source_ + "', joint '" + model_.names[j] +
                       "': expected finite inertial parameters, got mass " + num(Y.mass()) +
                       ", COM [" + num(Y.lever()[0]) + " " + num(Y.lever()[1]) + " " +
                       num(Y.lever()[2]) + "]");
    const auto& M = model_.jointPlacements[j];
    if (!M.translation().allFinite() || !M.rotation().allFinite())
      throw InputError("robot '" + source_ + "', joint '" + model_.names[j] +
                       "': expected a finite placement (origin xyz/rpy)");
  }
  for (const auto& frame : contact_frames_)
    if (!model_.existFrame(frame))
      throw InputError("robot '" + source_ + "': contact frame '" + frame +
                       "' expected in the model, not found");
  nameBodies();
}

void RobotModel::nameBodies() {
  const int nj = model_.njoints;
  bodies_.assign(nj - 1, Body{});
  for (int j = 1; j < nj; ++j) {
    Body& b = bodies_[j - 1];
    b.joint = j;
    b.joint_name = model_.names[j];
  }
  // The JOINT frame of each joint (the fallback anchor when no link sits at the joint frame).
  std::vector<long> joint_frame(nj, -1);
  for (size_t f = 0; f < model_.frames.size(); ++f) {
    const auto& frame = model_.frames[f];
    if (frame.type == pinocchio::JOINT && frame.parentJoint < static_cast<size_t>(nj) &&
        frame.name == model_.names[frame.parentJoint])
      joint_frame[frame.parentJoint] = static_cast<long>(f);
  }
  // Pass 1: the link at the joint frame. Pass 2 (MJCF joints with a pos): the link whose frame
  // hangs directly from the joint frame.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t f = 0; f < model_.frames.size(); ++f) {
      const auto& frame = model_.frames[f];
      if (frame.type != pinocchio::BODY) continue;
      const auto j = frame.parentJoint;
      if (j == 0 || j >= static_cast<size_t>(nj) || bodies_[j - 1].frame >= 0) continue;
      const bool at_joint = pass == 0 ? isIdentityPlacement(frame.placement)
                                      : static_cast<long>(frame.parentFrame) == joint_frame[j];
      if (at_joint) {
        bodies_[j - 1].frame = static_cast<long>(f);
        bodies_[j - 1].name = frame.name;
      }
    }
  }
  world_links_.clear();
  for (size_t f = 0; f < model_.frames.size(); ++f) {
    const auto& frame = model_.frames[f];
    if (frame.type != pinocchio::BODY) continue;
    if (frame.parentJoint == 0) {
      world_links_.push_back(frame.name);
      continue;
    }
    Body& b = bodies_[frame.parentJoint - 1];
    if (static_cast<long>(f) != b.frame) b.lumped_links.push_back(frame.name);
  }
  for (Body& b : bodies_)
    if (b.name.empty()) b.name = b.joint_name;
}

std::string RobotModel::displayName() const {
  if (!short_name_.empty()) return short_name_;
  return std::filesystem::path(source_).filename().string();
}

bool RobotModel::hasFreeFlyer() const { return isFreeFlyer(model_, 1); }

const Body& RobotModel::body(pinocchio::JointIndex joint) const {
  require(joint >= 1 && joint < static_cast<pinocchio::JointIndex>(model_.njoints),
          "body index in " + displayName(), "1.." + std::to_string(model_.njoints - 1),
          std::to_string(joint));
  return bodies_[joint - 1];
}

pinocchio::JointIndex RobotModel::bodyIndex(const std::string& name) const {
  // Link names first: a link and a joint of different bodies may share a name (MJCF).
  for (const Body& b : bodies_)
    if (b.name == name) return b.joint;
  for (const Body& b : bodies_)
    if (b.joint_name == name) return b.joint;
  const std::string where = "robot " + displayName();
  for (const Body& b : bodies_)
    for (const auto& link : b.lumped_links)
      if (link == name)
        throw InputError(where + ": '" + name + "' is a link rigidly attached to body '" + b.name +
                         "' (joint '" + b.joint_name +
                         "'); its inertia is lumped into that body: use '" + b.name + "'");
  for (const auto& link : world_links_)
    if (link == name)
      throw InputError(where + ": link '" + name +
                       "' is welded to the world (fixed base); it is not a body (load the robot "
                       "with a free-flyer base to identify it)");
  throw InputError(where + ": unknown body '" + name +
                   "': expected a link or joint name, one of: " + bodyNames());
}

std::string RobotModel::bodyNames() const {
  std::string out;
  for (const Body& b : bodies_) out += (out.empty() ? "" : ", ") + b.name;
  return out;
}

Vector10 RobotModel::pi(pinocchio::JointIndex joint) const {
  body(joint);  // range check
  return model_.inertias[joint].toDynamicParameters();
}

Vector10 RobotModel::pi(const std::string& name) const { return pi(bodyIndex(name)); }

void RobotModel::setPi(pinocchio::JointIndex joint, const Vector10& pi) {
  const Body& b = body(joint);
  const std::string what = "pi of body '" + b.name + "' in " + displayName();
  for (int i = 0; i < 10; ++i)
    require(std::isfinite(pi[i]), what + " [" + std::to_string(i) + "]", "a finite value",
            num(pi[i]));
  if (pi[0] == 0) {
    // FromDynamicParameters divides by m: a massless body keeps only its rotational inertia.
    require(pi.segment<3>(1).isZero(0), what, "m c = 0 when m = 0",
            "m c = [" + num(pi[1]) + " " + num(pi[2]) + " " + num(pi[3]) + "]");
    model_.inertias[joint] = pinocchio::Inertia(
        0, Vector3::Zero(), pinocchio::Symmetric3(Eigen::Matrix<double, 6, 1>(pi.tail<6>())));
    return;
  }
  model_.inertias[joint] = pinocchio::Inertia::FromDynamicParameters(pi);
}

double RobotModel::totalMass() const { return pinocchio::computeTotalMass(model_); }

double RobotModel::worldMass() const { return model_.inertias[0].mass(); }

RobotModel lockJoints(const RobotModel& robot, const std::vector<LockedJoint>& locked) {
  if (locked.empty()) return robot;
  if (!robot.loops().empty())
    throw InputError("locked_joints: " + robot.displayName() + " has closed loops (" +
                     robot.loops().front().name +
                     "); locking joints of a closed-loop robot is not supported");
  const pinocchio::Model& model = robot.pinocchio();
  std::string valid;
  for (pinocchio::JointIndex j = 1; j < model.joints.size(); ++j)
    if (model.joints[j].nv() == 1 && !isFreeFlyer(model, j))
      valid += (valid.empty() ? "" : ", ") + model.names[j];
  Eigen::VectorXd q = pinocchio::neutral(model);
  std::vector<pinocchio::JointIndex> ids;
  for (const LockedJoint& l : locked) {
    const bool known = model.existJointName(l.name);
    const pinocchio::JointIndex j = known ? model.getJointId(l.name) : 0;
    if (!known || model.joints[j].nv() != 1)
      throw InputError("locked_joints: \"" + l.name + "\" is not a 1-DoF joint of " +
                       robot.displayName() + " (" + valid + ")");
    if (std::find(ids.begin(), ids.end(), j) != ids.end())
      throw InputError("locked_joints: \"" + l.name + "\" is listed twice");
    if (!std::isfinite(l.position))
      throw InputError("locked_joints: \"" + l.name + "\": expected a finite position, got " +
                       num(l.position));
    ids.push_back(j);
    const auto& joint = model.joints[j];
    if (joint.nq() == 2) {  // continuous: (cos, sin)
      q[joint.idx_q()] = std::cos(l.position);
      q[joint.idx_q() + 1] = std::sin(l.position);
    } else {
      q[joint.idx_q()] = l.position;
    }
  }
  pinocchio::Model reduced = pinocchio::buildReducedModel(model, ids, q);
  reduced.name = model.name;
  return RobotModel(std::move(reduced), robot.source(), robot.shortName(), robot.contactFrames(),
                    robot.warnings());
}

// ---- loading ----------------------------------------------------------------------------------

std::string loopFilePath(const std::string& urdf_path) {
  std::filesystem::path p(urdf_path);
  p.replace_extension(".loops.xml");
  return p.string();
}

RobotModel loadRobot(const std::string& name_or_path, const LoadOptions& options) {
  options.validate();
  const RobotEntry* entry = findRobot(name_or_path);
  std::string path = entry != nullptr ? robotPath(*entry) : name_or_path;
  std::error_code ec;
  if (entry == nullptr) {
    if (!std::filesystem::exists(path, ec)) {
      const std::string ext = std::filesystem::path(path).extension().string();
      const bool looks_like_path =
          path.find('/') != std::string::npos || ext == ".urdf" || ext == ".xml" || ext == ".mjcf";
      if (looks_like_path)
        throw InputError("robot file '" + path +
                         "' not found: expected an existing .urdf or MJCF .xml file");
      throw InputError(
          "unknown robot '" + name_or_path +
          "': expected a path to a .urdf or MJCF .xml file or one of: " + knownRobotNames());
    }
    if (std::filesystem::is_directory(path, ec))
      throw InputError("robot file '" + path + "' is a directory: expected a .urdf or .xml file");
    entry = findRobotByPath(path);
  } else if (!std::filesystem::exists(path, ec)) {
    throw InputError("robot '" + entry->name + "': file '" + path +
                     "' not found (expected example-robot-data under " + robotsDirectory() + ")");
  }

  const Format format = detectFormat(path);
  BaseType base = options.base;
  if (base == BaseType::Default) {
    if (entry != nullptr)
      base = entry->base;
    else
      base = format == Format::Urdf ? BaseType::FreeFlyer : BaseType::Fixed;
  }
  // MJCF: "Default" with no table entry means "as declared", i.e. no root joint added.
  const bool add_free_flyer = base == BaseType::FreeFlyer;
  std::vector<std::string> warnings;
  std::vector<ParsedLoop> loops;
  pinocchio::Model model = parse(path, format, add_free_flyer, warnings, loops);
  if (format == Format::Mjcf && options.base == BaseType::Fixed && isFreeFlyer(model, 1))
    throw InputError("robot file '" + path +
                     "': --fixed-base asked, but the MJCF root body declares a free joint");
  RobotModel robot(std::move(model), path, entry != nullptr ? entry->name : "",
                   entry != nullptr ? entry->contact_frames : std::vector<std::string>{},
                   std::move(warnings));
  std::string loop_source = path;
  if (format == Format::Urdf && std::filesystem::exists(loopFilePath(path), ec)) {
    loop_source = loopFilePath(path);
    loops = readLoopFile(loop_source, robot.pinocchio());
  }
  for (size_t i = 0; i < loops.size(); ++i) {
    const ParsedLoop& l = loops[i];
    // Pinocchio's parser keeps no equality name: a loop is named after its two bodies
    const std::string name =
        !l.name.empty() ? l.name
                        : (l.joint1 > 0 ? robot.body(l.joint1).name : std::string("world")) + "_" +
                              (l.joint2 > 0 ? robot.body(l.joint2).name : std::string("world"));
    try {
      robot.addLoop(name, l.joint1, l.placement1, l.joint2, l.placement2);
    } catch (const InputError& e) {
      throw InputError((loop_source == path ? "robot file '" : "loop file '") + loop_source +
                       "': " + e.what());
    }
  }
  return robot;
}

// ---- closed loops -----------------------------------------------------------------------------

namespace {

// The anchors' offset p1 - p2 (world axes) and its Jacobian d(p1 - p2)/dq (3 x nv, tangent).
void loopOffset(const pinocchio::Model& model, pinocchio::Data& data, const LoopClosure& loop,
                Eigen::Ref<Eigen::Vector3d> offset, Eigen::MatrixXd* jacobian) {
  const auto& o1 = pinocchio::updateFramePlacement(model, data, loop.frame1);
  const auto& o2 = pinocchio::updateFramePlacement(model, data, loop.frame2);
  offset = o1.translation() - o2.translation();
  if (jacobian == nullptr) return;
  Eigen::MatrixXd J1 = Eigen::MatrixXd::Zero(6, model.nv), J2 = J1;
  pinocchio::getFrameJacobian(model, data, loop.frame1, pinocchio::LOCAL_WORLD_ALIGNED, J1);
  pinocchio::getFrameJacobian(model, data, loop.frame2, pinocchio::LOCAL_WORLD_ALIGNED, J2);
  *jacobian = J1.topRows<3>() - J2.topRows<3>();
}

// Damped Gauss-Newton on the stacked offsets over the velocity coordinates marked free.
double closeOver(const pinocchio::Model& model, const std::vector<LoopClosure>& loops,
                 Eigen::VectorXd& q, const std::vector<bool>& free) {
  pinocchio::Data data(model);
  const int n = static_cast<int>(3 * loops.size());
  Eigen::VectorXd r(n);
  Eigen::MatrixXd J(n, model.nv), Jl;
  auto evaluate = [&](const Eigen::VectorXd& at, bool with_jacobian) {
    if (with_jacobian)
      pinocchio::computeJointJacobians(model, data, at);
    else
      pinocchio::forwardKinematics(model, data, at);
    for (size_t i = 0; i < loops.size(); ++i) {
      loopOffset(model, data, loops[i], r.segment<3>(3 * static_cast<Eigen::Index>(i)),
                 with_jacobian ? &Jl : nullptr);
      if (with_jacobian) J.middleRows<3>(3 * static_cast<Eigen::Index>(i)) = Jl;
    }
  };
  Eigen::VectorXd step(model.nv), trial(model.nq);
  for (int it = 0; it < 100; ++it) {
    evaluate(q, true);
    for (int j = 0; j < model.nv; ++j)
      if (!free[j]) J.col(j).setZero();
    const double norm = r.norm();
    if (r.lpNorm<Eigen::Infinity>() < 1e-12) break;
    // Levenberg-Marquardt step: (J^T J + mu I) s = -J^T r, mu relative to the residual
    const double mu = 1e-6 + norm;
    Eigen::MatrixXd H = J.transpose() * J;
    H.diagonal().array() += mu;
    step = -H.ldlt().solve(J.transpose() * r);
    double t = 1;
    bool improved = false;
    for (int ls = 0; ls < 30 && !improved; ++ls, t *= 0.5) {
      pinocchio::integrate(model, q, t * step, trial);
      evaluate(trial, false);
      improved = r.norm() < norm;
    }
    if (!improved) break;
    q = trial;
  }
  evaluate(q, false);
  return r.size() ? r.lpNorm<Eigen::Infinity>() : 0.0;
}

}  // namespace

// The directions the loop constrains, in the first anchor's axes: the offset's Jacobian
// R_1^T d(p_1 - p_2)/dq in the cycle's joints over random configurations of the cycle spans them;
// a direction it never reaches (a planar loop's joint axis) is dropped, and the anchor frame
// turned to put the others first (eigenvectors of sum J J^T, largest first). Only the cycle's
// columns: a joint above the loop (a floating base's rotation) turns the open offset with the
// anchors, which is no direction the loop constrains.
void RobotModel::constrainedDirections(LoopClosure& loop) {
  pinocchio::Data data(model_);
  std::mt19937 rng(1);
  std::normal_distribution<double> n(0, 1);
  Eigen::Matrix3d gram = Eigen::Matrix3d::Zero();
  Eigen::MatrixXd J;
  Eigen::Vector3d offset;
  Eigen::VectorXd dq(model_.nv), q(model_.nq);
  std::vector<bool> in_cycle(model_.nv, false);
  for (pinocchio::JointIndex j : loop.cycle) in_cycle[model_.joints[j].idx_v()] = true;
  for (int sample = 0; sample < 8; ++sample) {
    for (int i = 0; i < model_.nv; ++i) dq[i] = in_cycle[i] ? n(rng) : 0.0;
    q = pinocchio::integrate(model_, pinocchio::neutral(model_), dq);
    pinocchio::computeJointJacobians(model_, data, q);
    loopOffset(model_, data, loop, offset, &J);  // world axes; turned into the first anchor's
    for (int i = 0; i < model_.nv; ++i)
      if (!in_cycle[i]) J.col(i).setZero();
    const Eigen::MatrixXd J_anchor = data.oMf[loop.frame1].rotation().transpose() * J;
    gram += J_anchor * J_anchor.transpose();
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(gram);  // ascending
  Eigen::Matrix3d axes = eig.eigenvectors().rowwise().reverse();
  if (axes.determinant() < 0) axes.col(2) *= -1;
  const double largest = eig.eigenvalues()(2);
  loop.dimension = 0;
  for (int i = 0; i < 3; ++i) loop.dimension += eig.eigenvalues()(i) > 1e-12 * largest ? 1 : 0;
  pinocchio::SE3& placement = model_.frames[loop.frame1].placement;
  placement.rotation(placement.rotation() * axes);
}

void RobotModel::addLoop(const std::string& name, pinocchio::JointIndex joint1,
                         const pinocchio::SE3& placement1, pinocchio::JointIndex joint2,
                         const pinocchio::SE3& placement2) {
  const std::string what = "loop '" + name + "' of " + displayName();
  const auto nj = static_cast<pinocchio::JointIndex>(model_.njoints);
  require(joint1 >= 1 && joint1 < nj && joint2 < nj, what + " bodies",
          "joints of the model (1.." + std::to_string(nj - 1) + ")",
          std::to_string(joint1) + ", " + std::to_string(joint2));
  require(joint1 != joint2, what, "anchors on two different bodies",
          "both on " + model_.names[joint1]);
  require(placement1.translation().allFinite() && placement2.translation().allFinite(), what,
          "finite anchors", "NaN or infinity");
  for (const LoopClosure& l : loops_)
    require(l.name != name, what, "a unique name", "a second loop of that name");
  LoopClosure loop;
  loop.name = name;
  loop.joint1 = joint1;
  loop.joint2 = joint2;
  loop.frame1 =
      model_.addFrame(pinocchio::Frame(name + "_anchor1", joint1, placement1, pinocchio::OP_FRAME));
  loop.frame2 =
      model_.addFrame(pinocchio::Frame(name + "_anchor2", joint2, placement2, pinocchio::OP_FRAME));
  // The cycle: each anchor's joints up to (not including) the common ancestor.
  std::vector<pinocchio::JointIndex> path1, path2;
  for (pinocchio::JointIndex j = joint1; j > 0; j = model_.parents[j]) path1.push_back(j);
  for (pinocchio::JointIndex j = joint2; j > 0; j = model_.parents[j]) path2.push_back(j);
  for (pinocchio::JointIndex j : path1)
    if (std::find(path2.begin(), path2.end(), j) == path2.end() && model_.joints[j].nv() == 1)
      loop.cycle.push_back(j);
  for (pinocchio::JointIndex j : path2)
    if (std::find(path1.begin(), path1.end(), j) == path1.end() && model_.joints[j].nv() == 1)
      loop.cycle.push_back(j);
  std::sort(loop.cycle.begin(), loop.cycle.end());
  require(!loop.cycle.empty(), what, "a joint between its anchors", "none (a rigid loop)");
  constrainedDirections(loop);
  loops_.push_back(loop);
  // Can it close? Every joint of the cycle free, from the neutral configuration.
  Eigen::VectorXd q = pinocchio::neutral(model_);
  std::vector<bool> free(model_.nv, false);
  for (pinocchio::JointIndex j : loop.cycle) free[model_.joints[j].idx_v()] = true;
  const double gap = closeOver(model_, {loop}, q, free);
  if (!(gap <= closureTolerance())) {
    loops_.pop_back();
    throw InputError(what + " cannot close: its anchors stay " + num(gap) +
                     " m apart at best over the joints " +
                     [&] {
                       std::string names;
                       for (pinocchio::JointIndex j : loop.cycle)
                         names += (names.empty() ? "" : ", ") + model_.names[j];
                       return names;
                     }() +
                     " (expected coinciding anchors: inconsistent link lengths?)");
  }
}

std::vector<pinocchio::JointIndex> loopJoints(const RobotModel& robot) {
  std::vector<pinocchio::JointIndex> joints;
  for (const LoopClosure& l : robot.loops())
    joints.insert(joints.end(), l.cycle.begin(), l.cycle.end());
  std::sort(joints.begin(), joints.end());
  joints.erase(std::unique(joints.begin(), joints.end()), joints.end());
  return joints;
}

std::vector<std::string> loopJointNames(const RobotModel& robot) {
  std::vector<std::string> names;
  for (pinocchio::JointIndex j : loopJoints(robot)) names.push_back(robot.pinocchio().names[j]);
  return names;
}

Eigen::VectorXd loopResidual(const RobotModel& robot, const Eigen::VectorXd& q) {
  const pinocchio::Model& model = robot.pinocchio();
  pinocchio::Data data(model);
  pinocchio::forwardKinematics(model, data, q);
  Eigen::VectorXd r(3 * robot.loops().size());
  for (size_t i = 0; i < robot.loops().size(); ++i)
    loopOffset(model, data, robot.loops()[i], r.segment<3>(3 * static_cast<Eigen::Index>(i)),
               nullptr);
  return r;
}

double closeLoops(const RobotModel& robot, Eigen::VectorXd& q, const std::vector<bool>& fixed) {
  const pinocchio::Model& model = robot.pinocchio();
  require(static_cast<int>(fixed.size()) == model.nv, "closeLoops fixed flags",
          std::to_string(model.nv) + " (nv)", std::to_string(fixed.size()));
  if (robot.loops().empty()) return 0;
  std::vector<bool> free(model.nv, false);
  for (const LoopClosure& l : robot.loops())
    for (pinocchio::JointIndex j : l.cycle) {
      const int iv = model.joints[j].idx_v();
      free[iv] = !fixed[iv];
    }
  return closeOver(model, robot.loops(), q, free);
}

}  // namespace heft::model
