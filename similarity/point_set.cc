#include "similarity/point_set.h"

#include <cmath>
#include <string>

namespace meshlearn::similarity {

Status CheckPointSet(const PointSet& set, std::string_view context) {
  const std::string name(context);
  if (set.rows == 0 || set.cols == 0) {
    return Status::InvalidArgument(name + " is empty (" + std::to_string(set.rows) + " x " +
                                   std::to_string(set.cols) + ")");
  }
  if (set.values.size() % set.cols != 0 || set.values.size() / set.cols != set.rows) {
    return Status::InvalidArgument(name + " has " + std::to_string(set.values.size()) +
                                   " values, expected " + std::to_string(set.rows) + " x " +
                                   std::to_string(set.cols));
  }
  for (size_t k = 0; k < set.values.size(); ++k) {
    if (!std::isfinite(set.values[k])) {
      return Status::NonFinite(name + ": NaN or Inf in row " + std::to_string(k / set.cols));
    }
  }
  return Status::Ok();
}

}  // namespace meshlearn::similarity
