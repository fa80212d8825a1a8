#include "turn.h"

#include <fmt/format.h>

namespace tova::server {

using nlohmann::json;

std::optional<ApiError> decode_template_switches(const json& body, json& vars) {
  vars = json::object();
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    const json& k = body["chat_template_kwargs"];
    if (!k.is_object()) {
      return bad_request("chat_template_kwargs",
                         "'chat_template_kwargs' must be an object of template variables");
    }
    for (const auto& [key, value] : k.items()) {
      if (key.empty()) {
        return bad_request("chat_template_kwargs", "a template variable needs a name");
      }
      vars[key] = value;
    }
  }
  if (body.contains("reasoning_effort") && !body["reasoning_effort"].is_null()) {
    const json& e = body["reasoning_effort"];
    const std::string v = e.is_string() ? e.get<std::string>() : std::string();
    if (v != "low" && v != "medium" && v != "high") {
      return bad_request("reasoning_effort", fmt::format("'reasoning_effort' must be \"low\", "
                                                         "\"medium\" or \"high\", got {}",
                                                         shown(e.dump())));
    }
    if (vars.contains("reasoning_effort") && vars["reasoning_effort"] != e) {
      return bad_request("reasoning_effort",
                         "'reasoning_effort' and chat_template_kwargs.reasoning_effort differ");
    }
    vars["reasoning_effort"] = v;
  }
  return std::nullopt;
}

json reasoning_chunk_json(const ResponseHead& h, int index, std::string_view reasoning) {
  json c = chunk_json(h, index, "", nullptr, "");
  c["choices"][0]["delta"] = {{"reasoning_content", reasoning}};
  return c;
}

}  // namespace tova::server
