#include "runtime/state_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/field_names.h"
#include "core/hash.h"
#include "core/json_text.h"
#include "runtime/engine_access.h"
#include "runtime/session_file.h"
#include "runtime/session_impl.h"

namespace tova::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTempPrefix = ".tova-";  // files being written or claimed: never *.sess

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string encode_note(const std::vector<int32_t>& tokens, const std::string& label) {
  nlohmann::json j;
  j["tova_serve"] = 1;
  j["label"] = label;
  j["tokens"] = tokens;
  return json_text(j);  // the label may be a client's request id
}

Result<std::pair<std::vector<int32_t>, std::string>> decode_note(const std::string& note) {
  const auto j = nlohmann::json::parse(note, nullptr, false);
  // (`contains` first: operator[] of a const json on a missing key is undefined.)
  if (j.is_discarded() || !j.is_object() || !j.contains("tova_serve") || j["tova_serve"] != 1 ||
      !j.contains("label") || !j["label"].is_string() || !j.contains("tokens") ||
      !j["tokens"].is_array() || j["tokens"].empty()) {
    return make_error("not a state saved by tova serve");
  }
  std::vector<int32_t> tokens;
  for (const auto& t : j["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return make_error("a stored token is not a token id");
    }
    tokens.push_back(t.get<int32_t>());
  }
  return std::make_pair(std::move(tokens), j["label"].get<std::string>());
}

// Forces a directory's entries (a rename into it) to disk.
void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool is_state_name(const std::string& name, const std::string& prefix) {
  // "<16 hex>-<16 hex>.sess"
  return name.size() == prefix.size() + 16 + 5 && name.compare(0, prefix.size(), prefix) == 0 &&
         name.compare(name.size() - 5, 5, ".sess") == 0;
}

}  // namespace

Result<FileId> file_id(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return make_error("{}: {}", path, std::strerror(errno));
  return FileId{.ino = st.st_ino,
                .mtime_ns = mtime_ns(st),
                .bytes = static_cast<uint64_t>(st.st_size)};
}

bool remove_if_unchanged(const std::string& path, const FileId& seen, const std::string& claim) {
  // The rename takes whatever file holds the name now, atomically: no other process can replace
  // or delete it in between, and if another one took it first, there is nothing to do.
  if (std::rename(path.c_str(), claim.c_str()) != 0) return false;
  auto now = file_id(claim);
  if (now.ok() && now->ino == seen.ino && now->mtime_ns == seen.mtime_ns) {
    ::unlink(claim.c_str());
    return true;
  }
  // Another writer replaced the file after it was looked at: the newer state goes back under its
  // name, unless an even newer one has taken the name since (then this one is older and goes).
  if (::link(claim.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    std::rename(claim.c_str(), path.c_str());  // no hard links here: put it back by renaming
    return false;
  }
  ::unlink(claim.c_str());
  return false;
}

StateStore::StateStore(const Engine& engine) : engine_(engine) {
  fingerprint_ = model_fingerprint(EngineAccess::model(engine));
  prefix_ = fmt::format("{:016x}-", fingerprint_);
}

Result<std::unique_ptr<StateStore>> StateStore::open(const Engine& engine, const std::string& dir,
                                                     uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return make_error("{} '{}' is not a usable directory{}", field::kSpillDir, dir,
                      ec ? ": " + ec.message() : "");
  }
  auto s = std::unique_ptr<StateStore>(new StateStore(engine));
  s->dir_ = dir;
  s->max_bytes_ = max_bytes;
  // Every call takes an error_code: a file vanishing or unreadable while listing is skipped,
  // never an exception.
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fe;
    if (!it->is_regular_file(fe) || fe) continue;
    const std::string name = it->path().filename().string();
    if (name.rfind(kTempPrefix, 0) == 0) {
      if (it->last_write_time(fe) < stale && !fe) fs::remove(it->path(), fe);
      continue;
    }
    if (it->path().extension() != ".sess" || is_state_name(name, s->prefix_)) continue;
    // Not named as this model's state: say why it is not used (another model's file, not a
    // session file, ...), and leave it.
    auto d = load_session(it->path().string(), EngineAccess::model(engine), nullptr,
                          engine.max_image_tokens());
    std::string why;
    if (!d.ok()) {
      why = d.message();
    } else if (auto note = decode_note(d->note); !note.ok()) {
      why = fmt::format("{}: {}", it->path().string(), note.message());
    } else {
      why = fmt::format("{}: not named as tova serve names its states", it->path().string());
    }
    if (s->skipped_++ == 0) s->skip_reason_ = why;
  }
  if (ec) return make_error("{} '{}': {}", field::kSpillDir, dir, ec.message());
  s->enforce_cap("");
  return s;
}

std::string StateStore::name_for(uint64_t hash) const {
  return fmt::format("{}{:016x}.sess", prefix_, hash);
}

std::vector<uint64_t> StateStore::prefix_hashes(std::span<const int32_t> prompt,
                                                const std::string& label) const {
  // FNV-1a continues over the tokens: the hash of every prefix in one pass.
  std::vector<uint64_t> out(prompt.size() + 1);
  uint64_t h = fnv1a(label.data(), label.size(), fnv1a(&fingerprint_, sizeof(fingerprint_)));
  out[0] = h;
  for (size_t i = 0; i < prompt.size(); ++i) {
    h = fnv1a(&prompt[i], sizeof(int32_t), h);
    out[i + 1] = h;
  }
  return out;
}

