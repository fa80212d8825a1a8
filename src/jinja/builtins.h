// The names of jinja2's built-in filters and tests as the renderer has them, and their code
// (filters.cpp, tests.cpp), the methods of str/dict/list values templates call (methods.cpp) and
// the globals (range, dict, namespace, raise_exception, strftime_now: globals.cpp).
#pragma once

#include <string_view>

#include "core/result.h"
#include "jinja/value.h"

namespace tova::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

// `value | name(args)`.
Result<Value> apply_filter(Renderer& r, std::string_view name, const Value& value, CallArgs& args);
// `value is name(args)`.
Result<bool> apply_test(Renderer& r, std::string_view name, const Value& value, CallArgs& args);
// `value.name` where value is a str, dict or list and name one of its Python methods: the bound
// method, or undefined (with the sandbox's message for methods that would change the value).
Value method(const Value& value, std::string_view name);

// The globals every render sees (range, dict, namespace, raise_exception, strftime_now, ...).
// `now` is the time strftime_now formats (seconds since the epoch, UTC when `utc`, else local).
Value make_globals(long long now, bool utc);

// Python-ish argument binding for builtins: the argument at `pos` or named `name`, else `def`.
const Value* arg(const CallArgs& a, size_t pos, std::string_view name);
Value arg_or(const CallArgs& a, size_t pos, std::string_view name, Value def);

}  // namespace tova::jinja
