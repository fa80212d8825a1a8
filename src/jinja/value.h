// The values a Jinja template computes with, modelled on the Python objects jinja2 sees:
// undefined, None, bool, int, float, str, list (and tuple), dict, namespace, and callables
// (macros, globals such as range, bound methods). Lists and dicts are shared by reference, as in
// Python; templates cannot change them (Hugging Face renders in jinja2's immutable sandbox), except
// a namespace's attributes through `{% set ns.x = ... %}`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace tova::jinja {

class Value;
class Renderer;

// The arguments of a call: positional, then keyword (in the order written).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

using Function = std::function<Result<Value>(Renderer&, CallArgs&)>;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // printed as (a, b); a tuple never equals a list, as in Python
  int depth = 1;       // containers nested inside, plus one (bounded by the renderer)
};

struct DictData {
  std::vector<std::pair<std::string, Value>> items;  // in insertion order, keys unique
  bool is_namespace = false;                           // namespace(): attributes may be set
  int depth = 1;
  const Value* find(std::string_view key) const;
  void set(std::string key, Value v);
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);                 // NOLINT(google-explicit-constructor)
  Value(int v) : Value(static_cast<int64_t>(v)) {}  // NOLINT
  Value(int64_t v);              // NOLINT
  Value(double v);               // NOLINT
  Value(std::string s);          // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}       // NOLINT
  static Value list(std::vector<Value> items = {}, bool tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> items = {});
  static Value make_namespace();
  static Value function(std::string name, Function f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return is_list() && list_->tuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return is_dict() && dict_->is_namespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return is_bool() ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return is_float() ? f_ : static_cast<double>(as_int()); }
  const std::string& str() const { return *s_; }  // string (or an undefined's hint)
  const std::vector<Value>& items() const { return list_->items; }
  const DictData& dict_data() const { return *dict_; }
  DictData& mutable_dict() const { return *dict_; }  // namespaces only
  const Function& fn() const { return fn_->fn; }
  const std::string& fn_name() const { return fn_->name; }
  const std::string& undefined_hint() const;
  // How deep containers nest in this value (0 for a scalar).
  int depth() const;

  // Python's truth value (an undefined is false).
  bool truthy() const;
  // Python's type name, for error messages ("str", "int", "NoneType", ...).
  std::string_view type_name() const;
  // A member of a dict (undefined when absent); anything else gives undefined.
  Value get(std::string_view key) const;

 private:
  struct FunctionData {
    std::string name;
    Function fn;
  };
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<FunctionData> fn_;
};

// Python's str() of a value: what `{{ x }}` prints (an undefined prints nothing, None "None").
std::string to_str(const Value& v);
// Python's repr(): strings quoted, as inside printed lists and dicts.
std::string to_repr(const Value& v);
// Python's repr() of a float ("1.0", "1e+16", "0.1").
std::string float_repr(double d);
// Python's ==, deep (1 == 1.0 == True; a tuple never equals a list).
bool equals(const Value& a, const Value& b);
// Python's <, or an error for types it does not order.
Result<bool> less(const Value& a, const Value& b);

// UTF-8 helpers: strings index, slice and count by code point, as Python's str does.
std::vector<std::string_view> code_points(std::string_view s);
size_t code_point_count(std::string_view s);

}  // namespace tova::jinja
