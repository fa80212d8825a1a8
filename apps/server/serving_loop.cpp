#include "serving_loop.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/batch_scheduler.h"
#include "runtime/cache_options.h"
#include "tokenizer/tokenizer.h"
#include "runtime/utf8_stream.h"

namespace tova::server {

struct ServingLoop::Active {
  std::shared_ptr<Job> job;
  std::unique_ptr<Session> session;
  uint64_t reserved = 0;
  int64_t reused = 0;
  int64_t n_prompt = 0;
  int n_generated = 0;
  int32_t prev = -1;
  runtime::Utf8Stream utf8;
  std::string text;  // generated text, whole UTF-8
  size_t sent = 0;   // bytes of text streamed
  bool first = true;
  bool finished = false;
  double ttft = -1;
  std::chrono::steady_clock::time_point last_token;
};

namespace {

// Bytes at the end of `text` that could be the start of a stop string (held back while
// streaming, so a stop string is never half sent).
size_t stop_overlap(const std::string& text, const std::vector<std::string>& stops) {
  size_t keep = 0;
  for (const auto& s : stops) {
    for (size_t n = std::min(s.size() - 1, text.size()); n > keep; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}

KvReport report(const Session& s, int64_t reused) {
  const SessionStats k = s.stats();
  KvReport r{.policy = k.policy,
             .budget = k.budget,
             .prefill = s.cache().prefill.label(),
             .kv_bytes = k.kv_capacity,
             .tokens_seen = k.n_seen,
             .reused_prompt_tokens = reused};
  for (const auto& l : k.layers) {
    r.states_held.push_back(l.n_held);
    r.tokens_evicted.push_back(l.n_evicted);
  }
  return r;
}

}  // namespace

ServingLoop::ServingLoop(const Engine& engine, const LoopOptions& o, Metrics& metrics)
    : engine_(engine), o_(o), metrics_(metrics) {
  thread_ = std::thread([this] { run(); });
}

ServingLoop::~ServingLoop() { stop(); }

std::optional<ApiError> ServingLoop::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (draining_ || stop_) {
      return ApiError{.status = 503,
                      .message = "the server is shutting down",
                      .type = "server_error",
                      .code = "shutting_down"};
    }
    // Requests that free slots take at the next step are not waiting: only those beyond
    // --parallel count against --queue.
    if (static_cast<int64_t>(waiting_.size()) + n_active_ >=
        static_cast<int64_t>(o_.parallel) + o_.queue) {
      return ApiError{.status = 503,
                      .message = "the server is overloaded: the wait queue is full; retry later",
                      .type = "server_error",
                      .code = "overloaded"};
    }
    waiting_.push_back(job);
  }
  cv_.notify_all();
  return std::nullopt;
}

void ServingLoop::drain() {
  std::lock_guard<std::mutex> l(mu_);
  draining_ = true;
}

bool ServingLoop::draining() const {
  std::lock_guard<std::mutex> l(mu_);
  return draining_;
}

int64_t ServingLoop::in_flight() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int64_t>(waiting_.size()) + n_active_;
}

bool ServingLoop::idle() const {
  std::lock_guard<std::mutex> l(mu_);
  return waiting_.empty() && n_active_ == 0;
}

void ServingLoop::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> l(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void ServingLoop::spill(Held& h, bool sync) {
  if (!o_.store || !h.session) return;
  // A state that cannot be written is dropped, as it would be without a store.
  if (o_.store->put(h.tokens, *h.session, sync).ok()) metrics_.stored(1);
}

void ServingLoop::hold(std::unique_ptr<Session> s, const std::string& id) {
  if (!o_.prefix_reuse || !runtime::continues_exactly(s->cache())) return;
  Held h{.id = id, .tokens = s->history(), .session = std::move(s)};
  h.bytes = h.session->stats().kv_capacity;
  if (h.bytes > o_.kv_memory || o_.max_cached_states <= 0) {
    spill(h, false);
    return;
  }
  // One state per token sequence: a newer identical one replaces the old.
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->tokens == h.tokens && it->session->cache().label() == h.session->cache().label()) {
      reserved_ -= it->bytes;
      held_.erase(it);
      break;
    }
  }
  // Room: drop least recently used states beyond the count or the memory.
  while (!held_.empty() && (static_cast<int>(held_.size()) >= o_.max_cached_states ||
                            reserved_ + h.bytes > o_.kv_memory)) {
    reserved_ -= held_.back().bytes;
    spill(held_.back(), false);
    held_.pop_back();
  }
  if (reserved_ + h.bytes > o_.kv_memory) {
    spill(h, false);
    return;
  }
  reserved_ += h.bytes;
  held_.push_front(std::move(h));
}

