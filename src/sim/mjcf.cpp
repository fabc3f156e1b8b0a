#include "heft/sim/mjcf.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "heft/common/error.hpp"
#include "heft/sim/mujoco_errors.hpp"
#include "mujoco_spec.hpp"

namespace heft::sim {

namespace fs = std::filesystem;

namespace {

// A folder of the spec (meshdir, texturedir) relative to the model file made absolute.
void absoluteFolder(mjString* folder, const fs::path& model_dir) {
  const std::string value = mjs_getString(folder);
  const fs::path p = value.empty() ? model_dir : fs::path(value);
  mjs_setString(folder, (p.is_absolute() ? p : model_dir / p).lexically_normal().string().c_str());
}

// The bodies welded to `body` (children without a joint, and theirs): heft's estimate of `body`
// lumps them.
void weldedDescendants(mjsBody* body, std::vector<mjsBody*>& out) {
  for (mjsElement* e = mjs_firstChild(body, mjOBJ_BODY, false); e;
       e = mjs_nextChild(body, e, false)) {
    mjsBody* child = mjs_asBody(e);
    if (!child || mjs_firstChild(child, mjOBJ_JOINT, false)) continue;
    out.push_back(child);
    weldedDescendants(child, out);
  }
}

// The <inertial/> of body `name` in `xml` replaced by the spec body's values at 17 digits; false
// if the body or its own <inertial/> (before its first child body) is not in the text.
bool rewriteInertial(std::string& xml, const std::string& name, const mjsBody* body) {
  const std::size_t at = xml.find("<body name=\"" + name + "\"");
  if (at == std::string::npos) return false;
  const std::size_t begin = xml.find("<inertial", at);
  const std::size_t child = xml.find("<body", at + 1);
  const std::size_t close = xml.find("</body>", at);
  if (begin == std::string::npos || begin > std::min(child, close)) return false;
  const std::size_t end = xml.find("/>", begin);
  if (end == std::string::npos) return false;
  const std::string inertial = "<inertial pos=\"" + fullPrecision(body->ipos, 3) + "\" quat=\"" +
                               fullPrecision(body->iquat, 4) + "\" mass=\"" +
                               fullPrecision(&body->mass, 1) + "\" diaginertia=\"" +
                               fullPrecision(body->inertia, 3) + "\"/>";
  xml.replace(begin, end + 2 - begin, inertial);
  return true;
}

// The attributes `names` of joint `name` in `xml` replaced by the spec joint's values at 17 digits
// (added when MuJoCo's writer left one out); false if the joint is not in the text.
bool rewriteJointAttributes(std::string& xml, const std::string& name, const mjsJoint* joint,
                            const std::vector<std::string>& names) {
  const std::size_t at = xml.find("<joint name=\"" + name + "\"");
  if (at == std::string::npos) return false;
  std::size_t end = xml.find("/>", at);
  if (end == std::string::npos) return false;
  for (const std::string& attribute : names) {
    const double value = attribute == "armature"  ? joint->armature
                         : attribute == "damping" ? joint->damping
                                                  : joint->frictionloss;
    std::size_t value_begin = 0, value_end = 0;
    if (findAttribute(xml, at, end, attribute, value_begin, value_end)) {
      xml.replace(value_begin, value_end - value_begin, fullPrecision(&value, 1));
    } else {
      xml.insert(end, " " + attribute + "=\"" + fullPrecision(&value, 1) + "\"");
    }
    end = xml.find("/>", at);
  }
  return true;
}

// The patch applied to a parsed model, compiled, saved as MJCF text; `source` names the model.
std::string patchSpec(mjSpec* spec, const std::string& source, const MjcfPatch& patch,
                      std::vector<std::string>& notes) {
  // the model as given must compile: what fails then is the input, not the estimate
  mj_deleteModel(compileSpec(spec, source));
  require(spec->compiler.inertiafromgeom != mjINERTIAFROMGEOM_TRUE, source,
          "a model whose bodies keep their own inertials (inertiafromgeom auto or false)",
          "inertiafromgeom true: every inertia comes from the geoms and would replace the "
          "estimate's");

  for (const MjcfPatch::Body& b : patch.bodies) {
    mjsBody* body = mjs_findBody(spec, b.name.c_str());
    require(body != nullptr, source, "a body named \"" + b.name + "\" (the estimate's)", "none");
    setInertial(body, b.inertia);
    // the estimate is of the rigid body: the welded bodies' masses move into it
    std::vector<mjsBody*> welded;
    weldedDescendants(body, welded);
    for (mjsBody* w : welded) {
      w->mass = 0;
      for (int k = 0; k < 3; ++k) w->ipos[k] = w->inertia[k] = 0;
      w->explicitinertial = 1;
      notes.push_back("body " + std::string(mjs_getString(mjs_getName(w->element))) +
                      ": massless, its inertia is in " + b.name + "'s estimate (welded to it)");
    }
  }
  for (const MjcfPatch::Joint& j : patch.joints) {
    mjsElement* element = mjs_findElement(spec, mjOBJ_JOINT, j.name.c_str());
    require(element != nullptr, source, "a joint named \"" + j.name + "\" (the estimate's)",
            "none");
    mjsJoint* joint = mjs_asJoint(element);
    if (j.armature) joint->armature = *j.armature;
    if (j.damping) joint->damping = *j.damping;
    if (j.frictionloss) joint->frictionloss = *j.frictionloss;
  }
  mjModel* compiled = nullptr;
  try {
    compiled = compileSpec(spec, source);
  } catch (const InputError& e) {
    throw SolveError(std::string("the patched model does not compile: ") + e.what());
  }
  mj_deleteModel(compiled);
  std::string saved = saveSpecXml(spec, source);
  // MuJoCo's writer prints 6 significant digits: the identified inertials are written again at
  // full precision (a body near the consistency boundary must not cross it by rounding)
  for (const MjcfPatch::Body& b : patch.bodies)
    if (!rewriteInertial(saved, b.name, mjs_findBody(spec, b.name.c_str())))
      throw SolveError("body '" + b.name +
                       "': its <inertial/> was not found in MuJoCo's saved model, so it cannot be "
                       "written at full precision");
  // and so are the identified joint terms (an armature rounded to 6 digits moves the mass matrix)
  for (const MjcfPatch::Joint& j : patch.joints) {
    std::vector<std::string> attributes;
    if (j.armature) attributes.push_back("armature");
    if (j.damping) attributes.push_back("damping");
    if (j.frictionloss) attributes.push_back("frictionloss");
    const mjsJoint* joint = mjs_asJoint(mjs_findElement(spec, mjOBJ_JOINT, j.name.c_str()));
    if (!rewriteJointAttributes(saved, j.name, joint, attributes))
      throw SolveError("joint '" + j.name +
                       "': it was not found in MuJoCo's saved model, so its terms cannot be "
                       "written at full precision");
  }
  return saved;
}

}  // namespace

std::string patchMjcf(const std::string& model_path, const MjcfPatch& patch,
                      std::vector<std::string>& notes) {
  installMujocoHandlers();
  require(fs::is_regular_file(model_path), model_path, "a MuJoCo model file (MJCF or URDF)",
          "no such file");
  char error[1024] = "";
  SpecPtr spec(mj_parseXML(model_path.c_str(), nullptr, error, sizeof(error)));
  if (!spec) throw InputError(model_path + ": MuJoCo cannot read it: " + error);
  const fs::path model_dir = fs::absolute(fs::path(model_path)).parent_path();
  absoluteFolder(spec->compiler.meshdir, model_dir);
  absoluteFolder(spec->compiler.texturedir, model_dir);
  return patchSpec(spec.get(), model_path, patch, notes);
}

std::string patchMjcfText(const std::string& xml, const std::string& source, const MjcfPatch& patch,
                          std::vector<std::string>& notes) {
  installMujocoHandlers();
  char error[1024] = "";
  SpecPtr spec(mj_parseXMLString(xml.c_str(), nullptr, error, sizeof(error)));
  if (!spec) throw InputError(source + ": MuJoCo cannot read it: " + error);
  return patchSpec(spec.get(), source, patch, notes);
}

}  // namespace heft::sim