void StateStore::refresh_names() {
  struct stat st;
  if (::stat(dir_.c_str(), &st) != 0) return;
  // A listing taken within a second of the directory's last change may have missed a change in
  // the same clock tick (timestamps are coarse): such a listing is taken again next time.
  const int64_t m = mtime_ns(st);
  if (m == dir_mtime_ns_) return;
  std::unordered_set<std::string> names;
  std::error_code ec;
  const int64_t listed_at = now_ns();
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (is_state_name(name, prefix_)) names.insert(std::move(name));
  }
  if (ec) return;
  names_ = std::move(names);
  dir_mtime_ns_ = listed_at - m > 1'000'000'000 ? m : -1;
}

std::string StateStore::claim_name(const char* what) {
  return (fs::path(dir_) / fmt::format("{}{}-{}-{}", kTempPrefix, what, ::getpid(), ++counter_))
      .string();
}

void StateStore::enforce_cap(const std::string& keep) {
  struct File {
    std::string name;
    FileId id;
  };
  std::vector<File> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!is_state_name(name, prefix_)) continue;
    auto id = file_id(it->path().string());
    if (id.ok()) files.push_back({std::move(name), *id});
  }
  uint64_t total = 0;
  for (const File& f : files) total += f.id.bytes;
  // Least recently written first.
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.id.mtime_ns < b.id.mtime_ns; });
  for (const File& f : files) {
    if (total <= max_bytes_) break;
    if (f.name == keep) continue;
    const std::string path = (fs::path(dir_) / f.name).string();
    // Gone or replaced by another replica since the listing: either way not counted any more.
    remove_if_unchanged(path, f.id, claim_name("del"));
    total -= f.id.bytes;
  }
  count_ = 0;
  bytes_ = 0;
  for (const File& f : files) {
    if (fs::exists(fs::path(dir_) / f.name, ec)) {
      ++count_;
      bytes_ += f.id.bytes;
    }
  }
}

Status StateStore::put(const std::vector<int32_t>& tokens, const Session& s, bool sync) {
  if (tokens.empty() || s.n_pending() != 0) return make_error("no state to store");
  TOVA_RETURN_IF_ERROR(settle(s));  // drafts of a verify step outstanding: the fed tokens only
  const std::string label = s.cache().label();
  SessionData d = session_data(s, -1);
  d.note = encode_note(tokens, label);
  const std::string name = name_for(prefix_hashes(tokens, label).back());
  // Written under a name of this process, then renamed over the final name: another replica
  // writing the same conversation, or reading it, never sees a mix of two files.
  const std::string temp = claim_name("put");
  auto bytes = save_session(temp, EngineAccess::model(engine_), d, sync);
  if (!bytes.ok()) {
    std::remove(temp.c_str());
    return make_error("{}", bytes.message());
  }
  const std::string path = (fs::path(dir_) / name).string();
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    return make_error("{}: {}", path, std::strerror(err));
  }
  if (sync) sync_dir(dir_);
  enforce_cap(name);
  return ok_status();
}

size_t StateStore::longest_prefix(std::span<const int32_t> prompt, const std::string& label) {
  refresh_names();
  if (names_.empty() || prompt.size() < 2) return 0;
  const auto hashes = prefix_hashes(prompt, label);
  for (size_t n = prompt.size() - 1; n >= 1; --n) {
    if (names_.count(name_for(hashes[n])) != 0) return n;
  }
  return 0;
}

Result<std::unique_ptr<Session>> StateStore::take(std::span<const int32_t> prompt,
                                                  const std::string& label,
                                                  const SessionOptions& o) {
  const size_t n = longest_prefix(prompt, label);
  if (n == 0) return make_error("no stored state continues this prompt");
  const std::string name = name_for(prefix_hashes(prompt.first(n), label).back());
  const std::string path = (fs::path(dir_) / name).string();
  const std::string claimed = claim_name("take");
  names_.erase(name);
  dir_mtime_ns_ = -1;
  // The rename claims the file: if another replica took it first, there is nothing here.
  if (std::rename(path.c_str(), claimed.c_str()) != 0) {
    return make_error("{}: taken by another server", path);
  }
  auto d = load_session(claimed, EngineAccess::model(engine_), nullptr, engine_.max_image_tokens());
  if (!d.ok()) {
    // Unreadable (it was renamed into place whole, so it was damaged on disk): it goes.
    std::remove(claimed.c_str());
    return make_error("{}", d.message());
  }
  auto note = decode_note(d->note);
  if (!note.ok() || note->second != label ||
      !std::equal(note->first.begin(), note->first.end(), prompt.begin(), prompt.begin() + n) ||
      note->first.size() != n) {
    // Another conversation under a colliding name: it stays (unless a newer file took its name).
    if (::link(claimed.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      std::rename(claimed.c_str(), path.c_str());
    } else {
      std::remove(claimed.c_str());
    }
    return make_error("{}: the stored state is another conversation", path);
  }
  if (auto id = file_id(claimed); id.ok() && count_ > 0) {
    --count_;
    bytes_ -= std::min(bytes_, id->bytes);
  }
  std::remove(claimed.c_str());
  // The whole conversation is the session's history (the file keeps only its tail), so the
  // continued state is keyed by every token again when it is held.
  d->history = std::move(note->first);
  d->pending = -1;
  auto s = resume_session(engine_, o, std::move(*d));
  if (!s.ok()) return make_error("{}", s.message());
  if ((*s)->cache().label() != label) return make_error("stored state has another cache");
  return s;
}

}  // namespace tova::runtime
