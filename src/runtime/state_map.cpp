#include "tova/state_map.h"

#include <algorithm>

#include "kv/positions.h"
#include "runtime/session_impl.h"

namespace tova {

StateMap map_state(const Session& s) {
  (void)runtime::settle(s);  // the fed tokens' state (a failure leaves drafts counted)
  const kv::MultiState& m = runtime::state_of(s);
  StateMap v;
  v.positions = std::string(kv::position_mode_name(m.positions()));
  v.kv_type = m.kv_type().label();
  v.n_layer = m.n_layer();
  v.n_head_kv = v.n_layer > 0 ? m.layer(0).n_head_kv() : 0;
  const int64_t n_fed = s.n_fed();
  v.tokens.assign(s.history().begin(), s.history().begin() + n_fed);
  v.held_by.assign(static_cast<size_t>(n_fed), 0);
  for (int il = 0; il < m.n_layer(); ++il) {
    const kv::LayerState& l = m.layer(il);
    // Free slots hold -1; slots at or past slot_end() hold nothing.
    for (int h = 0; h < l.n_head_kv(); ++h) {
      const int64_t* pos = l.pos() + static_cast<size_t>(h) * l.n_slot();
      for (int slot = 0; slot < std::min(l.slot_end(), l.n_slot()); ++slot) {
        if (pos[slot] >= 0 && pos[slot] < n_fed) ++v.held_by[static_cast<size_t>(pos[slot])];
      }
    }
  }
  return v;
}

}  // namespace tova
