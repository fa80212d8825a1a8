// The chat template a front-end renders conversations with, for an engine: the template named
// (a family's name or a .jinja file) if a name is given, else the model's own
// tokenizer.chat_template rendered as Jinja with the tokenizer's BOS and EOS texts. Not part of
// the public face (tok::ChatTemplate is not public): the engine (Engine::chat_template, the
// public ChatTemplate) and the task runner call it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "tokenizer/chat_template.h"
#include "tova/engine.h"
#include "tova/reasoning.h"

namespace tova::runtime {

Result<tok::ChatTemplate> chat_template_of(const Engine& engine, std::string_view name = {});

// How answers rendered by `t` carry reasoning: a Jinja template's text says (think blocks, harmony
// channels, Gemma 4's thought channel); the hand-written qwen3 family writes think blocks.
ReasoningFormat reasoning_format_of(const tok::ChatTemplate& t);

// The template variables a front-end renders with unless told otherwise: enable_thinking = true
// for a Jinja thinking template, think or gemma4 (as llama-server does: some templates,
// DeepSeek-R1's among them, test `not enable_thinking` and would close the block before the
// answer; Gemma 4's writes an empty thought channel without it).
std::vector<std::pair<std::string, jinja::Value>> default_template_vars(const tok::ChatTemplate& t);

}  // namespace tova::runtime
