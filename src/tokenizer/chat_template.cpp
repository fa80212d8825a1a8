#include "tokenizer/chat_template.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/field_names.h"
#include "jinja/json.h"
#include "jinja/template.h"
#include "tokenizer/tokenizer.h"

namespace tova::tok {
namespace {

using Family = ChatTemplate::Family;

constexpr std::array<std::pair<Family, std::string_view>, 11> kNames = {{
    {Family::kChatML, "chatml"},
    {Family::kQwen25, "qwen2.5"},
    {Family::kQwen3, "qwen3"},
    {Family::kLlama2, "llama2"},
    {Family::kLlama3, "llama3"},
    {Family::kLlama31, "llama3.1"},
    {Family::kMistral, "mistral"},
    {Family::kGemma, "gemma"},
    {Family::kGemma3, "gemma3"},
    {Family::kPhi3, "phi3"},
    {Family::kZephyr, "zephyr"},
}};

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

constexpr std::string_view kSpace = " \t\n\r\f\v";

// Jinja's |trim and Python's str.strip(): surrounding whitespace.
std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

// Python's str.strip(chars) / lstrip / rstrip with one character set.
std::string_view lstrip(std::string_view s, std::string_view chars) {
  const size_t b = s.find_first_not_of(chars);
  return b == std::string_view::npos ? std::string_view() : s.substr(b);
}
std::string_view rstrip(std::string_view s, std::string_view chars) {
  const size_t e = s.find_last_not_of(chars);
  return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}

Status check_roles(const std::vector<ChatMessage>& messages, std::string_view name) {
  for (const ChatMessage& m : messages) {
    if (m.role != "system" && m.role != "user" && m.role != "assistant") {
      return make_error("chat template {}: unknown role '{}' (expected system, user or assistant)",
                        name, m.role);
    }
  }
  return ok_status();
}

// Templates that raise "Conversation roles must alternate user/assistant/user/assistant/...".
Status check_alternating(const std::vector<ChatMessage>& messages, size_t first,
                         std::string_view name) {
  for (size_t i = first; i < messages.size(); ++i) {
    const bool want_user = (i - first) % 2 == 0;
    if ((messages[i].role == "user") != want_user ||
        (!want_user && messages[i].role != "assistant")) {
      return make_error(
          "chat template {}: message {} is '{}'; roles must alternate "
          "user/assistant/user/... after an optional first system message",
          name, i, messages[i].role);
    }
  }
  return ok_status();
}

std::string chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

// Qwen3's template: the reasoning of assistant turns before the last user message is dropped;
// turns after it keep (or, for the last one, get an empty) <think> block.
std::string qwen3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  int last_query = static_cast<int>(messages.size()) - 1;
  for (int i = static_cast<int>(messages.size()) - 1; i >= 0; --i) {
    if (messages[i].role == "user" && !messages[i].content.starts_with("<tool_response>") &&
        !messages[i].content.ends_with("</tool_response>")) {
      last_query = i;
      break;
    }
  }
  for (int i = 0; i < static_cast<int>(messages.size()); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role != "assistant") {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      continue;
    }
    std::string_view content = m.content;
    std::string_view reasoning;
    const size_t close = content.rfind("</think>");
    if (close != std::string_view::npos) {
      std::string_view before = rstrip(content.substr(0, content.find("</think>")), "\n");
      const size_t open = before.rfind("<think>");
      reasoning = lstrip(open == std::string_view::npos ? before : before.substr(open + 7), "\n");
      content = lstrip(content.substr(close + 8), "\n");
    }
    const bool last = i + 1 == static_cast<int>(messages.size());
    out += "<|im_start|>assistant\n";
    if (i > last_query && (last || !reasoning.empty())) {
      out += "<think>\n" + std::string(rstrip(lstrip(reasoning, "\n"), "\n")) + "\n</think>\n\n" +
             std::string(lstrip(content, "\n"));
    } else {
      out += content;
    }
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

Result<std::string> llama2(const std::vector<ChatMessage>& messages) {
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  TOVA_RETURN_IF_ERROR(check_alternating(messages, first, "llama2"));
  std::string out;
  for (size_t i = first; i < messages.size(); ++i) {
    std::string content = messages[i].content;
    if (i == first && first == 1) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
    if (messages[i].role == "user") {
      out += "<s>[INST] " + trim(content) + " [/INST]";
    } else {
      out += " " + trim(content) + " </s>";
    }
  }
  return out;
}

std::string llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out = "<|begin_of_text|>";
  for (const ChatMessage& m : messages) {
    out +=
        "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Llama-3.1/3.2 always write a system turn with the knowledge cutoff and a date; the date is
// the templates' default, "26 Jul 2024" (3.2's template takes today's date when the renderer
// offers strftime_now; a fixed date keeps prompts, and so cached states, reproducible).
std::string llama31(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") {
    system = trim(messages[0].content);
    first = 1;
  }
  std::string out =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
      system + "<|eot_id|>";
  for (size_t i = first; i < messages.size(); ++i) {
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" +
           trim(messages[i].content) + "<|eot_id|>";
  }
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

Result<std::string> mistral(const std::vector<ChatMessage>& messages) {
  TOVA_RETURN_IF_ERROR(check_alternating(messages, 0, "mistral"));
  std::string out = "<s>";
  for (const ChatMessage& m : messages) {
    out += m.role == "user" ? "[INST] " + m.content + " [/INST]" : m.content + "</s>";
  }
  return out;
}

Result<std::string> gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          bool system_prefix) {
  size_t first = 0;
  std::string prefix;
  if (!messages.empty() && messages[0].role == "system") {
    if (!system_prefix) {
      return make_error("chat template gemma: the template has no system role");
    }
    prefix = messages[0].content + "\n\n";
    first = 1;
    // Gemma 3 writes the system message into the first user turn: with no turn after it, the
    // published template drops it without a word; here that is an error.
    if (messages.size() == 1) {
      return make_error("chat template gemma3: a system message needs a user turn after it");
    }
  }
  const char* name = system_prefix ? "gemma3" : "gemma";
  TOVA_RETURN_IF_ERROR(check_alternating(messages, first, name));
  std::string out = "<bos>";
  for (size_t i = first; i < messages.size(); ++i) {
    const std::string role = messages[i].role == "assistant" ? "model" : messages[i].role;
    out += "<start_of_turn>" + role + "\n" + (i == first ? prefix : "") +
           trim(messages[i].content) + "<end_of_turn>\n";
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

std::string tagged(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                   std::string_view end, std::string_view eos_without_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|" + m.role + "|>\n" + m.content + std::string(end) + "\n";
  }
  out += add_generation_prompt ? "<|assistant|>\n" : std::string(eos_without_prompt);
  return out;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::detect(std::string_view t) {
  if (has(t, "<|im_start|>")) {
    if (has(t, "<think>") || has(t, "enable_thinking")) return ChatTemplate(Family::kQwen3);
    if (has(t, "You are Qwen, created by Alibaba Cloud")) return ChatTemplate(Family::kQwen25);
    return ChatTemplate(Family::kChatML);
  }
  if (has(t, "<|start_header_id|>")) {
    return ChatTemplate(has(t, "Cutting Knowledge Date") ? Family::kLlama31 : Family::kLlama3);
  }
  if (has(t, "<start_of_turn>")) {
    return ChatTemplate(has(t, "first_user_prefix") ? Family::kGemma3 : Family::kGemma);
  }
  if (has(t, "<|user|>") && has(t, "<|end|>")) return ChatTemplate(Family::kPhi3);
  if (has(t, "<|user|>") && has(t, "eos_token")) return ChatTemplate(Family::kZephyr);
  if (has(t, "[INST]")) {
    if (has(t, "<<SYS>>")) return ChatTemplate(Family::kLlama2);
    // Mistral v0.3 and later (tools, [SYSTEM_PROMPT]) place system prompts and spaces
    // differently; rendering them as v0.1/v0.2 would be a guess.
    if (!has(t, "[AVAILABLE_TOOLS]") && !has(t, "[SYSTEM_PROMPT]")) {
      return ChatTemplate(Family::kMistral);
    }
  }
  std::string head(t.substr(0, 60));
  for (char& c : head) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return make_error("{}: unrecognised (it begins '{}'{}); choose one by NAME ({})",
                    field::kChatTemplate, head, t.size() > 60 ? "..." : "", names());
}

Result<ChatTemplate> ChatTemplate::by_name(std::string_view name) {
  for (const auto& [f, n] : kNames) {
    if (n == name) return ChatTemplate(f);
  }
  return make_error("unknown chat template '{}' (known: {})", name, names());
}

Result<ChatTemplate> ChatTemplate::from_jinja(std::string_view source, std::string bos_token,
                                              std::string eos_token, std::string label) {
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return make_error("chat template {}: {}", label, t.message());
  ChatTemplate c(Family::kJinja);
  c.jinja_ = std::make_shared<const jinja::Template>(std::move(*t));
  c.source_ = std::string(source);
  c.bos_token_ = std::move(bos_token);
  c.eos_token_ = std::move(eos_token);
  c.label_ = std::move(label);
  c.source_ = std::string(source);
  return c;
}

namespace {

// --chat-template FILE: a path to a Jinja file rather than a family's name.
bool names_a_file(std::string_view name) {
  std::error_code ec;
  return name.ends_with(".jinja") || name.find('/') != std::string_view::npos ||
         std::filesystem::is_regular_file(std::string(name), ec);
}

constexpr size_t kMaxTemplateFileBytes = 4u << 20;

Result<std::string> read_template_file(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return make_error("chat template file '{}': {}", path, ec.message());
  if (size > kMaxTemplateFileBytes) {
    return make_error("chat template file '{}' is {} bytes (at most {})", path, size,
                      kMaxTemplateFileBytes);
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("chat template file '{}' cannot be read", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<ChatTemplate> ChatTemplate::resolve(std::string_view name, std::string_view model_template,
                                           std::string_view bos_token,
                                           std::string_view eos_token) {
  if (!name.empty()) {
    if (names_a_file(name)) {
      TOVA_ASSIGN_OR_RETURN(std::string text, read_template_file(std::string(name)));
      return from_jinja(text, std::string(bos_token), std::string(eos_token), std::string(name));
    }
    auto t = by_name(name);
    if (!t.ok()) {
      return make_error("unknown chat template '{}' (valid: {}, or a .jinja file)", name, names());
    }
    return t;
  }
  if (model_template.empty()) {
    return make_error(
        "{}: the model has no chat template (tokenizer.chat_template); give a NAME or a .jinja "
        "file to chat with it (valid: {})",
        field::kChatTemplate, names());
  }
  auto t = from_jinja(model_template, std::string(bos_token), std::string(eos_token), "model");
  if (!t.ok()) {
    return make_error(
        "{}: the model's chat template cannot be rendered here ({}); give a NAME (valid: {}) or "
        "a .jinja file",
        field::kChatTemplate, t.message(), names());
  }
  return t;
}

std::string ChatTemplate::names() {
  std::string s;
  for (const auto& [f, n] : kNames) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

std::string_view ChatTemplate::name() const {
  if (family_ == Family::kJinja) return label_;
  for (const auto& [f, n] : kNames) {
    if (f == family_) return n;
  }
  return "?";
}

std::string ChatTemplate::spec() const {
  if (family_ == Family::kJinja) return label_ == "model" ? std::string() : label_;
  return std::string(name());
}

Result<jinja::Value> tool_calls_value(const ChatMessage& m, size_t i) {
  if (m.tool_calls.empty()) return jinja::Value();
  const auto v = nlohmann::ordered_json::parse(m.tool_calls, nullptr, false);
  if (v.is_discarded()) return make_error("messages[{}].tool_calls: not JSON text", i);
  if (!v.is_array()) return make_error("messages[{}].tool_calls: expected a list", i);
  for (size_t k = 0; k < v.size(); ++k) {
    const auto& call = v[k];
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
        !call["function"].contains("name") || !call["function"]["name"].is_string()) {
      return make_error("messages[{}].tool_calls[{}]: expected {{\"function\": {{\"name\": "
                        "..., \"arguments\": ...}}}}",
                        i, k);
    }
  }
  return jinja::from_json(v);
}

Result<jinja::Value> ChatTemplate::context(const std::vector<ChatMessage>& messages,
                                           const ChatOptions& options) const {
  std::vector<jinja::Value> ms;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    jinja::Value d = jinja::Value::dict({{"role", m.role}});
    d.mutable_dict().set("content", m.null_content ? jinja::Value::none() : jinja::Value(m.content));
    if (!m.reasoning_content.empty()) {
      d.mutable_dict().set("reasoning_content", m.reasoning_content);
      // gpt-oss's template reads an assistant turn's analysis as `thinking` (and keeps it only
      // where the turn goes on with a tool call); no other template reads that key.
      d.mutable_dict().set("thinking", m.reasoning_content);
    }
    if (!m.name.empty()) d.mutable_dict().set("name", m.name);
    if (!m.tool_call_id.empty()) d.mutable_dict().set("tool_call_id", m.tool_call_id);
    TOVA_ASSIGN_OR_RETURN(jinja::Value calls, tool_calls_value(m, i));
    if (!calls.is_undefined()) d.mutable_dict().set("tool_calls", std::move(calls));
    ms.push_back(std::move(d));
  }
  jinja::Value ctx = jinja::Value::dict({
      {"messages", jinja::Value::list(std::move(ms))},
      {"bos_token", bos_token_},
      {"eos_token", eos_token_},
      {"add_generation_prompt", options.add_generation_prompt},
  });
  if (!options.tools.is_undefined()) ctx.mutable_dict().set("tools", options.tools);
  for (const auto& [k, v] : options.vars) ctx.mutable_dict().set(k, v);
  return ctx;
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatOptions& options) const {
  if (family_ == Family::kJinja) {
    TOVA_ASSIGN_OR_RETURN(const jinja::Value ctx, context(messages, options));
    auto r = jinja_->render(ctx);
    if (!r.ok()) return make_error("chat template {}: {}", label_, r.message());
    return r;
  }
  if (!options.tools.is_undefined()) {
    return make_error("chat template {}: tools need the model's own (Jinja) template", name());
  }
  if (!options.vars.empty()) {
    return make_error("chat template {}: '{}' needs the model's own (Jinja) template", name(),
                      options.vars.front().first);
  }
  return render(messages, options.add_generation_prompt);
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt) const {
  if (family_ == Family::kJinja) {
    return render(messages, ChatOptions{.add_generation_prompt = add_generation_prompt});
  }
  TOVA_ASSIGN_OR_RETURN(std::string out, render_family(messages, add_generation_prompt));
  // Nothing silently ignored: some published templates drop a message without a word (Llama-2
  // and Gemma 3 fold the system message into the first user turn and lose it when there is
  // none). Every message's content must be in the prompt, up to the surrounding whitespace some
  // templates trim; Qwen3 drops earlier assistant turns' reasoning by design, so its assistant
  // turns are exempt.
  for (size_t i = 0; i < messages.size(); ++i) {
    if (family_ == Family::kQwen3 && messages[i].role == "assistant") continue;
    const std::string content = trim(messages[i].content);
    if (!content.empty() && out.find(content) == std::string::npos) {
      return make_error("chat template {}: message {} ({}) would be dropped from the prompt{}",
                        name(), i + 1, messages[i].role,
                        messages[i].role == "system" ? " (a system message needs a user turn)"
                                                     : "");
    }
  }
  return out;
}

Result<std::string> ChatTemplate::render_prompt(const std::vector<ChatMessage>& messages) const {
  if (messages.empty()) return make_error("messages is empty");
  return render(messages, /*add_generation_prompt=*/true);
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tk, std::string_view text) {
  const int32_t bos = tk.bos();
  const bool has_bos = bos >= 0 && !tk.token_text(bos).empty() &&
                       text.substr(0, tk.token_text(bos).size()) == tk.token_text(bos);
  return tk.encode(text, /*add_special=*/!has_bos, /*parse_special=*/true);
}

Result<std::string> ChatTemplate::render_family(const std::vector<ChatMessage>& messages,
                                                bool add_generation_prompt) const {
  TOVA_RETURN_IF_ERROR(check_roles(messages, name()));
  switch (family_) {
    case Family::kChatML:
      return chatml(messages, add_generation_prompt);
    case Family::kQwen25: {
      if (!messages.empty() && messages[0].role == "system") {
        return chatml(messages, add_generation_prompt);
      }
      std::vector<ChatMessage> with_system;
      with_system.push_back(
          {"system", "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."});
      with_system.insert(with_system.end(), messages.begin(), messages.end());
      return chatml(with_system, add_generation_prompt);
    }
    case Family::kQwen3:
      return qwen3(messages, add_generation_prompt);
    case Family::kLlama2:
      return llama2(messages);  // the template has no generation prompt
    case Family::kLlama3:
      return llama3(messages, add_generation_prompt);
    case Family::kLlama31:
      return llama31(messages, add_generation_prompt);
    case Family::kMistral:
      return mistral(messages);  // no generation prompt either
    case Family::kGemma:
      return gemma(messages, add_generation_prompt, false);
    case Family::kGemma3:
      return gemma(messages, add_generation_prompt, true);
    case Family::kPhi3:
      return tagged(messages, add_generation_prompt, "<|end|>", "<|endoftext|>");
    case Family::kZephyr:
      return tagged(messages, add_generation_prompt, "</s>", "");
    case Family::kJinja:
      break;
  }
  return make_error("chat template: unknown family");
}

}  // namespace tova::tok
