#include "jinja/renderer.h"

#include <cmath>
#include <limits>

#include "jinja/builtins.h"

namespace tova::jinja {

struct Renderer::Scope {
  std::vector<std::pair<std::string, Value>> vars;
  ScopePtr parent;

  const Value* find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      for (const auto& [k, v] : s->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void set(const std::string& name, Value v) {
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(name, std::move(v));
  }
};

namespace {

bool positioned(const Error& e) { return e.message.starts_with("line "); }

Error at(int line, int column, const Error& e) {
  if (positioned(e)) return e;
  return make_error("line {}, column {}: {}", line, column, e.message);
}

// Does `body` mention the name (varargs, kwargs, caller: a macro takes those only if it does)?
bool mentions(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == Expr::Kind::kName && e->name == name) return true;
  for (const auto& a : e->args) {
    if (mentions(a.get(), name)) return true;
  }
  for (const auto& [k, v] : e->kwargs) {
    if (mentions(v.get(), name)) return true;
  }
  return false;
}
bool mentions(const Body& body, std::string_view name) {
  for (const auto& n : body) {
    for (const auto& e : n->exprs) {
      if (mentions(e.get(), name)) return true;
    }
    for (const auto& p : n->params) {
      if (mentions(p.default_value.get(), name)) return true;
    }
    for (const auto& b : n->bodies) {
      if (mentions(b, name)) return true;
    }
  }
  return false;
}

Result<int64_t> checked(int64_t a, int64_t b, char op) {
  int64_t r = 0;
  bool overflow = op == '+'   ? __builtin_add_overflow(a, b, &r)
                  : op == '-' ? __builtin_sub_overflow(a, b, &r)
                              : __builtin_mul_overflow(a, b, &r);
  if (overflow) return make_error("integer overflow in '{}'", op);
  return r;
}

}  // namespace

Result<std::vector<Value>> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>{};
    case Value::Kind::kList:
      return v.items();
    case Value::Kind::kDict: {
      if (v.is_namespace()) break;
      std::vector<Value> keys;
      for (const auto& [k, x] : v.dict_data().items) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (std::string_view c : code_points(v.str())) chars.emplace_back(c);
      return chars;
    }
    default:
      break;
  }
  return make_error("'{}' object is not iterable", v.type_name());
}

Renderer::Renderer(const RenderLimits& limits, Value globals, Value context)
    : limits_(limits),
      globals_(std::move(globals)),
      context_(std::move(context)),
      root_(std::make_shared<Scope>()) {}

Status Renderer::charge(uint64_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps) {
    return make_error("the template ran past {} steps (a loop too long?)", limits_.max_steps);
  }
  return ok_status();
}

Status Renderer::check_string(size_t bytes) {
  if (bytes > limits_.max_output_bytes) {
    return make_error("a string of {} bytes is over the limit of {}", bytes,
                      limits_.max_output_bytes);
  }
  return charge(bytes / 64);
}

Status Renderer::check_items(size_t n) {
  if (n > limits_.max_items) {
    return make_error("a collection of {} items is over the limit of {}", n, limits_.max_items);
  }
  return charge(n / 64);
}

Status Renderer::write(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    return make_error("the output is over the limit of {} bytes", limits_.max_output_bytes);
  }
  out_->append(text);
  return charge(text.size() / 64);
}

Result<std::string> Renderer::render(const Body& body) {
  std::string out;
  out_ = &out;
  auto flow = exec(body, root_);
  out_ = nullptr;
  if (!flow.ok()) return flow.error();
  return out;
}

Result<std::string> Renderer::capture(const Body& body, const ScopePtr& scope) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  auto flow = exec(body, scope);
  out_ = saved;
  if (!flow.ok()) return flow.error();
  return buf;
}

