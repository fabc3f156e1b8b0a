// URDF inertial writer. A small XML scanner records the byte spans of elements and attribute
// values; the writer replaces only those spans, so every other byte of the file is preserved.
#include "heft/io/urdf_writer.hpp"

#include <Eigen/Geometry>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include "heft/common/error.hpp"
#include "heft/inertia/inertia.hpp"
#include "heft/io/atomic_file.hpp"

namespace fs = std::filesystem;

namespace heft::io {

namespace {

// ---- XML scanner
// ---------------------------------------------------------------------------------

struct XmlAttribute {
  std::string name;
  std::string value;            ///< entities decoded
  std::size_t value_begin = 0;  ///< raw span inside the quotes
  std::size_t value_end = 0;
};

struct XmlElement {
  std::string name;
  std::vector<XmlAttribute> attributes;
  std::size_t start_begin = 0;  ///< '<' of the start tag
  std::size_t start_end = 0;    ///< one past its '>'
  std::size_t name_end = 0;     ///< one past the element name in the start tag
  std::size_t end_begin = 0;    ///< '<' of the end tag (start_begin if self-closing)
  std::size_t end_end = 0;      ///< one past its '>'
  bool self_closing = false;
  int parent = -1;
  std::vector<int> children;

  const XmlAttribute* attribute(const std::string& key) const {
    for (const auto& a : attributes) {
      if (a.name == key) return &a;
    }
    return nullptr;
  }
};

class XmlDocument {
 public:
  XmlDocument(const std::string& text, const std::string& file) : text_(text), file_(file) {
    for (std::size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
    parse();
  }

  const std::vector<XmlElement>& elements() const { return elements_; }
  int root() const { return root_; }

  std::size_t line(std::size_t offset) const {
    return static_cast<std::size_t>(
               std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) -
               line_starts_.begin()) +
           1;
  }

  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    throw InputError(file_ + ":" + std::to_string(line(offset)) + ": " + what);
  }

  /// Children of `element` named `name`.
  std::vector<int> children(int element, const std::string& name) const {
    std::vector<int> found;
    for (int c : elements_[element].children) {
      if (elements_[c].name == name) found.push_back(c);
    }
    return found;
  }

 private:
  static bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  static bool isNameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
           c == ':' || static_cast<unsigned char>(c) >= 0x80;
  }

  std::size_t skipTo(std::size_t from, const std::string& token, const std::string& what) const {
    const std::size_t found = text_.find(token, from);
    if (found == std::string::npos)
      fail(from, "unterminated " + what + " (expected \"" + token + "\")");
    return found + token.size();
  }

  std::string decode(std::size_t begin, std::size_t end) const {
    std::string out;
    for (std::size_t i = begin; i < end; ++i) {
      if (text_[i] != '&') {
        out += text_[i];
        continue;
      }
      const std::size_t semicolon = text_.find(';', i);
      if (semicolon == std::string::npos || semicolon >= end)
        fail(i, "unterminated entity in attribute value");
      const std::string entity = text_.substr(i + 1, semicolon - i - 1);
      if (entity == "lt")
        out += '<';
      else if (entity == "gt")
        out += '>';
      else if (entity == "amp")
        out += '&';
      else if (entity == "quot")
        out += '"';
      else if (entity == "apos")
        out += '\'';
      else if (entity.size() > 1 && entity[0] == '#') {
        const bool hex = entity[1] == 'x' || entity[1] == 'X';
        unsigned long code = 0;
        const char* first = entity.data() + (hex ? 2 : 1);
        const auto result =
            std::from_chars(first, entity.data() + entity.size(), code, hex ? 16 : 10);
        if (result.ec != std::errc() || result.ptr != entity.data() + entity.size() || code == 0 ||
            code > 127) {
          fail(i, "unsupported character reference &" + entity + "; (ASCII only)");
        }
        out += static_cast<char>(code);
      } else {
        fail(i, "unknown entity &" + entity + ";");
      }
      i = semicolon;
    }
    return out;
  }

