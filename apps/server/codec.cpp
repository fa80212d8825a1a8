#include "codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>

#include "data_url.h"
#include "request_body.h"
#include "tova/grammar.h"
#include "tova/policy_spec.h"
#include "tova/position_mode.h"
#include "tova/vision.h"
#include "turn.h"

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

using ojson = nlohmann::ordered_json;

// An image_url part ({"type": "image_url", "image_url": {"url": "data:...;base64,..."}}) of
// messages[i].content[k]: its bytes, within the limits, or a 400 naming the field.
std::variant<std::vector<uint8_t>, ApiError> image_part(const ojson& part, const ImageLimits& lim,
                                                        size_t i, size_t k, size_t n_before) {
  const std::string field = fmt::format("messages[{}].content[{}].image_url", i, k);
  if (!lim.enabled) {
    return bad_request(field, "image parts need a model with a vision encoder: start tova serve "
                              "with --mmproj FILE");
  }
  if (static_cast<int64_t>(n_before) >= lim.max_count) {
    return bad_request(field, fmt::format("more than {} images in one request (--image-max-count)",
                                          lim.max_count));
  }
  for (const auto& [key, value] : part.items()) {
    if (key != "type" && key != "image_url") {
      return bad_request(field, fmt::format("unknown field '{}' in an image_url part", shown(key)));
    }
  }
  if (!part.contains("image_url") || !part["image_url"].is_object() ||
      !part["image_url"].contains("url") || !part["image_url"]["url"].is_string()) {
    return bad_request(field, "an image_url part needs {\"image_url\": {\"url\": \"data:...\"}}");
  }
  for (const auto& [key, value] : part["image_url"].items()) {
    if (key == "url") continue;
    // OpenAI's detail hint: tova's projector has one resolution rule whatever it says.
    if (key == "detail" && value.is_string()) continue;
    return bad_request(field, fmt::format("unknown field '{}' in image_url", shown(key)));
  }
  const std::string url = part["image_url"]["url"].get<std::string>();
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    return bad_request(field + ".url", "remote image URLs are not fetched (tova serve makes no "
                                       "connections): send the image as a data: URL "
                                       "(data:image/png;base64,...)");
  }
  auto bytes = decode_data_url(url, lim.max_bytes);
  if (auto* why = std::get_if<std::string>(&bytes)) {
    return bad_request(field + ".url", fmt::format("{}{}", *why,
                                                   why->find("limit") != std::string::npos
                                                       ? " (--image-max-bytes)"
                                                       : ""));
  }
  std::vector<uint8_t> b = std::move(std::get<std::vector<uint8_t>>(bytes));
  auto head = read_image_header(b, field);
  if (!head.ok()) return bad_request(field + ".url", head.message());
  if (int64_t{head->width} * head->height > lim.max_pixels) {
    return bad_request(field + ".url",
                       fmt::format("an image of {} x {} pixels, more than the limit of {} "
                                   "(--image-max-pixels)",
                                   head->width, head->height, lim.max_pixels));
  }
  return b;
}