Result<Renderer::Flow> Renderer::exec(const Body& body, const ScopePtr& scope) {
  for (const auto& n : body) {
    TOVA_ASSIGN_OR_RETURN(Flow f, exec_node(*n, scope));
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Result<Renderer::Flow> Renderer::exec_node(const Node& n, const ScopePtr& scope) {
  if (auto s = charge(); !s.ok()) return at(n.line, n.column, s.error());
  if (depth_ >= limits_.max_depth) {
    return make_error("line {}, column {}: nested deeper than {} levels", n.line, n.column,
                      limits_.max_depth);
  }
  ++depth_;
  struct Leave {
    int& d;
    ~Leave() { --d; }
  } leave{depth_};
  switch (n.kind) {
    case Node::Kind::kText:
      if (auto s = write(n.text); !s.ok()) return at(n.line, n.column, s.error());
      return Flow::kNormal;
    case Node::Kind::kPrint: {
      TOVA_ASSIGN_OR_RETURN(Value v, eval(*n.exprs[0], scope));
      if (auto s = write(to_str(v)); !s.ok()) return at(n.line, n.column, s.error());
      return Flow::kNormal;
    }
    case Node::Kind::kIf:
      for (size_t i = 0; i < n.exprs.size(); ++i) {
        TOVA_ASSIGN_OR_RETURN(Value c, eval(*n.exprs[i], scope));
        if (c.truthy()) return exec(n.bodies[i], scope);
      }
      if (n.bodies.size() > n.exprs.size()) return exec(n.bodies.back(), scope);
      return Flow::kNormal;
    case Node::Kind::kFor:
      return exec_for(n, scope);
    case Node::Kind::kSet:
    case Node::Kind::kSetBlock:
      if (auto s = exec_set(n, scope); !s.ok()) return at(n.line, n.column, s.error());
      return Flow::kNormal;
    case Node::Kind::kMacro:
      scope->set(n.text, make_macro(n, scope));
      return Flow::kNormal;
    case Node::Kind::kCallBlock: {
      const Expr& call_expr = *n.exprs[0];
      TOVA_ASSIGN_OR_RETURN(Value callee, eval(*call_expr.args[0], scope));
      CallArgs args;
      TOVA_RETURN_IF_ERROR(eval_args(call_expr, 1, scope, args));
      args.kwargs.emplace_back("caller", make_macro(n, scope));
      auto r = call(callee, args);
      if (!r.ok()) return at(n.line, n.column, r.error());
      if (auto s = write(to_str(*r)); !s.ok()) return at(n.line, n.column, s.error());
      return Flow::kNormal;
    }
    case Node::Kind::kFilterBlock: {
      TOVA_ASSIGN_OR_RETURN(std::string text, capture(n.bodies[0], scope));
      const Value v(std::move(text));
      TOVA_ASSIGN_OR_RETURN(Value r, eval_filter(*n.exprs[0], scope, &v));
      if (auto s = write(to_str(r)); !s.ok()) return at(n.line, n.column, s.error());
      return Flow::kNormal;
    }
    case Node::Kind::kWith: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      for (size_t i = 0; i < n.targets.size(); ++i) {
        TOVA_ASSIGN_OR_RETURN(Value v, eval(*n.exprs[i], scope));
        inner->set(n.targets[i], std::move(v));
      }
      return exec(n.bodies[0], inner);
    }
    case Node::Kind::kBreak:
      return Flow::kBreak;
    case Node::Kind::kContinue:
      return Flow::kContinue;
  }
  return Flow::kNormal;
}

namespace {

Status unpack_into(const std::vector<std::string>& targets, bool unpack, const Value& v,
                   std::vector<std::pair<std::string, Value>>& out) {
  if (!unpack) {
    out.emplace_back(targets[0], v);
    return ok_status();
  }
  auto items = iterate(v);
  if (!items.ok()) return make_error("cannot unpack non-iterable {} object", v.type_name());
  if (items->size() != targets.size()) {
    return make_error("cannot unpack {} values into {} names", items->size(), targets.size());
  }
  for (size_t i = 0; i < targets.size(); ++i) out.emplace_back(targets[i], (*items)[i]);
  return ok_status();
}

}  // namespace

Result<Renderer::Flow> Renderer::exec_for(const Node& n, const ScopePtr& scope) {
  if (n.recursive) {
    return make_error("line {}, column {}: recursive loops are not supported", n.line, n.column);
  }
  TOVA_ASSIGN_OR_RETURN(Value seq, eval(*n.exprs[0], scope));
  auto all = iterate(seq);
  if (!all.ok()) return at(n.exprs[0]->line, n.exprs[0]->column, all.error());
  // The loop's `if` filters before loop.length and friends are counted.
  std::vector<Value> items;
  if (n.exprs.size() > 1) {
    for (const Value& v : *all) {
      auto s = std::make_shared<Scope>();
      s->parent = scope;
      std::vector<std::pair<std::string, Value>> vars;
      if (auto st = unpack_into(n.targets, n.unpack, v, vars); !st.ok()) {
        return at(n.line, n.column, st.error());
      }
      s->vars = std::move(vars);
      TOVA_ASSIGN_OR_RETURN(Value keep, eval(*n.exprs[1], s));
      if (keep.truthy()) items.push_back(v);
    }
  } else {
    items = std::move(*all);
  }
  const int64_t len = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < len; ++i) {
    if (auto st = charge(); !st.ok()) return at(n.line, n.column, st.error());
    auto s = std::make_shared<Scope>();
    s->parent = scope;
    if (auto st = unpack_into(n.targets, n.unpack, items[static_cast<size_t>(i)], s->vars);
        !st.ok()) {
      return at(n.line, n.column, st.error());
    }
    const int64_t index0 = i;
    auto cycle = Value::function("loop.cycle", [index0](Renderer&, CallArgs& a) -> Result<Value> {
      if (a.args.empty()) return make_error("no items for cycling given");
      return a.args[static_cast<size_t>(index0) % a.args.size()];
    });
    s->set("loop", Value::dict({
                       {"index", Value(i + 1)},
                       {"index0", Value(i)},
                       {"revindex", Value(len - i)},
                       {"revindex0", Value(len - i - 1)},
                       {"first", Value(i == 0)},
                       {"last", Value(i == len - 1)},
                       {"length", Value(len)},
                       {"depth", Value(1)},
                       {"depth0", Value(0)},
                       {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)]
                                          : Value::undefined("there is no previous item")},
                       {"nextitem", i + 1 < len ? items[static_cast<size_t>(i + 1)]
                                                : Value::undefined("there is no next item")},
                       {"cycle", cycle},
                   }));
    TOVA_ASSIGN_OR_RETURN(Flow f, exec(n.bodies[0], s));
    if (f == Flow::kBreak) break;
  }
  if (len == 0 && n.bodies.size() > 1) return exec(n.bodies[1], scope);
  return Flow::kNormal;
}

