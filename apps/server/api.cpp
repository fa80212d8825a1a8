#include "api.h"

#include <random>
#include <set>

#include "runtime/cache_options.h"
#include "tokenizer/tokenizer.h"

namespace tova::server {

using nlohmann::json;

namespace {

// Control characters escaped (\n, \xNN): an error message stays one line even when it quotes
// a client's string.
std::string escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

ApiError bad(const std::string& param, const std::string& message) {
  return ApiError{.status = 400, .message = escape_controls(message), .param = param};
}

// Reads an optional number field within [lo, hi].
std::optional<ApiError> number(const json& j, const char* key, double lo, double hi, float& out) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) return bad(key, fmt::format("'{}' must be a number", key));
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    return bad(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v));
  }
  out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> integer(const json& j, const char* key, int64_t lo, int64_t hi,
                                int64_t& out) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer()) return bad(key, fmt::format("'{}' must be an integer", key));
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) {
    return bad(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v));
  }
  out = v;
  return std::nullopt;
}

}  // namespace

std::string shown(std::string_view client_text) {
  constexpr size_t kMax = 64;
  if (client_text.size() <= kMax) return escape_controls(client_text);
  return escape_controls(client_text.substr(0, kMax)) + "...";
}

ApiError model_not_found(std::string_view name, const std::string& served) {
  return ApiError{.status = 404,
                  .message = fmt::format("the model '{}' does not exist (this server serves '{}')",
                                         shown(name), served),
                  .param = "model",
                  .code = "model_not_found"};
}

std::string to_json_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::variant<TokenizeRequest, ApiError> parse_tokenize_request(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("content") || !j["content"].is_string()) {
    return bad("content", "expected {\"content\": STRING}");
  }
  TokenizeRequest r;
  for (const auto& [key, value] : j.items()) {
    if (key != "content" && key != "add_special") {
      return bad(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
    }
  }
  if (j.contains("add_special")) {
    if (!j["add_special"].is_boolean()) return bad("add_special", "'add_special' must be a boolean");
    r.add_special = j["add_special"].get<bool>();
  }
  r.content = j["content"].get<std::string>();
  return r;
}

std::variant<std::vector<int32_t>, ApiError> parse_detokenize_request(const std::string& body,
                                                                     int32_t n_vocab) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
    return bad("tokens", "expected {\"tokens\": [ID, ...]}");
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "tokens") return bad(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
  }
  std::vector<int32_t> ids;
  for (const auto& x : j["tokens"]) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= n_vocab) {
      return bad("tokens", fmt::format("'tokens' must hold token ids in [0, {})", n_vocab));
    }
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

json error_json(const ApiError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

json kv_json(const KvReport& kv) {
  int held_max = 0;
  int64_t evicted = 0;
  for (int h : kv.states_held) held_max = std::max(held_max, h);
  for (int64_t n : kv.tokens_evicted) evicted = std::max(evicted, n);
  return {{"policy", kv.policy},
          {"budget", kv.budget < 0 ? json(nullptr) : json(kv.budget)},
          {"prefill", kv.prefill},
          {"kv_bytes", kv.kv_bytes},
          {"tokens_seen", kv.tokens_seen},
          {"states_held", held_max},
          {"tokens_evicted", evicted},
          {"states_held_per_layer", kv.states_held},
          {"tokens_evicted_per_layer", kv.tokens_evicted},
          {"reused_prompt_tokens", kv.reused_prompt_tokens}};
}

json usage_json(int64_t prompt, int64_t completion, int64_t reused) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", reused}}}};
}

json state_view_json(const StateView& v, const std::vector<std::string>& pieces) {
  return {{"id", v.id},
          {"object", "tova.session"},
          {"generating", v.generating},
          {"tova", kv_json(v.kv)},
          {"positions", v.positions},
          {"kv_type", v.kv_type},
          {"n_layer", v.n_layer},
          {"n_head_kv", v.n_head_kv},
          {"tokens", v.tokens},
          {"pieces", pieces},
          {"held_by", v.held_by}};
}