// A message's content: a string, or a list of parts: text parts ({"type": "text", "text": ...})
// joined by newlines, and image_url parts (image_part), each a media marker (kMediaMarker) in
// the text with its bytes appended to `images`. Other parts (audio, files) are a 400 naming
// their type.
std::variant<std::string, ApiError> message_content(const ojson& c, const ImageLimits& lim,
                                                    size_t i,
                                                    std::vector<std::vector<uint8_t>>& images) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array() || c.empty()) {
    return bad_request("messages",
                       "a message's 'content' must be a string or a non-empty list of parts");
  }
  std::string out;
  for (size_t k = 0; k < c.size(); ++k) {
    const ojson& part = c[k];
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return bad_request("messages", "each content part must be an object with a 'type'");
    }
    const std::string type = part["type"].get<std::string>();
    if (type == "image_url") {
      auto b = image_part(part, lim, i, k, images.size());
      if (auto* e = std::get_if<ApiError>(&b)) return *e;
      images.push_back(std::move(std::get<std::vector<uint8_t>>(b)));
      if (!out.empty()) out += "\n";
      out += kMediaMarker;
      continue;
    }
    if (type != "text") {
      return bad_request("messages",
                         fmt::format("content parts of type '{}' are not supported (text, "
                                     "image_url)",
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

// An assistant message's tool_calls, as the client got them ({id, type, function: {name,
// arguments: JSON TEXT}}), for the template: arguments become the object they spell (chat
// templates write them with |tojson).
std::variant<ojson, ApiError> message_tool_calls(const ojson& calls, size_t i) {
  const std::string at = fmt::format("messages[{}].tool_calls", i);
  if (!calls.is_array() || calls.empty()) return bad_request("messages", at + " must be a non-empty list");
  ojson out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const ojson& c = calls[k];
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string() || !c.contains("function") ||
        !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string()) {
      return bad_request("messages", fmt::format("{}[{}] must be {{\"id\": ..., \"type\": "
                                                 "\"function\", \"function\": {{\"name\": ..., "
                                                 "\"arguments\": ...}}}}",
                                                 at, k));
    }
    ojson args = ojson::object();
    if (c["function"].contains("arguments")) {
      const ojson& a = c["function"]["arguments"];
      if (a.is_string()) {
        args = ojson::parse(a.get<std::string>(), nullptr, false);
      } else {
        args = a;
      }
      if (args.is_discarded() || !args.is_object()) {
        return bad_request("messages", fmt::format("{}[{}].function.arguments must be a JSON "
                                                   "object (as text)",
                                                   at, k));
      }
    }
    out.push_back({{"id", c["id"]},
                   {"type", "function"},
                   {"function", {{"name", c["function"]["name"]}, {"arguments", args}}}});
  }
  return out;
}

std::variant<std::vector<ChatMessage>, ApiError> decode_messages(
    const ojson& j, const ImageLimits& lim, std::vector<std::vector<uint8_t>>& images) {
  if (!j.contains("messages")) return bad_request("messages", "'messages' is required");
  const ojson& ms = j["messages"];
  if (!ms.is_array() || ms.empty()) {
    return bad_request("messages", "'messages' must be a non-empty list");
  }
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms.size(); ++i) {
    const ojson& m = ms[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad_request("messages", "each message must be an object with a string 'role'");
    }
    ChatMessage c{.role = m["role"].get<std::string>()};
    if (c.role == "developer") c.role = "system";  // OpenAI's newer name for the system message
    if (c.role != "system" && c.role != "user" && c.role != "assistant" && c.role != "tool") {
      return bad_request("messages",
                         fmt::format("message role '{}' is not supported (system, developer, "
                                     "user, assistant, tool)",
                                     shown(c.role)));
    }
    for (const auto& [key, value] : m.items()) {
      if (key == "role" || key == "content") continue;
      if (key == "refusal" && value.is_null()) continue;
      if (key == "name" && value.is_string()) {
        c.name = value.get<std::string>();
      } else if (key == "tool_calls" && c.role == "assistant") {
        auto calls = message_tool_calls(value, i);
        if (auto* e = std::get_if<ApiError>(&calls)) return *e;
        c.tool_calls = std::get<ojson>(calls).dump();  // the template reads the list back
      } else if (key == "tool_call_id" && c.role == "tool" && value.is_string()) {
        c.tool_call_id = value.get<std::string>();
      } else if (key == "reasoning_content" && c.role == "assistant" &&
                 (value.is_string() || value.is_null())) {
        // An earlier answer's reasoning, given back: the template decides what to keep of it.
        if (value.is_string()) c.reasoning_content = value.get<std::string>();
      } else {
        return bad_request("messages",
                           fmt::format("'{}' in a {} message is not supported (role, content, "
                                       "name; tool_calls and reasoning_content on assistant "
                                       "messages, tool_call_id on tool messages)",
                                       shown(key), c.role));
      }
    }
    if (c.role == "tool" && c.tool_call_id.empty()) {
      return bad_request("messages", fmt::format("messages[{}]: a tool message needs its "
                                                 "'tool_call_id'",
                                                 i));
    }
    const bool calls = !c.tool_calls.empty();
    if (!m.contains("content") || m["content"].is_null()) {
      // An assistant turn of calls only: its content is empty (templates test it as a string).
      if (!calls) return bad_request("messages", "each message needs a 'content'");
    } else {
      auto content = message_content(m["content"], lim, i, images);
      if (auto* e = std::get_if<ApiError>(&content)) return *e;
      c.content = std::move(std::get<std::string>(content));
    }
    out.push_back(std::move(c));
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

namespace {

// ---- a completion request, field by field ---------------------------------------------------

// What the field rules fill: the request, and the raw values that only together make one
// setting (the policy and its budget, logprobs and top_logprobs).
struct Decoding {
  CompletionRequest r;
  bool chat = false;
  const ApiDefaults* d = nullptr;
  std::string_view body;
  bool want_logprobs = false;  // chat's logprobs: true
  int64_t top_logprobs = 0;
  std::string policy;
  int64_t budget = 0;
};

enum class Endpoint { kBoth, kChat, kCompletions };

// One field: its name, the endpoints that take it, and its reader, called when the field is
// present and not null, which checks its type and range and sets what it sets (null reader:
// read with the prompt, at the end). Defaults are in defaults(); rules that tie fields together
// in finish().
struct FieldRule {
  const char* name;
  Endpoint where;
  std::optional<ApiError> (*read)(const json& j, Decoding& x);
  bool always = false;  // read even when absent (a rule that settles several fields)
};

std::optional<ApiError> no_error() { return std::nullopt; }

std::optional<ApiError> read_metadata(const json& j, Decoding&) {
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
  return no_error();
}

std::optional<ApiError> read_stop(const json& j, Decoding& x) {
  // A string or a list of up to 4 non-empty strings.
  const json& st = j["stop"];
  if (st.is_string()) {
    x.r.stop.push_back(st.get<std::string>());
  } else if (st.is_array() && st.size() <= 4) {
    for (const auto& s : st) {
      if (!s.is_string()) {
        return bad_request("stop", "'stop' must be a string or a list of strings");
      }
      x.r.stop.push_back(s.get<std::string>());
    }
  } else {
    return bad_request("stop", "'stop' must be a string or a list of at most 4 strings");
  }
  for (const auto& s : x.r.stop) {
    if (s.empty()) return bad_request("stop", "a stop string must not be empty");
  }
  return no_error();
}

std::optional<ApiError> read_stream_options(const json& j, Decoding& x) {
  const json& so = j["stream_options"];
  if (!so.is_object()) return bad_request("stream_options", "'stream_options' must be an object");
  if (!x.r.stream) return bad_request("stream_options", "'stream_options' needs 'stream': true");
  for (const auto& [key, val] : so.items()) {
    if (key != "include_usage") {
      return bad_request("stream_options", fmt::format("unknown stream option '{}'", shown(key)));
    }
    if (!val.is_boolean()) {
      return bad_request("stream_options", "'include_usage' must be a boolean");
    }
    x.r.include_usage = val.get<bool>();
  }
  return no_error();
}

std::optional<ApiError> read_kv_type(const json& j, Decoding& x, const char* key) {
  // kv_type is a format ("q8_0", "k=q8_0,v=f16", "q4_0+rot"); kv_type_k and kv_type_v set one
  // side (llama.cpp's -ctk / -ctv). Whether the model's head_dim suits it: plan_generation.
  if (!j[key].is_string()) return bad_request(key, fmt::format("'{}' must be a string", key));
  const std::string text = j[key].get<std::string>();
  if (std::string_view(key) == "kv_type") {
    auto f = parse_kv_format(text);
    if (!f.ok()) return bad_request(key, f.message());
    x.r.cache.kv_type = *f;
    return no_error();
  }
  auto t = parse_kv_type(text);
  if (!t.ok()) return bad_request(key, t.message());
  (std::string_view(key) == "kv_type_k" ? x.r.cache.kv_type.k : x.r.cache.kv_type.v) = *t;
  return no_error();
}

std::optional<ApiError> not_zero_penalty(const json& j, const char* key) {
  float v = 0;
  if (auto e = number(j, key, -2, 2, v)) return e;
  if (v == 0) return no_error();
  return bad_request(key, fmt::format("'{}' is not supported by the sampler (use "
                                      "'repetition_penalty')",
                                      key));
}

using E = Endpoint;

// The fields that describe the request and its choices.
std::vector<FieldRule> request_rules() {
  return {
      // One model is served: any name is accepted (as llama-server does), responses report the
      // served one.
      {"model", E::kBoth, [](const json& j, Decoding&) -> std::optional<ApiError> {
         if (!j["model"].is_string()) return bad_request("model", "'model' must be a string");
         return no_error();
       }},
      // Accepted and recorded, changing nothing the model computes: the end user (logged),
      // OpenAI's metadata and store flags.
      {"user", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (!j["user"].is_string()) return bad_request("user", "'user' must be a string");
         x.r.user = j["user"].get<std::string>();
         return no_error();
       }},
      {"metadata", E::kBoth, read_metadata},
      {"store", E::kBoth, [](const json& j, Decoding&) {
         bool store = false;
         return boolean(j, "store", store);
       }},
      // How many choices, and their log-probabilities.
      {"n", E::kBoth, [](const json& j, Decoding& x) {
         int64_t n = 1;
         auto e = integer(j, "n", 1, x.d->max_n, n);
         x.r.n = static_cast<int>(n);
         return e;
       }},
      {"logprobs", E::kChat, [](const json& j, Decoding& x) {
         auto e = boolean(j, "logprobs", x.want_logprobs);
         x.r.logprobs = x.want_logprobs ? 0 : -1;
         return e;
       }},
      {"top_logprobs", E::kChat, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (auto e = integer(j, "top_logprobs", 0, 20, x.top_logprobs)) return e;
         if (!x.want_logprobs) {
           return bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
         }
         x.r.logprobs = static_cast<int>(x.top_logprobs);
         return no_error();
       }},
      {"logprobs", E::kCompletions, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (j["logprobs"].is_boolean()) {
           return bad_request("logprobs", "'logprobs' of a completion is a number of "
                                          "alternatives (0 to 5)");
         }
         int64_t top = -1;
         auto e = integer(j, "logprobs", 0, 5, top);
         x.r.logprobs = static_cast<int>(top);
         return e;
       }},
      {"echo", E::kCompletions, [](const json& j, Decoding&) -> std::optional<ApiError> {
         if (j["echo"].is_boolean() && !j["echo"].get<bool>()) return no_error();
         return bad_request("echo", "'echo' is not supported");
       }},
      {"suffix", E::kCompletions, [](const json& j, Decoding&) -> std::optional<ApiError> {
         if (j["suffix"].is_string() && j["suffix"].get<std::string>().empty()) return no_error();
         return bad_request("suffix", "'suffix' is not supported");
       }},
      {"best_of", E::kCompletions, [](const json& j, Decoding&) {
         int64_t best_of = 1;
         return integer(j, "best_of", 1, 1, best_of);
       }},
      {"logit_bias", E::kBoth, [](const json& j, Decoding&) -> std::optional<ApiError> {
         if (j["logit_bias"].is_object() && j["logit_bias"].empty()) return no_error();
         return bad_request("logit_bias", "'logit_bias' is not supported");
       }},
      {"cache_prompt", E::kBoth, [](const json& j, Decoding& x) {
         return boolean(j, "cache_prompt", x.r.allow_reuse);
       }},
      {"ignore_eos", E::kBoth, [](const json& j, Decoding& x) {
         return boolean(j, "ignore_eos", x.r.ignore_eos);
       }},
      {"frequency_penalty", E::kBoth, [](const json& j, Decoding&) {
         return not_zero_penalty(j, "frequency_penalty");
       }},
      {"presence_penalty", E::kBoth, [](const json& j, Decoding&) {
         return not_zero_penalty(j, "presence_penalty");
       }},
  };
}

