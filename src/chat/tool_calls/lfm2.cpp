// LFM2 / LFM2.5 calls (Liquid): a Python-style list of keyword calls between two control tokens,
//   <|tool_call_start|>[get_weather(city="Paris", days=3), get_time(zone='CET')]<|tool_call_end|>
// Argument values are Python literals: strings in single or double quotes (with escapes),
// numbers, True / False / None (and JSON's true / false / null, which the models also write),
// lists and dicts of those. They become the call's JSON arguments in the order written. Text
// outside the blocks is content; a block that does not read as calls stays content. An unclosed
// last block counts when its list is complete (the turn ended at the end-of-turn token).
#include <algorithm>

#include "chat/tool_calls/common.h"

namespace tova::chat {
namespace {

constexpr std::string_view kStart = "<|tool_call_start|>";
constexpr std::string_view kEnd = "<|tool_call_end|>";
constexpr int kMaxDepth = 64;  // nesting of lists and dicts in one value

// A cursor over one block's text; every read returns false (and the block stays content) on
// anything that is not the grammar above.
struct Reader {
  std::string_view t;
  size_t p = 0;

  void space() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\t' || t[p] == '\r')) ++p;
  }
  bool eat(char c) {
    space();
    if (p < t.size() && t[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  static bool ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool ident_char(char c) {
    return ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
  }
  bool ident(std::string& out) {
    space();
    if (p >= t.size() || !ident_start(t[p])) return false;
    const size_t s = p;
    while (p < t.size() && ident_char(t[p])) ++p;
    out = std::string(t.substr(s, p - s));
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // \xHH, \uHHHH, \UHHHHHHHH after the backslash and letter; false if the digits are not there.
  bool hex_escape(int digits, std::string& out) {
    if (p + digits > t.size()) return false;
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex(t[p + i]);
      if (h < 0) return false;
      cp = cp * 16 + static_cast<uint32_t>(h);
    }
    p += digits;
    append_utf8(out, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);  // a lone surrogate: U+FFFD
    return true;
  }
  bool string(std::string& out) {
    space();
    if (p >= t.size() || (t[p] != '"' && t[p] != '\'')) return false;
    const char q = t[p++];
    while (p < t.size()) {
      const char c = t[p++];
      if (c == q) {
        out = valid_utf8(out);
        return true;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p >= t.size()) return false;
      const char e = t[p++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case '0': out += '\0'; break;
        case 'x': if (!hex_escape(2, out)) return false; break;
        case 'u': if (!hex_escape(4, out)) return false; break;
        case 'U': if (!hex_escape(8, out)) return false; break;
        case '\n': break;  // a line continuation
        default: out += e;  // \\ \' \" and anything Python keeps as written
      }
    }
    return false;  // unterminated
  }
  // A Python number as JSON writes it: "+1" -> "1", "1." -> "1.0", ".5" -> "0.5".
  bool number(ordered_json& out) {
    space();
    auto digits = [&] {
      const size_t s = p;
      while (p < t.size() && t[p] >= '0' && t[p] <= '9') ++p;
      return t.substr(s, p - s);
    };
    std::string json;
    if (p < t.size() && (t[p] == '-' || t[p] == '+')) {
      if (t[p] == '-') json += '-';
      ++p;
    }
    const std::string_view whole = digits();
    std::string_view frac;
    const bool dot = p < t.size() && t[p] == '.';
    if (dot) {
      ++p;
      frac = digits();
    }
    if (whole.empty() && frac.empty()) return false;
    json.append(whole.empty() ? std::string_view("0") : whole);
    if (dot) {
      json += '.';
      json.append(frac.empty() ? std::string_view("0") : frac);
    }
    if (p < t.size() && (t[p] == 'e' || t[p] == 'E')) {
      json += 'e';
      ++p;
      if (p < t.size() && (t[p] == '-' || t[p] == '+')) json += t[p++];
      const std::string_view exp = digits();
      if (exp.empty()) return false;
      json.append(exp);
    }
    out = ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
    return !out.is_discarded();
  }
  bool value(ordered_json& out, int depth) {
    if (depth > kMaxDepth) return false;
    space();
    if (p >= t.size()) return false;
    const char c = t[p];
    if (c == '"' || c == '\'') {
      std::string s;
      if (!string(s)) return false;
      out = s;
      return true;
    }
    if (c == '[' || c == '(') {  // a list (a tuple reads as one, as JSON has no tuples)
      const char close = c == '[' ? ']' : ')';
      ++p;
      out = ordered_json::array();
      if (eat(close)) return true;
      for (;;) {
        ordered_json v;
        if (!value(v, depth + 1)) return false;
        out.push_back(std::move(v));
        if (eat(close)) return true;
        if (!eat(',')) return false;
        if (eat(close)) return true;  // a trailing comma
      }
    }
    if (c == '{') {
      ++p;
      out = ordered_json::object();
      if (eat('}')) return true;
      for (;;) {
        ordered_json k;
        if (!value(k, depth + 1)) return false;
        if (!eat(':')) return false;
        ordered_json v;
        if (!value(v, depth + 1)) return false;
        out[k.is_string() ? k.get<std::string>() : json_text(k)] = std::move(v);
        if (eat('}')) return true;
        if (!eat(',')) return false;
        if (eat('}')) return true;
      }
    }
    if (ident_start(c)) {
      std::string w;
      ident(w);
      if (w == "True" || w == "true") out = true;
      else if (w == "False" || w == "false") out = false;
      else if (w == "None" || w == "null") out = nullptr;
      else return false;
      return true;
    }
    return number(out);
  }
  // NAME(key=value, ...)
  bool call(ToolCall& out) {
    if (!ident(out.name)) return false;
    if (!eat('(')) return false;
    ordered_json args = ordered_json::object();
    if (!eat(')')) {
      for (;;) {
        std::string key;
        if (!ident(key) || !eat('=')) return false;
        ordered_json v;
        if (!value(v, 0)) return false;
        args[key] = std::move(v);
        if (eat(')')) break;
        if (!eat(',')) return false;
        if (eat(')')) break;
      }
    }
    out.name = valid_utf8(out.name);
    out.arguments = json_text(args);
    return true;
  }
  // [call, call, ...]
  bool calls(std::vector<ToolCall>& out) {
    if (!eat('[')) return false;
    for (;;) {
      ToolCall c;
      if (!call(c)) return false;
      out.push_back(std::move(c));
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }
};

}  // namespace

ParsedToolCalls parse_lfm2(std::string_view text) {
  ParsedToolCalls out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = text.find(kStart, pos);
    if (at == std::string_view::npos) break;
    const size_t body = at + kStart.size();
    const size_t end = text.find(kEnd, body);
    const std::string_view block =
        text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
    Reader r{block};
    std::vector<ToolCall> calls;
    bool ok = r.calls(calls);
    r.space();
    ok = ok && r.p == block.size();
    if (!ok) {  // not calls: the marker and what follows stay content
      out.content += text.substr(pos, body - pos);
      pos = body;
      continue;
    }
    out.content += text.substr(pos, at - pos);
    for (ToolCall& c : calls) out.calls.push_back(std::move(c));
    pos = end == std::string_view::npos ? text.size() : end + kEnd.size();
  }
  out.content += text.substr(std::min(pos, text.size()));
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

size_t lfm2_safe_prefix(std::string_view text) { return before_marker(text, kStart); }

namespace {

// The keyword arguments "key=value" of tool i's schema, each value's rules appended to `rules`
// (prefixed t<i>-p<j>-), sorted into required and optional ones, in the schema's order.
Status keyword_rules(size_t i, const ToolDefinition& tool, std::string& rules,
                     std::vector<std::string>& required_kv, std::vector<std::string>& optional_kv) {
  const ordered_json schema = parse_json(tool.parameters.empty() ? "{}" : tool.parameters);
  if (!schema.is_object()) {
    return make_error("tools[{}] ('{}'): parameters: not a JSON object", i, tool.name);
  }
  if (!schema.contains("properties") || !schema["properties"].is_object()) return ok_status();
  std::vector<std::string> required;
  if (schema.contains("required") && schema["required"].is_array()) {
    for (const auto& r : schema["required"]) {
      if (r.is_string()) required.push_back(r.get<std::string>());
    }
  }
  size_t j = 0;
  for (const auto& [key, sub] : schema["properties"].items()) {
    bool valid_key = !key.empty() && Reader::ident_start(key[0]);
    for (char c : key) valid_key = valid_key && Reader::ident_char(c) && c != '.' && c != '-';
    if (!valid_key) {
      return make_error("tools[{}] ('{}'): parameter '{}' is not a Python keyword name", i,
                        tool.name, key);
    }
    const std::string prefix = fmt::format("t{}-p{}-", i, j++);
    // A property's schema on its own, with the definitions its $refs may point to.
    ordered_json prop = sub;
    for (const char* defs : {"$defs", "definitions"}) {
      if (prop.is_object() && schema.contains(defs) && !prop.contains(defs)) {
        prop[defs] = schema[defs];
      }
    }
    auto g = argument_rules(ToolDefinition{.name = key, .parameters = json_text(prop)}, prefix);
    if (!g.ok()) {
      return make_error("tools[{}] ('{}'): parameter '{}': {}", i, tool.name, key, g.message());
    }
    rules += *g;
    const bool req = std::find(required.begin(), required.end(), key) != required.end();
    (req ? required_kv : optional_kv).push_back(gbnf_literal(key + "=") + " " + prefix + "root");
  }
  return ok_status();
}

// Rule `a`: the required ones joined by ", ", then the optional ones each "(, kv)?" in order;
// with no required one, any ordered subset of the optional ones.
std::string args_rules(const std::string& a, const std::vector<std::string>& required_kv,
                       const std::vector<std::string>& optional_kv) {
  std::string rules;
  auto tail = [&](size_t k) {  // the optional ones from k on
    return k < optional_kv.size() ? fmt::format("{}-o{}", a, k) : std::string("\"\"");
  };
  for (size_t k = 0; k < optional_kv.size(); ++k) {
    rules += fmt::format("{}-o{} ::= (\", \" {})? {}\n", a, k, optional_kv[k], tail(k + 1));
  }
  if (!required_kv.empty()) {
    std::string body;
    for (size_t k = 0; k < required_kv.size(); ++k) {
      body += (k ? " \", \" " : "") + required_kv[k];
    }
    return rules + fmt::format("{} ::= {}{}\n", a, body,
                               optional_kv.empty() ? "" : fmt::format(" {}", tail(0)));
  }
  std::string firsts;
  for (size_t k = 0; k < optional_kv.size(); ++k) {
    firsts += fmt::format("{}{} {}", k ? " | " : "", optional_kv[k], tail(k + 1));
  }
  return rules + (firsts.empty() ? fmt::format("{} ::= \"\"\n", a)
                                 : fmt::format("{} ::= ({})?\n", a, firsts));
}

}  // namespace

// A forced call: the block with one call (or several, parallel) of the offered tools, keyword
// arguments from each tool's JSON Schema: the required properties in order, then any of the
// optional ones in order; each value as the schema's JSON (JSON strings, numbers, true / false /
// null, lists and objects are Python literals the parser above reads).
Result<std::string> lfm2_grammar(const std::vector<ToolDefinition>& tools, bool parallel) {
  if (tools.empty()) return make_error("tools: no tool to call");
  std::string rules;
  std::string alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    std::vector<std::string> required_kv, optional_kv;
    TOVA_RETURN_IF_ERROR(keyword_rules(i, tools[i], rules, required_kv, optional_kv));
    const std::string a = fmt::format("t{}-args", i);
    rules += args_rules(a, required_kv, optional_kv);
    if (i > 0) alts += " | ";
    alts += gbnf_literal(tools[i].name + "(") + " " + a + " " + gbnf_literal(")");
  }
  return fmt::format("root ::= {} call{} {}\ncall ::= {}\n{}",
                     gbnf_literal(fmt::format("{}[", kStart)),
                     parallel ? fmt::format(" ({} call)*", gbnf_literal(", ")) : std::string(),
                     gbnf_literal(fmt::format("]{}", kEnd)), alts, rules);
}

}  // namespace tova::chat