  void parse() {
    std::vector<int> open;
    std::size_t pos = 0;
    const std::size_t n = text_.size();
    while (pos < n) {
      const std::size_t lt = text_.find('<', pos);
      const std::size_t stop = lt == std::string::npos ? n : lt;
      if (open.empty()) {
        for (std::size_t i = pos; i < stop; ++i) {
          if (!isSpace(text_[i]) && !(i < 3 && static_cast<unsigned char>(text_[i]) >= 0xEF)) {
            fail(i, "text outside the root element");
          }
        }
      }
      if (lt == std::string::npos) break;
      pos = lt;
      if (text_.compare(pos, 4, "<!--") == 0) {
        pos = skipTo(pos + 4, "-->", "comment");
      } else if (text_.compare(pos, 9, "<![CDATA[") == 0) {
        pos = skipTo(pos + 9, "]]>", "CDATA section");
      } else if (text_.compare(pos, 2, "<?") == 0) {
        pos = skipTo(pos + 2, "?>", "processing instruction");
      } else if (text_.compare(pos, 2, "<!") == 0) {
        // DOCTYPE, possibly with an internal subset in brackets
        int depth = 0;
        std::size_t i = pos + 2;
        for (; i < n; ++i) {
          if (text_[i] == '[')
            ++depth;
          else if (text_[i] == ']')
            --depth;
          else if (text_[i] == '>' && depth <= 0)
            break;
        }
        if (i >= n) fail(pos, "unterminated <! declaration");
        pos = i + 1;
      } else if (text_.compare(pos, 2, "</") == 0) {
        std::size_t i = pos + 2;
        const std::size_t name_begin = i;
        while (i < n && isNameChar(text_[i])) ++i;
        const std::string name = text_.substr(name_begin, i - name_begin);
        while (i < n && isSpace(text_[i])) ++i;
        if (i >= n || text_[i] != '>') fail(pos, "malformed end tag </" + name);
        if (open.empty()) fail(pos, "end tag </" + name + "> without a start tag");
        XmlElement& element = elements_[open.back()];
        if (element.name != name) {
          fail(pos, "end tag </" + name + "> closes <" + element.name + "> opened on line " +
                        std::to_string(line(element.start_begin)));
        }
        element.end_begin = pos;
        element.end_end = i + 1;
        open.pop_back();
        pos = i + 1;
      } else {
        pos = startTag(pos, open);
      }
    }
    if (!open.empty()) {
      fail(elements_[open.back()].start_begin,
           "element <" + elements_[open.back()].name + "> is never closed");
    }
    if (root_ < 0) fail(0, "expected a root element, found none");
  }

  std::size_t startTag(std::size_t pos, std::vector<int>& open) {
    const std::size_t n = text_.size();
    XmlElement element;
    element.start_begin = pos;
    std::size_t i = pos + 1;
    while (i < n && isNameChar(text_[i])) ++i;
    element.name = text_.substr(pos + 1, i - pos - 1);
    element.name_end = i;
    if (element.name.empty()) fail(pos, "expected an element name after '<'");
    while (true) {
      while (i < n && isSpace(text_[i])) ++i;
      if (i >= n) fail(pos, "unterminated start tag <" + element.name);
      if (text_[i] == '>') {
        ++i;
        break;
      }
      if (text_.compare(i, 2, "/>") == 0) {
        element.self_closing = true;
        i += 2;
        break;
      }
      const std::size_t name_begin = i;
      while (i < n && isNameChar(text_[i])) ++i;
      XmlAttribute attribute;
      attribute.name = text_.substr(name_begin, i - name_begin);
      if (attribute.name.empty()) fail(i, "unexpected character in start tag <" + element.name);
      while (i < n && isSpace(text_[i])) ++i;
      if (i >= n || text_[i] != '=') fail(i, "expected '=' after attribute " + attribute.name);
      ++i;
      while (i < n && isSpace(text_[i])) ++i;
      if (i >= n || (text_[i] != '"' && text_[i] != '\'')) {
        fail(i, "expected a quoted value for attribute " + attribute.name);
      }
      const char quote = text_[i];
      const std::size_t close = text_.find(quote, i + 1);
      if (close == std::string::npos) fail(i, "unterminated value of attribute " + attribute.name);
      if (text_.find('<', i + 1) < close)
        fail(i, "'<' inside the value of attribute " + attribute.name);
      attribute.value_begin = i + 1;
      attribute.value_end = close;
      attribute.value = decode(i + 1, close);
      if (element.attribute(attribute.name)) fail(i, "duplicated attribute " + attribute.name);
      element.attributes.push_back(std::move(attribute));
      i = close + 1;
      if (i < n && !isSpace(text_[i]) && text_[i] != '>' && text_[i] != '/') {
        fail(i, "expected a space between attributes");
      }
    }
    element.start_end = i;
    const int index = static_cast<int>(elements_.size());
    if (open.empty()) {
      if (root_ >= 0) fail(pos, "a second root element <" + element.name + ">");
      root_ = index;
    } else {
      element.parent = open.back();
    }
    if (element.self_closing) {
      element.end_begin = element.start_begin;
      element.end_end = element.start_end;
    }
    elements_.push_back(std::move(element));
    if (elements_[index].parent >= 0) elements_[elements_[index].parent].children.push_back(index);
    if (!elements_[index].self_closing) open.push_back(index);
    return i;
  }

