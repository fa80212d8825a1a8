// The Python methods of str, dict and list values that templates call (`s.startswith('x')`,
// `d.get('k')`, `d.items()`): each a bound function value. Methods that would change a list or
// dict are the sandbox's error when called, as in Hugging Face's ImmutableSandboxedEnvironment.
#include <algorithm>
#include <charconv>

#include "jinja/builtins.h"
#include "jinja/pystr.h"
#include "jinja/renderer.h"

namespace tova::jinja {
namespace {

Result<std::optional<std::string>> opt_str(const CallArgs& a, size_t pos, std::string_view name) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) return std::optional<std::string>();
  if (!v->is_string()) return make_error("{} must be a str or None, not {}", name, v->type_name());
  return std::optional<std::string>(v->str());
}

Result<long> opt_int(const CallArgs& a, size_t pos, std::string_view name, long def) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) return def;
  if (!v->is_int() && !v->is_bool()) {
    return make_error("{} must be an integer, not {}", name, v->type_name());
  }
  return static_cast<long>(v->as_int());
}

Result<std::string> req_str(const CallArgs& a, size_t pos, std::string_view name) {
  const Value* v = arg(a, pos, name);
  if (!v) return make_error("missing argument '{}'", name);
  if (!v->is_string()) return make_error("{} must be a str, not {}", name, v->type_name());
  return v->str();
}

Value strings(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.emplace_back(p);
  return Value::list(std::move(items));
}

// str.format: {} {0} {name} and {{ }}; a format spec is not supported (an error).
Result<Value> format(const std::string& fmt, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}' ) {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return make_error("single '{}' encountered in format string", '}');
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return make_error("single '{}' encountered in format string", '{');
    const std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      return make_error("format field '{{{}}}' is not supported (no specs or attributes)", field);
    }
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_index >= a.args.size()) return make_error("format: not enough arguments");
      v = &a.args[auto_index++];
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t k = 0;  // from_chars: an index of 30 digits is out of range, not an exception
      const auto r = std::from_chars(field.data(), field.data() + field.size(), k);
      if (r.ec != std::errc() || k >= a.args.size()) {
        return make_error("format: index {} out of range", field);
      }
      v = &a.args[k];
    } else {
      for (const auto& [name, x] : a.kwargs) {
        if (name == field) v = &x;
      }
      if (!v) return make_error("format: no argument '{}'", field);
    }
    out += to_str(*v);
    i = close;
  }
  return Value(std::move(out));
}

Value bound(const Value& self, std::string name,
           std::function<Result<Value>(Renderer&, const Value&, CallArgs&)> f) {
  return Value::function(name, [self, f](Renderer& r, CallArgs& a) { return f(r, self, a); });
}

// Python's str.isdigit() ... str.isupper() of `s` (ASCII classes, Unicode spaces), by name.
bool has_class(const std::string& n, const std::string& s) {
  if (n == "islower") return py::is_lower(s);
  if (n == "isupper") return py::is_upper(s);
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    size_t len = 1;
    bool ok = false;
    const bool digit = c >= '0' && c <= '9';
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (n == "isspace") {
      ok = py::is_space_at(s, i, &len);
    } else if (n == "isdigit") {
      ok = digit;
    } else if (n == "isalpha") {
      ok = alpha;
    } else {
      ok = digit || alpha;
    }
    if (!ok) return false;
    i += len;
  }
  return true;
}

// str methods that look for text: startswith/endswith, find/rfind/index/rindex, count.
Value string_search_method(const Value& s, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(s, std::string(name), f); };
  if (name == "startswith" || name == "endswith") {
    const bool start = name == "startswith";
    return fn([start](Renderer&, const Value& self, A& a) -> Result<Value> {
      const Value* p = arg(a, 0, "prefix");
      if (!p) return make_error("{} takes at least 1 argument", start ? "startswith" : "endswith");
      std::vector<Value> options = p->is_list() ? p->items() : std::vector<Value>{*p};
      for (const Value& o : options) {
        if (!o.is_string()) return make_error("the argument must be a str or a tuple of str");
        if (start ? self.str().starts_with(o.str()) : self.str().ends_with(o.str())) {
          return Value(true);
        }
      }
      return Value(false);
    });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const bool rev = name[0] == 'r';
    const bool raise = name.find("index") != std::string_view::npos;
    return fn([rev, raise](Renderer&, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(std::string sub, req_str(a, 0, "sub"));
      const long at = py::find(self.str(), sub, rev);
      if (at < 0 && raise) return make_error("substring not found");
      return Value(static_cast<int64_t>(at));
    });
  }
  if (name == "count") {
    return fn([](Renderer&, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(std::string sub, req_str(a, 0, "sub"));
      return Value(static_cast<int64_t>(py::count(self.str(), sub)));
    });
  }
  return Value::undefined();
}

