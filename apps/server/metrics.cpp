#include "metrics.h"

#include <fmt/format.h>

namespace tova::server {

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (v <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  }
  ++count_;
  sum_ += v;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name,
                     sum_, name, count_);
}

void Metrics::request_done(int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[status];
}

void Metrics::tokens(int64_t prompt, int64_t generated, int64_t reused) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += prompt;
  generated_tokens_ += generated;
  reused_tokens_ += reused;
}

void Metrics::evictions(const std::string& policy, int64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  evictions_[policy] += n;
}

void Metrics::drafts(int64_t drafted, int64_t accepted) {
  std::lock_guard<std::mutex> l(mu_);
  drafted_ += drafted;
  accepted_ += accepted;
}

void Metrics::stored(int64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  stored_ += n;
}

void Metrics::restored(int64_t n) {
  std::lock_guard<std::mutex> l(mu_);
  restored_ += n;
}

void Metrics::first_token(double seconds) {
  std::lock_guard<std::mutex> l(mu_);
  ttft_.observe(seconds);
}

void Metrics::token_gap(double seconds) {
  std::lock_guard<std::mutex> l(mu_);
  token_gap_.observe(seconds);
}

void Metrics::step(double seconds, int n_tokens) {
  std::lock_guard<std::mutex> l(mu_);
  step_.observe(seconds);
  step_seconds_ += seconds;
  step_tokens_ += n_tokens;
  if (seconds > 0) last_rate_ = n_tokens / seconds;
}

void Metrics::set_snapshot(const MetricsSnapshot& s) {
  std::lock_guard<std::mutex> l(mu_);
  snap_ = s;
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string o;
  o += "# HELP tova_requests_total HTTP requests answered, by status\n";
  o += "# TYPE tova_requests_total counter\n";
  for (const auto& [status, n] : requests_) {
    o += fmt::format("tova_requests_total{{status=\"{}\"}} {}\n", status, n);
  }
  auto counter = [&](const char* name, const char* help, double v) {
    o += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    o += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
  };
  counter("tova_prompt_tokens_total", "prompt tokens of admitted requests", prompt_tokens_);
  counter("tova_generated_tokens_total", "tokens generated", generated_tokens_);
  counter("tova_reused_prompt_tokens_total", "prompt tokens continued from a held state",
          reused_tokens_);
  counter("tova_draft_tokens_total",
          "tokens speculative decoding drafted (llama-server's n_draft_tokens)", drafted_);
  counter("tova_draft_tokens_accepted_total", "drafted tokens the sampler accepted", accepted_);
  counter("tova_forward_tokens_total", "tokens through the model (prompt and decode)",
          step_tokens_);
  counter("tova_forward_seconds_total", "time in batched forward passes", step_seconds_);
  gauge("tova_tokens_per_second", "tokens per second of the last forward pass", last_rate_);
  gauge("tova_active_sequences", "sequences being processed", snap_.active);
  gauge("tova_queued_requests", "requests waiting for K/V memory or a slot", snap_.queued);
  gauge("tova_kv_bytes_held", "K/V bytes allocated by active and cached states",
        snap_.kv_bytes_held);
  // By kind of layer state (SessionStats::kinds): bounded K/V, window K/V.
  auto by_kind = [&](const char* name, const char* help, auto field) {
    o += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& [kind, m] : snap_.kinds) {
      o += fmt::format("{}{{kind=\"{}\"}} {}\n", name, kind, field(m));
    }
  };
  by_kind("tova_state_bytes", "state bytes allocated by active and cached states, by layer kind",
          [](const KindMemory& m) { return m.bytes; });
  by_kind("tova_state_held_bytes", "of those, the bytes of the states held, by layer kind",
          [](const KindMemory& m) { return m.held_bytes; });
  by_kind("tova_state_rows", "K/V rows held (states x KV heads), by layer kind",
          [](const KindMemory& m) { return m.rows; });
  by_kind("tova_state_image_rows",
          "of those, the rows of image states (kept ones under --kv-keep-images), by layer kind",
          [](const KindMemory& m) { return m.image_rows; });
  gauge("tova_kv_bytes_reserved", "K/V bytes reserved by admission (active + cached)",
        snap_.kv_bytes_reserved);
  gauge("tova_cached_states", "conversation states held for prefix reuse", snap_.cached_states);
  gauge("tova_stored_states", "conversation states in --session-dir", snap_.stored_states);
  gauge("tova_stored_bytes", "bytes of conversation states in --session-dir", snap_.stored_bytes);
  counter("tova_stored_total", "held states written to --session-dir", stored_);
  counter("tova_restored_total", "requests continued from a state in --session-dir", restored_);
  o += "# HELP tova_evictions_total states evicted, by policy (summed over layers)\n";
  o += "# TYPE tova_evictions_total counter\n";
  for (const auto& [p, n] : evictions_) {
    o += fmt::format("tova_evictions_total{{policy=\"{}\"}} {}\n", p, n);
  }
  ttft_.render(o, "tova_time_to_first_token_seconds", "time from arrival to first token");
  token_gap_.render(o, "tova_time_per_output_token_seconds",
                    "time between two generated tokens of one sequence");
  step_.render(o, "tova_step_seconds", "time of one batched forward pass");
  return o;
}

}  // namespace tova::server