  const std::string& text_;
  std::string file_;
  std::vector<std::size_t> line_starts_;
  std::vector<XmlElement> elements_;
  int root_ = -1;
};

// ---- URDF interpretation
// ---------------------------------------------------------------------------

std::vector<double> parseNumbers(const XmlDocument& doc, const XmlElement& element,
                                 const std::string& key, std::size_t count) {
  const XmlAttribute* attribute = element.attribute(key);
  const std::string where = "<" + element.name + "> attribute " + key;
  if (!attribute) doc.fail(element.start_begin, where + ": missing");
  std::vector<double> values;
  const std::string& text = attribute->value;
  std::size_t i = 0;
  while (true) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    const char* begin = text.c_str() + i;
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin || (*end && !std::isspace(static_cast<unsigned char>(*end)))) {
      doc.fail(attribute->value_begin,
               where + ": expected " + std::to_string(count) + " number(s), got \"" + text + "\"");
    }
    if (!std::isfinite(value))
      doc.fail(attribute->value_begin, where + ": expected finite numbers, got \"" + text + "\"");
    values.push_back(value);
    i = static_cast<std::size_t>(end - text.c_str());
  }
  if (values.size() != count) {
    doc.fail(attribute->value_begin,
             where + ": expected " + std::to_string(count) + " number(s), got \"" + text + "\"");
  }
  return values;
}

/// Link name -> element index, for the <link> children of <robot>.
std::map<std::string, int> linkElements(const XmlDocument& doc) {
  const XmlElement& robot = doc.elements()[doc.root()];
  if (robot.name != "robot")
    doc.fail(robot.start_begin, "expected the root element <robot>, got <" + robot.name + ">");
  std::map<std::string, int> links;
  for (int c : doc.children(doc.root(), "link")) {
    const XmlAttribute* name = doc.elements()[c].attribute("name");
    if (!name || name->value.empty())
      doc.fail(doc.elements()[c].start_begin, "<link> without a name");
    if (!links.emplace(name->value, c).second) {
      doc.fail(doc.elements()[c].start_begin, "duplicated link name \"" + name->value + "\"");
    }
  }
  return links;
}

int singleChild(const XmlDocument& doc, int element, const std::string& name, bool required) {
  const std::vector<int> found = doc.children(element, name);
  if (found.size() > 1)
    doc.fail(doc.elements()[found[1]].start_begin, "more than one <" + name + ">");
  if (found.empty()) {
    if (required)
      doc.fail(doc.elements()[element].start_begin,
               "<" + doc.elements()[element].name + "> without <" + name + ">");
    return -1;
  }
  return found.front();
}

Matrix3 rotationFromRpy(const Vector3& rpy) {
  return (Eigen::AngleAxisd(rpy.z(), Vector3::UnitZ()) *
          Eigen::AngleAxisd(rpy.y(), Vector3::UnitY()) *
          Eigen::AngleAxisd(rpy.x(), Vector3::UnitX()))
      .toRotationMatrix();
}

UrdfInertial readInertial(const XmlDocument& doc, int inertial) {
  UrdfInertial out;
  const int origin = singleChild(doc, inertial, "origin", false);
  if (origin >= 0) {
    const XmlElement& o = doc.elements()[origin];
    if (o.attribute("xyz")) {
      const auto xyz = parseNumbers(doc, o, "xyz", 3);
      out.xyz = Vector3(xyz[0], xyz[1], xyz[2]);
    }
    if (o.attribute("rpy")) {
      const auto rpy = parseNumbers(doc, o, "rpy", 3);
      out.rpy = Vector3(rpy[0], rpy[1], rpy[2]);
    }
  }
  out.mass =
      parseNumbers(doc, doc.elements()[singleChild(doc, inertial, "mass", true)], "value", 1)[0];
  const XmlElement& inertia = doc.elements()[singleChild(doc, inertial, "inertia", true)];
  const double ixx = parseNumbers(doc, inertia, "ixx", 1)[0],
               ixy = parseNumbers(doc, inertia, "ixy", 1)[0],
               ixz = parseNumbers(doc, inertia, "ixz", 1)[0],
               iyy = parseNumbers(doc, inertia, "iyy", 1)[0],
               iyz = parseNumbers(doc, inertia, "iyz", 1)[0],
               izz = parseNumbers(doc, inertia, "izz", 1)[0];
  out.inertia << ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz;
  return out;
}