// Sampling, constrained output, limits and streaming.
std::vector<FieldRule> sampling_rules() {
  return {
      {"temperature", E::kBoth, [](const json& j, Decoding& x) {
         return number(j, "temperature", 0, 2, x.r.sampling.temp);
       }},
      {"top_p", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (auto e = number(j, "top_p", 0, 1, x.r.sampling.top_p)) return e;
         if (x.r.sampling.top_p <= 0) return bad_request("top_p", "'top_p' must be > 0");
         return no_error();
       }},
      {"min_p", E::kBoth, [](const json& j, Decoding& x) {
         return number(j, "min_p", 0, 1, x.r.sampling.min_p);
       }},
      {"repetition_penalty", E::kBoth, [](const json& j, Decoding& x) {
         return number(j, "repetition_penalty", 0.01, 10, x.r.sampling.repeat_penalty);
       }},
      {"top_k", E::kBoth, [](const json& j, Decoding& x) {
         int64_t v = 0;
         auto e = integer(j, "top_k", 0, 1 << 20, v);
         x.r.sampling.top_k = static_cast<int>(v);
         return e;
       }},
      {"seed", E::kBoth, [](const json& j, Decoding& x) {
         int64_t seed = -1;
         auto e = integer(j, "seed", INT64_MIN, INT64_MAX, seed);
         x.r.sampling.seed = static_cast<uint64_t>(seed);
         return e;
       }},
      // Constrained output: both fields at once (they exclude each other).
      {"grammar", E::kBoth, [](const json& j, Decoding& x) {
         return decode_grammar(j, x.body, x.r.sampling.grammar);
       }},
      {"response_format", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (present(j, "grammar")) return no_error();  // read with 'grammar'
         return decode_grammar(j, x.body, x.r.sampling.grammar);
       }},
      {"max_tokens", E::kBoth, [](const json& j, Decoding& x) {
         int64_t v = x.r.max_tokens;
         auto e = integer(j, "max_tokens", 1, x.d->max_tokens_cap, v);
         x.r.max_tokens = static_cast<int>(v);
         return e;
       }},
      {"max_completion_tokens", E::kChat, [](const json& j, Decoding& x) {
         int64_t v = x.r.max_tokens;
         auto e = integer(j, "max_completion_tokens", 1, x.d->max_tokens_cap, v);
         x.r.max_tokens = static_cast<int>(v);
         return e;
       }},
      {"stop", E::kBoth, read_stop},
      {"stream", E::kBoth, [](const json& j, Decoding& x) {
         return boolean(j, "stream", x.r.stream);
       }},
      {"stream_options", E::kBoth, read_stream_options},
  };
}