bool ServingLoop::try_admit(const std::shared_ptr<Job>& job) {
  const GenerationRequest& r = job->request;
  // The longest held state of the same configuration whose tokens the prompt extends, unless
  // the store (on disk) has a longer one.
  const std::string label = r.cache.label();
  const bool can_reuse = o_.prefix_reuse && r.allow_reuse && runtime::continues_exactly(r.cache);
  auto best = held_.end();
  if (can_reuse) {
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it->tokens.size() < r.prompt.size() &&
          (best == held_.end() || it->tokens.size() > best->tokens.size()) &&
          std::equal(it->tokens.begin(), it->tokens.end(), r.prompt.begin()) &&
          it->session->cache().label() == label) {
        best = it;
      }
    }
  }
  size_t stored = can_reuse && o_.store ? o_.store->longest_prefix(r.prompt, label) : 0;
  if (best != held_.end() && stored <= best->tokens.size()) stored = 0;
  if (stored > 0) best = held_.end();
  // Memory: a taken held state gives its bytes to the request; least recently used states
  // make room; what still does not fit waits.
  uint64_t freed = best != held_.end() ? best->bytes : 0;
  while (reserved_ - freed + r.reserve_bytes > o_.kv_memory) {
    auto victim = held_.end();
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it != best) victim = it;  // the last one that is not `best`: least recently used
    }
    if (victim == held_.end()) return false;
    reserved_ -= victim->bytes;
    spill(*victim, false);
    held_.erase(victim);
  }
  auto a = std::make_unique<Active>();
  a->job = job;
  a->n_prompt = static_cast<int64_t>(r.prompt.size());
  if (best != held_.end()) {
    a->session = std::move(best->session);
    a->reused = static_cast<int64_t>(best->tokens.size());
    reserved_ -= best->bytes;
    held_.erase(best);
    if (auto st = a->session->set_sampling(r.sampling); !st.ok()) {
      job->push({.final = true, .error = ApiError{.message = st.message()}});
      return true;
    }
  } else if (stored > 0) {
    auto s = o_.store->take(r.prompt, label, {.cache = r.cache, .sampling = r.sampling});
    if (s.ok()) {
      a->session = std::move(*s);
      a->reused = static_cast<int64_t>(stored);
      metrics_.restored(1);
    }
  }
  if (!a->session) {
    auto s = engine_.new_session(
        {.cache = r.cache, .sampling = r.sampling, .n_prompt_hint = a->n_prompt});
    if (!s.ok()) {
      job->push({.final = true, .error = ApiError{.message = s.message()}});
      return true;
    }
    a->session = std::move(*s);
  }
  a->session->queue(std::span<const int32_t>(r.prompt).subspan(a->reused));
  // A `full` cache allocates now what this request may hold (prompt + max_tokens, within --ctx
  // as the API checked, and never past --ctx: what admission counted): a new one once, a
  // reused one copied once here, never a doubling copy inside a decode step. Bounded caches
  // never grow (no-op).
  if (auto st = a->session->reserve(a->n_prompt + r.max_tokens, o_.ctx); !st.ok()) {
    job->push({.final = true, .error = ApiError{.message = st.message()}});
    return true;
  }
  a->prev = r.prompt.back();  // the first piece renders after the prompt
  // What the pool holds now counts if a reused state's growth (doubling) went past the estimate.
  a->reserved = std::max<uint64_t>(r.reserve_bytes, a->session->stats().kv_capacity);
  reserved_ += a->reserved;
  metrics_.tokens(a->n_prompt, 0, a->reused);
  active_.push_back(std::move(a));
  return true;
}

