#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "grammar/gbnf.h"
#include "grammar/quote.h"
#include "tova/grammar.h"

namespace tova::grammar {

namespace {

using json = nlohmann::ordered_json;

struct SchemaError {
  std::string path;
  std::string message;
};

// Integral parts of at most 16 digits: a generated number stays exact in a double.
constexpr int kMaxDigits = 16;
constexpr int64_t kMaxBound = 999999999999999;  // bounds beyond +-(10^15 - 1) are refused

// The rules every grammar may use, each added once when first needed.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> k = {
      {"space", "\" \"?"},
      {"char", "[^\"\\\\\\x00-\\x1F\\x7F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})"},
      {"string", "\"\\\"\" char* \"\\\"\""},
      {"integral", "\"0\" | [1-9] [0-9]{0,15}"},
      {"number", "\"-\"? integral (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?"},
      {"integer", "\"-\"? integral"},
      {"boolean", "\"true\" | \"false\""},
      {"null", "\"null\""},
      {"value", "object | array | string | number | boolean | null"},
      {"object", "\"{\" space (string space \":\" space value (space \",\" space string space "
                 "\":\" space value)*)? space \"}\""},
      {"array", "\"[\" space (value (space \",\" space value)*)? space \"]\""},
  };
  return k;
}
// What each primitive needs.
const std::map<std::string, std::vector<std::string>>& needs() {
  static const std::map<std::string, std::vector<std::string>> k = {
      {"string", {"char"}},
      {"number", {"integral"}},
      {"integer", {"integral"}},
      {"value", {"object", "array", "string", "number", "boolean", "null"}},
      {"object", {"space", "string", "value"}},
      {"array", {"space", "value"}},
  };
  return k;
}

// Keywords that only describe (they change nothing about what is valid).
const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {
      "title", "description", "$schema", "$id", "$comment", "examples", "default",
      "readOnly", "writeOnly", "deprecated", "$defs", "definitions", "$anchor"};
  return k;
}
const std::set<std::string>& supported() {
  static const std::set<std::string> k = {
      "type", "properties", "required", "additionalProperties", "enum", "const", "items",
      "prefixItems", "additionalItems", "minItems", "maxItems", "anyOf", "oneOf", "allOf", "$ref",
      "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
      "exclusiveMaximum"};
  return k;
}