// str methods that cut or change text: strip, split, splitlines, replace, case, removeprefix/removesuffix.
Value string_edit_method(const Value& s, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(s, std::string(name), f); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool l = name != "rstrip";
    const bool r = name != "lstrip";
    return fn([l, r](Renderer&, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(auto chars, opt_str(a, 0, "chars"));
      return Value(py::strip(self.str(), chars, l, r));
    });
  }
  if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    return fn([right](Renderer& rr, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(auto sep, opt_str(a, 0, "sep"));
      TOVA_ASSIGN_OR_RETURN(long maxsplit, opt_int(a, 1, "maxsplit", -1));
      if (sep && sep->empty()) return make_error("empty separator");
      auto parts = right ? py::rsplit(self.str(), sep, maxsplit) : py::split(self.str(), sep, maxsplit);
      TOVA_RETURN_IF_ERROR(rr.check_items(parts.size()));
      return strings(parts);
    });
  }
  if (name == "splitlines") {
    return fn([](Renderer&, const Value& self, A& a) -> Result<Value> {
      return strings(py::splitlines(self.str(), arg_or(a, 0, "keepends", Value(false)).truthy()));
    });
  }
  if (name == "replace") {
    return fn([](Renderer& r, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(std::string old, req_str(a, 0, "old"));
      TOVA_ASSIGN_OR_RETURN(std::string with, req_str(a, 1, "new"));
      TOVA_ASSIGN_OR_RETURN(long count, opt_int(a, 2, "count", -1));
      const size_t n = py::count(self.str(), old);
      TOVA_RETURN_IF_ERROR(r.check_string(self.str().size() + n * with.size()));
      return Value(py::replace(self.str(), old, with, count));
    });
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    const std::string n(name);
    return fn([n](Renderer&, const Value& self, A&) -> Result<Value> {
      if (n == "upper") return Value(py::upper(self.str()));
      if (n == "lower") return Value(py::lower(self.str()));
      if (n == "title") return Value(py::title(self.str()));
      return Value(py::capitalize(self.str()));
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const bool prefix = name == "removeprefix";
    return fn([prefix](Renderer&, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(std::string x, req_str(a, 0, prefix ? "prefix" : "suffix"));
      std::string_view s = self.str();
      if (prefix && s.starts_with(x)) s.remove_prefix(x.size());
      if (!prefix && s.ends_with(x)) s.remove_suffix(x.size());
      return Value(s);
    });
  }
  return Value::undefined();
}

// str methods that build text: format, join, center.
Value string_build_method(const Value& s, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(s, std::string(name), f); };
  if (name == "format") {
    return fn([](Renderer& r, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(Value v, format(self.str(), a));
      TOVA_RETURN_IF_ERROR(r.check_string(v.str().size()));
      return v;
    });
  }
  if (name == "join") {
    return fn([](Renderer& r, const Value& self, A& a) -> Result<Value> {
      const Value* seq = arg(a, 0, "iterable");
      if (!seq) return make_error("join() takes exactly one argument");
      TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(*seq));
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string()) {
          return make_error("sequence item {}: expected str instance, {} found", i,
                            items[i].type_name());
        }
        if (i) out += self.str();
        out += items[i].str();
        TOVA_RETURN_IF_ERROR(r.check_string(out.size()));
      }
      return Value(std::move(out));
    });
  }
  if (name == "center") {
    return fn([](Renderer& r, const Value& self, A& a) -> Result<Value> {
      TOVA_ASSIGN_OR_RETURN(long width, opt_int(a, 0, "width", 0));
      TOVA_RETURN_IF_ERROR(r.check_string(static_cast<size_t>(std::max(0L, width))));
      return Value(py::center(self.str(), width));
    });
  }
  return Value::undefined();
}

