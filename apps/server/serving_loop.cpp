#include "serving_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hostile_output.h"
#include "tova/text_stream.h"

namespace tova::server {

// One sequence being generated: choice `index` of a request, its session and the library's
// generation loop over it (sampling, end of generation, UTF-8 and stop-string hold-back, limits).
struct ServingLoop::Active {
  std::shared_ptr<Job> job;
  int index = 0;
  std::unique_ptr<Session> session;
  std::unique_ptr<TextStream> stream;
  uint64_t reserved = 0;  // choice 0 holds the reservation of every choice until they split
  int64_t reused = 0;
  int64_t n_prompt = 0;
  SpeculationStats spec_before;  // a held state's counts from earlier requests
  // The prompt beyond the turn boundary (GenerationRequest::checkpoint): queued once the state
  // there is held; the stream starts after it.
  std::vector<int32_t> after_checkpoint;
  bool split = false;  // choice 0 of n > 1: the other choices were cloned from its state
  bool finished = false;
  double ttft = -1;
  std::chrono::steady_clock::time_point last_token;
  std::vector<TokenLogprob> logprobs;  // generated since the last event
  int64_t pieces = 0;                  // pieces of text generated (--debug-hostile-output's step)
};

namespace {

KvReport report(const Session& s, int64_t reused) {
  const SessionStats k = s.stats();
  KvReport r{.policy = k.policy,
             .budget = k.budget,
             .prefill = s.cache().prefill.label(),
             .kv_type = k.kv_type,
             .kv_bytes = k.kv_capacity,
             .tokens_seen = k.n_seen,
             .reused_prompt_tokens = reused};
  for (const auto& l : k.layers) {
    r.states_held.push_back(l.n_held);
    r.tokens_evicted.push_back(l.n_evicted);
    r.layer_kinds.push_back(l.kind);
  }
  r.kinds = k.kinds;
  return r;
}

uint64_t state_bytes(const Session& s) { return s.stats().kv_capacity; }

// The log-probability of `id` under `logits` and the `top` most likely tokens (log-softmax of
// the model's scores: before temperature and the sampler's filters).
TokenLogprob logprob_of(std::span<const float> logits, int32_t id, int top, const Engine& e,
                        int32_t prev) {
  float max = -INFINITY;
  for (float x : logits) max = std::max(max, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  const float lse = max + static_cast<float>(std::log(sum));
  TokenLogprob t{.token = e.token_piece(id, prev), .logprob = logits[id] - lse};
  if (top > 0) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    const size_t k = std::min(ids.size(), static_cast<size_t>(top));
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) {
      t.top.emplace_back(e.token_piece(ids[i], prev), logits[ids[i]] - lse);
    }
  }
  return t;
}

ApiError server_error(std::string message) {
  return ApiError{.status = 500, .message = std::move(message), .type = "server_error"};
}

// The request ends with `e`; its other choices stop at the next step.
void fail(Job& job, ApiError e) {
  job.push({.error = std::move(e)});
  job.cancel();
}

}  // namespace