Status Renderer::check_nesting(const Value& v, const DictData& target, int depth) {
  if (depth > limits_.max_value_depth) {
    return make_error("lists and dicts nested more than {} deep", limits_.max_value_depth);
  }
  if (v.is_list()) {
    TOVA_RETURN_IF_ERROR(charge(1 + v.items().size() / 64));
    for (const Value& x : v.items()) {
      if (x.depth() > 0) TOVA_RETURN_IF_ERROR(check_nesting(x, target, depth + 1));
    }
  } else if (v.is_dict()) {
    if (&v.dict_data() == &target) return make_error("a namespace cannot hold itself");
    TOVA_RETURN_IF_ERROR(charge(1 + v.dict_data().items.size() / 64));
    for (const auto& [k, x] : v.dict_data().items) {
      if (x.depth() > 0) TOVA_RETURN_IF_ERROR(check_nesting(x, target, depth + 1));
    }
  }
  return ok_status();
}

Status Renderer::exec_set(const Node& n, const ScopePtr& scope) {
  Value v;
  if (n.kind == Node::Kind::kSetBlock) {
    TOVA_ASSIGN_OR_RETURN(std::string text, capture(n.bodies[0], scope));
    v = Value(std::move(text));
    if (!n.exprs.empty()) {
      TOVA_ASSIGN_OR_RETURN(v, eval_filter(*n.exprs[0], scope, &v));
    }
  } else {
    TOVA_ASSIGN_OR_RETURN(v, eval(*n.exprs[0], scope));
  }
  if (!n.text.empty()) {  // set ns.attr = v
    TOVA_ASSIGN_OR_RETURN(Value ns, lookup(n.targets[0], scope));
    if (!ns.is_namespace()) return make_error("cannot assign attribute on non-namespace object");
    TOVA_RETURN_IF_ERROR(check_items(ns.dict_data().items.size() + 1));
    // The only value a template can change: it must not come to hold itself (a cycle that
    // printing would follow forever), nor nest deeper than the limit.
    TOVA_RETURN_IF_ERROR(check_nesting(v, ns.dict_data(), 1));
    ns.mutable_dict().set(n.text, std::move(v));
    return ok_status();
  }
  std::vector<std::pair<std::string, Value>> vars;
  TOVA_RETURN_IF_ERROR(unpack_into(n.targets, n.unpack, v, vars));
  for (auto& [k, x] : vars) scope->set(k, std::move(x));
  return ok_status();
}

