// Runs a parsed template: statements write text, expressions compute Values, with jinja2's
// scoping (a for loop or macro call has its own variables; `if` does not; namespace() objects
// carry values out of loops) and bounds on work, output, nesting and sizes so that a hostile
// template ends in an error rather than a hang or an exhausted memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "jinja/ast.h"
#include "jinja/value.h"

namespace tova::jinja {

struct RenderLimits {
  // Statements run, expressions evaluated and items visited (each string or list operation
  // also costs one step per 64 bytes or items it makes): a loop bomb stops here.
  uint64_t max_steps = 20'000'000;
  // The rendered text, and any one string the template builds.
  size_t max_output_bytes = 32u << 20;
  // Elements in any one list or dict the template builds (range(), +, *, batch, ...).
  size_t max_items = 1u << 20;
  // Nested evaluation (expressions within expressions, macro calls within macro calls): bounds
  // the stack.
  int max_depth = 1000;
  // Lists, dicts and namespaces nested in one value (printing and tojson recurse through them).
  int max_value_depth = 256;
};

class Renderer {
 public:
  Renderer(const RenderLimits& limits, Value globals, Value context);

  Result<std::string> render(const Body& body);

  // For built-ins: call a callable value (macro, global, method) with arguments.
  Result<Value> call(const Value& callee, CallArgs& args);
  // Charges work; an error once the step budget is spent.
  Status charge(uint64_t steps = 1);
  // A string or collection of this size may be made (else the limit's error).
  Status check_string(size_t bytes);
  Status check_items(size_t n);
  // `obj.name` (a method or attribute before a dict key) and `obj[key]` (the key first), as
  // jinja2's getattr and getitem; attributes of an undefined are errors.
  Result<Value> get_attr(const Value& obj, const std::string& name);
  Result<Value> get_item(const Value& obj, const Value& key);

 private:
  struct Scope;
  using ScopePtr = std::shared_ptr<Scope>;
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> exec(const Body& body, const ScopePtr& scope);
  Result<Flow> exec_node(const Node& n, const ScopePtr& scope);
  Result<Flow> exec_for(const Node& n, const ScopePtr& scope);
  Status exec_set(const Node& n, const ScopePtr& scope);
  Status check_nesting(const Value& v, const DictData& target, int depth);
  Result<std::string> capture(const Body& body, const ScopePtr& scope);
  Value make_macro(const Node& n, const ScopePtr& scope);

  Result<Value> eval(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_inner(const Expr& e, const ScopePtr& scope);
  // eval_inner's larger kinds: a list, tuple or dict display; a chain of comparisons.
  Result<Value> eval_collection(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_filter(const Expr& e, const ScopePtr& scope, const Value* subject);
  Status eval_args(const Expr& e, size_t first, const ScopePtr& scope, CallArgs& out);
  Result<Value> lookup(const std::string& name, const ScopePtr& scope) const;
  Result<Value> slice(const Value& obj, const Value& start, const Value& stop,
                      const Value& step);
  Result<Value> binary(std::string_view op, const Value& a, const Value& b);
  Result<bool> contains(const Value& container, const Value& item);
  Status write(std::string_view text);

  RenderLimits limits_;
  Value globals_;
  Value context_;
  ScopePtr root_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int depth_ = 0;
};

// What a `for` loop iterates over: list items, dict keys, string characters; an undefined is
// empty; anything else is an error.
Result<std::vector<Value>> iterate(const Value& v);

}  // namespace tova::jinja