ServingLoop::ServingLoop(const Engine& engine, const LoopOptions& o, Metrics& metrics)
    : engine_(engine), o_(o), metrics_(metrics) {
  if (!o_.states) {
    // Without a spill directory opening cannot fail.
    auto states = StateCache::open(engine, {.max_bytes = o_.kv_memory,
                                            .max_states = o_.max_cached_states});
    if (states.ok()) o_.states = std::move(*states);
  }
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

void ServingLoop::hold(std::unique_ptr<Session> s, const std::string& id) {
  if (!o_.prefix_reuse || !o_.states) return;
  o_.states->put(std::move(s), id, reserved_);
}

GenerateOptions ServingLoop::generate_options(const GenerationRequest& r) const {
  return {.max_tokens = r.max_tokens,
          .stop = r.stop,
          .ignore_eos = r.ignore_eos,
          .max_context = o_.ctx,
          .render_special = r.render_special};
}

bool ServingLoop::try_admit(const std::shared_ptr<Job>& job) {
  const GenerationRequest& r = job->request;
  // The longest held state of the same configuration whose tokens the prompt extends, in
  // memory or (if longer) in the spill directory.
  StateMatch match;
  if (o_.prefix_reuse && r.allow_reuse && o_.states) match = o_.states->find(r.prompt, r.cache);
  // Memory: every choice's reservation; a taken held state gives its bytes to the request;
  // least recently used states make room; what still does not fit waits.
  const uint64_t need = r.reserve_bytes * static_cast<uint64_t>(r.n);
  if (o_.states ? !o_.states->make_room(need, reserved_, match) : reserved_ + need > o_.kv_memory) {
    return false;
  }
  auto a = std::make_unique<Active>();
  a->job = job;
  a->n_prompt = static_cast<int64_t>(r.prompt.size());
  if (match) {
    auto s = o_.states->take(match, r.prompt,
                             {.cache = r.cache, .sampling = r.sampling, .speculative = r.speculative});
    if (s.ok()) {
      a->session = std::move(*s);
      a->reused = match.n_tokens;
    } else if (match.in_memory) {
      fail(*job, ApiError{.message = s.message()});
      return true;
    }
    // A stored state another replica took first, or an unreadable one: a new session.
  }
  if (!a->session) {
    auto s = engine_.new_session(
        {.cache = r.cache,
         .sampling = r.sampling,
         .n_prompt_hint = a->n_prompt,
         .speculative = r.speculative});
    if (!s.ok()) {
      const bool spec = s.message().rfind("--spec", 0) == 0;
      fail(*job, ApiError{.message = s.message(),
                          .param = spec ? "speculative.type" : "kv_budget"});
      return true;
    }
    a->session = std::move(*s);
  }
  // A checkpoint inside what is fed: the prompt up to it first, the rest once it is held.
  const std::span<const int32_t> prompt(r.prompt);
  const bool checkpoint = o_.prefix_reuse && r.allow_reuse && StateCache::reusable(r.cache) &&
                          r.checkpoint > a->reused && r.checkpoint <= a->n_prompt;
  const Status queued =
      checkpoint ? a->session->queue(prompt.subspan(a->reused, r.checkpoint - a->reused), r.images)
                 : a->session->queue(prompt.subspan(a->reused), r.images);
  if (!queued.ok()) {
    fail(*job, ApiError{.message = queued.message(), .param = "messages"});
    return true;
  }
  if (checkpoint) a->after_checkpoint.assign(prompt.begin() + r.checkpoint, prompt.end());
  // The pool allocates now what this request may hold (prompt + max_tokens; a `full` one
  // within -c, a bounded one within k + extra): a new one once, a reused one copied once
  // here, never a doubling copy inside a decode step.
  if (auto st = a->session->reserve(a->n_prompt + r.max_tokens, o_.ctx); !st.ok()) {
    fail(*job, ApiError{.message = st.message(), .param = "kv_budget"});
    return true;
  }
  if (!checkpoint) a->stream = std::make_unique<TextStream>(*a->session, generate_options(r));
  a->spec_before = a->session->stats().speculation;
  // What the pool holds now counts if a reused state's growth (doubling) went past the estimate.
  a->reserved = std::max(need, state_bytes(*a->session));
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
      if (waiting_.empty()) return;
      // A request of n choices takes n sequences (at least one when --parallel is smaller).
      const int n = waiting_.front()->request.n;
      if (!active_.empty() && static_cast<int>(active_.size()) + n > o_.parallel) return;
      job = waiting_.front();
    }
    bool admitted = false;
    try {
      admitted = try_admit(job);
    } catch (const std::exception& e) {
      // (std::bad_alloc of a state the machine cannot hold, ...): this request fails, the
      // server goes on.
      fail(*job, server_error(fmt::format("cannot start this request: {}", e.what())));
      admitted = true;
    }
    if (!admitted) return;  // first in, first out: the head waits for memory
    std::lock_guard<std::mutex> l(mu_);
    waiting_.pop_front();
    n_active_ = static_cast<int64_t>(active_.size());
  }
}