// Speculative decoding per request, as llama-server names its fields (the server's --spec-*
// flags are the defaults; "speculative.type" "none" turns it off). Validated together at the
// end (an always-read rule), the error naming the field at fault.
std::vector<FieldRule> speculative_rules() {
  return {
      {"speculative.type", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (!j["speculative.type"].is_string()) {
           return bad_request("speculative.type", "'speculative.type' must be a string");
         }
         const std::string t = j["speculative.type"].get<std::string>();
         x.r.speculative.type = t == "none" ? std::string() : t;
         return no_error();
       }},
      {"speculative.n_max", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         int64_t v = 0;
         if (auto e = integer(j, "speculative.n_max", 0, INT32_MAX, v)) return e;
         x.r.speculative.n_max = static_cast<int>(v);
         return no_error();
       }},
      {"speculative.n_min", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         int64_t v = 0;
         if (auto e = integer(j, "speculative.n_min", 0, INT32_MAX, v)) return e;
         x.r.speculative.n_min = static_cast<int>(v);
         return no_error();
       }},
      {"speculative.p_min", E::kBoth, [](const json& j, Decoding& x) {
         return number(j, "speculative.p_min", 0, 1, x.r.speculative.p_min);
       }},
      {"speculative.ngram_size_n", E::kBoth,
       [](const json& j, Decoding& x) -> std::optional<ApiError> {
         int64_t v = 0;
         if (auto e = integer(j, "speculative.ngram_size_n", 1, 1024, v)) return e;
         x.r.speculative.ngram_size_n = static_cast<int>(v);
         return no_error();
       }},
      {"speculative.ngram_size_m", E::kBoth,
       [](const json& j, Decoding& x) -> std::optional<ApiError> {
         int64_t v = 0;
         if (auto e = integer(j, "speculative.ngram_size_m", 1, 1024, v)) return e;
         x.r.speculative.ngram_size_m = static_cast<int>(v);
         return no_error();
       }},
      {"speculative", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (present(j, "speculative")) {
           return bad_request("speculative",
                              "give speculative decoding's fields flat, as llama-server names "
                              "them: 'speculative.type', 'speculative.n_max', "
                              "'speculative.n_min', 'speculative.p_min'");
         }
         const Status st = validate_speculative(x.r.speculative);
         if (st.ok()) return no_error();
         const std::string& m = st.message();
         // The message starts with the flag at fault.
         const auto starts = [&m](const char* flag) { return m.rfind(flag, 0) == 0; };
         const char* field = starts("--spec-draft-n-max")   ? "speculative.n_max"
                             : starts("--spec-draft-n-min") ? "speculative.n_min"
                             : starts("--spec-draft-p-min") ? "speculative.p_min"
                             : starts("--spec-ngram-simple-size-n") ? "speculative.ngram_size_n"
                             : starts("--spec-ngram-simple-size-m") ? "speculative.ngram_size_m"
                                                                    : "speculative.type";
         return bad_request(field, m);
       }, /*always=*/true},
  };
}

