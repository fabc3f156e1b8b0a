#include "heft/excite/collision.hpp"

#include <pinocchio/algorithm/geometry.hpp>
#include <pinocchio/collision/collision.hpp>
#include <pinocchio/multibody/geometry.hpp>
#include <pinocchio/parsers/srdf.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include "heft/common/error.hpp"
#include "heft/common/format.hpp"

namespace heft::excite {

namespace {

// The URDF's collision geometry with every pair the SRDF does not disable.
pinocchio::GeometryModel collisionModel(const pinocchio::Model& model, const std::string& urdf,
                                        const std::string& srdf, const std::string& package_dir) {
  pinocchio::GeometryModel geometry;
  try {
    pinocchio::urdf::buildGeom(model, urdf, pinocchio::COLLISION, geometry,
                               std::vector<std::string>{package_dir});
    geometry.addAllCollisionPairs();
    if (!srdf.empty()) pinocchio::srdf::removeCollisionPairs(model, geometry, srdf);
  } catch (const std::exception& e) {
    throw InputError("collision geometry of " + urdf + ": " + e.what());
  }
  return geometry;
}

}  // namespace

SelfCollision selfCollision(const pinocchio::Model& model, const std::string& urdf,
                            const std::string& srdf, const std::string& package_dir,
                            const TrajectorySamples& samples) {
  pinocchio::GeometryModel geometry = collisionModel(model, urdf, srdf, package_dir);
  // pairs of geometries on the same joint are one rigid body
  for (std::size_t p = geometry.collisionPairs.size(); p-- > 0;) {
    const auto& pair = geometry.collisionPairs[p];
    if (geometry.geometryObjects[pair.first].parentJoint ==
        geometry.geometryObjects[pair.second].parentJoint)
      geometry.removeCollisionPair(pair);
  }
  pinocchio::Data data(model);
  pinocchio::GeometryData geometry_data(geometry);
  SelfCollision out;
  out.pairs = static_cast<int>(geometry.collisionPairs.size());
  out.samples = samples.size();
  for (int k = 0; k < samples.size(); ++k) {
    if (!pinocchio::computeCollisions(model, data, geometry, geometry_data, samples.q.col(k),
                                      false))
      continue;
    ++out.colliding;
    if (!out.first.empty()) continue;
    for (std::size_t p = 0; p < geometry.collisionPairs.size(); ++p) {
      if (!geometry_data.collisionResults[p].isCollision()) continue;
      const auto& pair = geometry.collisionPairs[p];
      out.first = geometry.geometryObjects[pair.first].name + " / " +
                  geometry.geometryObjects[pair.second].name +
                  " at t = " + formatNumber(samples.t[k], 6) + " s";
      break;
    }
  }
  return out;
}

}  // namespace heft::excite
