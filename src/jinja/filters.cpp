// jinja2's built-in filters (`x | trim`, `tools | tojson(indent=4)`, ...), with Hugging Face's
// tojson (json.dumps keeping non-ASCII characters and key order).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "jinja/builtins.h"
#include "jinja/json.h"
#include "jinja/pystr.h"
#include "jinja/renderer.h"

namespace tova::jinja {
namespace {

using FilterFn = Result<Value> (*)(Renderer&, const Value&, CallArgs&);

Result<int64_t> int_arg(const CallArgs& a, size_t pos, std::string_view name, int64_t def) {
  const Value* v = arg(a, pos, name);
  if (!v) return def;
  if (!v->is_int() && !v->is_bool()) {
    return make_error("argument '{}' must be an integer, not {}", name, v->type_name());
  }
  return v->as_int();
}

// `attribute=` of map/sort/selectattr/...: "a.b.0" walks items (jinja2's make_attrgetter).
Result<Value> attribute_of(Renderer& r, const Value& item, const Value& attribute) {
  if (attribute.is_int()) return r.get_item(item, attribute);
  const std::string path = to_str(attribute);
  Value v = item;
  size_t pos = 0;
  while (true) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? dot : dot - pos);
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    int64_t index = 0;  // from_chars: a path part of 30 digits is a name, not an exception
    const bool number =
        digits && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    TOVA_ASSIGN_OR_RETURN(v, r.get_item(v, number ? Value(index) : Value(part)));
    if (dot == std::string::npos) return v;
    pos = dot + 1;
  }
}

Result<size_t> length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return size_t{0};
    case Value::Kind::kString:
      return code_point_count(v.str());
    case Value::Kind::kList:
      return v.items().size();
    case Value::Kind::kDict:
      if (!v.is_namespace()) return v.dict_data().items.size();
      break;
    default:
      break;
  }
  return make_error("object of type '{}' has no len()", v.type_name());
}

// The sort key of sort/unique/min/max/dictsort: lower-cased strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py::lower(v.str()));
  return v;
}

Result<std::vector<Value>> sorted(Renderer& r, std::vector<Value> items, bool reverse,
                                  bool case_sensitive, const Value* attribute) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& v : items) {
    Value k = v;
    if (attribute) {
      TOVA_ASSIGN_OR_RETURN(k, attribute_of(r, v, *attribute));
    }
    keyed.emplace_back(sort_key(k, case_sensitive), std::move(v));
  }
  std::optional<Error> err;
  TOVA_RETURN_IF_ERROR(r.charge(keyed.size()));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (err) return false;
    auto lt = reverse ? less(b.first, a.first) : less(a.first, b.first);
    if (!lt.ok()) {
      err = lt.error();
      return false;
    }
    return *lt;
  });
  if (err) return *err;
  std::vector<Value> out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return out;
}

Result<Value> f_tojson(Renderer& r, const Value& v, CallArgs& a) {
  JsonDumpOptions o;
  const Value indent = arg_or(a, 0, "indent", Value::none());
  if (indent.is_int()) {
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 64)), ' ');
  } else if (indent.is_string()) {
    o.indent = indent.str();
  } else if (!indent.is_none()) {
    return make_error("tojson: indent must be an integer or a string");
  }
  if (o.indent) o.item_separator.assign(1, ',');
  const Value sep = arg_or(a, 99, "separators", Value::none());
  if (sep.is_list() && sep.items().size() == 2 && sep.items()[0].is_string() &&
      sep.items()[1].is_string()) {
    o.item_separator = sep.items()[0].str();
    o.key_separator = sep.items()[1].str();
  } else if (!sep.is_none()) {
    return make_error("tojson: separators must be a pair of strings");
  }
  o.sort_keys = arg_or(a, 99, "sort_keys", Value(false)).truthy();
  o.ensure_ascii = arg_or(a, 99, "ensure_ascii", Value(false)).truthy();
  TOVA_ASSIGN_OR_RETURN(std::string s, to_json(v, o));
  TOVA_RETURN_IF_ERROR(r.check_string(s.size()));
  return Value(std::move(s));
}

