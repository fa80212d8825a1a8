#include "model/token_ids.h"

namespace tova::model {

Status check_token_ids(std::span<const int32_t> ids, int n_vocab, std::string_view what) {
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab) {
      return make_error("{}: {} is outside the vocabulary [0, {})", what, id, n_vocab);
    }
  }
  return ok_status();
}

}  // namespace tova::model
