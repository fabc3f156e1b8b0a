#include "heft/model/contact_points.hpp"

#include <algorithm>
#include <cmath>

#include "heft/common/error.hpp"
#include "heft/model/plane.hpp"

namespace heft::model {

std::vector<ContactPoint> resolveContactPoints(const pinocchio::Model& model,
                                               const std::vector<std::string>& names,
                                               const std::vector<ContactPoint>& defined,
                                               const std::string& field) {
  std::vector<ContactPoint> out;
  out.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    for (std::size_t j = 0; j < i; ++j) {
      if (names[j] == name) {
        throw InputError(where + ": expected unique contact names, got \"" + name + "\" twice");
      }
    }
    const auto it = std::find_if(defined.begin(), defined.end(),
                                 [&](const ContactPoint& p) { return p.name == name; });
    if (it != defined.end()) {
      if (!model.existFrame(it->frame)) {
        throw InputError(where + ": contact point \"" + name +
                         "\": expected a frame of the robot model, got \"" + it->frame + "\"");
      }
      if (!it->offset.allFinite()) {
        throw InputError(where + ": contact point \"" + name + "\": expected a finite offset");
      }
      out.push_back(*it);
      continue;
    }
    if (!model.existFrame(name)) {
      throw InputError(where +
                       ": expected a frame of the robot model or a contact point defined "
                       "as a frame plus an offset (contact_points, or the log's contacts/frames), "
                       "got \"" +
                       name + "\"");
    }
    out.push_back(ContactPoint{name, name, Vector3::Zero()});
  }
  return out;
}

std::vector<ContactPoint> configOverLogPoints(const std::vector<ContactPoint>& config,
                                              const std::vector<ContactPoint>& log) {
  std::vector<ContactPoint> out = config;
  for (const ContactPoint& p : log) {
    if (std::none_of(config.begin(), config.end(),
                     [&](const ContactPoint& c) { return c.name == p.name; }))
      out.push_back(p);
  }
  return out;
}

namespace {

// True when the offsets span a plane: some three of them form a triangle with area above a
// 1 mm x 1 mm scale (sole corners are ~0.1 m apart; a repeated or collinear point is not a sole).
bool spansPlane(const std::vector<Vector3>& offsets) {
  constexpr double kArea = 1e-6;  // [m^2]
  return largestTriangle(offsets).area > kArea;
}

}  // namespace

std::vector<ContactFrame> groupContactFrames(const std::vector<ContactPoint>& points) {
  std::vector<ContactFrame> frames;
  for (int i = 0; i < static_cast<int>(points.size()); ++i) {
    auto it = std::find_if(frames.begin(), frames.end(),
                           [&](const ContactFrame& f) { return f.frame == points[i].frame; });
    if (it == frames.end()) {
      frames.push_back(ContactFrame{points[i].frame, {}, false, Vector3::Zero()});
      it = frames.end() - 1;
    }
    it->points.push_back(i);
  }
  for (ContactFrame& f : frames) {
    std::vector<Vector3> offsets;
    for (const int i : f.points) offsets.push_back(points[i].offset);
    f.flat = spansPlane(offsets);
    f.offset.setZero();
    if (!f.flat) {
      for (const Vector3& o : offsets) f.offset += o;
      f.offset /= static_cast<double>(offsets.size());
    }
  }
  return frames;
}

}  // namespace heft::model