// str methods that test character classes: isdigit, isalpha, isalnum, isspace, islower, isupper.
Value string_classes_method(const Value& s, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(s, std::string(name), f); };
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "islower" || name == "isupper") {
    const std::string n(name);
    return fn([n](Renderer&, const Value& self, A&) -> Result<Value> {
      return Value(has_class(n, self.str()));
    });
  }
  return Value::undefined();
}

Value string_method(const Value& s, std::string_view name) {
  for (auto* group : {string_search_method, string_edit_method, string_build_method,
                      string_classes_method}) {
    Value v = group(s, name);
    if (!v.is_undefined()) return v;
  }
  return Value::undefined();
}

Value unsafe(const Value& v, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                          std::string(v.type_name()) + "' object is unsafe.");
}

Value dict_method(const Value& d, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(d, std::string(name), f); };
  if (name == "get") {
    return fn([](Renderer&, const Value& self, A& a) -> Result<Value> {
      const Value* k = arg(a, 0, "key");
      if (!k) return make_error("get expected at least 1 argument, got 0");
      const Value def = arg_or(a, 1, "default", Value::none());
      if (!k->is_string()) return def;
      const Value* v = self.dict_data().find(k->str());
      return v ? *v : def;
    });
  }
  if (name == "items" || name == "keys" || name == "values") {
    const char which = name[0];
    return fn([which](Renderer&, const Value& self, A&) -> Result<Value> {
      std::vector<Value> out;
      for (const auto& [k, v] : self.dict_data().items) {
        if (which == 'i') {
          out.push_back(Value::list({Value(k), v}, true));
        } else {
          out.push_back(which == 'k' ? Value(k) : v);
        }
      }
      return Value::list(std::move(out));
    });
  }
  if (name == "copy") {
    return fn([](Renderer&, const Value& self, A&) -> Result<Value> {
      return Value::dict(self.dict_data().items);
    });
  }
  if (name == "pop" || name == "popitem" || name == "setdefault" || name == "update" ||
      name == "clear") {
    return unsafe(d, name);
  }
  return Value::undefined();
}

Value list_method(const Value& l, std::string_view name) {
  using A = CallArgs;
  auto fn = [&](auto f) { return bound(l, std::string(name), f); };
  if (name == "count") {
    return fn([](Renderer&, const Value& self, A& a) -> Result<Value> {
      const Value* x = arg(a, 0, "value");
      if (!x) return make_error("count() takes exactly one argument");
      int64_t n = 0;
      for (const Value& v : self.items()) n += equals(v, *x);
      return Value(n);
    });
  }
  if (name == "index") {
    return fn([](Renderer&, const Value& self, A& a) -> Result<Value> {
      const Value* x = arg(a, 0, "value");
      if (!x) return make_error("index expected at least 1 argument");
      for (size_t i = 0; i < self.items().size(); ++i) {
        if (equals(self.items()[i], *x)) return Value(static_cast<int64_t>(i));
      }
      return make_error("{} is not in list", to_repr(*x));
    });
  }
  if (name == "copy" && !l.is_tuple()) {
    return fn([](Renderer&, const Value& self, A&) -> Result<Value> {
      return Value::list(self.items());
    });
  }
  if (!l.is_tuple() && (name == "append" || name == "extend" || name == "insert" ||
                        name == "pop" || name == "remove" || name == "reverse" ||
                        name == "sort" || name == "clear")) {
    return unsafe(l, name);
  }
  return Value::undefined();
}

}  // namespace

Value method(const Value& value, std::string_view name) {
  if (value.is_string()) return string_method(value, name);
  if (value.is_dict() && !value.is_namespace()) return dict_method(value, name);
  if (value.is_list()) return list_method(value, name);
  return Value::undefined();
}

}  // namespace tova::jinja
