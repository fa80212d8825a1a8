#include "jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tova::jinja {

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::dict();
      for (const auto& [k, x] : j.items()) d.mutable_dict().set(k, from_json(x));
      return d;
    }
    default:
      return Value::none();
  }
}

namespace {

void append_escaped(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
      continue;
    }
    if (c < 0x80 || !ensure_ascii) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // ensure_ascii: \uXXXX (a surrogate pair above the BMP).
    const std::string_view cp = code_points(std::string_view(s).substr(i, 4))[0];
    uint32_t v = 0;
    if (cp.size() == 1) {
      v = c;
    } else {
      v = static_cast<unsigned char>(cp[0]) & (0xFF >> (cp.size() + 1));
      for (size_t k = 1; k < cp.size(); ++k) v = (v << 6) | (static_cast<unsigned char>(cp[k]) & 0x3F);
    }
    if (v >= 0x10000) {
      v -= 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    } else {
      std::snprintf(buf, sizeof(buf), "\\u%04x", v);
    }
    out += buf;
    i += cp.size();
  }
  out += '"';
}

Status dump(const Value& v, const JsonDumpOptions& o, int level, int max_depth, std::string& out) {
  if (level > max_depth) return make_error("tojson: nested deeper than {} levels", max_depth);
  auto newline = [&](int lvl) {
    if (!o.indent) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return ok_status();
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return ok_status();
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return ok_status();
    case Value::Kind::kFloat: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                                                   : float_repr(d);
      return ok_status();
    }
    case Value::Kind::kString:
      append_escaped(out, v.str(), o.ensure_ascii);
      return ok_status();
    case Value::Kind::kList: {
      if (v.items().empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        TOVA_RETURN_IF_ERROR(dump(v.items()[i], o, level + 1, max_depth, out));
      }
      newline(level);
      out += ']';
      return ok_status();
    }
    case Value::Kind::kDict: {
      if (v.is_namespace()) break;
      const auto& items = v.dict_data().items;
      if (items.empty()) {
        out += "{}";
        return ok_status();
      }
      std::vector<const std::pair<std::string, Value>*> order;
      for (const auto& kv : items) order.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(order.begin(), order.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += o.item_separator;
        newline(level + 1);
        append_escaped(out, order[i]->first, o.ensure_ascii);
        out += o.key_separator;
        TOVA_RETURN_IF_ERROR(dump(order[i]->second, o, level + 1, max_depth, out));
      }
      newline(level);
      out += '}';
      return ok_status();
    }
    default:
      break;
  }
  return make_error("Object of type {} is not JSON serializable", v.type_name());
}

}  // namespace

Result<std::string> to_json(const Value& v, const JsonDumpOptions& o, int max_depth) {
  std::string out;
  TOVA_RETURN_IF_ERROR(dump(v, o, 0, max_depth, out));
  return out;
}

}  // namespace tova::jinja