Result<Value> f_default(Renderer&, const Value& v, CallArgs& a) {
  const Value def = arg_or(a, 0, "default_value", Value(""));
  const bool boolean = arg_or(a, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return def;
  return v;
}

Result<Value> f_length(Renderer&, const Value& v, CallArgs&) {
  TOVA_ASSIGN_OR_RETURN(size_t n, length_of(v));
  return Value(static_cast<int64_t>(n));
}

Result<Value> f_trim(Renderer&, const Value& v, CallArgs& a) {
  const Value chars = arg_or(a, 0, "chars", Value::none());
  std::optional<std::string_view> set;
  if (chars.is_string()) set = chars.str();
  return Value(py::strip(to_str(v), set, true, true));
}

Result<Value> f_items(Renderer&, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict() || v.is_namespace()) return make_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::list({Value(k), x}, true));
  return Value::list(std::move(out));
}

Result<Value> f_join(Renderer& r, const Value& v, CallArgs& a) {
  const std::string sep = to_str(arg_or(a, 0, "d", Value("")));
  const Value* attribute = arg(a, 1, "attribute");
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value x = items[i];
    if (attribute) {
      TOVA_ASSIGN_OR_RETURN(x, attribute_of(r, x, *attribute));
    }
    if (i) out += sep;
    out += to_str(x);
    TOVA_RETURN_IF_ERROR(r.check_string(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> f_first(Renderer&, const Value& v, CallArgs&) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> f_last(Renderer&, const Value& v, CallArgs&) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Result<Value> f_list(Renderer&, const Value& v, CallArgs&) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  return Value::list(std::move(items));
}

Result<Value> f_string(Renderer&, const Value& v, CallArgs&) { return Value(to_str(v)); }
Result<Value> f_upper(Renderer&, const Value& v, CallArgs&) { return Value(py::upper(to_str(v))); }
Result<Value> f_lower(Renderer&, const Value& v, CallArgs&) { return Value(py::lower(to_str(v))); }
Result<Value> f_capitalize(Renderer&, const Value& v, CallArgs&) {
  return Value(py::capitalize(to_str(v)));
}

// jinja2's title: each word after a run of spaces, '-', or an opening bracket starts upper case.
Result<Value> f_title(Renderer&, const Value& v, CallArgs&) {
  const std::string s = to_str(v);
  std::string out;
  bool start = true;
  for (char c : s) {
    const bool sep = c == ' ' || c == '-' || c == '(' || c == '{' || c == '[' || c == '<' ||
                     (c >= '\t' && c <= '\r');
    if (sep) {
      out += c;
      start = true;
      continue;
    }
    out += start ? py::upper(std::string(1, c)) : py::lower(std::string(1, c));
    start = false;
  }
  return Value(std::move(out));
}

Result<Value> f_replace(Renderer& r, const Value& v, CallArgs& a) {
  const std::string s = to_str(v);
  const std::string old = to_str(arg_or(a, 0, "old", Value("")));
  const std::string with = to_str(arg_or(a, 1, "new", Value("")));
  const Value count = arg_or(a, 2, "count", Value::none());
  const size_t n = py::count(s, old);
  TOVA_RETURN_IF_ERROR(r.check_string(s.size() + n * with.size()));
  return Value(py::replace(s, old, with, count.is_none() ? -1 : static_cast<long>(count.as_int())));
}

Result<Value> f_int(Renderer&, const Value& v, CallArgs& a) {
  const Value def = arg_or(a, 0, "default", Value(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    if (!std::isfinite(v.as_double()) || std::fabs(v.as_double()) > 9.2e18) return def;
    return Value(static_cast<int64_t>(v.as_double()));
  }
  if (v.is_string()) {
    const std::string s = py::strip(v.str(), std::nullopt, true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    try {
      size_t used = 0;
      const long long i = std::stoll(digits, &used, 10);
      if (used == digits.size() && !digits.empty()) return Value(static_cast<int64_t>(i));
    } catch (...) {
    }
    try {
      size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
        return Value(static_cast<int64_t>(d));
      }
    } catch (...) {
    }
  }
  return def;
}

Result<Value> f_float(Renderer&, const Value& v, CallArgs& a) {
  const Value def = arg_or(a, 0, "default", Value(0.0));
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    const std::string s = py::strip(v.str(), std::nullopt, true, true);
    try {
      size_t used = 0;
      const double d = std::stod(s, &used);
      if (used == s.size()) return Value(d);
    } catch (...) {
    }
  }
  return def;
}

Result<Value> f_abs(Renderer&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) return make_error("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return make_error("bad operand type for abs(): '{}'", v.type_name());
}

Result<Value> f_round(Renderer&, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(int64_t precision, int_arg(a, 0, "precision", 0));
  const std::string method = to_str(arg_or(a, 1, "method", Value("common")));
  if (!v.is_number()) return make_error("round: '{}' is not a number", v.type_name());
  if (method != "common" && method != "ceil" && method != "floor") {
    return make_error("method must be common, ceil or floor");
  }
  if (!v.is_float() && method == "common") return Value(v.as_int());
  precision = std::clamp<int64_t>(precision, -300, 300);
  if (method == "common" && precision >= 0 && std::isfinite(v.as_double())) {
    // Python's round(): correctly rounded from the exact binary value, ties to even, which is
    // what printf's %.*f does (2.675 is 2.67499999... and rounds down).
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::min<int64_t>(precision, 100)),
                  v.as_double());
    return Value(std::strtod(buf, nullptr));
  }
  const double p = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * p;
  const double rounded = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x)
                                                                               : std::nearbyint(x);
  return Value(rounded / p);
}