void ServingLoop::split(Active& a) {
  // The other choices continue from the prompt's state: each a copy of it with a sampler of
  // its own (seed + index), each with its share of the reservation.
  a.split = true;
  const GenerationRequest& r = a.job->request;
  if (r.hold_prompt && a.session->n_pending() == 0) hold(a.session->clone(), r.id);
  const uint64_t share = a.reserved / static_cast<uint64_t>(r.n);
  for (int i = 1; i < r.n; ++i) {
    auto c = std::make_unique<Active>();
    c->job = a.job;
    c->index = i;
    c->session = a.session->clone();
    SamplerParams p = r.sampling;
    p.seed += static_cast<uint64_t>(i);
    if (auto st = c->session->set_sampling(p); !st.ok()) {
      fail(*a.job, ApiError{.message = st.message()});
      return;
    }
    c->stream = std::make_unique<TextStream>(*c->session, generate_options(r));
    c->reserved = share;
    c->reused = a.reused;
    c->spec_before = a.spec_before;
    c->n_prompt = a.n_prompt;
    a.reserved -= share;
    active_.push_back(std::move(c));
  }
}

void ServingLoop::advance(Active& a) {
  const GenerationRequest& r = a.job->request;
  const int32_t prev = a.session->history().empty() ? -1 : a.session->history().back();
  Piece p = a.stream->advance();
  if (o_.hostile_output_seed != 0) {
    // Tests only (hostile_output.h): the text of each generated token is replaced after
    // sampling; the piece that ends the turn adds nothing.
    const uint64_t stream = r.sampling.seed + static_cast<uint64_t>(a.index);
    p.text = p.finish == Finish::kNone ? hostile_piece(o_.hostile_output_seed, stream, a.pieces++)
                                       : std::string();
  }
  const auto now = std::chrono::steady_clock::now();
  // The token this step generated: queued on the session, or (at a length limit) not.
  const bool counted = p.finish == Finish::kNone || p.finish == Finish::kLength;
  const int32_t id = p.finish == Finish::kNone ? a.session->history().back() : a.stream->unfed();
  if (counted && id >= 0) {
    if (a.ttft < 0) {
      a.ttft = std::chrono::duration<double>(now - a.job->created).count();
      metrics_.first_token(a.ttft);
    } else {
      metrics_.token_gap(std::chrono::duration<double>(now - a.last_token).count());
    }
    a.last_token = now;
    metrics_.tokens(0, 1, 0);
    // The logits are still those the token was sampled from: it is queued, not fed.
    if (r.logprobs >= 0) a.logprobs.push_back(logprob_of(a.session->logits(), id, r.logprobs, engine_, prev));
  }
  if (p.finish == Finish::kNone) {
    if (!p.text.empty()) {
      a.job->push({.index = a.index, .text = p.text, .logprobs = std::move(a.logprobs)});
      a.logprobs.clear();
    }
    return;
  }
  finish(a, p.text, std::string(finish_name(p.finish)));
}

void ServingLoop::finish(Active& a, const std::string& text, const std::string& reason) {
  a.finished = true;
  SpeculationStats spec = a.session->stats().speculation;
  spec.n_drafted -= a.spec_before.n_drafted;
  spec.n_accepted -= a.spec_before.n_accepted;
  Event e{.index = a.index,
          .text = text,
          .logprobs = std::move(a.logprobs),
          .final = true,
          .finish_reason = reason,
          .prompt_tokens = a.n_prompt,
          .completion_tokens = a.stream->stats().n_generated,
          .kv = report(*a.session, a.reused),
          .ttft_seconds = a.ttft,
          .draft_n = spec.n_drafted,
          .draft_n_accepted = spec.n_accepted};
  metrics_.drafts(spec.n_drafted, spec.n_accepted);
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
      if (a->index == 0 && a->job->request.id == q->id && a->session) {
        v = view_state(*a->session);
        v->generating = !a->finished;
        v->kv = report(*a->session, a->reused);
      }
    }
    if (const Session* h = !v && o_.states ? o_.states->held(q->id) : nullptr) {
      v = view_state(*h);
      v->kv = report(*h, 0);
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
  for (const auto& a : active_) s.kv_bytes_held += state_bytes(*a->session);
  // Memory by kind of layer state, over active and held states.
  auto add_kinds = [&s](const Session& session) {
    for (const StateKindStats& k : session.stats().kinds) {
      KindMemory& m = s.kinds[k.kind];
      m.bytes += k.bytes;
      m.held_bytes += k.held_bytes;
      m.rows += k.rows;
      m.image_rows += k.image_rows;
    }
  };
  for (const auto& a : active_) add_kinds(*a->session);
  if (o_.states) {
    const StateCacheStats c = o_.states->stats();
    s.kv_bytes_held += c.held_bytes;
    s.kv_bytes_reserved = reserved_ + c.held_bytes;
    s.cached_states = c.n_held;
    s.stored_states = c.n_stored;
    s.stored_bytes = c.stored_bytes;
    o_.states->for_each_held(add_kinds);
    metrics_.stored(c.n_spilled - spilled_seen_);
    metrics_.restored(c.n_restored - restored_seen_);
    spilled_seen_ = c.n_spilled;
    restored_seen_ = c.n_restored;
  } else {
    s.kv_bytes_reserved = reserved_;
  }
  metrics_.set_snapshot(s);
}

