#pragma once
/// \file The plane of a flat foot's contact points: their largest triangle.
#include <vector>

#include "heft/common/types.hpp"

namespace heft::model {

/// The largest triangle over every three of `points` (in index order; the first of equal areas).
struct LargestTriangle {
  double area = 0;                    ///< [m^2]; 0 with fewer than three points or on a line
  Vector3 normal = Vector3::UnitZ();  ///< unit, (p_b - p_a) x (p_c - p_a); +z when area is 0
};
LargestTriangle largestTriangle(const std::vector<Vector3>& points);

}  // namespace heft::model
