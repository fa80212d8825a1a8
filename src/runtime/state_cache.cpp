#include "tova/state_cache.h"

#include <algorithm>
#include <list>

#include "runtime/cache_options.h"
#include "runtime/session_impl.h"
#include "runtime/state_store.h"
#include "tova/engine.h"

namespace tova {

struct StateCache::Impl {
  struct Held {
    uint64_t entry = 0;
    std::string id;  // of whoever left it
    std::vector<int32_t> tokens;
    std::string label;  // CacheOptions::label()
    std::unique_ptr<Session> session;
    uint64_t bytes = 0;
  };

  const Engine& engine;
  StateCacheOptions o;
  std::unique_ptr<runtime::StateStore> store;  // the spill directory, if any
  std::list<Held> held;                        // most recently used first
  uint64_t held_bytes = 0;
  uint64_t next_entry = 1;
  int64_t n_spilled = 0;
  int64_t n_restored = 0;

  // A held state leaving memory: to the spill directory if there is one (`sync` at shutdown); one
  // that cannot be written is dropped, as it would be without a directory.
  void spill(Held& h, bool sync) {
    if (!store || !h.session) return;
    if (store->put(h.tokens, *h.session, sync).ok()) ++n_spilled;
  }
  void drop(std::list<Held>::iterator it) {
    held_bytes -= it->bytes;
    spill(*it, false);
    held.erase(it);
  }
};

StateCache::StateCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StateCache::~StateCache() = default;

Result<std::unique_ptr<StateCache>> StateCache::open(const Engine& engine,
                                                     const StateCacheOptions& o) {
  auto impl = std::unique_ptr<Impl>(new Impl{.engine = engine, .o = o});
  if (!o.spill_dir.empty()) {
    TOVA_ASSIGN_OR_RETURN(impl->store,
                          runtime::StateStore::open(engine, o.spill_dir, o.spill_max_bytes));
  }
  return std::unique_ptr<StateCache>(new StateCache(std::move(impl)));
}

bool StateCache::reusable(const CacheOptions& o) { return runtime::continues_exactly(o); }

void StateCache::put(std::unique_ptr<Session> s, std::string id, uint64_t others) {
  Impl& c = *impl_;
  if (!s || s->n_pending() != 0 || s->history().empty() || !reusable(s->cache())) return;
  if (!runtime::settle(*s).ok()) return;  // held states hold exactly their tokens
  Impl::Held h{.entry = c.next_entry++,
               .id = std::move(id),
               .tokens = s->history(),
               .label = s->cache().label(),
               .session = std::move(s)};
  h.bytes = h.session->stats().kv_capacity;
  if (h.bytes > c.o.max_bytes || c.o.max_states <= 0) {
    c.spill(h, false);
    return;
  }
  // One state per token sequence: a newer identical one replaces the old.
  for (auto it = c.held.begin(); it != c.held.end(); ++it) {
    if (it->tokens == h.tokens && it->label == h.label) {
      c.held_bytes -= it->bytes;
      c.held.erase(it);
      break;
    }
  }
  // Room: least recently used states leave beyond the count or the memory.
  while (!c.held.empty() && (static_cast<int>(c.held.size()) >= c.o.max_states ||
                             others + c.held_bytes + h.bytes > c.o.max_bytes)) {
    c.drop(std::prev(c.held.end()));
  }
  if (others + c.held_bytes + h.bytes > c.o.max_bytes) {
    c.spill(h, false);
    return;
  }
  c.held_bytes += h.bytes;
  c.held.push_front(std::move(h));
}

StateMatch StateCache::find(std::span<const int32_t> prompt, const CacheOptions& cache) {
  Impl& c = *impl_;
  if (!reusable(cache)) return {};
  const std::string label = cache.label();
  auto best = c.held.end();
  for (auto it = c.held.begin(); it != c.held.end(); ++it) {
    if (it->tokens.size() < prompt.size() &&
        (best == c.held.end() || it->tokens.size() > best->tokens.size()) &&
        std::equal(it->tokens.begin(), it->tokens.end(), prompt.begin()) && it->label == label) {
      best = it;
    }
  }
  const size_t in_memory = best != c.held.end() ? best->tokens.size() : 0;
  const size_t stored = c.store ? c.store->longest_prefix(prompt, label) : 0;
  if (stored > in_memory) return {.n_tokens = static_cast<int64_t>(stored)};
  if (best == c.held.end()) return {};
  return {.n_tokens = static_cast<int64_t>(in_memory),
          .in_memory = true,
          .bytes = best->bytes,
          .entry = best->entry};
}

bool StateCache::make_room(uint64_t need, uint64_t others, const StateMatch& keep) {
  Impl& c = *impl_;
  const bool keeping = keep.in_memory && keep.entry != 0;
  const uint64_t freed = keeping ? keep.bytes : 0;
  while (others + c.held_bytes - freed + need > c.o.max_bytes) {
    auto victim = c.held.end();
    for (auto it = c.held.begin(); it != c.held.end(); ++it) {
      if (!keeping || it->entry != keep.entry) victim = it;  // the last: least recently used
    }
    if (victim == c.held.end()) return false;
    c.drop(victim);
  }
  return true;
}

Result<std::unique_ptr<Session>> StateCache::take(const StateMatch& m,
                                                  std::span<const int32_t> prompt,
                                                  const SessionOptions& o) {
  Impl& c = *impl_;
  if (!m) return make_error("no held state continues this prompt");
  if (!m.in_memory) {
    if (!c.store) return make_error("no spill directory");
    TOVA_ASSIGN_OR_RETURN(auto s, c.store->take(prompt, o.cache.label(), o));
    ++c.n_restored;
    return s;
  }
  auto it = std::find_if(c.held.begin(), c.held.end(),
                         [&](const Impl::Held& h) { return h.entry == m.entry; });
  if (it == c.held.end()) return make_error("the held state has left the cache");
  std::unique_ptr<Session> s = std::move(it->session);
  c.held_bytes -= it->bytes;
  c.held.erase(it);
  TOVA_RETURN_IF_ERROR(s->set_sampling(o.sampling));
  TOVA_RETURN_IF_ERROR(runtime::set_speculation(*s, o.speculative));
  return s;
}

const Session* StateCache::held(std::string_view id) const {
  for (const Impl::Held& h : impl_->held) {
    if (h.id == id) return h.session.get();
  }
  return nullptr;
}

void StateCache::for_each_held(const std::function<void(const Session&)>& f) const {
  for (const Impl::Held& h : impl_->held) f(*h.session);
}

void StateCache::flush() {
  Impl& c = *impl_;
  for (Impl::Held& h : c.held) c.spill(h, true);
  c.held.clear();
  c.held_bytes = 0;
}

StateCacheStats StateCache::stats() const {
  const Impl& c = *impl_;
  StateCacheStats s{.n_held = static_cast<int64_t>(c.held.size()),
                    .held_bytes = c.held_bytes,
                    .n_spilled = c.n_spilled,
                    .n_restored = c.n_restored};
  if (c.store) {
    s.n_stored = static_cast<int64_t>(c.store->count());
    s.stored_bytes = c.store->bytes();
    s.n_skipped = c.store->skipped();
    s.first_skip_reason = c.store->first_skip_reason();
  }
  return s;
}

uint64_t StateCache::held_bytes() const { return impl_->held_bytes; }
const StateCacheOptions& StateCache::options() const { return impl_->o; }

}  // namespace tova