std::variant<ParsedRequest, ApiError> parse_generation_request(const std::string& body, bool chat,
                                                               const Engine& engine,
                                                               const ApiDefaults& d,
                                                               const tok::ChatTemplate* renderer,
                                                               const std::string& chat_error) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return bad("", "the request body is not valid JSON");
  if (!j.is_object()) return bad("", "the request body must be a JSON object");
  static const std::set<std::string> kCommon = {"model",
                                                "max_tokens",
                                                "max_completion_tokens",
                                                "temperature",
                                                "top_p",
                                                "top_k",
                                                "min_p",
                                                "seed",
                                                "stop",
                                                "stream",
                                                "stream_options",
                                                "repetition_penalty",
                                                "frequency_penalty",
                                                "presence_penalty",
                                                "kv_policy",
                                                "kv_budget",
                                                "kv_positions",
                                                "n",
                                                "user",
                                                "logprobs",
                                                "echo",
                                                "logit_bias",
                                                "cache_prompt",
                                                "ignore_eos"};
  for (const auto& [key, value] : j.items()) {
    if (kCommon.count(key) == 0 && key != (chat ? "messages" : "prompt")) {
      return bad(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
    }
  }
  ParsedRequest p;
  p.chat = chat;
  // One model is served: any name is accepted (as llama-server does; clients send theirs), and
  // responses report the served one.
  if (j.contains("model") && !j["model"].is_null() && !j["model"].is_string()) {
    return bad("model", "'model' must be a string");
  }
  p.model = d.model_id;
  // Fields whose only supported value is the default.
  if (j.contains("n") && !(j["n"].is_number_integer() && j["n"].get<int64_t>() == 1)) {
    return bad("n", "only 'n': 1 is supported");
  }
  if (j.contains("logprobs") && !j["logprobs"].is_null() &&
      !(j["logprobs"].is_boolean() && !j["logprobs"].get<bool>())) {
    return bad("logprobs", "'logprobs' is not supported");
  }
  if (j.contains("echo") && !(j["echo"].is_boolean() && !j["echo"].get<bool>())) {
    return bad("echo", "'echo' is not supported");
  }
  if (j.contains("logit_bias") && !j["logit_bias"].is_null() &&
      !(j["logit_bias"].is_object() && j["logit_bias"].empty())) {
    return bad("logit_bias", "'logit_bias' is not supported");
  }
  if (j.contains("user") && !j["user"].is_string()) return bad("user", "'user' must be a string");
  if (j.contains("cache_prompt") && !j["cache_prompt"].is_boolean()) {
    return bad("cache_prompt", "'cache_prompt' must be a boolean");
  }
  p.gen.allow_reuse = j.value("cache_prompt", true);
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_boolean()) {
    return bad("ignore_eos", "'ignore_eos' must be a boolean");
  }
  p.gen.ignore_eos = j.value("ignore_eos", false);
  for (const char* key : {"frequency_penalty", "presence_penalty"}) {
    float v = 0;
    if (auto e = number(j, key, -2, 2, v)) return *e;
    if (v != 0) {
      return bad(key, fmt::format("'{}' is not supported by the sampler (use "
                                  "'repetition_penalty')",
                                  key));
    }
  }
  // Sampling: OpenAI's defaults (temperature 1, nucleus off).
  SamplerParams& s = p.gen.sampling;
  s = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .repeat_penalty = 1.0f};
  if (auto e = number(j, "temperature", 0, 2, s.temp)) return *e;
  if (auto e = number(j, "top_p", 0, 1, s.top_p)) return *e;
  if (j.contains("top_p") && s.top_p <= 0) return bad("top_p", "'top_p' must be > 0");
  if (auto e = number(j, "min_p", 0, 1, s.min_p)) return *e;
  if (auto e = number(j, "repetition_penalty", 0.01, 10, s.repeat_penalty)) return *e;
  int64_t v = 0;
  if (auto e = integer(j, "top_k", 0, 1 << 20, v)) return *e;
  s.top_k = static_cast<int>(v);
  int64_t seed = -1;
  if (auto e = integer(j, "seed", INT64_MIN, INT64_MAX, seed)) return *e;
  s.seed = j.contains("seed") && !j["seed"].is_null() ? static_cast<uint64_t>(seed)
                                                      : std::random_device{}();
  int64_t max_tokens = d.default_max_tokens;
  if (!chat) max_tokens = std::min<int64_t>(16, d.max_tokens_cap);  // OpenAI's default
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (auto e = integer(j, key, 1, d.max_tokens_cap, max_tokens)) return *e;
  }
  p.gen.max_tokens = static_cast<int>(max_tokens);
  // stop: a string or a list of up to 4 non-empty strings.
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& st = j["stop"];
    if (st.is_string()) {
      p.gen.stop.push_back(st.get<std::string>());
    } else if (st.is_array() && st.size() <= 4) {
      for (const auto& x : st) {
        if (!x.is_string()) return bad("stop", "'stop' must be a string or a list of strings");
        p.gen.stop.push_back(x.get<std::string>());
      }
    } else {
      return bad("stop", "'stop' must be a string or a list of at most 4 strings");
    }
    for (const auto& x : p.gen.stop) {
      if (x.empty()) return bad("stop", "a stop string must not be empty");
    }
  }
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return bad("stream", "'stream' must be a boolean");
    p.stream = j["stream"].get<bool>();
  }
  if (j.contains("stream_options") && !j["stream_options"].is_null()) {
    const json& so = j["stream_options"];
    if (!so.is_object()) return bad("stream_options", "'stream_options' must be an object");
    if (!p.stream) return bad("stream_options", "'stream_options' needs 'stream': true");
    for (const auto& [key, val] : so.items()) {
      if (key != "include_usage") {
        return bad("stream_options", fmt::format("unknown stream option '{}'", key));
      }
      if (!val.is_boolean()) return bad("stream_options", "'include_usage' must be a boolean");
      p.include_usage = val.get<bool>();
    }
  }
  // The multi-state: per-request policy and budget, defaults from the flags.
  std::string policy = d.cache.policy.label();
  int64_t budget = d.cache.policy.bounded() ? d.cache.policy.budget : 0;
  if (j.contains("kv_policy") && !j["kv_policy"].is_null()) {
    if (!j["kv_policy"].is_string()) return bad("kv_policy", "'kv_policy' must be a string");
    policy = j["kv_policy"].get<std::string>();
  }
  if (auto e = integer(j, "kv_budget", 0, INT32_MAX, budget)) return *e;
  auto spec = kv::parse_policy(policy, static_cast<int>(budget));
  if (!spec.ok()) return bad(j.contains("kv_policy") ? "kv_policy" : "kv_budget", spec.message());
  p.gen.cache = d.cache;
  p.gen.cache.policy = *spec;
  if (j.contains("kv_positions") && !j["kv_positions"].is_null()) {
    if (!j["kv_positions"].is_string()) {
      return bad("kv_positions", "'kv_positions' must be a string");
    }
    auto mode = kv::parse_position_mode(j["kv_positions"].get<std::string>());
    if (!mode.ok()) return bad("kv_positions", mode.message());
    p.gen.cache.positions = *mode;
  }

  // The prompt.
  const tok::Tokenizer& tk = engine.tokenizer();
  if (chat) {
    if (!j.contains("messages")) return bad("messages", "'messages' is required");
    const json& ms = j["messages"];
    if (!ms.is_array() || ms.empty()) return bad("messages", "'messages' must be a non-empty list");
    std::vector<tok::ChatMessage> msgs;
    for (const auto& m : ms) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
          !m.contains("content") || !m["content"].is_string()) {
        return bad("messages", "each message must be an object with string 'role' and 'content'");
      }
      msgs.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    if (renderer == nullptr) return bad("messages", chat_error);
    auto text = renderer->render_prompt(msgs);
    if (!text.ok()) return bad("messages", text.message());
    p.gen.prompt = tok::encode_chat_prompt(tk, *text);
  } else {
    if (!j.contains("prompt")) return bad("prompt", "'prompt' is required");
    const json& pr = j["prompt"];
    if (pr.is_string()) {
      p.gen.prompt = tk.encode(pr.get<std::string>(), true);
    } else if (pr.is_array() && !pr.empty() && pr[0].is_number_integer()) {
      for (const auto& x : pr) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= tk.n_vocab()) {
          return bad("prompt",
                     fmt::format("a token id in 'prompt' is not in [0, {})", tk.n_vocab()));
        }
        p.gen.prompt.push_back(x.get<int32_t>());
      }
    } else if (pr.is_array()) {
      return bad("prompt",
                 "'prompt' must be a string or a list of token ids (one prompt per "
                 "request)");
    } else {
      return bad("prompt", "'prompt' must be a string or a list of token ids");
    }
  }
  if (p.gen.prompt.empty()) return bad(chat ? "messages" : "prompt", "the prompt gives no tokens");
  const int64_t n_prompt = static_cast<int64_t>(p.gen.prompt.size());
  if (n_prompt > d.max_prompt_tokens) {
    return ApiError{.status = 400,
                    .message = fmt::format("the prompt has {} tokens, more than the limit {}",
                                           n_prompt, d.max_prompt_tokens),
                    .param = chat ? "messages" : "prompt",
                    .code = "context_length_exceeded"};
  }
  if (!spec->bounded() && n_prompt + p.gen.max_tokens > d.ctx) {
    return ApiError{
        .status = 400,
        .message = fmt::format("prompt ({} tokens) + max_tokens ({}) exceed the context of an "
                               "unbounded ('full') sequence, {} tokens (--ctx); use a bounded "
                               "kv_policy or fewer tokens",
                               n_prompt, p.gen.max_tokens, d.ctx),
        .param = "max_tokens",
        .code = "context_length_exceeded"};
  }
  // Memory: a bounded state grows to at most k + extra slots, and a budget whose slots cannot
  // fit in --kv-memory is refused (the library refuses it too: memory_limit); this request
  // reserves only the slots it can reach (prompt + max_tokens), which its pool allocates at
  // admission. A `full` state reserves --ctx tokens' worth.
  const uint64_t most = runtime::reserve_bytes(engine.model(), p.gen.cache, n_prompt, d.ctx);
  if (most > d.kv_memory) {
    return ApiError{
        .status = 400,
        .message = spec->bounded()
                       ? fmt::format("kv_budget {}: a multi-state of {} states per layer needs up "
                                     "to {} bytes of K/V memory, more than the server's "
                                     "--kv-memory ({} bytes)",
                                     spec->budget, spec->budget, most, d.kv_memory)
                       : fmt::format("a full multi-state of --ctx {} tokens needs {} bytes of K/V "
                                     "memory, more than the server's --kv-memory ({} bytes)",
                                     d.ctx, most, d.kv_memory),
        .param = "kv_budget",
        .code = "kv_budget_exceeds_memory"};
  }
  p.gen.cache.memory_limit = d.kv_memory;
  p.gen.reserve_bytes = most;
  if (spec->bounded()) {
    const int64_t slots_most = spec->budget + runtime::max_new_for(p.gen.cache.prefill, n_prompt);
    const int64_t reach = n_prompt + p.gen.max_tokens;
    if (reach < slots_most) {
      p.gen.reserve_bytes = most / static_cast<uint64_t>(slots_most) * static_cast<uint64_t>(reach);
    }
    p.gen.cache.reserve = std::min(reach, slots_most);
  }
  return p;
}

}  // namespace tova::server
