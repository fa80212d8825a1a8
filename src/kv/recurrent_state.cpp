#include "kv/recurrent_state.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace tova::kv {

RecurrentState::RecurrentState(const RecurrentShape& shape)
    : shape_(shape), conv_(shape.conv_floats(), 0.f), delta_(shape.delta_floats(), 0.f) {}

void RecurrentState::copy_from(const RecurrentState& other) {
  TOVA_CHECK(other.shape_ == shape_);
  std::copy(other.conv_.begin(), other.conv_.end(), conv_.begin());
  std::copy(other.delta_.begin(), other.delta_.end(), delta_.begin());
}

Status RecurrentState::restore(std::span<const float> conv, std::span<const float> delta) {
  if (static_cast<int64_t>(conv.size()) != shape_.conv_floats() ||
      static_cast<int64_t>(delta.size()) != shape_.delta_floats()) {
    return make_error("recurrent state of {} + {} floats, expected {} + {}", conv.size(),
                      delta.size(), shape_.conv_floats(), shape_.delta_floats());
  }
  auto finite = [](float x) { return std::isfinite(x); };
  if (!std::all_of(conv.begin(), conv.end(), finite) ||
      !std::all_of(delta.begin(), delta.end(), finite)) {
    return make_error("recurrent state holds a value that is not finite");
  }
  std::copy(conv.begin(), conv.end(), conv_.begin());
  std::copy(delta.begin(), delta.end(), delta_.begin());
  return ok_status();
}

}  // namespace tova::kv
