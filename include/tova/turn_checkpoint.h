// Where a chat turn's prompt and the next turn's part ways. A chat template re-renders the
// whole conversation at every turn, and it seldom renders the turn just answered as the model
// read it: Qwen3.5's opens the answer with "<think>\n" in the prompt and, once a user message
// follows, renders that answer without its think block; DeepSeek-R1's drops the reasoning. So
// neither the state at the end of a prompt nor the one at the end of its answer is a prefix of
// the next prompt, and a recurrent state (Gated DeltaNet) cannot be cut back to one. A server
// keeps a checkpoint of the state where the two prompts part (the turn boundary) and the next
// turn continues from it (tova serve: GenerationRequest::checkpoint).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tova/chat.h"

namespace tova {

// `messages` followed by an answer and a user message of placeholder text, as the next turn
// will present them: rendered (with the template, tools and switches of this turn) and
// tokenized, they share with this turn's prompt exactly what the next turn's prompt will.
std::vector<ChatMessage> next_turn_probe(const std::vector<ChatMessage>& messages);

// How many tokens `prompt` shares with `next` (the probe's tokens) from the start: the turn
// boundary, where a checkpoint of the state lets the next turn continue; the prompt's length
// when the template re-renders every token of it.
int64_t turn_boundary(std::span<const int32_t> prompt, std::span<const int32_t> next);

}  // namespace tova