// A macro (or a call block's `caller`): a function whose body runs in a scope of its own,
// below the scope it was defined in.
Value Renderer::make_macro(const Node& n, const ScopePtr& scope) {
  const Node* node = &n;
  // Weak: the macro is stored in the scope it closes over (a strong pointer would be a cycle).
  std::weak_ptr<Scope> weak = scope;
  const bool takes_varargs = mentions(n.bodies[0], "varargs");
  const bool takes_kwargs = mentions(n.bodies[0], "kwargs");
  const bool takes_caller = mentions(n.bodies[0], "caller");
  std::string name = n.kind == Node::Kind::kMacro ? n.text : "caller";
  return Value::function(name, [=](Renderer& r, CallArgs& a) -> Result<Value> {
    ScopePtr closure = weak.lock();
    if (!closure) return make_error("macro '{}' was called after its scope ended", name);
    auto s = std::make_shared<Scope>();
    s->parent = closure;
    const auto& params = node->params;
    if (a.args.size() > params.size() && !takes_varargs) {
      return make_error("macro '{}' takes not more than {} argument(s)", name, params.size());
    }
    std::vector<Value> bound(params.size());
    std::vector<bool> given(params.size(), false);
    for (size_t i = 0; i < a.args.size() && i < params.size(); ++i) {
      bound[i] = a.args[i];
      given[i] = true;
    }
    std::vector<std::pair<std::string, Value>> extra;
    Value caller;
    for (auto& [k, v] : a.kwargs) {
      bool found = false;
      for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].name == k) {
          if (given[i]) return make_error("macro '{}' got multiple values for '{}'", name, k);
          bound[i] = v;
          given[i] = found = true;
        }
      }
      if (found) continue;
      if (k == "caller" && takes_caller) {
        caller = v;
      } else if (takes_kwargs) {
        extra.emplace_back(k, v);
      } else {
        return make_error("macro '{}' takes no keyword argument '{}'", name, k);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (!given[i] && params[i].default_value) {
        TOVA_ASSIGN_OR_RETURN(bound[i], r.eval(*params[i].default_value, s));
      } else if (!given[i]) {
        bound[i] = Value::undefined("parameter '" + params[i].name + "' was not provided");
      }
      s->set(params[i].name, bound[i]);
    }
    if (takes_varargs) {
      std::vector<Value> rest;
      for (size_t i = params.size(); i < a.args.size(); ++i) rest.push_back(a.args[i]);
      s->set("varargs", Value::list(std::move(rest), true));
    }
    if (takes_kwargs) s->set("kwargs", Value::dict(std::move(extra)));
    if (takes_caller) s->set("caller", caller);
    TOVA_ASSIGN_OR_RETURN(std::string text, r.capture(node->bodies[0], s));
    return Value(std::move(text));
  });
}

