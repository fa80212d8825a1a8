// Idle conversation states on disk (StateCache's spill directory: `tova serve --session-dir DIR`):
// a held state that leaves the in-memory LRU (memory, count, shutdown) is written to DIR as a
// session file whose note records its tokens and cache label; a later request whose prompt
// extends those tokens continues it from the file as it would from memory, then the file leaves DIR. Conversations survive a
// restart, and several replicas of one model may share DIR (docs/DEPLOYMENT.md):
//  - a file's name is a hash of the model's fingerprint, the cache label and the tokens, so a
//    lookup hashes the prompt's prefixes and checks names, reading only the file it takes;
//    files of another model are never read, counted or deleted;
//  - a file is written under a temporary name and renamed into place: a reader sees the old
//    file or the new one, never part of one;
//  - a file is taken or deleted by first renaming it to a name of this process (atomic: one
//    replica wins), and the least-recently-written deletion (at most `max_bytes` of this
//    model's files) deletes only the very file it chose: one the other replica has replaced
//    since stays.
// One thread only (no locking within a process).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/result.h"
#include "tova/engine.h"
#include "tova/session.h"

namespace tova::runtime {

// Which file a directory entry was when it was looked at.
struct FileId {
  ino_t ino = 0;
  int64_t mtime_ns = 0;
  uint64_t bytes = 0;
};
Result<FileId> file_id(const std::string& path);

// Deletes `path` only if it is still the file `seen` describes; a newer file written over it in
// the meantime stays. `claim` is a name of this process's own in the same directory. False if
// nothing was deleted.
bool remove_if_unchanged(const std::string& path, const FileId& seen, const std::string& claim);

class StateStore {
 public:
  // Creates DIR if needed and looks at it; `skipped` says how many *.sess files are not this
  // model's states (another model's, not a session file) and why the first one is not: they are
  // left alone. Leftover temporary files of a crashed writer (older than 10 minutes) go.
  static Result<std::unique_ptr<StateStore>> open(const Engine& engine, const std::string& dir,
                                                  uint64_t max_bytes);

  // Writes a session with no queued tokens (its fed tokens `tokens`) under its cache label;
  // `sync` forces it to disk (at shutdown). Then the least recently written files go until
  // this model's files fit in max_bytes (the new one stays).
  Status put(const std::vector<int32_t>& tokens, const Session& s, bool sync);
  // The most tokens of a stored state of cache `label` that `prompt` extends (strictly), or 0.
  size_t longest_prefix(std::span<const int32_t> prompt, const std::string& label);
  // That state as a session (sampling from o), its file removed. An error if another replica
  // took it first or the file is not what its name says (then it is left or, if unreadable,
  // removed).
  Result<std::unique_ptr<Session>> take(std::span<const int32_t> prompt, const std::string& label,
                                        const SessionOptions& o);

  // This model's files as of the last write or take (another replica's since are not counted).
  size_t count() const { return count_; }
  uint64_t bytes() const { return bytes_; }
  int skipped() const { return skipped_; }
  const std::string& first_skip_reason() const { return skip_reason_; }
  const std::string& dir() const { return dir_; }

 private:
  explicit StateStore(const Engine& engine);
  // The file name of `tokens` under `label`, and the hashes of every prefix of `prompt`.
  std::string name_for(uint64_t hash) const;
  std::vector<uint64_t> prefix_hashes(std::span<const int32_t> prompt,
                                      const std::string& label) const;
  void refresh_names();  // names_ from the directory, when it changed
  void enforce_cap(const std::string& keep);
  std::string claim_name(const char* what);

  const Engine& engine_;
  std::string dir_;
  std::string prefix_;  // this model's files: "<fingerprint>-"
  uint64_t fingerprint_ = 0;
  uint64_t max_bytes_ = 0;
  std::unordered_set<std::string> names_;  // this model's files, as of dir_mtime_
  int64_t dir_mtime_ns_ = -1;
  size_t count_ = 0;
  uint64_t bytes_ = 0;
  uint64_t counter_ = 0;
  int skipped_ = 0;
  std::string skip_reason_;
};

}  // namespace tova::runtime
