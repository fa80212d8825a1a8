// From a decoded request to what the scheduler runs: the prompt's tokens (a chat rendered with
// the model's template), the limits the server sets, and the K/V bytes each choice may reach.
#pragma once

#include <string>
#include <variant>

#include "codec.h"
#include "job.h"
#include "tova/chat.h"
#include "tova/engine.h"

namespace tova::server {

// `chat`: the server's chat template, null when it has none (`chat_error` says why).
std::variant<GenerationRequest, ApiError> plan_generation(const CompletionRequest& r,
                                                          const std::string& id,
                                                          const Engine& engine,
                                                          const ChatTemplate* chat,
                                                          const std::string& chat_error,
                                                          const ApiDefaults& d);

}  // namespace tova::server