void ServingLoop::step(Batch& batch) {
  admit();
  std::vector<Session*> sessions;
  for (const auto& a : active_) sessions.push_back(a->session.get());
  if (!sessions.empty()) {
    // A step that fails (an error, or an exception such as std::bad_alloc) fails the requests
    // in it with an error object; the server goes on.
    std::string failure;
    try {
      auto st = batch.step(sessions);
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
        if (!a->job->cancelled()) fail(*a->job, server_error(failure));
      }
    }
  }
  // Choices appended by a split take their first token in this same pass over the list.
  for (size_t i = 0; i < active_.size(); ++i) {
    Active& a = *active_[i];
    if (a.finished || a.job->cancelled() || !a.session->has_logits()) continue;
    if (!a.stream) {
      // The turn boundary is fed: a copy of the state there is held (as "ID#turn": the answer's
      // own state keeps the response's id, /v1/sessions/ID), then the rest of the prompt.
      hold(a.session->clone(), a.job->request.id + "#turn");
      if (const Status st = a.session->queue(a.after_checkpoint, a.job->request.images); !st.ok()) {
        fail(*a.job, server_error(st.message()));
        a.finished = true;
        continue;
      }
      a.after_checkpoint = {};
      a.stream = std::make_unique<TextStream>(*a.session, generate_options(a.job->request));
      continue;
    }
    if (a.index == 0 && !a.split && (a.job->request.n > 1 || a.job->request.hold_prompt)) {
      split(a);
    }
    if (!a.finished) advance(a);
  }
  // Finished sequences keep their state for prefix reuse (choice 0's) and for
  // /v1/sessions/ID, also when a checkpoint at the turn boundary was held (the next chat turn
  // continues from that one: it re-renders this answer); cancelled ones are dropped.
  size_t w = 0;
  for (size_t i = 0; i < active_.size(); ++i) {
    Active& a = *active_[i];
    if (a.finished || a.job->cancelled()) {
      reserved_ -= a.reserved;
      if (a.finished && a.index == 0 && !a.job->cancelled() && a.session->n_pending() == 0) {
        hold(std::move(a.session), a.job->request.id);
      }
      continue;
    }
    active_[w++] = std::move(active_[i]);
  }
  active_.resize(w);
}

void ServingLoop::run() {
  Batch batch(engine_, {.step_tokens = o_.step_tokens});
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] {
        return stop_ || !waiting_.empty() || !active_.empty() || !inspections_.empty();
      });
      if (stop_) break;
    }
    answer_inspections();
    try {
      step(batch);
    } catch (const std::exception& e) {
      // Nothing thrown leaves this thread: the requests in flight fail, the server goes on.
      for (auto& a : active_) {
        if (!a->job->cancelled()) {
          fail(*a->job, server_error(fmt::format("internal error: {}", e.what())));
        }
        reserved_ -= a->reserved;
      }
      active_.clear();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      n_active_ = static_cast<int64_t>(active_.size());
    }
    publish_metrics();
  }
  // Stopping: held states go to the spill directory (synced), so conversations survive a
  // restart.
  if (o_.states) o_.states->flush();
  // Whoever still waits gets an error rather than silence.
  const ApiError stopped{.status = 503, .message = "the server stopped", .type = "server_error"};
  for (auto& a : active_) {
    if (!a->finished && !a->job->cancelled()) fail(*a->job, stopped);
  }
  std::lock_guard<std::mutex> l(mu_);
  for (auto& i : inspections_) i->result.set_value(std::nullopt);
  inspections_.clear();
  for (auto& j : waiting_) fail(*j, stopped);
}

}  // namespace tova::server