// A GBNF string literal of raw bytes.
std::string literal(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Digits of n >= 0.
std::string digits(int64_t n) { return std::to_string(n); }

// GBNF for the decimal texts of [a, b], 0 <= a <= b, both of the same digit count.
std::string same_length(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a == b) return literal(a);
  if (a[0] == b[0]) {
    std::string rest = same_length(a.substr(1), b.substr(1));
    return literal(a.substr(0, 1)) + (rest.empty() ? "" : " " + rest);
  }
  const size_t n = a.size() - 1;
  const std::string any = n == 0 ? "" : fmt::format(" [0-9]{{{}}}", n);
  const bool a_low = a.substr(1) == std::string(n, '0');
  const bool b_high = b.substr(1) == std::string(n, '9');
  std::vector<std::string> alts;
  char lo = a[0];
  char hi = b[0];
  if (!a_low) {
    alts.push_back(literal(a.substr(0, 1)) + " " + same_length(a.substr(1), std::string(n, '9')));
    ++lo;
  }
  if (!b_high) --hi;
  if (lo <= hi) alts.push_back(fmt::format("[{}-{}]{}", lo, hi, any));
  if (!b_high) {
    alts.push_back(literal(b.substr(0, 1)) + " " + same_length(std::string(n, '0'), b.substr(1)));
  }
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// GBNF for the decimal texts of [a, b] (0 <= a <= b; b < 0: unbounded above, up to
// kMaxDigits digits).
std::string nonneg_range(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  const int da = static_cast<int>(digits(a).size());
  const int db = b < 0 ? kMaxDigits : static_cast<int>(digits(b).size());
  for (int d = da; d <= db; ++d) {
    const int64_t lo = d == da ? a : static_cast<int64_t>(std::pow(10.0, d - 1));
    if (b < 0 && d > da) {
      // Every number of d or more digits, at once.
      alts.push_back(fmt::format("[1-9] [0-9]{{{},{}}}", d - 1, kMaxDigits - 1));
      break;
    }
    const int64_t hi = (b >= 0 && d == db) ? b : static_cast<int64_t>(std::pow(10.0, d)) - 1;
    alts.push_back(same_length(digits(lo), digits(hi)));
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class Converter {
 public:
  explicit Converter(const json& root) : root_(root) {}

  std::string run() {
    const std::string body = visit(root_, "");
    std::string out = "root ::= " + body + "\n";
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    for (const std::string& p : used_) out += p + " ::= " + primitives().at(p) + "\n";
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& m) {
    throw SchemaError{path, m};
  }

  std::string use(const std::string& primitive) {
    if (used_.insert(primitive).second) {
      auto it = needs().find(primitive);
      if (it != needs().end()) {
        for (const std::string& n : it->second) use(n);
      }
    }
    return primitive;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    std::string name;
    for (char c : hint) {
      name += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
    }
    if (name.empty()) name = "r";
    name = fmt::format("{}-{}", name.substr(0, 40), ++n_rules_);
    rules_.push_back({name, body});
    return name;
  }

  const json& resolve(const std::string& ref, const std::string& path) {
    if (ref == "#") return root_;
    if (ref.rfind("#/", 0) != 0) fail(path, fmt::format("'$ref' '{}' is not local (only #/...)", ref));
    const json* cur = &root_;
    size_t i = 2;
    while (i <= ref.size()) {
      size_t j = ref.find('/', i);
      if (j == std::string::npos) j = ref.size();
      // JSON Pointer escapes: ~1 is '/', ~0 is '~'.
      std::string part;
      for (size_t k = i; k < j; ++k) {
        if (ref[k] == '~' && k + 1 < j && (ref[k + 1] == '0' || ref[k + 1] == '1')) {
          part += ref[k + 1] == '1' ? '/' : '~';
          ++k;
        } else {
          part += ref[k];
        }
      }
      if (!cur->is_object() || !cur->contains(part)) {
        fail(path, fmt::format("'$ref' '{}' does not resolve", ref));
      }
      cur = &(*cur)[part];
      i = j + 1;
    }
    return *cur;
  }

  void check_keywords(const json& s, const std::string& path) {
    for (const auto& [k, v] : s.items()) {
      if (supported().count(k) == 0 && annotations().count(k) == 0) {
        fail(path, fmt::format("'{}' is not supported", k));
      }
    }
  }

  static int64_t count(const json& s, const char* key, const std::string& path, int64_t def) {
    if (!s.contains(key)) return def;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000) {
      fail(path, fmt::format("'{}' must be an integer in [0, 100000]", key));
    }
    return v.get<int64_t>();
  }

  // A $ref: its rule, named before its body is made (a recursive schema refers to it).
  std::string visit_ref(const json& s, const std::string& path) {
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && annotations().count(k) == 0) {
        fail(path, fmt::format("'{}' next to '$ref' is not supported", k));
      }
    }
    if (!s["$ref"].is_string()) fail(path, "'$ref' must be a string");
    const std::string ref = s["$ref"].get<std::string>();
    auto it = refs_.find(ref);
    if (it != refs_.end()) return it->second;
    const json& target = resolve(ref, path + "/$ref");
    // Named before its body is made, so a recursive schema refers to it.
    const std::string name = add_rule(ref.substr(ref.rfind('/') + 1), "");
    refs_[ref] = name;
    const std::string body = visit(target, ref.substr(1));
    for (auto& [n, b] : rules_) {
      if (n == name) b = body;
    }
    return name;
  }

  // anyOf / oneOf (key): one alternative of the listed schemas; null when s has neither.
  std::optional<std::string> visit_alternatives(const json& s, const std::string& path) {
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const json& alts = s[key];
      if (!alts.is_array() || alts.empty()) fail(path, fmt::format("'{}' must be a non-empty array", key));
      for (const auto& [k, v] : s.items()) {
        if (k != key && annotations().count(k) == 0) {
          fail(path, fmt::format("'{}' next to '{}' is not supported", k, key));
        }
      }
      if (std::string_view(key) == "oneOf") check_disjoint(alts, path);
      std::string out = "(";
      for (size_t i = 0; i < alts.size(); ++i) {
        out += (i ? " | " : "") + visit(alts[i], fmt::format("{}/{}/{}", path, key, i));
      }
      return out + ")";
    }
    return std::nullopt;
  }

  // The type a schema names, or the one its keywords imply ("" for none).
  std::string schema_type(const json& s, const std::string& path) {
    std::string type;
    if (s.contains("type")) {
      if (!s["type"].is_string()) fail(path, "'type' must be a string or a list of strings");
      type = s["type"].get<std::string>();
    } else if (s.contains("properties") || s.contains("additionalProperties") ||
               s.contains("required")) {
      type = "object";
    } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
               s.contains("maxItems")) {
      type = "array";
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") ||
               s.contains("format")) {
      type = "string";
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
               s.contains("exclusiveMaximum")) {
      type = "number";
    }
    return type;
  }

  std::string visit(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema 'false' accepts nothing");
      return use("value");
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
    check_keywords(s, path);
    if (s.contains("$ref")) return visit_ref(s, path);
    if (s.contains("allOf")) return visit(merge_all_of(s, path), path);
    if (s.contains("const")) {
      return literal(json_text(s["const"]));
    }
    if (s.contains("enum")) {
      const json& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(path, "'enum' must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < e.size(); ++i) out += (i ? " | " : "") + literal(json_text(e[i]));
      return out + ")";
    }
    if (auto alt = visit_alternatives(s, path)) return *alt;
    if (s.contains("type") && s["type"].is_array()) {
      const json& types = s["type"];
      if (types.empty()) fail(path, "'type' must not be an empty list");
      std::string out = "(";
      for (size_t i = 0; i < types.size(); ++i) {
        json one = s;
        one["type"] = types[i];
        out += (i ? " | " : "") + visit(one, path);
      }
      return out + ")";
    }
    const std::string type = schema_type(s, path);
    if (type.empty()) return use("value");
    if (type == "object") return object(s, path);
    if (type == "array") return array(s, path);
    if (type == "string") return string(s, path);
    if (type == "number" || type == "integer") return number(s, path, type == "integer");
    if (type == "boolean") return use("boolean");
    if (type == "null") return use("null");
    fail(path, fmt::format("unknown type '{}'", type));
  }

  // The JSON kinds a schema can produce, for oneOf (as far as can be told without solving).
  std::set<std::string> kinds(const json& s, int depth = 0) {
    static const std::set<std::string> all = {"object", "array", "string", "number", "boolean",
                                              "null"};
    if (!s.is_object() || depth > 16) return all;
    if (s.contains("$ref") && s["$ref"].is_string()) {
      try {
        return kinds(resolve(s["$ref"].get<std::string>(), ""), depth + 1);
      } catch (const SchemaError&) {
        return all;
      }
    }
    auto of_value = [](const json& v) -> std::string {
      if (v.is_object()) return "object";
      if (v.is_array()) return "array";
      if (v.is_string()) return "string";
      if (v.is_number()) return "number";
      if (v.is_boolean()) return "boolean";
      return "null";
    };
    if (s.contains("const")) return {of_value(s["const"])};
    if (s.contains("type")) {
      std::set<std::string> out;
      auto add = [&](const json& t) {
        if (!t.is_string()) return;
        out.insert(t.get<std::string>() == "integer" ? "number" : t.get<std::string>());
      };
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) add(t);
      } else {
        add(s["type"]);
      }
      return out;
    }
    if (s.contains("enum") && s["enum"].is_array()) {
      std::set<std::string> out;
      for (const auto& v : s["enum"]) out.insert(of_value(v));
      return out;
    }
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) {
      return {"object"};
    }
    if (s.contains("items") || s.contains("prefixItems")) return {"array"};
    return all;
  }

  // The value a required property must have, if the branch pins it (a discriminator).
  std::optional<std::set<std::string>> pinned(const json& s, const std::string& prop) {
    if (!s.is_object() || !s.contains("properties") || !s.contains("required")) return {};
    bool req = false;
    for (const auto& r : s["required"]) req = req || (r.is_string() && r.get<std::string>() == prop);
    if (!req || !s["properties"].contains(prop)) return {};
    const json& p = s["properties"][prop];
    if (!p.is_object()) return {};
    if (p.contains("const")) return std::set<std::string>{json_text(p["const"])};
    if (p.contains("enum") && p["enum"].is_array()) {
      std::set<std::string> v;
      for (const auto& x : p["enum"]) v.insert(json_text(x));
      return v;
    }
    return {};
  }

  // oneOf needs exactly one branch to match: refused unless the branches cannot overlap
  // (different JSON kinds, or objects told apart by a required property's const/enum).
  void check_disjoint(const json& alts, const std::string& path) {
    for (size_t i = 0; i < alts.size(); ++i) {
      for (size_t j = i + 1; j < alts.size(); ++j) {
        const std::set<std::string> a = kinds(alts[i]);
        const std::set<std::string> b = kinds(alts[j]);
        bool overlap = false;
        for (const auto& k : a) overlap = overlap || b.count(k);
        if (!overlap) continue;
        bool told_apart = false;
        if (a == std::set<std::string>{"object"} && b == a && alts[i].contains("properties")) {
          for (const auto& [prop, v] : alts[i]["properties"].items()) {
            auto pa = pinned(alts[i], prop);
            auto pb = pinned(alts[j], prop);
            if (!pa || !pb) continue;
            bool common = false;
            for (const auto& x : *pa) common = common || pb->count(x);
            if (!common) told_apart = true;
          }
        }
        if (!told_apart) {
          fail(path, fmt::format("'oneOf' branches {} and {} may both match one value (use "
                                 "'anyOf', or tell them apart by type or by a required "
                                 "property's 'const')",
                                 i, j));
        }
      }
    }
  }

  // allOf of object schemas (and the keywords beside it) as one schema; anything else that
  // cannot be merged exactly is refused.
  json merge_all_of(const json& s, const std::string& path) {
    const json& parts = s["allOf"];
    if (!parts.is_array() || parts.empty()) fail(path, "'allOf' must be a non-empty array");
    json merged = json::object();
    std::vector<json> all;
    json rest = s;
    rest.erase("allOf");
    all.push_back(rest);
    for (size_t i = 0; i < parts.size(); ++i) {
      const json* p = &parts[i];
      for (int hops = 0; p->is_object() && p->contains("$ref") && hops < 16; ++hops) {
        if (!(*p)["$ref"].is_string()) fail(path, "'$ref' must be a string");
        p = &resolve((*p)["$ref"].get<std::string>(), fmt::format("{}/allOf/{}", path, i));
      }
      if (!p->is_object()) fail(fmt::format("{}/allOf/{}", path, i), "a schema must be an object");
      if (p->contains("allOf")) {
        all.push_back(merge_all_of(*p, fmt::format("{}/allOf/{}", path, i)));
      } else {
        all.push_back(*p);
      }
    }
    for (const json& part : all) {
      for (const auto& [k, v] : part.items()) {
        if (annotations().count(k)) continue;
        if (k == "properties") {
          if (!merged.contains(k)) merged[k] = json::object();
          for (const auto& [name, sub] : v.items()) {
            if (merged[k].contains(name) && merged[k][name] != sub) {
              fail(path, fmt::format("'allOf' gives property '{}' two different schemas", name));
            }
            merged[k][name] = sub;
          }
        } else if (k == "required") {
          if (!merged.contains(k)) merged[k] = json::array();
          for (const auto& r : v) {
            if (std::find(merged[k].begin(), merged[k].end(), r) == merged[k].end()) {
              merged[k].push_back(r);
            }
          }
        } else if (!merged.contains(k)) {
          merged[k] = v;
        } else if (merged[k] != v) {
          fail(path, fmt::format("'allOf' parts disagree on '{}' (not mergeable)", k));
        }
      }
    }
    return merged;
  }

  std::string kv(const std::string& name, const json& sub, const std::string& path) {
    use("space");
    return literal(json_text(json(name))) + " space \":\" space " +
           visit(sub, path + "/properties/" + name);
  }

  std::string object(const json& s, const std::string& path) {
    use("space");
    struct Slot {
      std::string expr;
      bool required;
      bool repeated;
    };
    std::vector<Slot> slots;
    std::set<std::string> names;
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(path, "'required' must be an array of strings");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) fail(path, "'required' must be an array of strings");
        required.insert(r.get<std::string>());
      }
    }
    const json empty = json::object();
    const json& props = s.contains("properties") ? s["properties"] : empty;
    if (!props.is_object()) fail(path, "'properties' must be an object");
    for (const auto& [name, sub] : props.items()) {
      names.insert(name);
      slots.push_back({kv(name, sub, path), required.count(name) > 0, false});
    }
    const json extra = s.contains("additionalProperties") ? s["additionalProperties"] : json();
    for (const std::string& r : required) {
      if (names.count(r)) continue;
      // Required but not declared: the additional properties' schema gives its value.
      if (extra.is_boolean() && !extra.get<bool>()) {
        fail(path, fmt::format("'{}' is required but not in 'properties' while "
                               "'additionalProperties' is false",
                               r));
      }
      names.insert(r);
      slots.push_back({kv(r, extra.is_null() ? json(true) : extra, path), true, false});
    }
    if (!extra.is_null() && !(extra.is_boolean() && !extra.get<bool>())) {
      // Other keys: any string but the declared names (a declared name with another value
      // could break its schema).
      const std::string key = add_rule("key", not_names(names));
      use("char");
      slots.push_back({key + " space \":\" space " + visit(extra, path + "/additionalProperties"),
                       false, true});
    }
    // Commas: f(i) reads slots i.. with nothing written yet, t(i) after something was.
    const size_t n = slots.size();
    std::vector<std::string> f(n + 1), t(n + 1);
    const std::string sep = "space \",\" space ";
    for (size_t k = n; k-- > 0;) {
      const Slot& sl = slots[k];
      const std::string x = sl.expr;
      const std::string tn = t[k + 1].empty() ? "" : " " + t[k + 1];
      if (sl.required) {
        t[k] = add_rule("obj", sep + "(" + x + ")" + tn);
        f[k] = add_rule("obj", "(" + x + ")" + tn);
      } else {
        const std::string q = sl.repeated ? "*" : "?";
        t[k] = add_rule("obj", "(" + sep + "(" + x + "))" + q + tn);
        const std::string fn = f[k + 1].empty() ? "\"\"" : f[k + 1];
        const std::string more = sl.repeated ? " (" + sep + "(" + x + "))*" : "";
        f[k] = add_rule("obj", "(" + x + ")" + more + tn + " | " + fn);
      }
    }
    return "\"{\" space " + (f[0].empty() ? "" : f[0] + " ") + "space \"}\"";
  }

  // A JSON string (quoted) of plain characters whose text is none of `names`.
  std::string not_names(const std::set<std::string>& names) {
    // A trie of the names, one rule per node.
    struct TrieNode {
      std::map<unsigned char, int> next;
      bool end = false;
    };
    std::vector<TrieNode> trie(1);
    for (const std::string& n : names) {
      int cur = 0;
      for (unsigned char c : n) {
        auto it = trie[cur].next.find(c);
        if (it == trie[cur].next.end()) {
          trie.push_back({});
          it = trie[cur].next.emplace(c, static_cast<int>(trie.size() - 1)).first;
        }
        cur = it->second;
      }
      trie[cur].end = true;
    }
    const std::string plain = "[^\"\\\\\\x00-\\x1F\\x7F]";
    std::vector<std::string> rule(trie.size());
    for (size_t i = trie.size(); i-- > 0;) {
      std::string alts;
      std::string excluded;
      for (const auto& [c, child] : trie[i].next) {
        alts += literal(std::string(1, static_cast<char>(c))) + " " + rule[child] + " | ";
        excluded += fmt::format("\\x{:02X}", c);
      }
      // A byte of a multi-byte character is excluded through its lead byte: names with
      // non-ASCII characters exclude every character sharing that lead (fewer keys, still
      // none of the names).
      alts += "[^" + excluded + "\"\\\\\\x00-\\x1F\\x7F] " + plain + "* \"\\\"\"";
      if (!trie[i].end) alts += " | \"\\\"\"";
      rule[i] = add_rule("key", alts);
    }
    return "\"\\\"\" " + rule[0];
  }

  std::string array(const json& s, const std::string& path) {
    use("space");
    const int64_t min = count(s, "minItems", path, 0);
    const int64_t max = count(s, "maxItems", path, -1);
    if (max >= 0 && max < min) fail(path, "'maxItems' is below 'minItems'");
    std::vector<std::string> prefix;
    json rest = true;
    const json* tuple = nullptr;
    if (s.contains("prefixItems")) {
      tuple = &s["prefixItems"];
      if (s.contains("items")) rest = s["items"];
    } else if (s.contains("items") && s["items"].is_array()) {
      tuple = &s["items"];
      if (s.contains("additionalItems")) rest = s["additionalItems"];
    } else if (s.contains("items")) {
      rest = s["items"];
    }
    if (s.contains("additionalItems") && tuple == nullptr) {
      // Without a tuple, additionalItems constrains nothing.
    }
    if (tuple != nullptr) {
      if (!tuple->is_array()) fail(path, "'prefixItems' must be an array");
      for (size_t i = 0; i < tuple->size(); ++i) {
        prefix.push_back(visit((*tuple)[i], fmt::format("{}/prefixItems/{}", path, i)));
      }
    }
    // Every prefix item is written (up to maxItems), then more from `rest`.
    const int64_t k = max >= 0 ? std::min<int64_t>(static_cast<int64_t>(prefix.size()), max)
                               : static_cast<int64_t>(prefix.size());
    prefix.resize(static_cast<size_t>(k));
    const bool rest_ok = !(rest.is_boolean() && !rest.get<bool>());
    if (!rest_ok && k < min) {
      fail(path, "'minItems' needs more items than 'prefixItems' gives with 'items': false");
    }
    const std::string sep = " space \",\" space ";
    std::string body;
    for (size_t i = 0; i < prefix.size(); ++i) body += (i ? sep : "") + prefix[i];
    if (rest_ok && (max < 0 || max > k)) {
      const std::string item = add_rule("item", visit(rest, path + "/items"));
      const int64_t more_min = std::max<int64_t>(0, min - k);
      const int64_t more_max = max < 0 ? -1 : max - k;
      std::string more;
      if (k > 0) {
        // Each further item after a comma.
        more = more_max < 0 ? fmt::format("({}{}){{{},}}", sep, item, more_min)
                            : fmt::format("({}{}){{{},{}}}", sep, item, more_min, more_max);
        body += " " + more;
      } else if (more_min > 0) {
        body = item + " " +
               (more_max < 0 ? fmt::format("({}{}){{{},}}", sep, item, more_min - 1)
                             : fmt::format("({}{}){{{},{}}}", sep, item, more_min - 1,
                                           more_max - 1));
      } else if (more_max != 0) {
        body = "(" + item + " " +
               (more_max < 0 ? fmt::format("({}{})*", sep, item)
                             : fmt::format("({}{}){{0,{}}}", sep, item, more_max - 1)) +
               ")?";
      }
    }
    return "\"[\" space " + (body.empty() ? "" : add_rule("arr", body) + " ") + "space \"]\"";
  }

  std::string string(const json& s, const std::string& path) {
    use("char");
    const int64_t min = count(s, "minLength", path, 0);
    const int64_t max = count(s, "maxLength", path, -1);
    if (max >= 0 && max < min) fail(path, "'maxLength' is below 'minLength'");
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    const int n_forms = (s.contains("pattern") ? 1 : 0) + (s.contains("format") ? 1 : 0) +
                        (lengths ? 1 : 0);
    if (n_forms > 1) {
      fail(path, "only one of 'pattern', 'format' and 'minLength'/'maxLength' is supported on "
                 "one string");
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) fail(path, "'pattern' must be a string");
      auto r = regex_to_gbnf(s["pattern"].get<std::string>(), "char");
      if (!r.ok()) fail(path, r.message());
      return "\"\\\"\" " + add_rule("pattern", *r) + " \"\\\"\"";
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) fail(path, "'format' must be a string");
      const std::string f = s["format"].get<std::string>();
      const std::string d2 = "[0-9] [0-9]";
      const std::string date =
          "([1-9] [0-9]{3} | \"0\" ([1-9] [0-9]{2} | \"0\" ([1-9] [0-9] | \"0\" [1-9]))) \"-\" (\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]) | (\"0\" [13578] | "
          "\"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | (\"0\" [469] | \"11\") "
          "\"-\" (\"0\" [1-9] | [12] [0-9] | \"30\"))";
      const std::string time =
          "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
          "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
      const std::string hex = "[0-9a-f]";
      std::string body;
      if (f == "date") {
        body = date;
      } else if (f == "time") {
        body = time;
      } else if (f == "date-time") {
        body = date + " \"T\" " + time;
      } else if (f == "uuid") {
        body = fmt::format("{0}{{8}} \"-\" {0}{{4}} \"-\" {0}{{4}} \"-\" {0}{{4}} \"-\" {0}{{12}}",
                           hex);
      } else {
        fail(path, fmt::format("format '{}' is not supported (date, time, date-time, uuid)", f));
      }
      (void)d2;
      return "\"\\\"\" " + add_rule(f, body) + " \"\\\"\"";
    }
    if (!lengths) return use("string");
    const std::string rep = max < 0 ? fmt::format("char{{{},}}", min)
                                    : fmt::format("char{{{},{}}}", min, max);
    return "\"\\\"\" " + rep + " \"\\\"\"";
  }

  // An integer bound from minimum/maximum/exclusive*, or none.
  std::optional<int64_t> bound(const json& s, bool lower, bool integer, const std::string& path) {
    const char* inc = lower ? "minimum" : "maximum";
    const char* exc = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::optional<int64_t> out;
    for (const char* key : {inc, exc}) {
      if (!s.contains(key)) continue;
      const json& v = s[key];
      if (v.is_boolean()) fail(path, fmt::format("'{}' as a boolean (draft 4) is not supported", key));
      if (!v.is_number()) fail(path, fmt::format("'{}' must be a number", key));
      const double d = v.get<double>();
      const bool exclusive = key == exc;
      if (!integer && (d != std::floor(d) || exclusive)) {
        fail(path, fmt::format("'{}' {} on a number is not supported (only inclusive whole "
                               "bounds; use type integer)",
                               key, json_text(v)));
      }
      if (std::fabs(d) > static_cast<double>(kMaxBound)) {
        fail(path, fmt::format("'{}' {} is beyond +-{}", key, json_text(v), kMaxBound));
      }
      int64_t b = static_cast<int64_t>(lower ? std::ceil(d) : std::floor(d));
      if (exclusive && static_cast<double>(b) == d) b += lower ? 1 : -1;
      out = out ? (lower ? std::max(*out, b) : std::min(*out, b)) : b;
    }
    return out;
  }

  // The decimal integers in [lo, hi] (unbounded where absent).
  std::string int_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    std::vector<std::string> alts;
    // Negative part: -v for v in [max(1, -hi), -lo].
    if (!lo || *lo < 0) {
      const int64_t vmin = hi ? std::max<int64_t>(1, -*hi) : 1;
      const int64_t vmax = lo ? -*lo : -1;
      if (vmax < 0 || vmin <= vmax) alts.push_back("\"-\" " + nonneg_range(vmin, vmax));
    }
    if (!hi || *hi >= 0) {
      const int64_t a = lo ? std::max<int64_t>(0, *lo) : 0;
      alts.push_back(nonneg_range(a, hi ? *hi : -1));
    }
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
  }

  std::string number(const json& s, const std::string& path, bool integer) {
    const auto lo = bound(s, true, integer, path);
    const auto hi = bound(s, false, integer, path);
    if (lo && hi && *lo > *hi) fail(path, "the bounds leave no value");
    if (!lo && !hi) return use(integer ? "integer" : "number");
    const std::string whole = int_range(lo, hi);
    if (integer) return add_rule("int", whole);
    // Fractions: n.f with n >= 0 lies in [n, n+1), so n in [max(lo, 0), hi - 1]; -k.f lies in
    // (-(k+1), -k], so k in [max(0, -hi), -lo - 1].
    std::vector<std::string> alts = {whole};
    const std::string frac = " \".\" [0-9]{1,15}";
    {
      const int64_t a = lo ? std::max<int64_t>(0, *lo) : 0;
      if (!hi || *hi - 1 >= a) alts.push_back(nonneg_range(a, hi ? *hi - 1 : -1) + frac);
    }
    {
      const int64_t a = hi ? std::max<int64_t>(0, -*hi) : 0;
      if (!lo || -*lo - 1 >= a) alts.push_back("\"-\" " + nonneg_range(a, lo ? -*lo - 1 : -1) + frac);
    }
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return add_rule("num", out);
  }

  const json& root_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> used_;
  std::map<std::string, std::string> refs_;
  int n_rules_ = 0;
};

}  // namespace

