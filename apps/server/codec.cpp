#include "codec.h"

#include <fmt/format.h>

#include <random>
#include <set>

#include "tova/policy_spec.h"
#include "tova/position_mode.h"
#include "tova/grammar.h"

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

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

// An optional number field within [lo, hi].
std::optional<ApiError> number(const json& j, const char* key, double lo, double hi, float& out) {
  if (!present(j, key)) return std::nullopt;
  if (!j[key].is_number()) return bad_request(key, fmt::format("'{}' must be a number", key));
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    return bad_request(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v));
  }
  out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> integer(const json& j, const char* key, int64_t lo, int64_t hi,
                                int64_t& out) {
  if (!present(j, key)) return std::nullopt;
  if (!j[key].is_number_integer()) {
    return bad_request(key, fmt::format("'{}' must be an integer", key));
  }
  const int64_t v = j[key].is_number_unsigned() && j[key].get<uint64_t>() > INT64_MAX
                        ? INT64_MAX
                        : j[key].get<int64_t>();
  if (v < lo || v > hi) {
    return bad_request(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, v));
  }
  out = v;
  return std::nullopt;
}

std::optional<ApiError> boolean(const json& j, const char* key, bool& out) {
  if (!present(j, key)) return std::nullopt;
  if (!j[key].is_boolean()) return bad_request(key, fmt::format("'{}' must be a boolean", key));
  out = j[key].get<bool>();
  return std::nullopt;
}

// A message's content: a string, or a list of text parts ({"type": "text", "text": ...}),
// joined by newlines. Other parts (images, audio, files) are a 400 naming their type.
std::variant<std::string, ApiError> message_content(const json& c) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array() || c.empty()) {
    return bad_request("messages",
                       "a message's 'content' must be a string or a non-empty list of parts");
  }
  std::string out;
  for (const auto& part : c) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return bad_request("messages", "each content part must be an object with a 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return bad_request("messages",
                         fmt::format("content parts of type '{}' are not supported (text only)",
                                     shown(type)));
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return bad_request("messages", "a text part needs a string 'text'");
    }
    for (const auto& [key, value] : part.items()) {
      if (key != "type" && key != "text") {
        return bad_request("messages", fmt::format("unknown field '{}' in a text part", shown(key)));
      }
    }
    if (!out.empty()) out += "\n";
    out += part["text"].get<std::string>();
  }
  return out;
}

std::variant<std::vector<tok::ChatMessage>, ApiError> decode_messages(const json& j) {
  if (!j.contains("messages")) return bad_request("messages", "'messages' is required");
  const json& ms = j["messages"];
  if (!ms.is_array() || ms.empty()) {
    return bad_request("messages", "'messages' must be a non-empty list");
  }
  std::vector<tok::ChatMessage> out;
  for (const auto& m : ms) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad_request("messages", "each message must be an object with a string 'role'");
    }
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system message
    if (role != "system" && role != "user" && role != "assistant") {
      return bad_request("messages",
                         fmt::format("message role '{}' is not supported (system, developer, "
                                     "user, assistant)",
                                     shown(role)));
    }
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content") continue;
      if (key == "refusal" && value.is_null()) continue;
      return bad_request("messages",
                         fmt::format("'{}' in a message is not supported (role and content only)",
                                     shown(key)));
    }
    if (!m.contains("content") || m["content"].is_null()) {
      return bad_request("messages", "each message needs a 'content'");
    }
    auto content = message_content(m["content"]);
    if (auto* e = std::get_if<ApiError>(&content)) return *e;
    out.push_back({std::move(role), std::move(std::get<std::string>(content))});
  }
  return out;
}

