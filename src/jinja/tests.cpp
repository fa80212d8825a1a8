// jinja2's built-in tests (`x is defined`, `x is string`, `n is divisibleby 3`, ...).
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "jinja/builtins.h"
#include "jinja/renderer.h"

namespace tova::jinja {
namespace {

using TestFn = Result<bool> (*)(Renderer&, const Value&, CallArgs&);

Result<const Value*> operand(const CallArgs& a, std::string_view test) {
  const Value* v = arg(a, 0, "other");
  if (!v) return make_error("the test '{}' takes one argument", test);
  return v;
}

Result<bool> compare(const Value& v, CallArgs& a, std::string_view op) {
  TOVA_ASSIGN_OR_RETURN(const Value* o, operand(a, op));
  if (op == "eq") return equals(v, *o);
  if (op == "ne") return !equals(v, *o);
  if (op == "lt") return less(v, *o);
  if (op == "gt") return less(*o, v);
  TOVA_ASSIGN_OR_RETURN(bool r, op == "le" ? less(*o, v) : less(v, *o));
  return !r;
}

Result<bool> integer_test(const Value& v, std::string_view name) {
  if (!v.is_int()) {
    return make_error("the test '{}' needs an integer, not {}", name, v.type_name());
  }
  return true;
}

const std::array<std::pair<std::string_view, TestFn>, 37> kTests = {{
    {"defined", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return !v.is_undefined(); }},
    {"undefined", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_undefined(); }},
    {"none", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_none(); }},
    {"boolean", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_bool(); }},
    {"true", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_bool() && v.as_bool(); }},
    {"false", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_bool() && !v.as_bool(); }},
    {"integer", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_int(); }},
    {"float", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_float(); }},
    {"number", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_number(); }},
    {"string", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_string(); }},
    {"mapping", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       return v.is_dict() && !v.is_namespace();
     }},
    {"iterable", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
     }},
    {"sequence", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
     }},
    {"callable", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> { return v.is_function(); }},
    {"escaped", [](Renderer&, const Value&, CallArgs&) -> Result<bool> { return false; }},
    {"lower", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       const std::string s = to_str(v);
       return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; }) &&
              std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
     }},
    {"upper", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       const std::string s = to_str(v);
       return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; }) &&
              std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
     }},
    {"odd", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       TOVA_RETURN_IF_ERROR(integer_test(v, "odd"));
       return v.as_int() % 2 != 0;
     }},
    {"even", [](Renderer&, const Value& v, CallArgs&) -> Result<bool> {
       TOVA_RETURN_IF_ERROR(integer_test(v, "even"));
       return v.as_int() % 2 == 0;
     }},
    {"divisibleby", [](Renderer&, const Value& v, CallArgs& a) -> Result<bool> {
       TOVA_ASSIGN_OR_RETURN(const Value* n, operand(a, "divisibleby"));
       if (!v.is_number() || !n->is_number()) return make_error("divisibleby needs numbers");
       if (v.is_float() || n->is_float()) {
         if (n->as_double() == 0) return make_error("float modulo");
         return std::fmod(v.as_double(), n->as_double()) == 0;
       }
       if (n->as_int() == 0) return make_error("integer division or modulo by zero");
       if (n->as_int() == -1) return true;
       return v.as_int() % n->as_int() == 0;
     }},
    {"sameas", [](Renderer&, const Value& v, CallArgs& a) -> Result<bool> {
       TOVA_ASSIGN_OR_RETURN(const Value* o, operand(a, "sameas"));
       if (v.kind() != o->kind()) return false;
       if (v.is_list()) return &v.items() == &o->items();
       if (v.is_dict()) return &v.dict_data() == &o->dict_data();
       if (v.is_function()) return &v.fn() == &o->fn();
       return equals(v, *o);
     }},
    {"in", [](Renderer& r, const Value& v, CallArgs& a) -> Result<bool> {
       TOVA_ASSIGN_OR_RETURN(const Value* seq, operand(a, "in"));
       if (seq->is_string()) {
         if (!v.is_string()) return make_error("'in <string>' requires string as left operand");
         return seq->str().find(v.str()) != std::string::npos;
       }
       if (seq->is_dict() && !seq->is_namespace()) {
         return v.is_string() && seq->dict_data().find(v.str()) != nullptr;
       }
       (void)r;
       TOVA_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(*seq));
       return std::any_of(items.begin(), items.end(), [&](const Value& x) { return equals(x, v); });
     }},
    {"eq", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "eq"); }},
    {"equalto", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "eq"); }},
    {"==", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "eq"); }},
    {"ne", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "ne"); }},
    {"!=", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "ne"); }},
    {"lt", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "lt"); }},
    {"lessthan", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "lt"); }},
    {"<", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "lt"); }},
    {"le", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "le"); }},
    {"<=", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "le"); }},
    {"gt", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "gt"); }},
    {"greaterthan", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "gt"); }},
    {">", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "gt"); }},
    {"ge", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "ge"); }},
    {">=", [](Renderer&, const Value& v, CallArgs& a) { return compare(v, a, "ge"); }},
}};

}  // namespace

bool has_test(std::string_view name) {
  if (name == "filter" || name == "test") return true;
  return std::any_of(kTests.begin(), kTests.end(), [&](const auto& t) { return t.first == name; });
}

Result<bool> apply_test(Renderer& r, std::string_view name, const Value& value, CallArgs& args) {
  if (name == "filter" || name == "test") {
    if (!value.is_string()) return false;
    return name == "filter" ? has_filter(value.str()) : has_test(value.str());
  }
  for (const auto& [n, f] : kTests) {
    if (n == name) return f(r, value, args);
  }
  return make_error("no test named '{}'", name);
}

}  // namespace tova::jinja
