// The global functions every render sees: jinja2's range, dict, namespace, and Hugging Face's
// raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/renderer.h"

namespace tova::jinja {

const Value* arg(const CallArgs& a, size_t pos, std::string_view name) {
  if (pos < a.args.size()) return &a.args[pos];
  for (const auto& [k, v] : a.kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value arg_or(const CallArgs& a, size_t pos, std::string_view name, Value def) {
  const Value* v = arg(a, pos, name);
  return v ? *v : def;
}

namespace {

Result<Value> range(Renderer& r, CallArgs& a) {
  if (!a.kwargs.empty()) return make_error("range() takes no keyword arguments");
  if (a.args.empty() || a.args.size() > 3) {
    return make_error("range expected 1 to 3 arguments, got {}", a.args.size());
  }
  for (const Value& v : a.args) {
    if (!v.is_int() && !v.is_bool()) {
      return make_error("'{}' object cannot be interpreted as an integer", v.type_name());
    }
  }
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  }
  if (step == 0) return make_error("range() arg 3 must not be zero");
  // The length, without overflow: ceil((stop - start) / step) when positive.
  const __int128 span = static_cast<__int128>(stop) - start;
  __int128 n = 0;
  if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
    const __int128 s = step;
    n = (span + (step > 0 ? s - 1 : s + 1)) / s;
  }
  if (n > static_cast<__int128>(SIZE_MAX)) n = static_cast<__int128>(SIZE_MAX);
  TOVA_RETURN_IF_ERROR(r.check_items(static_cast<size_t>(n)));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (__int128 i = 0; i < n; ++i) items.emplace_back(static_cast<int64_t>(start + i * step));
  return Value::list(std::move(items));
}

Result<Value> make_dict(Renderer&, CallArgs& a) {
  Value d = Value::dict();
  for (const Value& v : a.args) {
    if (!v.is_dict() || v.is_namespace()) {
      return make_error("dict() takes a mapping and keyword arguments here, not '{}'",
                        v.type_name());
    }
    for (const auto& [k, x] : v.dict_data().items) d.mutable_dict().set(k, x);
  }
  for (const auto& [k, x] : a.kwargs) d.mutable_dict().set(k, x);
  return d;
}

Result<Value> make_namespace(Renderer&, CallArgs& a) {
  Value ns = Value::make_namespace();
  for (const Value& v : a.args) {
    if (!v.is_dict() || v.is_namespace()) {
      return make_error("namespace() takes a mapping and keyword arguments, not '{}'",
                        v.type_name());
    }
    for (const auto& [k, x] : v.dict_data().items) ns.mutable_dict().set(k, x);
  }
  for (const auto& [k, x] : a.kwargs) ns.mutable_dict().set(k, x);
  return ns;
}

}  // namespace

Value make_globals(long long now, bool utc) {
  auto strftime_now = [now, utc](Renderer&, CallArgs& a) -> Result<Value> {
    const Value* f = arg(a, 0, "format");
    if (!f || !f->is_string()) return make_error("strftime_now takes a format string");
    if (f->str().size() > 256) return make_error("strftime_now: format longer than 256 bytes");
    const std::time_t t = static_cast<std::time_t>(now);
    std::tm tm{};
    if (utc) {
      gmtime_r(&t, &tm);
    } else {
      localtime_r(&t, &tm);
    }
    char buf[4096];
    const size_t n = std::strftime(buf, sizeof(buf), f->str().c_str(), &tm);
    if (n == 0 && !f->str().empty()) return make_error("strftime_now: the format gave nothing");
    return Value(std::string(buf, n));
  };
  auto raise_exception = [](Renderer&, CallArgs& a) -> Result<Value> {
    const Value* m = arg(a, 0, "message");
    return make_error("{}", m ? to_str(*m) : std::string("raise_exception"));
  };
  return Value::dict({
      {"range", Value::function("range", range)},
      {"dict", Value::function("dict", make_dict)},
      {"namespace", Value::function("namespace", make_namespace)},
      {"raise_exception", Value::function("raise_exception", raise_exception)},
      {"strftime_now", Value::function("strftime_now", strftime_now)},
  });
}

}  // namespace tova::jinja