// Constrained output: response_format (OpenAI's json_object / json_schema) or llama.cpp's
// `grammar` (GBNF text), as the sampler's grammar; a malformed one is a 400 naming it.
std::optional<ApiError> decode_grammar(const json& j, std::string_view body, std::string& grammar) {
  if (present(j, "grammar")) {
    if (!j["grammar"].is_string()) return bad_request("grammar", "'grammar' must be a string (GBNF)");
    grammar = j["grammar"].get<std::string>();
    if (auto st = check_grammar(grammar); !st.ok()) return bad_request("grammar", st.message());
  }
  if (!present(j, "response_format")) return std::nullopt;
  const json& f = j["response_format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) {
    return bad_request("response_format", "'response_format' must be {\"type\": ...}");
  }
  const std::string type = f["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (!grammar.empty()) {
    return bad_request("response_format", "'response_format' and 'grammar' together: give one");
  }
  if (type == "json_object" && !f.contains("schema")) {
    grammar = json_object_grammar();
    return std::nullopt;
  }
  // {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": ...}}, and
  // llama-server's {"type": "json_object", "schema": {...}}.
  const json* schema = nullptr;
  if (type == "json_schema") {
    if (!f.contains("json_schema") || !f["json_schema"].is_object()) {
      return bad_request("response_format",
                         "response_format 'json_schema' needs a 'json_schema' object");
    }
    const json& js = f["json_schema"];
    if (js.contains("schema")) schema = &js["schema"];
  } else if (type == "json_object") {
    schema = &f["schema"];
  } else {
    return bad_request("response_format",
                       fmt::format("response_format '{}' is not supported: 'text', "
                                   "'json_object' or 'json_schema'",
                                   shown(type)));
  }
  if (schema == nullptr) {
    grammar = json_object_grammar();  // a json_schema without a schema: any JSON object
    return std::nullopt;
  }
  // Properties keep the client's order (json sorts keys): the schema re-read as it was sent.
  const auto ordered = nlohmann::ordered_json::parse(body, nullptr, false);
  std::string text = schema->dump();
  if (!ordered.is_discarded()) {
    const auto& rf = ordered["response_format"];
    const auto& sch = type == "json_schema" ? rf["json_schema"]["schema"] : rf["schema"];
    text = sch.dump();
  }
  auto g = json_schema_grammar(text);
  if (!g.ok()) return bad_request("response_format", g.message());
  grammar = std::move(*g);
  return std::nullopt;
}

}  // namespace

ApiError bad_request(const std::string& param, const std::string& message) {
  return ApiError{.status = 400, .message = escape_controls(message), .param = param};
}

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