// The multi-state, then the prompt's fields (read by read_prompt).
std::vector<FieldRule> cache_rules() {
  return {
      // The multi-state: per-request policy and budget (made one in finish()).
      {"kv_policy", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (!j["kv_policy"].is_string()) {
           return bad_request("kv_policy", "'kv_policy' must be a string");
         }
         x.policy = j["kv_policy"].get<std::string>();
         return no_error();
       }},
      {"kv_budget", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (auto e = integer(j, "kv_budget", 0, INT32_MAX, x.budget)) return e;
         auto spec = kv::parse_policy(x.policy, static_cast<int>(x.budget));
         if (!spec.ok()) {
           return bad_request(present(j, "kv_policy") ? "kv_policy" : "kv_budget", spec.message());
         }
         x.r.cache.policy = *spec;
         return no_error();
       }, /*always=*/true},
      {"kv_positions", E::kBoth, [](const json& j, Decoding& x) -> std::optional<ApiError> {
         if (!j["kv_positions"].is_string()) {
           return bad_request("kv_positions", "'kv_positions' must be a string");
         }
         auto mode = kv::parse_position_mode(j["kv_positions"].get<std::string>());
         if (!mode.ok()) return bad_request("kv_positions", mode.message());
         x.r.cache.positions = *mode;
         return no_error();
       }},
      // Image states never evicted (CacheOptions::keep_images), up to the server's
      // --kv-keep-images-max images.
      {"kv_keep_images", E::kBoth, [](const json& j, Decoding& x) {
         return boolean(j, "kv_keep_images", x.r.cache.keep_images);
       }},
      {"kv_type", E::kBoth, [](const json& j, Decoding& x) {
         return read_kv_type(j, x, "kv_type");
       }},
      {"kv_type_k", E::kBoth, [](const json& j, Decoding& x) {
         return read_kv_type(j, x, "kv_type_k");
       }},
      {"kv_type_v", E::kBoth, [](const json& j, Decoding& x) {
         return read_kv_type(j, x, "kv_type_v");
       }},
      // The prompt, tools: read last (prompt(), with the client's key order).
      {"messages", E::kChat, nullptr},
      {"tools", E::kChat, nullptr},
      {"tool_choice", E::kChat, nullptr},
      {"parallel_tool_calls", E::kChat, nullptr},
      {"reasoning_effort", E::kChat, nullptr},     // template switches: turn.h, with the prompt
      {"chat_template_kwargs", E::kChat, nullptr},
      {"prompt", E::kCompletions, nullptr},
  };
}