/// Shortest decimal text that reads back to the same double.
std::string shortest(double x) {
  if (x == 0) return "0";  // also turns -0 into 0
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), x);
  return std::string(buffer, result.ptr);
}

std::string triple(const Vector3& v) {
  return shortest(v.x()) + " " + shortest(v.y()) + " " + shortest(v.z());
}

struct Edit {
  std::size_t begin, end;
  std::string text;
};

/// The leading whitespace of the line holding `offset`.
std::string indentOf(const std::string& text, std::size_t offset) {
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t begin = line_start == std::string::npos ? 0 : line_start + 1;
  std::size_t end = begin;
  while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
  return text.substr(begin, end - begin);
}

/// Replaces the value of `key` on `element`, or adds the attribute after the last one.
void setAttribute(std::vector<Edit>& edits, const XmlElement& element, const std::string& key,
                  const std::string& value) {
  if (const XmlAttribute* a = element.attribute(key)) {
    edits.push_back({a->value_begin, a->value_end, value});
    return;
  }
  const std::size_t at =
      element.attributes.empty() ? element.name_end : element.attributes.back().value_end + 1;
  edits.push_back({at, at, " " + key + "=\"" + value + "\""});
}

}  // namespace

Vector10 UrdfInertial::pi() const {
  const Matrix3 rotation = rotationFromRpy(rpy);
  return inertia::piFromMassComInertia(mass, xyz, rotation * inertia * rotation.transpose());
}

std::map<std::string, UrdfInertial> readUrdfInertials(const std::string& urdf_path) {
  const std::string text = readTextFile(urdf_path);
  const XmlDocument doc(text, urdf_path);
  std::map<std::string, UrdfInertial> inertials;
  for (const auto& [name, link] : linkElements(doc)) {
    const int inertial = singleChild(doc, link, "inertial", false);
    if (inertial >= 0) inertials.emplace(name, readInertial(doc, inertial));
  }
  return inertials;
}

void UrdfWriteOptions::validate() const {}