std::variant<CompletionRequest, ApiError> decode_completion_request(std::string_view body,
                                                                    bool chat,
                                                                    const ApiDefaults& d) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return bad_request("", "the request body is not valid JSON");
  if (!j.is_object()) return bad_request("", "the request body must be a JSON object");
  // Every field a request may carry; anything else is named in a 400.
  static const std::set<std::string> kCommon = {
      "model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "stream",
      "stream_options", "repetition_penalty", "frequency_penalty", "presence_penalty",
      "kv_policy", "kv_budget", "kv_positions", "kv_type", "kv_type_k", "kv_type_v", "n", "user", "logprobs", "logit_bias",
      "cache_prompt", "ignore_eos", "metadata", "store", "response_format", "grammar"};
  static const std::set<std::string> kChat = {"messages", "max_completion_tokens",
                                              "top_logprobs"};
  static const std::set<std::string> kCompletion = {"prompt", "echo", "suffix", "best_of"};
  for (const auto& [key, value] : j.items()) {
    if (kCommon.count(key) == 0 && (chat ? kChat : kCompletion).count(key) == 0) {
      return bad_request(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
    }
  }
  CompletionRequest r;
  r.chat = chat;
  // One model is served: any name is accepted (as llama-server does; clients send theirs), and
  // responses report the served one.
  if (present(j, "model") && !j["model"].is_string()) {
    return bad_request("model", "'model' must be a string");
  }
  // Accepted and recorded, changing nothing the model computes: the end user (logged),
  // OpenAI's metadata and store flags.
  if (present(j, "user")) {
    if (!j["user"].is_string()) return bad_request("user", "'user' must be a string");
    r.user = j["user"].get<std::string>();
  }
  if (present(j, "metadata")) {
    const json& m = j["metadata"];
    if (!m.is_object() || m.size() > 16) {
      return bad_request("metadata", "'metadata' must be an object of at most 16 strings");
    }
    for (const auto& [key, value] : m.items()) {
      if (!value.is_string() || key.size() > 64 || value.get<std::string>().size() > 512) {
        return bad_request("metadata",
                           "'metadata' values must be strings (keys up to 64 characters, values "
                           "up to 512)");
      }
    }
  }
  bool store = false;
  if (auto e = boolean(j, "store", store)) return *e;

  // How many choices, and their log-probabilities.
  int64_t n = 1;
  if (auto e = integer(j, "n", 1, d.max_n, n)) return *e;
  r.n = static_cast<int>(n);
  if (chat) {
    bool want = false;
    if (auto e = boolean(j, "logprobs", want)) return *e;
    int64_t top = 0;
    if (auto e = integer(j, "top_logprobs", 0, 20, top)) return *e;
    if (present(j, "top_logprobs") && !want) {
      return bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
    r.logprobs = want ? static_cast<int>(top) : -1;
  } else {
    int64_t top = -1;
    if (present(j, "logprobs") && j["logprobs"].is_boolean()) {
      return bad_request("logprobs", "'logprobs' of a completion is a number of alternatives "
                                     "(0 to 5)");
    }
    if (auto e = integer(j, "logprobs", 0, 5, top)) return *e;
    r.logprobs = static_cast<int>(top);
    if (present(j, "echo") && !(j["echo"].is_boolean() && !j["echo"].get<bool>())) {
      return bad_request("echo", "'echo' is not supported");
    }
    if (present(j, "suffix") && !(j["suffix"].is_string() && j["suffix"].get<std::string>().empty())) {
      return bad_request("suffix", "'suffix' is not supported");
    }
    int64_t best_of = 1;
    if (auto e = integer(j, "best_of", 1, 1, best_of)) return *e;
  }
  if (present(j, "logit_bias") && !(j["logit_bias"].is_object() && j["logit_bias"].empty())) {
    return bad_request("logit_bias", "'logit_bias' is not supported");
  }
  if (auto e = boolean(j, "cache_prompt", r.allow_reuse)) return *e;
  if (auto e = boolean(j, "ignore_eos", r.ignore_eos)) return *e;
  for (const char* key : {"frequency_penalty", "presence_penalty"}) {
    float v = 0;
    if (auto e = number(j, key, -2, 2, v)) return *e;
    if (v != 0) {
      return bad_request(key, fmt::format("'{}' is not supported by the sampler (use "
                                          "'repetition_penalty')",
                                          key));
    }
  }

  // Sampling: OpenAI's defaults (temperature 1, nucleus off).
  SamplerParams& s = r.sampling;
  s = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .repeat_penalty = 1.0f};
  if (auto e = number(j, "temperature", 0, 2, s.temp)) return *e;
  if (auto e = number(j, "top_p", 0, 1, s.top_p)) return *e;
  if (present(j, "top_p") && s.top_p <= 0) return bad_request("top_p", "'top_p' must be > 0");
  if (auto e = number(j, "min_p", 0, 1, s.min_p)) return *e;
  if (auto e = number(j, "repetition_penalty", 0.01, 10, s.repeat_penalty)) return *e;
  int64_t v = 0;
  if (auto e = integer(j, "top_k", 0, 1 << 20, v)) return *e;
  s.top_k = static_cast<int>(v);
  int64_t seed = -1;
  if (auto e = integer(j, "seed", INT64_MIN, INT64_MAX, seed)) return *e;
  s.seed = present(j, "seed") ? static_cast<uint64_t>(seed) : std::random_device{}();
  if (auto e = decode_grammar(j, body, s.grammar)) return *e;

  int64_t max_tokens = chat ? d.default_max_tokens : std::min<int64_t>(16, d.max_tokens_cap);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (chat || std::string_view(key) == "max_tokens") {
      if (auto e = integer(j, key, 1, d.max_tokens_cap, max_tokens)) return *e;
    }
  }
  r.max_tokens = static_cast<int>(max_tokens);
  // stop: a string or a list of up to 4 non-empty strings.
  if (present(j, "stop")) {
    const json& st = j["stop"];
    if (st.is_string()) {
      r.stop.push_back(st.get<std::string>());
    } else if (st.is_array() && st.size() <= 4) {
      for (const auto& x : st) {
        if (!x.is_string()) {
          return bad_request("stop", "'stop' must be a string or a list of strings");
        }
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      return bad_request("stop", "'stop' must be a string or a list of at most 4 strings");
    }
    for (const auto& x : r.stop) {
      if (x.empty()) return bad_request("stop", "a stop string must not be empty");
    }
  }
  if (auto e = boolean(j, "stream", r.stream)) return *e;
  if (present(j, "stream_options")) {
    const json& so = j["stream_options"];
    if (!so.is_object()) return bad_request("stream_options", "'stream_options' must be an object");
    if (!r.stream) return bad_request("stream_options", "'stream_options' needs 'stream': true");
    for (const auto& [key, val] : so.items()) {
      if (key != "include_usage") {
        return bad_request("stream_options", fmt::format("unknown stream option '{}'", shown(key)));
      }
      if (!val.is_boolean()) {
        return bad_request("stream_options", "'include_usage' must be a boolean");
      }
      r.include_usage = val.get<bool>();
    }
  }

  // The multi-state: per-request policy and budget, defaults from the flags.
  std::string policy = d.cache.policy.label();
  int64_t budget = d.cache.policy.bounded() ? d.cache.policy.budget : 0;
  if (present(j, "kv_policy")) {
    if (!j["kv_policy"].is_string()) return bad_request("kv_policy", "'kv_policy' must be a string");
    policy = j["kv_policy"].get<std::string>();
  }
  if (auto e = integer(j, "kv_budget", 0, INT32_MAX, budget)) return *e;
  auto spec = kv::parse_policy(policy, static_cast<int>(budget));
  if (!spec.ok()) return bad_request(present(j, "kv_policy") ? "kv_policy" : "kv_budget", spec.message());
  r.cache = d.cache;
  r.cache.policy = *spec;
  if (present(j, "kv_positions")) {
    if (!j["kv_positions"].is_string()) {
      return bad_request("kv_positions", "'kv_positions' must be a string");
    }
    auto mode = kv::parse_position_mode(j["kv_positions"].get<std::string>());
    if (!mode.ok()) return bad_request("kv_positions", mode.message());
    r.cache.positions = *mode;
  }
  // K/V storage: kv_type is a format ("q8_0", "k=q8_0,v=f16", "q4_0+rot"); kv_type_k and
  // kv_type_v set one side (llama.cpp's -ctk / -ctv). Whether the model's head_dim suits it is
  // checked by plan_generation.
  for (const char* key : {"kv_type", "kv_type_k", "kv_type_v"}) {
    if (!present(j, key)) continue;
    if (!j[key].is_string()) return bad_request(key, fmt::format("'{}' must be a string", key));
    const std::string text = j[key].get<std::string>();
    if (std::string_view(key) == "kv_type") {
      auto f = parse_kv_format(text);
      if (!f.ok()) return bad_request(key, f.message());
      r.cache.kv_type = *f;
    } else {
      auto t = parse_kv_type(text);
      if (!t.ok()) return bad_request(key, t.message());
      (std::string_view(key) == "kv_type_k" ? r.cache.kv_type.k : r.cache.kv_type.v) = *t;
    }
  }

  // The prompt (tokenized later, by the handler).
  if (chat) {
    auto ms = decode_messages(j);
    if (auto* e = std::get_if<ApiError>(&ms)) return *e;
    r.messages = std::move(std::get<std::vector<tok::ChatMessage>>(ms));
    return r;
  }
  if (!j.contains("prompt")) return bad_request("prompt", "'prompt' is required");
  const json& pr = j["prompt"];
  if (pr.is_string()) {
    r.prompt_text = pr.get<std::string>();
  } else if (pr.is_array() && pr.size() == 1 && pr[0].is_string()) {
    r.prompt_text = pr[0].get<std::string>();  // a batch of one prompt
  } else if (pr.is_array() && !pr.empty() && pr[0].is_number_integer()) {
    r.prompt_is_ids = true;
    for (const auto& x : pr) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX) {
        return bad_request("prompt", "a token id in 'prompt' is not a token id");
      }
      r.prompt_ids.push_back(x.get<int32_t>());
    }
  } else if (pr.is_array()) {
    return bad_request("prompt",
                       "'prompt' must be a string or a list of token ids (one prompt per "
                       "request)");
  } else {
    return bad_request("prompt", "'prompt' must be a string or a list of token ids");
  }
  return r;
}

