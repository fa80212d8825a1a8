// Throughput reports written by hand, shared by the JSON tests (tests/eval) and the plot tests
// (tests/plot).
#pragma once

#include "eval/throughput.h"

namespace tova::testing {

// full, tova k=8 and tova k=128 at ctx 64 in a budget of 1,000 bytes: the last holds more bytes
// per sequence than full (800 against 400), so it saves nothing.
inline eval::ThroughputReport report_with_a_state_larger_than_full() {
  eval::ThroughputReport rep;
  rep.kv_memory = 1000;
  rep.ctx = 64;
  rep.results.push_back({.policy = "full", .budget = -1, .ctx = 64, .bytes_per_seq = 400,
                         .max_batch = 2, .relative = 1});
  rep.results.push_back({.policy = "tova", .budget = 8, .ctx = 64, .bytes_per_seq = 60,
                         .max_batch = 16, .relative = 5});
  rep.results.push_back({.policy = "tova", .budget = 128, .ctx = 64, .bytes_per_seq = 800,
                         .max_batch = 1, .relative = 0.5});
  return rep;
}

}  // namespace tova::testing