Result<Value> Renderer::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) {
    return make_error("{}", callee.undefined_hint().empty() ? "called an undefined value"
                                                             : callee.undefined_hint());
  }
  if (!callee.is_function()) return make_error("'{}' object is not callable", callee.type_name());
  if (depth_ >= limits_.max_depth) {
    return make_error("calls nested deeper than {} levels", limits_.max_depth);
  }
  ++depth_;
  auto r = callee.fn()(*this, args);
  --depth_;
  return r;
}

Result<Value> Renderer::lookup(const std::string& name, const ScopePtr& scope) const {
  if (const Value* v = scope->find(name)) return *v;
  if (const Value* v = context_.dict_data().find(name)) return *v;
  if (const Value* v = globals_.dict_data().find(name)) return *v;
  return Value::undefined("'" + name + "' is undefined");
}

Result<Value> Renderer::eval(const Expr& e, const ScopePtr& scope) {
  if (depth_ >= limits_.max_depth) {
    return make_error("line {}, column {}: nested deeper than {} levels", e.line, e.column,
                      limits_.max_depth);
  }
  ++depth_;
  auto r = eval_inner(e, scope);
  --depth_;
  if (!r.ok()) return at(e.line, e.column, r.error());
  if (r->depth() > limits_.max_value_depth) {
    return make_error("line {}, column {}: lists and dicts nested more than {} deep", e.line,
                      e.column, limits_.max_value_depth);
  }
  return r;
}

Status Renderer::eval_args(const Expr& e, size_t first, const ScopePtr& scope, CallArgs& out) {
  for (size_t i = first; i < e.args.size(); ++i) {
    TOVA_ASSIGN_OR_RETURN(Value v, eval(*e.args[i], scope));
    out.args.push_back(std::move(v));
  }
  for (const auto& [k, x] : e.kwargs) {
    TOVA_ASSIGN_OR_RETURN(Value v, eval(*x, scope));
    out.kwargs.emplace_back(k, std::move(v));
  }
  return ok_status();
}

Result<Value> Renderer::eval_filter(const Expr& e, const ScopePtr& scope, const Value* subject) {
  Value v;
  if (e.args[0]) {
    const Expr& inner = *e.args[0];
    if (inner.kind == Expr::Kind::kFilter && subject) {
      TOVA_ASSIGN_OR_RETURN(v, eval_filter(inner, scope, subject));
    } else {
      TOVA_ASSIGN_OR_RETURN(v, eval(inner, scope));
    }
  } else {
    v = *subject;
  }
  CallArgs args;
  TOVA_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
  TOVA_RETURN_IF_ERROR(charge());
  auto r = apply_filter(*this, e.name, v, args);
  if (!r.ok()) return at(e.line, e.column, r.error());
  return r;
}

namespace {

// -v or +v of a number (a bool counts as its int).
Result<Value> unary_sign(const Value& v, bool negate) {
  if (!v.is_number()) {
    return make_error("bad operand type for unary {}: '{}'", negate ? "-" : "+", v.type_name());
  }
  if (!negate) return v.is_bool() ? Value(v.as_int()) : v;
  if (v.is_float()) return Value(-v.as_double());
  if (v.as_int() == std::numeric_limits<int64_t>::min()) return make_error("integer overflow");
  return Value(-v.as_int());
}

}  // namespace

Result<Value> Renderer::eval_collection(const Expr& e, const ScopePtr& scope) {
  if (e.kind != Expr::Kind::kDict) {
    std::vector<Value> items;
    for (const auto& a : e.args) {
      TOVA_ASSIGN_OR_RETURN(Value v, eval(*a, scope));
      items.push_back(std::move(v));
    }
    return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
  }
  Value d = Value::dict();
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    TOVA_ASSIGN_OR_RETURN(Value k, eval(*e.args[i], scope));
    TOVA_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1], scope));
    if (!k.is_string()) {
      return make_error("dict keys must be strings here, not '{}'", k.type_name());
    }
    d.mutable_dict().set(k.str(), std::move(v));
  }
  return d;
}

