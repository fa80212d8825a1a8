#include "state_view.h"

#include "tova/state_map.h"

namespace tova::server {

StateView view_state(const Session& s) {
  StateMap m = map_state(s);
  StateView v;
  v.positions = std::move(m.positions);
  v.kv_type = std::move(m.kv_type);
  v.n_layer = m.n_layer;
  v.n_head_kv = m.n_head_kv;
  v.tokens = std::move(m.tokens);
  v.held_by = std::move(m.held_by);
  return v;
}

}  // namespace tova::server
