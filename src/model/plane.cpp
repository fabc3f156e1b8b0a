#include "heft/model/plane.hpp"

namespace heft::model {

LargestTriangle largestTriangle(const std::vector<Vector3>& points) {
  LargestTriangle best;
  double doubled = 0;  // twice the area: |cross|
  const std::size_t n = points.size();
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      for (std::size_t c = b + 1; c < n; ++c) {
        const Vector3 cross = (points[b] - points[a]).cross(points[c] - points[a]);
        if (cross.norm() > doubled) {
          doubled = cross.norm();
          best.normal = cross / doubled;
        }
      }
  best.area = 0.5 * doubled;
  return best;
}

}  // namespace heft::model
