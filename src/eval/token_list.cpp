#include "eval/token_list.h"

#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace tova::eval {
namespace {

// A value quoted in an error message is cut to this many characters, so a hostile element (a
// huge string or nested object) cannot make the message arbitrarily long.
constexpr size_t kMaxQuoted = 64;

std::string quoted_value(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxQuoted) s = s.substr(0, kMaxQuoted) + "...";
  return s;
}

}  // namespace

Result<std::vector<int32_t>> parse_token_list(std::string_view text, std::string_view source) {
  // No exceptions, no callback: invalid JSON (including invalid UTF-8 in strings) is discarded.
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return make_error("{}: not valid JSON", source);
  if (j.is_object() && j.contains("tokens")) j = nlohmann::json(j["tokens"]);
  if (!j.is_array()) return make_error("{}: expected a JSON list of token ids", source);
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (const auto& v : j) {
    // Unsigned values above INT64_MAX must not wrap into range through get<int64_t>().
    const bool ok = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= std::numeric_limits<int32_t>::max()
                        : v.is_number_integer() && v.get<int64_t>() >= 0 &&
                              v.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!ok) {
      return make_error("{}: token list holds a value that is not a token id: {}", source,
                        quoted_value(v));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

}  // namespace tova::eval
