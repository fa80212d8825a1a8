// The chat template a front-end renders conversations with, for an engine: the template named
// (a family's name or a .jinja file) if a name is given, else the model's own
// tokenizer.chat_template rendered as Jinja with the tokenizer's BOS and EOS texts. Not part of
// the public face (tok::ChatTemplate is not public): front-ends and the task runner call it.
#pragma once

#include <string_view>

#include "core/result.h"
#include "tokenizer/chat_template.h"
#include "tova/engine.h"

namespace tova::runtime {

Result<tok::ChatTemplate> chat_template_of(const Engine& engine, std::string_view name = {});

}  // namespace tova::runtime