void ServingLoop::admit() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::lock_guard<std::mutex> l(mu_);
      // Requests whose clients left while waiting never start.
      while (!waiting_.empty() && waiting_.front()->cancelled()) waiting_.pop_front();
      if (waiting_.empty() || static_cast<int>(active_.size()) >= o_.parallel) return;
      job = waiting_.front();
    }
    bool admitted = false;
    try {
      admitted = try_admit(job);
    } catch (const std::exception& e) {
      // (std::bad_alloc of a state the machine cannot hold, ...): this request fails, the
      // server goes on.
      job->push({.final = true,
                 .error = ApiError{.status = 500,
                                   .message = fmt::format("cannot start this request: {}", e.what()),
                                   .type = "server_error"}});
      admitted = true;
    }
    if (!admitted) return;  // first in, first out: the head waits for memory
    std::lock_guard<std::mutex> l(mu_);
    waiting_.pop_front();
    n_active_ = static_cast<int64_t>(active_.size());
  }
}

void ServingLoop::finish(Active& a, const std::string& reason) {
  a.finished = true;
  std::string rest = a.utf8.flush();
  a.text += rest;
  if (a.text.size() > a.sent) {
    a.job->push({.text = a.text.substr(a.sent)});
    a.sent = a.text.size();
  }
  Event e{.final = true,
          .finish_reason = reason,
          .prompt_tokens = a.n_prompt,
          .completion_tokens = a.n_generated,
          .kv = report(*a.session, a.reused),
          .ttft_seconds = a.ttft};
  int64_t evicted = 0;
  for (int64_t n : e.kv.tokens_evicted) evicted += n;
  metrics_.evictions(e.kv.policy, evicted);
  a.job->push(std::move(e));
}

std::optional<StateView> ServingLoop::inspect(const std::string& id) {
  auto q = std::make_shared<Inspection>();
  q->id = id;
  auto result = q->result.get_future();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return std::nullopt;
    inspections_.push_back(q);
  }
  cv_.notify_all();
  return result.get();
}

void ServingLoop::answer_inspections() {
  std::deque<std::shared_ptr<Inspection>> todo;
  {
    std::lock_guard<std::mutex> l(mu_);
    todo.swap(inspections_);
  }
  for (auto& q : todo) {
    std::optional<StateView> v;
    for (const auto& a : active_) {
      if (a->job->request.id == q->id && a->session) {
        v = view_state(*a->session);
        v->generating = true;
        v->kv = report(*a->session, a->reused);
      }
    }
    for (const Held& h : held_) {
      if (!v && h.id == q->id) {
        v = view_state(*h.session);
        v->kv = report(*h.session, 0);
      }
    }
    if (v) v->id = q->id;
    q->result.set_value(std::move(v));
  }
}

void ServingLoop::publish_metrics() {
  MetricsSnapshot s;
  s.active = static_cast<int64_t>(active_.size());
  {
    std::lock_guard<std::mutex> l(mu_);
    s.queued = static_cast<int64_t>(waiting_.size());
  }
  for (const auto& a : active_) s.kv_bytes_held += a->session->stats().kv_capacity;
  for (const auto& h : held_) s.kv_bytes_held += h.bytes;
  s.kv_bytes_reserved = reserved_;
  s.cached_states = static_cast<int64_t>(held_.size());
  if (o_.store) {
    s.stored_states = static_cast<int64_t>(o_.store->count());
    s.stored_bytes = o_.store->bytes();
  }
  metrics_.set_snapshot(s);
}