void writeUrdfInertials(const std::string& input_path,
                        const std::map<std::string, Vector10>& link_pi,
                        const std::string& output_path, const UrdfWriteOptions& options) {
  options.validate();
  std::error_code ec;
  if (fs::exists(output_path, ec) && fs::equivalent(input_path, output_path, ec)) {
    throw InputError(output_path +
                     ": is the input URDF; refusing to overwrite it (choose a new path)");
  }
  const std::string text = readTextFile(input_path);
  const XmlDocument doc(text, input_path);
  const std::map<std::string, int> links = linkElements(doc);
  std::vector<std::string> unknown;
  for (const auto& [name, pi] : link_pi) {
    if (!links.count(name)) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& name : unknown) list += (list.empty() ? "" : ", ") + name;
    throw InputError(input_path + ": no <link> named " + list);
  }

  std::vector<Edit> edits;
  for (const auto& [name, pi] : link_pi) {
    if (!pi.allFinite()) throw InputError("link " + name + ": inertial parameters are not finite");
    const auto report = inertia::checkConsistencyMargin(pi);
    if (!report.consistent) {
      const auto& v = report.violations.front();
      const std::string why =
          "violates " + v.condition + " (" + v.detail + ", margin " + shortest(v.margin) + ")";
      throw InputError("link " + name +
                       ": inertial parameters are not physically consistent: " + why);
    }
    const int link = links.at(name);
    const int inertial = singleChild(doc, link, "inertial", false);
    // keep the inertial frame's orientation, express the inertia about the COM in it
    Vector3 rpy = Vector3::Zero();
    if (inertial >= 0) rpy = readInertial(doc, inertial).rpy;
    const Matrix3 rotation = rotationFromRpy(rpy);
    const double m = inertia::mass(pi);
    const Vector3 com = inertia::centerOfMass(pi);
    const Matrix3 at_com = rotation.transpose() * inertia::rotationalInertiaAtCom(pi) * rotation;
    const std::vector<std::pair<std::string, double>> moments = {
        {"ixx", at_com(0, 0)}, {"ixy", at_com(0, 1)}, {"ixz", at_com(0, 2)},
        {"iyy", at_com(1, 1)}, {"iyz", at_com(1, 2)}, {"izz", at_com(2, 2)}};

    if (inertial < 0) {
      // a link without <inertial>: add one, indented one step deeper than the link
      const XmlElement& l = doc.elements()[link];
      const std::string indent = indentOf(text, l.start_begin);
      const std::string inner = indent + "  ";
      std::string block = inner + "<inertial>\n" + inner + "  <origin xyz=\"" + triple(com) +
                          "\" rpy=\"0 0 0\"/>\n" + inner + "  <mass value=\"" + shortest(m) +
                          "\"/>\n" + inner + "  <inertia";
      for (const auto& [key, value] : moments) block += " " + key + "=\"" + shortest(value) + "\"";
      block += "/>\n" + inner + "</inertial>\n";
      if (l.self_closing) {
        // "<link name=\"x\"/>" -> "<link name=\"x\">\n...\n</link>"
        std::size_t slash = l.start_end - 2;
        edits.push_back({slash, l.start_end, ">\n" + block + indent + "</link>"});
      } else {
        const std::size_t line_start = text.rfind('\n', l.end_begin - 1) + 1;
        const bool own_line = text.find_first_not_of(" \t", line_start) == l.end_begin;
        edits.push_back(own_line ? Edit{line_start, line_start, block}
                                 : Edit{l.end_begin, l.end_begin, "\n" + block + indent});
      }
      continue;
    }
    const XmlElement& in = doc.elements()[inertial];
    // first child's position and indentation, for elements that must be added
    const std::size_t first_child =
        in.children.empty() ? in.start_end : doc.elements()[in.children.front()].start_begin;
    const std::string child_indent =
        in.children.empty() ? "" : text.substr(in.start_end, first_child - in.start_end);
    const int origin = singleChild(doc, inertial, "origin", false);
    if (origin >= 0) {
      setAttribute(edits, doc.elements()[origin], "xyz", triple(com));
    } else {
      edits.push_back({first_child, first_child,
                       "<origin xyz=\"" + triple(com) + "\" rpy=\"0 0 0\"/>" + child_indent});
    }
    setAttribute(edits, doc.elements()[singleChild(doc, inertial, "mass", true)], "value",
                 shortest(m));
    const XmlElement& inertia_element = doc.elements()[singleChild(doc, inertial, "inertia", true)];
    for (const auto& [key, value] : moments)
      setAttribute(edits, inertia_element, key, shortest(value));
  }

  // apply from the end so earlier offsets stay valid (spans never overlap)
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
  std::string output = text;
  for (const auto& e : edits) output.replace(e.begin, e.end - e.begin, e.text);
  writeTextFileAtomically(output_path, output, options.overwrite);
}

Vector10 linkPiFromLumpedPi(const pinocchio::Model& model, const std::string& link_name,
                            const Vector10& identified_lumped_pi, const Vector10& nominal_link_pi) {
  if (!model.existFrame(link_name, pinocchio::BODY)) {
    throw InputError("link " + link_name + ": not a body frame of model \"" + model.name + "\"");
  }
  const auto& frame = model.frames[model.getFrameId(link_name, pinocchio::BODY)];
  const pinocchio::JointIndex joint = frame.parentJoint;
  const Vector10 nominal_lumped = model.inertias[joint].toDynamicParameters();
  // pseudo-inertia J = int [p;1][p;1]^T dm moves between frames by congruence with the homogeneous
  // transform, linearly, so it applies to a difference of parameters that need not be a body
  const Matrix4 delta_in_joint =
      inertia::pseudoInertiaFromPi(identified_lumped_pi - nominal_lumped);
  const Matrix4 link_from_joint = frame.placement.inverse().toHomogeneousMatrix();
  const Matrix4 delta_in_link = link_from_joint * delta_in_joint * link_from_joint.transpose();
  return nominal_link_pi + inertia::piFromPseudoInertia(delta_in_link);
}

}  // namespace heft::io