// a < b <= c ...: each comparison in turn, false at the first that fails.
Result<Value> Renderer::eval_compare(const Expr& e, const ScopePtr& scope) {
  TOVA_ASSIGN_OR_RETURN(Value left, eval(*e.args[0], scope));
  for (size_t i = 0; i < e.ops.size(); ++i) {
    TOVA_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1], scope));
    const std::string& op = e.ops[i];
    bool r = false;
    if (op == "==") {
      r = equals(left, right);
    } else if (op == "!=") {
      r = !equals(left, right);
    } else if (op == "in" || op == "notin") {
      TOVA_ASSIGN_OR_RETURN(r, contains(right, left));
      if (op == "notin") r = !r;
    } else {
      if (left.is_undefined() || right.is_undefined()) {
        const Value& u = left.is_undefined() ? left : right;
        return make_error("{}", u.undefined_hint().empty() ? "undefined value compared"
                                                            : u.undefined_hint());
      }
      if (op == "<") {
        TOVA_ASSIGN_OR_RETURN(r, less(left, right));
      } else if (op == ">") {
        TOVA_ASSIGN_OR_RETURN(r, less(right, left));
      } else if (op == "<=") {
        TOVA_ASSIGN_OR_RETURN(bool gt, less(right, left));
        r = !gt;
      } else {
        TOVA_ASSIGN_OR_RETURN(bool lt, less(left, right));
        r = !lt;
      }
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Result<Value> Renderer::eval_inner(const Expr& e, const ScopePtr& scope) {
  TOVA_RETURN_IF_ERROR(charge());
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.value;
    case Expr::Kind::kName:
      return lookup(e.name, scope);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple:
    case Expr::Kind::kDict:
      return eval_collection(e, scope);
    case Expr::Kind::kGetAttr: {
      TOVA_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      return get_attr(obj, e.name);
    }
    case Expr::Kind::kGetItem: {
      TOVA_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      TOVA_ASSIGN_OR_RETURN(Value key, eval(*e.args[1], scope));
      return get_item(obj, key);
    }
    case Expr::Kind::kSlice: {
      TOVA_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0], scope));
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (int i = 0; i < 3; ++i) {
        if (e.args[1 + i]) {
          TOVA_ASSIGN_OR_RETURN(parts[i], eval(*e.args[1 + i], scope));
        }
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: {
      TOVA_ASSIGN_OR_RETURN(Value callee, eval(*e.args[0], scope));
      CallArgs args;
      TOVA_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
      return call(callee, args);
    }
    case Expr::Kind::kFilter:
      return eval_filter(e, scope, nullptr);
    case Expr::Kind::kTest: {
      TOVA_ASSIGN_OR_RETURN(Value v, eval(*e.args[0], scope));
      CallArgs args;
      TOVA_RETURN_IF_ERROR(eval_args(e, 1, scope, args));
      TOVA_ASSIGN_OR_RETURN(bool b, apply_test(*this, e.name, v, args));
      return Value(b);
    }
    case Expr::Kind::kNeg:
    case Expr::Kind::kPos: {
      TOVA_ASSIGN_OR_RETURN(Value v, eval(*e.args[0], scope));
      return unary_sign(v, e.kind == Expr::Kind::kNeg);
    }
    case Expr::Kind::kNot: {
      TOVA_ASSIGN_OR_RETURN(Value v, eval(*e.args[0], scope));
      return Value(!v.truthy());
    }
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      TOVA_ASSIGN_OR_RETURN(Value a, eval(*e.args[0], scope));
      if (a.truthy() == (e.kind == Expr::Kind::kOr)) return a;
      return eval(*e.args[1], scope);
    }
    case Expr::Kind::kBinary: {
      TOVA_ASSIGN_OR_RETURN(Value a, eval(*e.args[0], scope));
      TOVA_ASSIGN_OR_RETURN(Value b, eval(*e.args[1], scope));
      return binary(e.name, a, b);
    }
    case Expr::Kind::kCompare:
      return eval_compare(e, scope);
    case Expr::Kind::kCondExpr: {
      TOVA_ASSIGN_OR_RETURN(Value c, eval(*e.args[1], scope));
      if (c.truthy()) return eval(*e.args[0], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if expression evaluated to false and no else section "
                              "was defined");
    }
  }
  return make_error("unknown expression");
}