// The rules, in the order they are checked (the first error is the answer).
const std::vector<FieldRule>& field_rules() {
  static const std::vector<FieldRule> k = [] {
    std::vector<FieldRule> all;
    for (auto part : {request_rules(), sampling_rules(), speculative_rules(), cache_rules()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return k;
}

bool takes(Endpoint where, bool chat) {
  return where == Endpoint::kBoth || (where == Endpoint::kChat) == chat;
}

// What a request gets for the fields it does not give: OpenAI's sampling defaults
// (temperature 1, nucleus off, a random seed), the server's max_tokens and multi-state.
void defaults(Decoding& x) {
  CompletionRequest& r = x.r;
  r.chat = x.chat;
  r.sampling = {.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .repeat_penalty = 1.0f};
  r.sampling.seed = std::random_device{}();
  r.max_tokens = static_cast<int>(x.chat ? x.d->default_max_tokens
                                         : std::min<int64_t>(16, x.d->max_tokens_cap));
  r.logprobs = -1;
  r.cache = x.d->cache;
  r.speculative = x.d->speculative;
  x.policy = x.d->cache.policy.label();
  x.budget = x.d->cache.policy.bounded() ? x.d->cache.policy.budget : 0;
}

// The prompt (tokenized later, by the handler): chat messages and tools, with the client's
// key order (tool schemas' properties, call arguments), or a completion's prompt.
std::optional<ApiError> read_prompt(const json& j, Decoding& x) {
  CompletionRequest& r = x.r;
  if (x.chat) {
    const ojson oj = ojson::parse(x.body, nullptr, false);
    auto ms = decode_messages(oj, x.d->images, r.images);
    if (auto* e = std::get_if<ApiError>(&ms)) return *e;
    r.messages = std::move(std::get<std::vector<ChatMessage>>(ms));
    if (auto e = decode_template_switches(j, r.template_vars)) return e;
    if (auto e = decode_tools(oj, r.tools)) return e;
    if (r.tools.forced() && !r.sampling.grammar.empty()) {
      return bad_request("tool_choice", "a forced tool call ('tool_choice' required or a "
                                        "function) and 'response_format' or 'grammar' together: "
                                        "give one");
    }
    return no_error();
  }
  if (!j.contains("prompt")) return bad_request("prompt", "'prompt' is required");
  const json& pr = j["prompt"];
  if (pr.is_string()) {
    r.prompt_text = pr.get<std::string>();
  } else if (pr.is_array() && pr.size() == 1 && pr[0].is_string()) {
    r.prompt_text = pr[0].get<std::string>();  // a batch of one prompt
  } else if (pr.is_array() && !pr.empty() && pr[0].is_number_integer()) {
    r.prompt_is_ids = true;
    for (const auto& v : pr) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return bad_request("prompt", "a token id in 'prompt' is not a token id");
      }
      r.prompt_ids.push_back(v.get<int32_t>());
    }
  } else if (pr.is_array()) {
    return bad_request("prompt",
                       "'prompt' must be a string or a list of token ids (one prompt per "
                       "request)");
  } else {
    return bad_request("prompt", "'prompt' must be a string or a list of token ids");
  }
  return no_error();
}

}  // namespace