std::variant<TokenizeRequest, ApiError> decode_tokenize_request(std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("content") || !j["content"].is_string()) {
    return bad_request("content", "expected {\"content\": STRING}");
  }
  TokenizeRequest r;
  for (const auto& [key, value] : j.items()) {
    if (key != "content" && key != "add_special") {
      return bad_request(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
    }
  }
  if (auto e = boolean(j, "add_special", r.add_special)) return *e;
  r.content = j["content"].get<std::string>();
  return r;
}

std::variant<std::vector<int32_t>, ApiError> decode_detokenize_request(std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
    return bad_request("tokens", "expected {\"tokens\": [ID, ...]}");
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "tokens") {
      return bad_request(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
    }
  }
  std::vector<int32_t> ids;
  for (const auto& x : j["tokens"]) {
    // Whether each is in the vocabulary is the library's one check (Engine::detokenize).
    if (!x.is_number_integer() || x.get<int64_t>() < INT32_MIN || x.get<int64_t>() > INT32_MAX) {
      return bad_request("tokens", "'tokens' must hold token ids (integers)");
    }
    ids.push_back(x.get<int32_t>());
  }
  return ids;
}

// ---- responses ----------------------------------------------------------------------------

std::string to_json_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& j) { return "data: " + to_json_text(j) + "\n\n"; }

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
          {"kv_type", kv.kv_type},
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

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (const char c : s) b.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return b;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...], "refusal": null}.
json chat_logprobs(const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& t : lps) {
    json top = json::array();
    for (const auto& [tok, lp] : t.top) {
      top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytes_of(tok)}});
    }
    content.push_back({{"token", t.token},
                       {"logprob", t.logprob},
                       {"bytes", bytes_of(t.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
json completion_logprobs(const std::vector<TokenLogprob>& lps, int64_t offset) {
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (const TokenLogprob& t : lps) {
    tokens.push_back(t.token);
    values.push_back(t.logprob);
    json top = json::object();
    for (const auto& [tok, lp] : t.top) top[tok] = lp;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.token.size());
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json head_json(const ResponseHead& h, bool chunk) {
  return {{"id", h.id},
          {"object", h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                            : "text_completion"},
          {"created", h.created},
          {"model", h.model}};
}

}  // namespace

json completion_json(const ResponseHead& h, const std::vector<Choice>& choices, const json& usage,
                     const KvReport& kv) {
  json out = head_json(h, false);
  json cs = json::array();
  for (const Choice& c : choices) {
    json choice = {{"index", c.index}, {"finish_reason", c.finish_reason}};
    if (h.chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
      choice["logprobs"] = c.with_logprobs ? chat_logprobs(c.logprobs) : json(nullptr);
    } else {
      choice["text"] = c.text;
      choice["logprobs"] = c.with_logprobs ? completion_logprobs(c.logprobs, 0) : json(nullptr);
    }
    cs.push_back(std::move(choice));
  }
  out["choices"] = std::move(cs);
  out["usage"] = usage;
  out["tova"] = kv_json(kv);
  return out;
}

json chunk_json(const ResponseHead& h, int index, std::string_view text,
                const std::vector<TokenLogprob>* logprobs, std::string_view finish_reason,
                bool role_only, int64_t text_offset) {
  json choice = {{"index", index},
                 {"finish_reason", finish_reason.empty() ? json(nullptr) : json(finish_reason)}};
  if (h.chat) {
    if (role_only) {
      choice["delta"] = {{"role", "assistant"}, {"content", ""}};
    } else if (text.empty()) {
      choice["delta"] = json::object();
    } else {
      choice["delta"] = {{"content", text}};
    }
    choice["logprobs"] = logprobs != nullptr ? chat_logprobs(*logprobs) : json(nullptr);
  } else {
    choice["text"] = text;
    choice["logprobs"] =
        logprobs != nullptr ? completion_logprobs(*logprobs, text_offset) : json(nullptr);
  }
  json out = head_json(h, true);
  out["choices"] = json::array({std::move(choice)});
  return out;
}

json usage_chunk_json(const ResponseHead& h, const json& usage) {
  json out = head_json(h, true);
  out["choices"] = json::array();
  out["usage"] = usage;
  return out;
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

}  // namespace tova::server
