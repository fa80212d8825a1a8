#include "eval/throughput.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "tova/eval/throughput.h"

namespace tova::eval {

bool larger_than_full(const ThroughputReport& r, const ThroughputResult& c) {
  if (c.budget < 0) return false;
  for (const ThroughputResult& f : r.results) {
    if (f.budget < 0 && f.ctx == c.ctx) return c.bytes_per_seq > f.bytes_per_seq;
  }
  // No full in the report: k + 1 slots or more hold more than the ctx a full cache would.
  return c.budget >= c.ctx;
}

nlohmann::ordered_json throughput_json(const ThroughputReport& r,
                                       const nlohmann::ordered_json& header) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ThroughputResult& c : r.results) {
    nlohmann::ordered_json j = header.is_object() ? header : nlohmann::ordered_json::object();
    j["policy"] = c.policy;
    j["budget"] = c.budget < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.budget);
    j["kv_type"] = c.kv_type;
    j["ctx"] = c.ctx;
    j["kv_memory"] = r.kv_memory;
    j["bytes_per_seq"] = c.bytes_per_seq;
    j["max_batch"] = c.max_batch;
    j["batch"] = c.batch;
    j["kv_bytes_total"] = c.kv_bytes_total;
    j["rss_copies_bytes"] = c.rss_copies_bytes;
    j["avg_ts"] = c.avg_ts;
    j["stddev_ts"] = c.stddev_ts;
    j["samples_ts"] = c.samples_ts;
    j["step_ms"] = c.step_ms;
    j["relative"] = c.relative;
    j["read_bytes_per_step"] = c.read_bytes_per_step;
    j["read_gbps"] = c.read_gbps;
    j["larger_than_full"] = larger_than_full(r, c);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tova::eval