std::variant<CompletionRequest, ApiError> decode_completion_request(std::string_view body,
                                                                    bool chat,
                                                                    const ApiDefaults& d) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unparsable_body(body);
  if (!j.is_object()) return bad_request("", "the request body must be a JSON object");
  const std::vector<FieldRule>& rules = field_rules();
  // Every field a request may carry has a rule; anything else is named in a 400.
  for (const auto& item : j.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
    const bool known = std::any_of(rules.begin(), rules.end(), [&](const FieldRule& f) {
      return key == f.name && takes(f.where, chat);
    });
    if (!known) return bad_request(key, fmt::format("unknown or unsupported field '{}'", shown(key)));
  }
  Decoding x{.chat = chat, .d = &d, .body = body};
  defaults(x);
  for (const FieldRule& f : rules) {
    if (f.read == nullptr || !takes(f.where, chat) || !(f.always || present(j, f.name))) continue;
    if (auto e = f.read(j, x)) return *e;
  }
  if (auto e = read_prompt(j, x)) return *e;
  return std::move(x.r);
}

std::variant<TokenizeRequest, ApiError> decode_tokenize_request(std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return unparsable_body(body);
  if (!j.is_object() || !j.contains("content") || !j["content"].is_string()) {
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
  if (j.is_discarded()) return unparsable_body(body);
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
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
  // Memory by kind of layer state (SessionStats::kinds): {kind, layers, limit (null:
  // unbounded), max_held, rows, image_rows, bytes, held_bytes}.
  json kinds = json::array();
  for (const StateKindStats& k : kv.kinds) {
    kinds.push_back({{"kind", k.kind},
                     {"layers", k.n_layer},
                     {"limit", k.limit < 0 ? json(nullptr) : json(k.limit)},
                     {"max_held", k.max_held},
                     {"rows", k.rows},
                     {"image_rows", k.image_rows},
                     {"bytes", k.bytes},
                     {"held_bytes", k.held_bytes}});
  }
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
          {"layer_kinds", kv.layer_kinds},
          {"memory_by_kind", kinds},
          {"reused_prompt_tokens", kv.reused_prompt_tokens}};
}

json timings_json(int64_t prompt, int64_t completion, int64_t reused, int64_t draft_n,
                  int64_t draft_n_accepted) {
  json t = {{"cache_n", reused}, {"prompt_n", prompt - reused}, {"predicted_n", completion}};
  if (draft_n > 0) {
    t["draft_n"] = draft_n;
    t["draft_n_accepted"] = draft_n_accepted;
  }
  return t;
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
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls);
      }
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
