#pragma once
/// \file Where a robot touches the world: named points fixed on a model frame. A log's contact
/// names are either frames of the model (a quadruped's foot frames: the point is the frame
/// origin) or points defined as a frame plus an offset, in the log (contacts/frames,
/// contacts/offsets) or in a job's config (`contact_points:`), e.g. the four corners of a sole.
///
/// Several points on one frame that span a plane make that frame a flat foot: while any of them
/// touches, the ground can push on the frame with a full wrench (force and moment), which is what
/// estimators that project contact forces out must remove (6 constraint rows, not 3 per point).
#include <string>
#include <vector>

#include <pinocchio/multibody/model.hpp>

#include "heft/common/types.hpp"

namespace heft::model {

/// A point fixed on the robot where a contact force acts.
struct ContactPoint {
  std::string name;                  ///< label, e.g. a contacts/names entry of the log
  std::string frame;                 ///< Pinocchio frame (link) the point is fixed to
  Vector3 offset = Vector3::Zero();  ///< the point in that frame [m]
};

/// The points named `names`: the one of `defined` with that name, else a frame of `model` of that
/// name (offset 0). `field` names the list in errors.
/// \throws InputError naming `field` and the name when neither exists, when a defined point's
///   frame is not in the model or its offset is not finite, or when a name repeats.
std::vector<ContactPoint> resolveContactPoints(const pinocchio::Model& model,
                                               const std::vector<std::string>& names,
                                               const std::vector<ContactPoint>& defined,
                                               const std::string& field);

/// The point definitions a job resolves a log's contact names through: every point of `config`
/// (a job's `contact_points:`), then those of `log` (its contacts/frames, contacts/offsets) whose
/// name the config does not define. The config wins, so a user can correct a log's definition.
std::vector<ContactPoint> configOverLogPoints(const std::vector<ContactPoint>& config,
                                              const std::vector<ContactPoint>& log);

/// A frame that touches the world through one or more of the contact points.
struct ContactFrame {
  std::string frame;
  std::vector<int> points;  ///< indices into the point list, in its order
  /// Flat foot: the points span a plane (at least three, not on one line), so the contact can
  /// transmit a full wrench; else a point contact at `offset`.
  bool flat = false;
  Vector3 offset = Vector3::Zero();  ///< the single point's offset (point contacts only)
};

/// Groups points by frame, in order of first appearance: one ContactFrame per frame, flat when
/// its points span a plane (at least three, not on one line, 1 mm tolerance), else a point contact
/// at the mean of its offsets.
std::vector<ContactFrame> groupContactFrames(const std::vector<ContactPoint>& points);

}  // namespace heft::model
