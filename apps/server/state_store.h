// Idle conversation states on disk (`tova serve --session-dir DIR`): a held state that leaves the
// in-memory LRU (memory, --cache-states, shutdown) is written to DIR as a session file whose note
// records its tokens and cache label; a later request whose prompt extends those tokens continues
// it from the file as it would from memory. Files of earlier runs are indexed at start, so
// conversations survive a restart. At most `max_bytes` of files: least recently used go first.
// Scheduler-thread only (no locking).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/engine.h"
#include "tova/session.h"

namespace tova::server {

class StateStore {
 public:
  // Creates DIR if needed and indexes its *.sess files of this model; `skipped` says how many
  // could not be used (another model, unreadable) and why the first one failed.
  static Result<std::unique_ptr<StateStore>> open(const Engine& engine, const std::string& dir,
                                                  uint64_t max_bytes);

  // Writes a session with no queued tokens (its fed tokens `tokens`) under its cache label;
  // `sync` forces it to disk (at shutdown).
  Status put(const std::vector<int32_t>& tokens, const Session& s, bool sync);
  // The most tokens of a stored state of cache `label` that `prompt` extends (strictly), or 0.
  size_t longest_prefix(std::span<const int32_t> prompt, const std::string& label) const;
  // That state as a session (sampling from o), removed from the store.
  Result<std::unique_ptr<Session>> take(std::span<const int32_t> prompt, const std::string& label,
                                        const SessionOptions& o);

  size_t count() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }
  int skipped() const { return skipped_; }
  const std::string& first_skip_reason() const { return skip_reason_; }
  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::string label;
    std::string path;
    uint64_t bytes = 0;
    uint64_t last_used = 0;
  };
  explicit StateStore(const Engine& engine) : engine_(engine) {}
  const Entry* find(std::span<const int32_t> prompt, const std::string& label) const;
  void remove(const Entry* e);

  const Engine& engine_;
  std::string dir_;
  uint64_t max_bytes_ = 0;
  std::vector<Entry> entries_;
  uint64_t bytes_ = 0;
  uint64_t clock_ = 0;
  int skipped_ = 0;
  std::string skip_reason_;
};

}  // namespace tova::server