namespace {

Error undefined_error(const Value& v) {
  return make_error("{}", v.undefined_hint().empty() ? "undefined value" : v.undefined_hint());
}

}  // namespace

Result<Value> Renderer::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_namespace()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
    return Value::undefined("'Namespace' object has no attribute '" + name + "'");
  }
  Value m = method(obj, name);
  if (m.is_function() || !m.undefined_hint().empty()) return m;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
    return Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
}

Result<Value> Renderer::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_dict() && key.is_string()) {
    if (const Value* v = obj.dict_data().find(key.str())) return *v;
    if (obj.is_namespace()) return Value::undefined();
  }
  if ((obj.is_list() || obj.is_string()) && key.is_number()) {
    const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.items().size())
                                    : static_cast<int64_t>(code_point_count(obj.str()));
    int64_t i = key.as_int();
    if (key.is_float()) {
      return make_error("{} indices must be integers", obj.type_name());
    }
    if (i < 0) i += n;
    if (i < 0 || i >= n) {
      return Value::undefined(std::string(obj.type_name()) + " object has no element " +
                              std::to_string(key.as_int()));
    }
    if (obj.is_list()) return obj.items()[static_cast<size_t>(i)];
    return Value(code_points(obj.str())[static_cast<size_t>(i)]);
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(fmt::format("'{} object' has no element {}", obj.type_name(), to_repr(key)));
}

Result<Value> Renderer::slice(const Value& obj, const Value& start, const Value& stop,
                              const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  for (const Value* p : {&start, &stop, &step}) {
    if (!p->is_none() && !(p->is_int() || p->is_bool())) {
      return make_error("slice indices must be integers or None");
    }
  }
  std::vector<std::string_view> chars;
  int64_t n = 0;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.items().size());
  } else if (obj.is_string()) {
    chars = code_points(obj.str());
    n = static_cast<int64_t>(chars.size());
  } else {
    return make_error("'{}' object is not subscriptable", obj.type_name());
  }
  const int64_t st = step.is_none() ? 1 : step.as_int();
  if (st == 0) return make_error("slice step cannot be zero");
  // Python's slice.indices().
  auto clamp = [&](const Value& v, int64_t def) {
    if (v.is_none()) return def;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = clamp(start, st < 0 ? n - 1 : 0);
  const int64_t e = clamp(stop, st < 0 ? -1 : n);
  std::vector<Value> items;
  std::string s;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) {
    if (obj.is_list()) {
      items.push_back(obj.items()[static_cast<size_t>(i)]);
    } else {
      s += chars[static_cast<size_t>(i)];
    }
  }
  TOVA_RETURN_IF_ERROR(charge(static_cast<uint64_t>(items.size() + s.size()) / 64));
  if (obj.is_list()) return Value::list(std::move(items), obj.is_tuple());
  return Value(std::move(s));
}

Result<bool> Renderer::contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return make_error("'in <string>' requires string as left operand, not {}",
                          item.type_name());
      }
      return c.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : c.items()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      if (!c.is_namespace()) return item.is_string() && c.dict_data().find(item.str()) != nullptr;
      break;
    default:
      break;
  }
  return make_error("argument of type '{}' is not iterable", c.type_name());
}

