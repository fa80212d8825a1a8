// Conversation states kept for reuse (prefix reuse): a session that finished a turn is held, and
// a later prompt that extends its tokens continues from it instead of feeding them again. Held
// states are kept least-recently-used first within a byte budget and a count; a state that
// leaves memory goes to an optional spill directory as a session file, from which a later
// prompt continues it as it would from memory. Several processes (replicas of one model) may
// share the directory: files are named by a hash of the model, the cache label and the tokens,
// written whole and renamed into place, and taken by an atomic rename (one replica wins); files
// of another model are never read or deleted. `tova serve` keeps its conversations here; Python
// gets it as tova.StateCache.
//
// A StateCache is used from one thread (a server's scheduler thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tova/options.h"
#include "tova/result.h"
#include "tova/session.h"

namespace tova {

class Engine;

struct StateCacheOptions {
  // Bytes the held states may take, together with what the owner reserves beside them (the
  // `others` of put and make_room: a server's running requests).
  uint64_t max_bytes = uint64_t{1} << 30;
  int max_states = 64;    // most states held in memory; 0: none (each goes to the spill directory)
  std::string spill_dir;  // created if needed; empty: a state leaving memory is dropped
  uint64_t spill_max_bytes = uint64_t{4} << 30;  // this model's files there, least recently
                                                 // written deleted first
};

struct StateCacheStats {
  int64_t n_held = 0;  // in memory, and their K/V bytes (SessionStats::kv_capacity)
  uint64_t held_bytes = 0;
  int64_t n_stored = 0;  // this model's files in the spill directory as of the last write or take
  uint64_t stored_bytes = 0;
  int64_t n_spilled = 0;   // states written to the spill directory, since open
  int64_t n_restored = 0;  // states continued from it, since open
  // Files in the spill directory at open that are not this model's states (another model's, not
  // a session file), left alone, and why the first is not.
  int n_skipped = 0;
  std::string first_skip_reason;
};

// What find() found: the longest held or stored state a prompt extends.
struct StateMatch {
  int64_t n_tokens = 0;     // its tokens (0: none found)
  bool in_memory = false;   // held (else in the spill directory)
  uint64_t bytes = 0;       // held: its bytes, which taking it frees
  uint64_t entry = 0;       // which held state (the cache's own number)
  explicit operator bool() const { return n_tokens > 0; }
};

class StateCache {
 public:
  // A cache for sessions of `engine` (which outlives it). With a spill directory, an error says
  // why it cannot be used ("spill dir: ...").
  static Result<std::unique_ptr<StateCache>> open(const Engine& engine,
                                                  const StateCacheOptions& o);
  ~StateCache();
  StateCache(const StateCache&) = delete;
  StateCache& operator=(const StateCache&) = delete;

  // States of sessions made with `o` can be continued: feeding a longer prompt to one gives what
  // feeding the whole prompt from the start gives (exact prefill, and a policy that does not
  // choose at a prompt's end, as snapkv does). Others are never held.
  static bool reusable(const CacheOptions& o);

  // Holds `s` (nothing pending) for prompts that extend its history; `id` names it for held().
  // A newer state of the same tokens and cache replaces the older. Least recently used states
  // leave memory (to the spill directory) until it fits beside `others` bytes within max_bytes
  // and max_states; a state that does not fit at all goes there itself. Not reusable: dropped.
  void put(std::unique_ptr<Session> s, std::string id, uint64_t others = 0);

  // The longest held or stored state whose tokens `prompt` strictly extends, made with cache
  // options of the same label; a held one unless the spill directory has a longer one.
  StateMatch find(std::span<const int32_t> prompt, const CacheOptions& cache);
  // Least recently used held states other than `keep` leave memory until `need` more bytes fit
  // beside `others` (taking `keep` frees its bytes); false if they cannot.
  bool make_room(uint64_t need, uint64_t others, const StateMatch& keep = {});
  // The matched state out of the cache as a session sampling with o.sampling (its cache options
  // are the state's). An error if it is gone (another replica took the file) or unreadable.
  Result<std::unique_ptr<Session>> take(const StateMatch& m, std::span<const int32_t> prompt,
                                        const SessionOptions& o);

  // The held state `id` left (put), or null.
  const Session* held(std::string_view id) const;
  // Calls `f` with every state held in memory, most recently used first (what a front-end's
  // memory report adds up).
  void for_each_held(const std::function<void(const Session&)>& f) const;
  // Every held state to the spill directory, forced to disk (at shutdown); memory is then empty.
  void flush();

  StateCacheStats stats() const;
  uint64_t held_bytes() const;
  const StateCacheOptions& options() const;

 private:
  struct Impl;
  explicit StateCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tova