Result<Value> f_sort(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  const bool reverse = arg_or(a, 0, "reverse", Value(false)).truthy();
  const bool cs = arg_or(a, 1, "case_sensitive", Value(false)).truthy();
  const Value* attribute = arg(a, 2, "attribute");
  TOVA_ASSIGN_OR_RETURN(items, sorted(r, std::move(items), reverse, cs, attribute));
  return Value::list(std::move(items));
}

Result<Value> f_dictsort(Renderer& r, const Value& v, CallArgs& a) {
  if (!v.is_dict() || v.is_namespace()) return make_error("dictsort: not a mapping");
  const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const std::string by = to_str(arg_or(a, 1, "by", Value("key")));
  const bool reverse = arg_or(a, 2, "reverse", Value(false)).truthy();
  if (by != "key" && by != "value") return make_error("You can only sort by either 'key' or 'value'");
  std::vector<Value> pairs;
  for (const auto& [k, x] : v.dict_data().items) pairs.push_back(Value::list({Value(k), x}, true));
  const Value index(static_cast<int64_t>(by == "key" ? 0 : 1));
  TOVA_ASSIGN_OR_RETURN(pairs, sorted(r, std::move(pairs), reverse, cs, &index));
  return Value::list(std::move(pairs));
}

Result<Value> f_unique(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const Value* attribute = arg(a, 1, "attribute");
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& x : items) {
    Value k = x;
    if (attribute) {
      TOVA_ASSIGN_OR_RETURN(k, attribute_of(r, x, *attribute));
    }
    k = sort_key(k, cs);
    TOVA_RETURN_IF_ERROR(r.charge(seen.size() / 16 + 1));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return Value::list(std::move(out));
}

Result<Value> min_max(Renderer& r, const Value& v, CallArgs& a, bool max) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  const bool cs = arg_or(a, 0, "case_sensitive", Value(false)).truthy();
  const Value* attribute = arg(a, 1, "attribute");
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  TOVA_ASSIGN_OR_RETURN(items, sorted(r, std::move(items), false, cs, attribute));
  if (!max) return items.front();
  // The first of the largest, as Python's max().
  Value best = items.back();
  for (const Value& x : items) {
    Value kx = x;
    Value kb = best;
    if (attribute) {
      TOVA_ASSIGN_OR_RETURN(kx, attribute_of(r, x, *attribute));
      TOVA_ASSIGN_OR_RETURN(kb, attribute_of(r, best, *attribute));
    }
    if (equals(sort_key(kx, cs), sort_key(kb, cs))) return x;
  }
  return best;
}
Result<Value> f_min(Renderer& r, const Value& v, CallArgs& a) { return min_max(r, v, a, false); }
Result<Value> f_max(Renderer& r, const Value& v, CallArgs& a) { return min_max(r, v, a, true); }

