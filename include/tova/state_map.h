// What a session's multi-state holds, for people to look at (tova serve's GET /v1/sessions/ID
// and its web page): per earlier token, how many (layer, KV head) pairs still hold it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tova {

class Session;

struct StateMap {
  std::string positions;  // absolute | gap | rank
  std::string kv_type;    // KvFormat::label(): "f32", "q8_0", "k=q8_0,v=f16"
  int n_layer = 0;
  int n_head_kv = 0;
  std::vector<int32_t> tokens;  // the fed conversation, position order (position p = tokens[p])
  // Per position: how many of the n_layer x n_head_kv (layer, KV head) pairs hold it.
  std::vector<uint16_t> held_by;
};

StateMap map_state(const Session& s);

}  // namespace tova
