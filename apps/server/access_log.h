// One access-log line per request (`tova serve` writes them on stderr): who asked what, under
// which multi-state, how many tokens it cost and how long the first one took. Text for people,
// JSON (one object per line) for log pipelines (--log-format json). Pure formatting.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tova::server {

enum class LogFormat { kText, kJson, kNone };

struct AccessRecord {
  std::chrono::system_clock::time_point time;  // when the request arrived
  std::string id;                              // the request id (X-Request-Id)
  std::string method;
  std::string path;
  std::string remote;  // peer address
  int status = 0;      // 499: the client left before the answer was complete
  double seconds = 0;  // arrival to the last byte
  // Generation requests only (empty / negative otherwise).
  std::string policy;
  int budget = -1;  // -1: unbounded or none
  bool stream = false;
  int n = 0;                    // choices asked for (0: not a generation request)
  std::string user;             // the request's `user` field (OpenAI's end user), if any
  int64_t prompt_tokens = -1;   // after chat rendering
  int64_t cached_tokens = -1;   // continued from a held or stored state
  int64_t generated_tokens = -1;
  double ttft_seconds = -1;  // arrival to the first generated token
  std::string error;         // the error message of a failed request
};

// "2026-11-26T10:00:00.123Z req-... POST /v1/chat/completions 200 0.245s policy=tova budget=256
// prompt=40 cached=32 generated=64 ttft=0.012s"
std::string format_access_text(const AccessRecord& r);
// The same fields as one JSON object on one line.
std::string format_access_json(const AccessRecord& r);
std::string format_access(const AccessRecord& r, LogFormat f);

}  // namespace tova::server