Result<Value> f_sum(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  const Value* attribute = arg(a, 0, "attribute");
  Value total = arg_or(a, 1, "start", Value(0));
  for (const Value& x : items) {
    Value k = x;
    if (attribute) {
      TOVA_ASSIGN_OR_RETURN(k, attribute_of(r, x, *attribute));
    }
    if (!k.is_number() || !total.is_number()) {
      return make_error("unsupported operand type(s) for +: '{}' and '{}'", total.type_name(),
                        k.type_name());
    }
    if (k.is_float() || total.is_float()) {
      total = Value(total.as_double() + k.as_double());
    } else {
      int64_t s = 0;
      if (__builtin_add_overflow(total.as_int(), k.as_int(), &s)) return make_error("integer overflow");
      total = Value(s);
    }
  }
  return total;
}

Result<Value> f_reverse(Renderer&, const Value& v, CallArgs&) {
  if (v.is_string()) {
    auto cps = code_points(v.str());
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
    return Value(std::move(out));
  }
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_identity(Renderer&, const Value& v, CallArgs&) { return v; }

Result<Value> f_escape(Renderer&, const Value& v, CallArgs&) {
  return Value(py::html_escape(to_str(v)));
}

Result<Value> f_wordcount(Renderer&, const Value& v, CallArgs&) {
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    const bool w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   c == '_' || c >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result<Value> f_indent(Renderer& r, const Value& v, CallArgs& a) {
  const Value width = arg_or(a, 0, "width", Value(4));
  std::string ind;
  if (width.is_string()) {
    ind = width.str();
  } else if (width.is_int()) {
    ind = std::string(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 1024)), ' ');
  } else {
    return make_error("indent: width must be an integer or a string");
  }
  const bool first = arg_or(a, 1, "first", Value(false)).truthy();
  const bool blank = arg_or(a, 2, "blank", Value(false)).truthy();
  const std::string s = to_str(v) + "\n";
  const std::vector<std::string> lines = py::splitlines(s, false);
  TOVA_RETURN_IF_ERROR(r.check_string(s.size() + lines.size() * ind.size()));
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    if (i && (blank || !lines[i].empty())) out += ind;
    out += lines[i];
  }
  if (first) out = ind + out;
  return Value(std::move(out));
}

Result<Value> f_center(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(int64_t width, int_arg(a, 0, "width", 80));
  TOVA_RETURN_IF_ERROR(r.check_string(static_cast<size_t>(std::max<int64_t>(0, width))));
  return Value(py::center(to_str(v), static_cast<long>(width)));
}

Result<Value> f_batch(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(int64_t n, int_arg(a, 0, "linecount", 1));
  const Value* fill = arg(a, 1, "fill_with");
  if (n <= 0) return make_error("batch: linecount must be positive");
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  std::vector<Value> out;
  std::vector<Value> cur;
  for (const Value& x : items) {
    cur.push_back(x);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill) {
      TOVA_RETURN_IF_ERROR(r.check_items(static_cast<size_t>(n)));
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_attr(Renderer&, const Value& v, CallArgs& a) {
  const std::string name = to_str(arg_or(a, 0, "name", Value("")));
  if (v.is_namespace()) return v.get(name);
  return method(v, name);
}

Result<Value> f_pprint(Renderer&, const Value& v, CallArgs&) { return Value(to_repr(v)); }

// `value | format(args)`: Python's printf-style %s %d %i %r %f %%.
Result<Value> f_format(Renderer& r, const Value& v, CallArgs& a) {
  const std::string f = to_str(v);
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) return make_error("format: incomplete format");
    const char c = f[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= a.args.size()) return make_error("not enough arguments for format string");
    const Value& x = a.args[next++];
    if (c == 's') {
      out += to_str(x);
    } else if (c == 'r') {
      out += to_repr(x);
    } else if ((c == 'd' || c == 'i') && x.is_number()) {
      out += std::to_string(x.is_float() ? static_cast<int64_t>(x.as_double()) : x.as_int());
    } else if (c == 'f' && x.is_number()) {
      out += fmt::format("{:.6f}", x.as_double());
    } else {
      return make_error("format: unsupported format character '{}'", c);
    }
    TOVA_RETURN_IF_ERROR(r.check_string(out.size()));
  }
  if (next < a.args.size()) return make_error("not all arguments converted during string formatting");
  return Value(std::move(out));
}