Result<Value> Renderer::binary(std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = to_str(a) + to_str(b);
    TOVA_RETURN_IF_ERROR(check_string(s.size()));
    return Value(std::move(s));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  const bool nums = a.is_number() && b.is_number();
  const bool floats = nums && (a.is_float() || b.is_float());
  auto unsupported = [&]() -> Error {
    return make_error("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(),
                      b.type_name());
  };
  if (op == "+") {
    if (floats) return Value(a.as_double() + b.as_double());
    if (nums) {
      TOVA_ASSIGN_OR_RETURN(int64_t r, checked(a.as_int(), b.as_int(), '+'));
      return Value(r);
    }
    if (a.is_string() && b.is_string()) {
      TOVA_RETURN_IF_ERROR(check_string(a.str().size() + b.str().size()));
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      TOVA_RETURN_IF_ERROR(check_items(a.items().size() + b.items().size()));
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string()) {
      return make_error("can only concatenate str (not \"{}\") to str", b.type_name());
    }
    return unsupported();
  }
  if (op == "*") {
    if (floats) return Value(a.as_double() * b.as_double());
    if (nums) {
      TOVA_ASSIGN_OR_RETURN(int64_t r, checked(a.as_int(), b.as_int(), '*'));
      return Value(r);
    }
    const Value* seq = a.is_number() ? &b : &a;
    const Value* count = a.is_number() ? &a : &b;
    if (count->is_number() && !count->is_float() && (seq->is_string() || seq->is_list())) {
      const int64_t k = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        const size_t unit = seq->str().size();
        if (unit && static_cast<uint64_t>(k) > limits_.max_output_bytes / unit + 1) {
          return check_string(limits_.max_output_bytes + 1).error();
        }
        TOVA_RETURN_IF_ERROR(check_string(unit * static_cast<size_t>(k)));
        std::string s;
        for (int64_t i = 0; i < k; ++i) s += seq->str();
        return Value(std::move(s));
      }
      const size_t unit = seq->items().size();
      if (unit && static_cast<uint64_t>(k) > limits_.max_items / unit + 1) {
        return check_items(limits_.max_items + 1).error();
      }
      TOVA_RETURN_IF_ERROR(check_items(unit * static_cast<size_t>(k)));
      std::vector<Value> items;
      for (int64_t i = 0; i < k; ++i) {
        items.insert(items.end(), seq->items().begin(), seq->items().end());
      }
      return Value::list(std::move(items), seq->is_tuple());
    }
    return unsupported();
  }
  if (!nums) return unsupported();
  if (op == "-") {
    if (floats) return Value(a.as_double() - b.as_double());
    TOVA_ASSIGN_OR_RETURN(int64_t r, checked(a.as_int(), b.as_int(), '-'));
    return Value(r);
  }
  if (op == "/") {
    if (b.as_double() == 0) return make_error("division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (floats) {
      const double x = a.as_double();
      const double y = b.as_double();
      if (y == 0) return make_error("float division by zero");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      if (op == "%") return Value(m);
      return Value(std::floor((x - m) / y + 0.5));
    }
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    if (y == 0) return make_error("integer division or modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1) return make_error("integer overflow");
    int64_t q = x / y;
    int64_t m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      m += y;
      --q;
    }
    return Value(op == "%" ? m : q);
  }
  if (op == "**") {
    if (floats || b.as_int() < 0) {
      const double r = std::pow(a.as_double(), b.as_double());
      if (std::isnan(r) && !std::isnan(a.as_double())) {
        return make_error("a negative number raised to a fractional power");
      }
      return Value(r);
    }
    int64_t r = 1;
    int64_t base = a.as_int();
    int64_t e = b.as_int();
    while (e > 0) {
      if (e & 1) {
        TOVA_ASSIGN_OR_RETURN(r, checked(r, base, '*'));
      }
      e >>= 1;
      if (e) {
        TOVA_ASSIGN_OR_RETURN(base, checked(base, base, '*'));
      }
    }
    return Value(r);
  }
  return unsupported();
}

}  // namespace tova::jinja
