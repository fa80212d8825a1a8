#include "access_log.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

namespace tova::server {

namespace {

std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms.count() % 1000));
}

// A client's text in a log line: printable ASCII kept, everything else escaped, so one request
// is one line whatever it sent.
std::string printable(const std::string& s, size_t max_bytes = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_bytes) out += "...";
  return out;
}

}  // namespace

std::string format_access_text(const AccessRecord& r) {
  std::string line = fmt::format("{} {} {} {} {} {:.3f}s", iso_time(r.time), printable(r.id, 64),
                                 printable(r.method, 16), printable(r.path), r.status, r.seconds);
  if (r.n > 0) {
    line += fmt::format(" policy={} budget={}", r.policy.empty() ? "-" : printable(r.policy),
                        r.budget < 0 ? std::string("-") : std::to_string(r.budget));
    if (r.n > 1) line += fmt::format(" n={}", r.n);
    if (r.stream) line += " stream";
    auto count = [](int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); };
    line += fmt::format(" prompt={} cached={} generated={}", count(r.prompt_tokens),
                        count(r.cached_tokens), count(r.generated_tokens));
    line += r.ttft_seconds < 0 ? std::string(" ttft=-") : fmt::format(" ttft={:.3f}s", r.ttft_seconds);
    if (!r.user.empty()) line += " user=" + printable(r.user, 64);
  }
  if (!r.remote.empty()) line += " from=" + printable(r.remote, 64);
  if (!r.error.empty()) line += fmt::format(" error=\"{}\"", printable(r.error));
  return line;
}

std::string format_access_json(const AccessRecord& r) {
  using nlohmann::json;
  json j = {{"time", iso_time(r.time)}, {"id", r.id},         {"method", r.method},
            {"path", r.path},           {"status", r.status}, {"seconds", r.seconds}};
  if (!r.remote.empty()) j["remote"] = r.remote;
  if (r.n > 0) {
    auto opt = [](int64_t v) { return v < 0 ? json(nullptr) : json(v); };
    j["policy"] = r.policy;
    j["budget"] = r.budget < 0 ? json(nullptr) : json(r.budget);
    j["n"] = r.n;
    j["stream"] = r.stream;
    j["prompt_tokens"] = opt(r.prompt_tokens);
    j["cached_tokens"] = opt(r.cached_tokens);
    j["generated_tokens"] = opt(r.generated_tokens);
    j["ttft_seconds"] = r.ttft_seconds < 0 ? json(nullptr) : json(r.ttft_seconds);
    if (!r.user.empty()) j["user"] = r.user;
  }
  if (!r.error.empty()) j["error"] = r.error;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string format_access(const AccessRecord& r, LogFormat f) {
  return f == LogFormat::kJson ? format_access_json(r) : format_access_text(r);
}

}  // namespace tova::server
