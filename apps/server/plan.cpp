#include "plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "tova/turn_checkpoint.h"

namespace tova::server {

namespace {

// The conversation's prompt with the request's template variables, over the library's defaults
// (a thinking template gets enable_thinking = true).
std::variant<std::string, ApiError> render_chat(const CompletionRequest& r,
                                                const ChatTemplate& chat) {
  if (r.messages.empty()) return bad_request("messages", "'messages' must be a non-empty list");
  auto text = render_with_tools(chat, r.messages, r.tools, r.template_vars);
  if (auto* e = std::get_if<ApiError>(&text)) {
    // A hand-written family refuses variables: the request's switch is named.
    const bool switches = !r.template_vars.empty() && !chat.is_jinja();
    if (switches && e->param == "messages") {
      e->param = r.template_vars.contains("reasoning_effort") && r.template_vars.size() == 1
                     ? "reasoning_effort"
                     : "chat_template_kwargs";
    }
  }
  return text;
}

}  // namespace

namespace {

// The request's prompt as tokens: a chat rendered with its template (tools, reasoning, the
// turn checkpoint, a forced call's grammar), token ids as given, or text tokenized.
std::optional<ApiError> plan_prompt(const CompletionRequest& r, const Engine& engine,
                                    const ChatTemplate* chat, const std::string& chat_error,
                                    const ApiDefaults& d, GenerationRequest& g) {
  if (r.chat) {
    if (chat == nullptr) return bad_request("messages", chat_error);
    auto text = render_chat(r, *chat);
    if (auto* e = std::get_if<ApiError>(&text)) return *e;
    g.prompt_text = std::move(std::get<std::string>(text));
    // The images (image_url parts) encoded, or the same bytes' rows the engine kept.
    for (size_t i = 0; i < r.images.size(); ++i) {
      auto img = engine.encode_image(r.images[i], fmt::format("image {}", i + 1));
      if (!img.ok()) return bad_request("messages", img.message());
      g.images.push_back(std::move(*img));
    }
    auto ids = engine.tokens_with_images(g.prompt_text, g.images, {.chat = true});
    if (!ids.ok()) return bad_request("messages", ids.message());
    g.prompt = std::move(*ids);
    auto next = render_with_tools(*chat, next_turn_probe(r.messages), r.tools, r.template_vars);
    if (const auto* t = std::get_if<std::string>(&next)) {
      auto probe = engine.tokens_with_images(*t, g.images, {.chat = true});
      if (probe.ok()) g.checkpoint = turn_boundary(g.prompt, *probe);
    }
    g.reasoning = d.reasoning;
    g.render_special = reasoning_special_texts(d.reasoning);
    g.hold_prompt = r.tools.active();
    if (r.tools.forced()) {
      auto grammar = forced_grammar(r.tools, chat->tool_call_format());
      if (auto* e = std::get_if<ApiError>(&grammar)) return *e;
      g.sampling.grammar = std::move(std::get<std::string>(grammar));
    }
  } else if (r.prompt_is_ids) {
    if (Status st = engine.check_token_ids(r.prompt_ids); !st.ok()) {
      return bad_request("prompt", st.message());
    }
    g.prompt = r.prompt_ids;
  } else {
    g.prompt = engine.tokenize(r.prompt_text, /*add_bos=*/true);
  }
  return std::nullopt;
}

// Memory: a bounded state grows to at most k + extra slots, and a budget whose slots cannot
// fit in --kv-memory is refused (the library refuses it too: memory_limit); each choice
// reserves only the slots it can reach (prompt + max_tokens), which its pool allocates at
// admission. A `full` state reserves -c tokens' worth; with speculative decoding, the drafter's
// own K/V (draft-mtp's block, a draft model's) too.
std::optional<ApiError> plan_memory(const Engine& engine, const ApiDefaults& d, int64_t n_prompt,
                                    GenerationRequest& g) {
  const kv::PolicySpec& spec = g.cache.policy;
  const uint64_t most = engine.reserve_bytes(g.cache, n_prompt, d.ctx, g.speculative);
  if (most > d.kv_memory) {
    return ApiError{
        .status = 400,
        .message = spec.bounded()
                       ? fmt::format("kv_budget {}: a multi-state of {} states per layer needs up "
                                     "to {} bytes of K/V memory, more than the server's "
                                     "--kv-memory ({} bytes)",
                                     spec.budget, spec.budget, most, d.kv_memory)
                       : fmt::format("a full multi-state of -c {} tokens needs {} bytes of K/V "
                                     "memory, more than the server's --kv-memory ({} bytes)",
                                     d.ctx, most, d.kv_memory),
        .param = "kv_budget",
        .code = "kv_budget_exceeds_memory"};
  }
  g.cache.memory_limit = d.kv_memory;
  g.reserve_bytes = most;
  if (spec.bounded()) {
    // Slots a layer reaches: the budget and its extra, an image's step beside them, and the
    // kept images' room (--kv-keep-images).
    const int64_t max_new = g.cache.prefill.max_new(n_prompt);
    const int64_t max_image = engine.max_image_tokens();
    const int64_t slots_most =
        spec.budget + max_new +
        (g.cache.keep_images ? int64_t{g.cache.max_kept_images} * max_image
                             : std::max<int64_t>(0, max_image - max_new));
    const int64_t reach = n_prompt + g.max_tokens;
    if (reach < slots_most) {
      g.reserve_bytes = most / static_cast<uint64_t>(slots_most) * static_cast<uint64_t>(reach);
    }
    g.cache.reserve = std::min(reach, slots_most);
  }
  if (g.reserve_bytes * static_cast<uint64_t>(g.n) > d.kv_memory) {
    return ApiError{.status = 400,
                    .message = fmt::format("n {}: {} choices need {} bytes of K/V memory, more "
                                           "than the server's --kv-memory ({} bytes)",
                                           g.n, g.n, g.reserve_bytes * g.n, d.kv_memory),
                    .param = "n",
                    .code = "kv_budget_exceeds_memory"};
  }
  return std::nullopt;
}

}  // namespace

std::variant<GenerationRequest, ApiError> plan_generation(const CompletionRequest& r,
                                                          const std::string& id,
                                                          const Engine& engine,
                                                          const ChatTemplate* chat,
                                                          const std::string& chat_error,
                                                          const ApiDefaults& d) {
  GenerationRequest g{.id = id,
                      .max_tokens = r.max_tokens,
                      .sampling = r.sampling,
                      .stop = r.stop,
                      .cache = r.cache,
                      .speculative = r.speculative,
                      .n = r.n,
                      .logprobs = r.logprobs,
                      .allow_reuse = r.allow_reuse,
                      .ignore_eos = r.ignore_eos};
  const char* prompt_field = r.chat ? "messages" : "prompt";
  if (auto e = plan_prompt(r, engine, chat, chat_error, d, g)) return *e;
  if (g.prompt.empty()) return bad_request(prompt_field, "the prompt gives no tokens");
  const int64_t n_prompt = static_cast<int64_t>(g.prompt.size());
  if (n_prompt > d.max_prompt_tokens) {
    return ApiError{.status = 400,
                    .message = fmt::format("the prompt has {} tokens, more than the limit {}",
                                           n_prompt, d.max_prompt_tokens),
                    .param = prompt_field,
                    .code = "context_length_exceeded"};
  }
  if (Status st = engine.check_kv_format(g.cache.kv_type); !st.ok()) {
    return bad_request("kv_type", st.message());
  }
  if (g.cache.keep_images && !engine.has_mmproj()) {
    return bad_request("kv_keep_images",
                       "kv_keep_images keeps image states, but this server takes no images "
                       "(no --mmproj)");
  }
  const kv::PolicySpec& spec = g.cache.policy;
  if (!spec.bounded() && n_prompt + g.max_tokens > d.ctx) {
    return ApiError{
        .status = 400,
        .message = fmt::format("prompt ({} tokens) + max_tokens ({}) exceed the context of an "
                               "unbounded ('full') sequence, {} tokens (-c); use a bounded "
                               "kv_policy or fewer tokens",
                               n_prompt, g.max_tokens, d.ctx),
        .param = "max_tokens",
        .code = "context_length_exceeded"};
  }
  if (auto e = plan_memory(engine, d, n_prompt, g)) return *e;
  return g;
}

}  // namespace tova::server
