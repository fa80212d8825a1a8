#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tova::jinja {

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void DictData::set(std::string key, Value v) {
  depth = std::max(depth, v.depth() + 1);
  for (auto& [k, old] : items) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(v));
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
Value::Value(double v) : kind_(Kind::kFloat), f_(v) {}
Value::Value(std::string s)
    : kind_(Kind::kString), s_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  int depth = 1;
  for (const Value& x : items) depth = std::max(depth, x.depth() + 1);
  v.list_ = std::make_shared<ListData>(ListData{std::move(items), tuple, depth});
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<DictData>();
  for (auto& [k, x] : items) v.dict_->set(std::move(k), std::move(x));
  return v;
}

Value Value::make_namespace() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}

Value Value::function(std::string name, Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<FunctionData>(FunctionData{std::move(name), std::move(f)});
  return v;
}

int Value::depth() const {
  if (kind_ == Kind::kList) return list_->depth;
  if (kind_ == Kind::kDict) return dict_->depth;
  return 0;
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  return s_ ? *s_ : kEmpty;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0;
    case Kind::kString:
      return !s_->empty();
    case Kind::kList:
      return !list_->items.empty();
    case Kind::kDict:
      return is_namespace() || !dict_->items.empty();
    case Kind::kFunction:
      return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list_->tuple ? "tuple" : "list";
    case Kind::kDict:
      return is_namespace() ? "Namespace" : "dict";
    case Kind::kFunction:
      return "function";
  }
  return "?";
}

Value Value::get(std::string_view key) const {
  if (!is_dict()) return Value::undefined();
  const Value* v = dict_->find(key);
  return v ? *v : Value::undefined();
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const size_t e_pos = sci.find('e');
  std::string mant = sci.substr(0, e_pos);
  const int exp = std::stoi(sci.substr(e_pos + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out = neg ? "-" : "";
  if (exp >= -5 + 1 && exp < 16) {  // Python's repr: fixed for 1e-4 <= |d| < 1e16
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." +
             digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  char e[16];
  std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + e;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kString:
      return v.str();
    default:
      return to_repr(v);
  }
}

std::string to_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return float_repr(v.as_double());
    case Value::Kind::kString:
      return repr_string(v.str());
    case Value::Kind::kList: {
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ", ";
        out += to_repr(v.items()[i]);
      }
      if (v.is_tuple() && v.items().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Value::Kind::kDict: {
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, x] : v.dict_data().items) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(k) + ": " + to_repr(x);
      }
      return out + (v.is_namespace() ? "}>" : "}");
    }
    case Value::Kind::kFunction:
      return "<function " + v.fn_name() + ">";
  }
  return "";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!equals(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (&a.dict_data() == &b.dict_data()) return true;
      if (a.is_namespace() || b.is_namespace()) return false;
      const auto& x = a.dict_data().items;
      if (x.size() != b.dict_data().items.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* w = b.dict_data().find(k);
        if (!w || !equals(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::kFunction:
      return &a.fn() == &b.fn();
    default:
      return false;
  }
}

Result<bool> less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return make_error("'<' not supported between instances of '{}' and '{}'", a.type_name(),
                    b.type_name());
}

std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = 1;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        n = 1;
        break;
      }
    }
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace tova::jinja