Result<std::string> json_schema_to_gbnf(std::string_view schema_json) {
  const json schema = json::parse(schema_json, nullptr, false);
  if (schema.is_discarded()) return make_error("json_schema: the schema is not valid JSON");
  std::string gbnf;
  try {
    gbnf = Converter(schema).run();
  } catch (const SchemaError& e) {
    return make_error("json_schema: {}: {}", e.path.empty() ? "/" : quote(e.path, 200),
                      quote(e.message, 400));
  }
  // The grammar made must be one the matcher runs (a schema that refers to itself before
  // writing anything is left-recursive).
  auto g = parse_gbnf(gbnf);
  if (!g.ok()) return make_error("json_schema: the schema makes no usable grammar: {}", g.message());
  return gbnf;
}

}  // namespace tova::grammar

namespace tova {

Status check_grammar(std::string_view gbnf) {
  TOVA_RETURN_IF_ERROR(grammar::parse_gbnf(gbnf));
  return ok_status();
}

Result<std::string> json_schema_grammar(std::string_view schema) {
  return grammar::json_schema_to_gbnf(schema);
}

std::string json_object_grammar() {
  std::string out = "root ::= object\n";
  for (const char* p : {"space", "char", "string", "integral", "number", "integer", "boolean",
                        "null", "value", "object", "array"}) {
    out += std::string(p) + " ::= " + grammar::primitives().at(p) + "\n";
  }
  return out;
}

}  // namespace tova