void ServingLoop::run() {
  runtime::BatchScheduler sched(engine_, {.step_tokens = o_.step_tokens});
  const tok::Tokenizer& tk = engine_.tokenizer();
  std::vector<Session*> sessions;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] {
        return stop_ || !waiting_.empty() || !active_.empty() || !inspections_.empty();
      });
      if (stop_) break;
    }
    answer_inspections();
    admit();
    sessions.clear();
    for (const auto& a : active_) sessions.push_back(a->session.get());
    if (!sessions.empty()) {
      // A step that fails (an error, or an exception such as std::bad_alloc) fails the
      // sequences in it with an error object; the server goes on.
      std::string failure;
      try {
        auto st = sched.step(sessions);
        if (!st.ok()) {
          failure = st.message();
        } else if (st->n_tokens > 0) {
          metrics_.step(st->seconds, st->n_tokens);
        }
      } catch (const std::exception& e) {
        failure = fmt::format("the forward pass failed: {}", e.what());
      }
      if (!failure.empty()) {
        for (auto& a : active_) {
          a->finished = true;
          a->job->push(
              {.final = true,
               .error = ApiError{.status = 500, .message = failure, .type = "server_error"}});
        }
      }
    }
    for (auto& ap : active_) {
      Active& a = *ap;
      if (a.finished || a.job->cancelled() || !a.session->has_logits()) continue;
      const auto& r = a.job->request;
      const int32_t id = a.session->sample();
      const auto now = std::chrono::steady_clock::now();
      if (a.first) {
        a.first = false;
        a.ttft = std::chrono::duration<double>(now - a.job->created).count();
        metrics_.first_token(a.ttft);
      } else {
        metrics_.token_gap(std::chrono::duration<double>(now - a.last_token).count());
      }
      a.last_token = now;
      if (tk.is_eog(id) && !r.ignore_eos) {
        finish(a, "stop");
        continue;
      }
      ++a.n_generated;
      metrics_.tokens(0, 1, 0);
      a.text += a.utf8.push(tk.token_to_piece(id, a.prev));
      a.prev = id;
      // A stop string ends the text where it begins (and is not sent).
      size_t cut = std::string::npos;
      for (const auto& s : r.stop) {
        const size_t from = a.sent > s.size() ? a.sent - s.size() : 0;
        const size_t at = a.text.find(s, from);
        if (at != std::string::npos) cut = std::min(cut, at);
      }
      if (cut != std::string::npos) {
        a.text.resize(cut);
        a.utf8.flush();
        finish(a, "stop");
        continue;
      }
      const size_t ready = a.text.size() - stop_overlap(a.text, r.stop);
      if (ready > a.sent) {
        a.job->push({.text = a.text.substr(a.sent, ready - a.sent)});
        a.sent = ready;
      }
      const bool ctx_full =
          !a.session->cache().policy.bounded() && a.session->n_seen() + 1 >= o_.ctx;
      if (a.n_generated >= r.max_tokens || ctx_full) {
        finish(a, "length");
        continue;
      }
      a.session->queue(id);
    }
    // Finished sequences keep their state for prefix reuse; cancelled ones are dropped.
    size_t w = 0;
    for (size_t i = 0; i < active_.size(); ++i) {
      Active& a = *active_[i];
      if (a.finished || a.job->cancelled()) {
        reserved_ -= a.reserved;
        if (a.finished && !a.job->cancelled() && a.session->n_pending() == 0) {
          hold(std::move(a.session), a.job->request.id);
        }
        continue;
      }
      active_[w++] = std::move(active_[i]);
    }
    active_.resize(w);
    {
      std::lock_guard<std::mutex> l(mu_);
      n_active_ = static_cast<int64_t>(active_.size());
    }
    publish_metrics();
  }
  // Stopping: held states go to the store (synced), so conversations survive a restart.
  for (Held& h : held_) spill(h, true);
  held_.clear();
  // Whoever still waits gets an error rather than silence.
  for (auto& a : active_) {
    if (!a->finished) {
      a->job->push({.final = true,
                    .error = ApiError{
                        .status = 503, .message = "the server stopped", .type = "server_error"}});
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  for (auto& i : inspections_) i->result.set_value(std::nullopt);
  inspections_.clear();
  for (auto& j : waiting_) {
    j->push({.final = true,
             .error =
                 ApiError{.status = 503, .message = "the server stopped", .type = "server_error"}});
  }
}

}  // namespace tova::server
