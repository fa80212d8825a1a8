// Harness: the request decoders of `tova serve` (apps/server/codec, then plan: rendering and
// limits) on arbitrary bytes, for the bundled stories260K model. Byte 0 picks the endpoint (and,
// for chat, the template family of byte 1); the rest is the request body (or, for GET
// /v1/models/NAME, the name). What the server would send back is serialised exactly as the
// server does. Checks: every rejection is a 4xx with a one-line message; an accepted generation
// request is within every limit the server's defaults set (token ids in the vocabulary,
// max_tokens, n, logprobs, prompt length, K/V memory).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codec.h"
#include "fuzz_shared_dir.h"
#include "plan.h"
#include "tova/chat.h"
#include "tova/engine.h"

namespace {

using namespace tova;
using server::ApiError;

std::unique_ptr<Engine> g_engine;
std::vector<ChatTemplate> g_templates;
server::ApiDefaults g_defaults;

std::string model_path() { return tova::fuzz::shared_dir() + "/models/stories260K.gguf"; }

void check_error(const ApiError& e) {
  if (e.status < 400 || e.status > 499) __builtin_trap();
  if (e.message.empty() || e.message.find('\n') != std::string::npos) __builtin_trap();
  (void)server::to_json_text(server::error_json(e));  // must not throw
}

void check_generation(const std::string& body, bool chat, const ChatTemplate* t) {
  auto decoded = server::decode_completion_request(body, chat, g_defaults);
  if (const auto* e = std::get_if<ApiError>(&decoded)) {
    check_error(*e);
    return;
  }
  const server::CompletionRequest& r = std::get<server::CompletionRequest>(decoded);
  if (r.n < 1 || r.n > g_defaults.max_n) __builtin_trap();
  if (r.logprobs < -1 || r.logprobs > 20) __builtin_trap();
  if (r.include_usage && !r.stream) __builtin_trap();
  auto planned = server::plan_generation(r, "fuzz", *g_engine, t, "no chat template", g_defaults);
  if (const auto* e = std::get_if<ApiError>(&planned)) {
    check_error(*e);
    return;
  }
  const server::GenerationRequest& g = std::get<server::GenerationRequest>(planned);
  const int32_t n_vocab = g_engine->n_vocab();
  if (g.prompt.empty()) __builtin_trap();
  if (static_cast<int64_t>(g.prompt.size()) > g_defaults.max_prompt_tokens) __builtin_trap();
  for (int32_t id : g.prompt) {
    if (id < 0 || id >= n_vocab) __builtin_trap();
  }
  if (g.max_tokens < 1 || g.max_tokens > g_defaults.max_tokens_cap) __builtin_trap();
  if (g.reserve_bytes * static_cast<uint64_t>(g.n) > g_defaults.kv_memory) __builtin_trap();
  if (g.stop.size() > 4) __builtin_trap();
  for (const auto& s : g.stop) {
    if (s.empty()) __builtin_trap();
  }
  // The response to it serialises (the client's stop strings and text in it).
  const server::ResponseHead head{.chat = chat, .id = "x", .created = 1, .model = "m"};
  server::Choice c{.text = g.stop.empty() ? std::string() : g.stop[0], .finish_reason = "stop"};
  (void)server::to_json_text(server::completion_json(head, {c}, server::usage_json(1, 1, 0), {}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto e = Engine::load({.model_path = model_path(), .n_threads = 1});
  if (!e.ok()) {
    std::fprintf(stderr, "fuzz_http_request: %s (set TOVA_SHARED_DIR)\n", e.message().c_str());
    std::exit(77);
  }
  g_engine = std::move(*e);
  for (const char* name : {"chatml", "qwen2.5", "qwen3", "llama2", "llama3", "llama3.1", "mistral",
                           "gemma", "gemma3", "phi3", "zephyr"}) {
    auto t = g_engine->chat_template(name);
    if (!t.ok()) {
      std::fprintf(stderr, "fuzz_http_request: %s\n", t.message().c_str());
      std::exit(1);
    }
    g_templates.push_back(*t);
  }
  // `tova serve`'s defaults, with limits small enough that a hostile request reaches them.
  g_defaults.model_id = "stories260K";
  g_defaults.ctx = 512;
  g_defaults.max_tokens_cap = 256;
  g_defaults.max_prompt_tokens = 1024;
  g_defaults.kv_memory = 64ull << 20;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 5) {
    case 0:
      check_generation(rest, false, nullptr);
      break;
    case 1: {
      // A model without a usable template (null) or one of the families.
      const size_t i = data[1] % (g_templates.size() + 1);
      check_generation(rest, true, i == g_templates.size() ? nullptr : &g_templates[i]);
      break;
    }
    case 2: {
      auto r = server::decode_tokenize_request(rest);
      if (const auto* e = std::get_if<ApiError>(&r)) {
        check_error(*e);
        break;
      }
      const auto& t = std::get<server::TokenizeRequest>(r);
      (void)server::to_json_text(nlohmann::json{{"tokens", g_engine->tokenize(t.content, t.add_special)}});
      break;
    }
    case 3: {
      auto r = server::decode_detokenize_request(rest);
      if (const auto* e = std::get_if<ApiError>(&r)) {
        check_error(*e);
        break;
      }
      const auto& ids = std::get<std::vector<int32_t>>(r);
      auto text = g_engine->detokenize(ids);
      if (text.ok()) (void)server::to_json_text(nlohmann::json{{"content", *text}});
      break;
    }
    default:
      // GET /v1/models/NAME for a name that is not the model's: the 404 quotes it.
      check_error(server::model_not_found(rest, g_defaults.model_id));
      break;
  }
  return 0;
}
