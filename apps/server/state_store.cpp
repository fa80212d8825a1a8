#include "state_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "core/hash.h"
#include "runtime/session_file.h"

namespace tova::server {
namespace {

namespace fs = std::filesystem;

// A file name from the label and the tokens (FNV-1a): one file per conversation state.
std::string file_name(const std::vector<int32_t>& tokens, const std::string& label) {
  const uint64_t h = fnv1a(tokens.data(), tokens.size() * sizeof(int32_t),
                           fnv1a(label.data(), label.size()));
  return fmt::format("{:016x}.sess", h);
}

std::string encode_note(const std::vector<int32_t>& tokens, const std::string& label) {
  nlohmann::json j;
  j["tova_serve"] = 1;
  j["label"] = label;
  j["tokens"] = tokens;
  return j.dump();
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

}  // namespace

Result<std::unique_ptr<StateStore>> StateStore::open(const Engine& engine, const std::string& dir,
                                                     uint64_t max_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec)) {
    return make_error("--session-dir '{}' is not a usable directory{}", dir,
                      ec ? ": " + ec.message() : "");
  }
  auto s = std::unique_ptr<StateStore>(new StateStore(engine));
  s->dir_ = dir;
  s->max_bytes_ = max_bytes;
  // Every call takes an error_code: a file vanishing or unreadable while listing is skipped,
  // never an exception.
  struct File {
    std::string path;
    fs::file_time_type time;
  };
  std::vector<File> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fe;
    if (!it->is_regular_file(fe) || fe || it->path().extension() != ".sess") continue;
    const auto t = it->last_write_time(fe);
    if (!fe) files.push_back({it->path().string(), t});
  }
  if (ec) return make_error("--session-dir '{}': {}", dir, ec.message());
  // Oldest first, so the newest are the most recently used.
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.time < b.time; });
  for (const File& f : files) {
    const std::string& path = f.path;
    uint64_t bytes = 0;
    auto d = runtime::load_session(path, engine.model(), &bytes);  // its errors name the file
    if (!d.ok()) {
      if (s->skipped_++ == 0) s->skip_reason_ = d.message();
      continue;
    }
    auto note = decode_note(d->note);
    if (!note.ok()) {
      if (s->skipped_++ == 0) s->skip_reason_ = fmt::format("{}: {}", path, note.message());
      continue;
    }
    Entry e{.tokens = std::move(note->first),
            .label = std::move(note->second),
            .path = path,
            .bytes = bytes,
            .last_used = ++s->clock_};
    s->bytes_ += e.bytes;
    s->entries_.push_back(std::move(e));
  }
  return s;
}

Status StateStore::put(const std::vector<int32_t>& tokens, const Session& s, bool sync) {
  if (tokens.empty() || s.n_pending() != 0) return make_error("no state to store");
  const std::string label = s.cache().label();
  runtime::SessionData d = s.save_data(-1);
  d.note = encode_note(tokens, label);
  const std::string path = (fs::path(dir_) / file_name(tokens, label)).string();
  TOVA_ASSIGN_OR_RETURN(uint64_t bytes, runtime::save_session(path, engine_.model(), d, sync));
  // A newer state of the same tokens replaced the old one's file: drop its entry.
  auto old = std::find_if(entries_.begin(), entries_.end(),
                          [&](const Entry& e) { return e.path == path; });
  if (old != entries_.end()) {
    bytes_ -= old->bytes;
    entries_.erase(old);
  }
  Entry e{.tokens = tokens, .label = label, .path = path, .bytes = bytes, .last_used = ++clock_};
  bytes_ += e.bytes;
  entries_.push_back(std::move(e));
  // Least recently used files go until the directory fits (the new one stays).
  while (bytes_ > max_bytes_ && entries_.size() > 1) {
    auto lru = std::min_element(entries_.begin(), entries_.end() - 1,
                                [](const Entry& a, const Entry& b) {
                                  return a.last_used < b.last_used;
                                });
    remove(&*lru);
  }
  if (bytes_ > max_bytes_) remove(&entries_.back());
  return ok_status();
}

const StateStore::Entry* StateStore::find(std::span<const int32_t> prompt,
                                          const std::string& label) const {
  const Entry* best = nullptr;
  for (const Entry& e : entries_) {
    if (e.tokens.size() < prompt.size() && (!best || e.tokens.size() > best->tokens.size()) &&
        e.label == label && std::equal(e.tokens.begin(), e.tokens.end(), prompt.begin())) {
      best = &e;
    }
  }
  return best;
}

size_t StateStore::longest_prefix(std::span<const int32_t> prompt,
                                  const std::string& label) const {
  const Entry* e = find(prompt, label);
  return e ? e->tokens.size() : 0;
}

Result<std::unique_ptr<Session>> StateStore::take(std::span<const int32_t> prompt,
                                                  const std::string& label,
                                                  const SessionOptions& o) {
  const Entry* e = find(prompt, label);
  if (e == nullptr) return make_error("no stored state continues this prompt");
  const std::vector<int32_t> tokens = e->tokens;
  auto d = runtime::load_session(e->path, engine_.model());
  remove(e);  // taken (or unreadable): either way it leaves the store
  if (!d.ok()) return make_error("{}", d.message());
  auto note = decode_note(d->note);
  if (!note.ok() || note->first != tokens || note->second != label) {
    return make_error("stored state changed on disk");
  }
  // The whole conversation is the session's history (the file keeps only its tail), so the
  // continued state is keyed by every token again when it is held.
  d->history = tokens;
  d->pending = -1;
  auto s = Session::resume(engine_.model(), o, std::move(*d));
  if (!s.ok()) return make_error("{}", s.message());
  if ((*s)->cache().label() != label) return make_error("stored state has another cache");
  return s;
}

void StateStore::remove(const Entry* e) {
  std::error_code ec;
  fs::remove(e->path, ec);
  bytes_ -= e->bytes;
  entries_.erase(entries_.begin() + (e - entries_.data()));
}

}  // namespace tova::server
