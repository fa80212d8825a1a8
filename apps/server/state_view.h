// What a conversation's multi-state holds, for people to look at (GET /v1/sessions/ID and the
// web page): per layer the states held and evicted, and per earlier token how many (layer, KV
// head) pairs still hold it. Read by the scheduler thread between two steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job.h"
#include "tova/session.h"

namespace tova::server {

struct StateView {
  std::string id;  // the request that last extended the state
  bool generating = false;
  KvReport kv;
  std::string positions;  // absolute | gap | rank
  std::string kv_type;    // KvFormat::label(): "f32", "q8_0", "k=q8_0,v=f16"
  int n_layer = 0;
  int n_head_kv = 0;
  std::vector<int32_t> tokens;  // the conversation, position order (position p = tokens[p])
  // Per position: how many of the n_layer x n_head_kv (layer, KV head) pairs hold it.
  std::vector<uint16_t> held_by;
};

// The view of `s` (the tokens its history has fed; `id`, `generating` and `kv` are the caller's).
StateView view_state(const Session& s);

}  // namespace tova::server
