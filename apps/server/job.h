// One request's journey between an HTTP handler and the scheduler thread: what to generate, and
// the events the scheduler sends back for each of its n choices (text pieces, then one final
// event per choice; an error ends the whole request).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tova/options.h"
#include "tova/reasoning.h"
#include "tova/session.h"
#include "tova/vision.h"

namespace tova::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
};

struct GenerationRequest {
  std::string id;  // the request id (X-Request-Id): names the state it leaves (state_view.h)
  std::vector<int32_t> prompt;  // an image's tokens as image_token_id()s (Engine::tokens_with_images)
  std::vector<Image> images;    // the prompt's images, in order
  int max_tokens = 16;
  SamplerParams sampling;
  std::vector<std::string> stop;
  CacheOptions cache;
  SpeculativeOptions speculative;  // off unless the server's flags or the request turn it on
  int n = 1;            // choices, sharing the prompt's state (cloned once it is fed)
  int logprobs = -1;    // -1: none; else the alternatives reported per token
  // K/V memory admission sets aside for each choice: what its state can reach.
  uint64_t reserve_bytes = 0;
  bool allow_reuse = true;
  bool ignore_eos = false;  // keep generating past end-of-generation tokens (benchmarks)
  // Chat: how the answer carries reasoning, the rendered prompt it follows (where the answer
  // starts: inside a think block the template opened, ...), and the control tokens whose text
  // the parser reads (GenerateOptions::render_special).
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  std::string prompt_text;
  std::vector<std::string> render_special;
  // Also hold a copy of the state at the end of the prompt: the next turn of an agent loop
  // re-renders this turn's answer (a tool call) from its parsed form, which seldom tokenizes as
  // it was sampled, so it continues from the prompt instead of from the answer's end.
  bool hold_prompt = false;
  // Chat: where the next turn's prompt parts from this one (tova/turn_checkpoint.h); a copy
  // of the state there is held when it lies inside the prompt, for the next turn to continue.
  int64_t checkpoint = 0;
};

// The multi-state a request used, reported with every response.
struct KvReport {
  std::string policy;
  int budget = -1;
  std::string prefill;
  std::string kv_type;  // storage format label ("q8_0")
  uint64_t kv_bytes = 0;
  int64_t tokens_seen = 0;
  std::vector<int> states_held;         // per layer
  std::vector<int64_t> tokens_evicted;  // per layer
  std::vector<std::string> layer_kinds;  // per layer: "bounded" | "window" (SessionStats)
  std::vector<StateKindStats> kinds;     // memory by kind of layer state
  int64_t reused_prompt_tokens = 0;
};

// A generated token's log-probability under the model (before temperature and the sampler's
// filters), and the most likely tokens at that step.
struct TokenLogprob {
  std::string token;  // its text (bytes as they are: a piece of a UTF-8 character stays one)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};

struct Event {
  int index = 0;     // the choice
  std::string text;  // a piece of whole UTF-8
  std::vector<TokenLogprob> logprobs;  // of the tokens generated since the last event
  bool final = false;                  // the choice's last event
  std::string finish_reason;           // final: stop | length
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // final: this choice's
  KvReport kv;
  double ttft_seconds = -1;       // final: arrival to the first generated token (-1: none)
  // final: speculative decoding's drafted and accepted tokens (llama-server's timings.draft_n,
  // draft_n_accepted)
  int64_t draft_n = 0;
  int64_t draft_n_accepted = 0;
  std::optional<ApiError> error;  // ends the request
};

class Job {
 public:
  explicit Job(GenerationRequest r) : request(std::move(r)) {}
  const GenerationRequest request;
  const std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();

  void push(Event e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (e.error) {
        done_ = true;
      } else if (e.final && ++n_final_ >= request.n) {
        done_ = true;
      }
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for events; returns those there are (possibly none).
  std::vector<Event> take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, timeout, [&] { return !events_.empty(); });
    std::vector<Event> out(std::make_move_iterator(events_.begin()),
                           std::make_move_iterator(events_.end()));
    events_.clear();
    return out;
  }
  // Every choice has ended, or the request failed.
  bool done() const {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  // The client went away: the scheduler drops the request's sequences at its next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  int n_final_ = 0;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace tova::server
