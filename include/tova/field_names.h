// Library errors about an option name it as the library knows it, at the start of the message:
// "temperature must be a finite number", "kv budget: KV policy 'tova' needs at least 1 state".
// Each front-end spells options its own way (a CLI flag, a JSON field, a Python keyword) and
// puts its spelling in that place before it shows the error (spell_field).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tova {

// The library's names of the options its errors are about.
namespace field {
inline constexpr std::string_view kTemperature = "temperature";
inline constexpr std::string_view kTopP = "top p";
inline constexpr std::string_view kMinP = "min p";
inline constexpr std::string_view kRepeatPenalty = "repeat penalty";
inline constexpr std::string_view kRepeatLastN = "repeat last n";
inline constexpr std::string_view kKvBudget = "kv budget";
inline constexpr std::string_view kKvRotate = "kv rotate";
inline constexpr std::string_view kTokenIds = "token ids";
inline constexpr std::string_view kPolicies = "policies";
inline constexpr std::string_view kPositions = "positions";
inline constexpr std::string_view kKvTypes = "kv types";
inline constexpr std::string_view kWindow = "window";
inline constexpr std::string_view kContext = "context";
inline constexpr std::string_view kSpillDir = "spill dir";
inline constexpr std::string_view kChatTemplate = "chat template";
inline constexpr std::string_view kSamples = "samples";
inline constexpr std::string_view kTurns = "turns";
inline constexpr std::string_view kNeedleTemplate = "needle template";
inline constexpr std::string_view kVocab = "vocabulary";
inline constexpr std::string_view kReplace = "replace";
}  // namespace field

// A front-end's spelling of one library field.
struct FieldSpelling {
  std::string_view field;    // field::kTemperature
  std::string_view spelled;  // "--temp", "temperature"
};

// `message` with the library field it starts with (followed by ' ' or ':') put as the front-end
// spells it; unchanged when it starts with none of `names`.
inline std::string spell_field(std::string_view message, std::span<const FieldSpelling> names) {
  for (const FieldSpelling& n : names) {
    if (message.size() > n.field.size() && message.substr(0, n.field.size()) == n.field &&
        (message[n.field.size()] == ' ' || message[n.field.size()] == ':')) {
      return std::string(n.spelled) + std::string(message.substr(n.field.size()));
    }
  }
  return std::string(message);
}

}  // namespace tova
