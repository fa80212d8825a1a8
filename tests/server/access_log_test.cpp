// The access-log line: every field of a generation request in text and JSON, one line whatever
// a client sent (control bytes and quotes in a path escaped).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "access_log.h"

namespace tova::server {
namespace {

AccessRecord generation() {
  return {.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764151200123)),
          .id = "6926f2a0000001",
          .method = "POST",
          .path = "/v1/chat/completions",
          .remote = "127.0.0.1",
          .status = 200,
          .seconds = 0.2456,
          .policy = "tova",
          .budget = 256,
          .stream = true,
          .n = 1,
          .user = "alice",
          .prompt_tokens = 40,
          .cached_tokens = 32,
          .generated_tokens = 64,
          .ttft_seconds = 0.0123};
}

TEST(AccessLog, TextHasEveryFieldOnOneLine) {
  EXPECT_EQ(format_access_text(generation()),
            "2025-11-26T10:00:00.123Z 6926f2a0000001 POST /v1/chat/completions 200 0.246s "
            "policy=tova budget=256 stream prompt=40 cached=32 generated=64 ttft=0.012s "
            "user=alice from=127.0.0.1");
  AccessRecord r{.time = {}, .id = "x", .method = "GET", .path = "/a\n\"b", .status = 404};
  r.error = "no route GET /a";
  const std::string line = format_access_text(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("/a\\x0a\\x22b 404"), std::string::npos) << line;
  EXPECT_EQ(line.find("policy="), std::string::npos);  // not a generation request
  EXPECT_NE(line.find("error=\"no route GET /a\""), std::string::npos);
}

TEST(AccessLog, JsonHasTheSameFields) {
  const auto j = nlohmann::json::parse(format_access_json(generation()));
  EXPECT_EQ(j["time"], "2025-11-26T10:00:00.123Z");
  EXPECT_EQ(j["id"], "6926f2a0000001");
  EXPECT_EQ(j["path"], "/v1/chat/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["policy"], "tova");
  EXPECT_EQ(j["budget"], 256);
  EXPECT_EQ(j["prompt_tokens"], 40);
  EXPECT_EQ(j["cached_tokens"], 32);
  EXPECT_EQ(j["generated_tokens"], 64);
  EXPECT_DOUBLE_EQ(j["ttft_seconds"].get<double>(), 0.0123);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["user"], "alice");
  AccessRecord failed = generation();
  failed.status = 400;
  failed.budget = -1;
  failed.generated_tokens = -1;
  failed.ttft_seconds = -1;
  const auto k = nlohmann::json::parse(format_access_json(failed));
  EXPECT_TRUE(k["budget"].is_null());
  EXPECT_TRUE(k["generated_tokens"].is_null());
  EXPECT_TRUE(k["ttft_seconds"].is_null());
}

}  // namespace
}  // namespace tova::server