// select/reject (by a test) and selectattr/rejectattr (a test on an attribute).
Result<Value> select(Renderer& r, const Value& v, CallArgs& a, bool attr, bool keep) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  size_t first = 0;
  Value attribute;
  if (attr) {
    if (a.args.empty()) return make_error("selectattr/rejectattr need an attribute");
    attribute = a.args[0];
    first = 1;
  }
  std::string test;
  CallArgs targs;
  if (a.args.size() > first) {
    test = to_str(a.args[first]);
    if (!has_test(test)) return make_error("no test named '{}'", test);
    targs.args.assign(a.args.begin() + static_cast<long>(first) + 1, a.args.end());
    targs.kwargs = a.kwargs;
  }
  std::vector<Value> out;
  for (const Value& x : items) {
    TOVA_RETURN_IF_ERROR(r.charge());
    Value subject = x;
    if (attr) {
      TOVA_ASSIGN_OR_RETURN(subject, attribute_of(r, x, attribute));
    }
    bool pass = false;
    if (test.empty()) {
      pass = subject.truthy();
    } else {
      CallArgs copy = targs;
      TOVA_ASSIGN_OR_RETURN(pass, apply_test(r, test, subject, copy));
    }
    if (pass == keep) out.push_back(x);
  }
  return Value::list(std::move(out));
}
Result<Value> f_select(Renderer& r, const Value& v, CallArgs& a) { return select(r, v, a, false, true); }
Result<Value> f_reject(Renderer& r, const Value& v, CallArgs& a) { return select(r, v, a, false, false); }
Result<Value> f_selectattr(Renderer& r, const Value& v, CallArgs& a) { return select(r, v, a, true, true); }
Result<Value> f_rejectattr(Renderer& r, const Value& v, CallArgs& a) { return select(r, v, a, true, false); }

Result<Value> f_map(Renderer& r, const Value& v, CallArgs& a) {
  TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(v));
  std::vector<Value> out;
  if (const Value* attribute = arg(a, 99, "attribute"); attribute && a.args.empty()) {
    const Value* def = arg(a, 99, "default");
    for (const Value& x : items) {
      TOVA_ASSIGN_OR_RETURN(Value y, attribute_of(r, x, *attribute));
      out.push_back(y.is_undefined() && def ? *def : y);
    }
    return Value::list(std::move(out));
  }
  if (a.args.empty()) return make_error("map: no filter or attribute given");
  const std::string name = to_str(a.args[0]);
  if (!has_filter(name)) return make_error("no filter named '{}'", name);
  CallArgs fargs;
  fargs.args.assign(a.args.begin() + 1, a.args.end());
  fargs.kwargs = a.kwargs;
  for (const Value& x : items) {
    TOVA_RETURN_IF_ERROR(r.charge());
    CallArgs copy = fargs;
    TOVA_ASSIGN_OR_RETURN(Value y, apply_filter(r, name, x, copy));
    out.push_back(std::move(y));
  }
  return Value::list(std::move(out));
}

const std::map<std::string_view, FilterFn>& filters() {
  static const std::map<std::string_view, FilterFn> kFilters = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"pprint", f_pprint},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_identity},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return kFilters;
}

}  // namespace

bool has_filter(std::string_view name) { return filters().count(name) > 0; }

Result<Value> apply_filter(Renderer& r, std::string_view name, const Value& value, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) return make_error("no filter named '{}'", name);
  // Most filters turn an undefined into a string or an empty sequence, as jinja2's do; these
  // must see a value.
  if (value.is_undefined() && (name == "tojson" || name == "abs" || name == "round")) {
    return make_error("{}", value.undefined_hint().empty() ? "undefined value"
                                                           : value.undefined_hint());
  }
  return it->second(r, value, args);
}

}  // namespace tova::jinja
