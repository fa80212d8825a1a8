#include "jinja/parser.h"

#include <charconv>
#include <set>

#include "jinja/builtins.h"

namespace tova::jinja {
namespace {

using TK = Token::Kind;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Result<Body> run() {
    std::string stop;
    TOVA_ASSIGN_OR_RETURN(Body body, statements({}, stop));
    if (!unknown_.empty()) return unknown_.front();
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().kind == TK::kOp && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().kind == TK::kName && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TK::kData: return "template text";
      case TK::kVarBegin: return "'{{'";
      case TK::kVarEnd: return "'}}'";
      case TK::kBlockBegin: return "'{%'";
      case TK::kBlockEnd: return "'%}'";
      case TK::kName: return "'" + t.text + "'";
      case TK::kString: return "a string";
      case TK::kInt:
      case TK::kFloat: return "a number";
      case TK::kOp: return "'" + t.text + "'";
      case TK::kEnd: return "the end of the template";
    }
    return "?";
  }

  Error fail(const Token& at, std::string_view what) const {
    return make_error("line {}, column {}: {}", at.line, at.column, what);
  }
  Error unexpected(std::string_view expected) const {
    return fail(cur(), "expected " + std::string(expected) + ", got " + describe(cur()));
  }
  Status expect_op(std::string_view op) {
    if (!skip_op(op)) return unexpected("'" + std::string(op) + "'");
    return ok_status();
  }
  Status expect_block_end() {
    if (cur().kind != TK::kBlockEnd) return unexpected("'%}'");
    next();
    return ok_status();
  }
  Result<std::string> expect_name() {
    if (cur().kind != TK::kName) return unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    int& d_;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth) {
      return fail(cur(), "nested more than " + std::to_string(kMaxParseDepth) + " levels deep");
    }
    return ok_status();
  }

  ExprPtr make(Expr::Kind k, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  NodePtr make_node(Node::Kind k, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // ---- statements ----

  // Statements up to a block whose first word is in `stops` (left positioned after that word;
  // its name goes to `stop`), or to the end of the template when `stops` is empty.
  Result<Body> statements(const std::set<std::string>& stops, std::string& stop) {
    DepthGuard g(depth_);
    TOVA_RETURN_IF_ERROR(check_depth());
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.kind) {
        case TK::kEnd:
          if (!stops.empty()) {
            std::string want;
            for (const auto& s : stops) want += (want.empty() ? "'" : " or '") + s + "'";
            return fail(t, "unexpected end of template, expected " + want);
          }
          return body;
        case TK::kData: {
          auto n = make_node(Node::Kind::kText, t);
          n->text = t.text;
          body.push_back(std::move(n));
          next();
          break;
        }
        case TK::kVarBegin: {
          next();
          auto n = make_node(Node::Kind::kPrint, t);
          TOVA_ASSIGN_OR_RETURN(ExprPtr e, tuple_expr(true));
          n->exprs.push_back(std::move(e));
          if (cur().kind != TK::kVarEnd) return unexpected("'}}'");
          next();
          body.push_back(std::move(n));
          break;
        }
        case TK::kBlockBegin: {
          next();
          if (cur().kind != TK::kName) return unexpected("a statement name");
          const std::string word = cur().text;
          if (stops.count(word)) {
            next();
            stop = word;
            return body;
          }
          TOVA_ASSIGN_OR_RETURN(NodePtr n, statement());
          body.push_back(std::move(n));
          break;
        }
        default:
          return unexpected("template text or a tag");
      }
    }
  }

  Result<NodePtr> statement() {
    const Token at = cur();
    const std::string& w = at.text;
    next();
    if (w == "if") return parse_if(at);
    if (w == "for") return parse_for(at);
    if (w == "set") return parse_set(at);
    if (w == "macro") return parse_macro(at);
    if (w == "call") return parse_call_block(at);
    if (w == "filter") return parse_filter_block(at);
    if (w == "with") return parse_with(at);
    if (w == "break" || w == "continue") {
      if (loop_depth_ == 0) return fail(at, "'" + w + "' outside of a loop");
      TOVA_RETURN_IF_ERROR(expect_block_end());
      return make_node(w == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, at);
    }
    return fail(at, "unknown tag '" + w + "'");
  }

  Result<NodePtr> parse_if(const Token& at) {
    SoftScope soft(soft_, true);
    auto n = make_node(Node::Kind::kIf, at);
    while (true) {
      TOVA_ASSIGN_OR_RETURN(ExprPtr cond, tuple_expr(false));
      n->exprs.push_back(std::move(cond));
      TOVA_RETURN_IF_ERROR(expect_block_end());
      std::string stop;
      TOVA_ASSIGN_OR_RETURN(Body b, statements({"elif", "else", "endif"}, stop));
      n->bodies.push_back(std::move(b));
      if (stop == "elif") continue;
      if (stop == "else") {
        TOVA_RETURN_IF_ERROR(expect_block_end());
        TOVA_ASSIGN_OR_RETURN(Body e, statements({"endif"}, stop));
        n->bodies.push_back(std::move(e));
      }
      TOVA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
  }

  // Assignment targets: `a`, `a, b`, `(a, b)`.
  Status targets(Node& n) {
    const bool paren = skip_op("(");
    while (true) {
      TOVA_ASSIGN_OR_RETURN(std::string name, expect_name());
      n.targets.push_back(std::move(name));
      if (!skip_op(",")) break;
      n.unpack = true;
      if (cur().kind != TK::kName) break;
    }
    if (paren) {
      n.unpack = true;
      TOVA_RETURN_IF_ERROR(expect_op(")"));
    }
    return ok_status();
  }

  Result<NodePtr> parse_for(const Token& at) {
    SoftScope hard(soft_, false);
    auto n = make_node(Node::Kind::kFor, at);
    TOVA_RETURN_IF_ERROR(targets(*n));
    if (!skip_name("in")) return unexpected("'in'");
    TOVA_ASSIGN_OR_RETURN(ExprPtr iter, tuple_expr(false, /*condexpr=*/false));
    n->exprs.push_back(std::move(iter));
    if (skip_name("if")) {
      TOVA_ASSIGN_OR_RETURN(ExprPtr cond, expression());
      n->exprs.push_back(std::move(cond));
    }
    if (skip_name("recursive")) n->recursive = true;
    TOVA_RETURN_IF_ERROR(expect_block_end());
    std::string stop;
    ++loop_depth_;
    auto body = statements({"endfor", "else"}, stop);
    --loop_depth_;
    if (!body.ok()) return body.error();
    n->bodies.push_back(std::move(*body));
    if (stop == "else") {
      TOVA_RETURN_IF_ERROR(expect_block_end());
      TOVA_ASSIGN_OR_RETURN(Body e, statements({"endfor"}, stop));
      n->bodies.push_back(std::move(e));
    }
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  Result<NodePtr> parse_set(const Token& at) {
    auto n = make_node(Node::Kind::kSet, at);
    if (cur().kind == TK::kName && peek().kind == TK::kOp && peek().text == ".") {
      n->targets.push_back(cur().text);
      next();
      next();
      TOVA_ASSIGN_OR_RETURN(n->text, expect_name());
    } else {
      TOVA_RETURN_IF_ERROR(targets(*n));
    }
    if (skip_op("=")) {
      TOVA_ASSIGN_OR_RETURN(ExprPtr e, tuple_expr(true));
      n->exprs.push_back(std::move(e));
      TOVA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (n->unpack || !n->text.empty()) return unexpected("'='");
    n->kind = Node::Kind::kSetBlock;
    SoftScope hard(soft_, false);
    if (is_op("|")) {
      TOVA_ASSIGN_OR_RETURN(ExprPtr f, filters(nullptr));
      n->exprs.push_back(std::move(f));
    }
    TOVA_RETURN_IF_ERROR(expect_block_end());
    std::string stop;
    TOVA_ASSIGN_OR_RETURN(Body b, statements({"endset"}, stop));
    n->bodies.push_back(std::move(b));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  Status params(Node& n) {
    TOVA_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      if (!n.params.empty()) TOVA_RETURN_IF_ERROR(expect_op(","));
      if (is_op(")")) break;
      MacroParam p;
      TOVA_ASSIGN_OR_RETURN(p.name, expect_name());
      if (skip_op("=")) {
        TOVA_ASSIGN_OR_RETURN(p.default_value, expression());
      } else if (!n.params.empty() && n.params.back().default_value) {
        return fail(cur(), "non-default argument follows default argument");
      }
      n.params.push_back(std::move(p));
    }
    next();
    return ok_status();
  }

  Result<NodePtr> parse_macro(const Token& at) {
    SoftScope hard(soft_, false);
    auto n = make_node(Node::Kind::kMacro, at);
    TOVA_ASSIGN_OR_RETURN(n->text, expect_name());
    TOVA_RETURN_IF_ERROR(params(*n));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    const int saved = loop_depth_;
    loop_depth_ = 0;
    std::string stop;
    auto body = statements({"endmacro"}, stop);
    loop_depth_ = saved;
    if (!body.ok()) return body.error();
    n->bodies.push_back(std::move(*body));
    if (cur().kind == TK::kName) next();  // {% endmacro name %}
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  Result<NodePtr> parse_call_block(const Token& at) {
    SoftScope hard(soft_, false);
    auto n = make_node(Node::Kind::kCallBlock, at);
    if (is_op("(")) TOVA_RETURN_IF_ERROR(params(*n));
    TOVA_ASSIGN_OR_RETURN(ExprPtr call, expression());
    if (call->kind != Expr::Kind::kCall) return fail(at, "expected a call after 'call'");
    n->exprs.push_back(std::move(call));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    const int saved = loop_depth_;
    loop_depth_ = 0;
    std::string stop;
    auto body = statements({"endcall"}, stop);
    loop_depth_ = saved;
    if (!body.ok()) return body.error();
    n->bodies.push_back(std::move(*body));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  Result<NodePtr> parse_filter_block(const Token& at) {
    SoftScope hard(soft_, false);
    auto n = make_node(Node::Kind::kFilterBlock, at);
    TOVA_ASSIGN_OR_RETURN(ExprPtr f, filters(nullptr, /*start_inline=*/true));
    n->exprs.push_back(std::move(f));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    std::string stop;
    TOVA_ASSIGN_OR_RETURN(Body b, statements({"endfilter"}, stop));
    n->bodies.push_back(std::move(b));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  Result<NodePtr> parse_with(const Token& at) {
    SoftScope hard(soft_, false);
    auto n = make_node(Node::Kind::kWith, at);
    while (cur().kind != TK::kBlockEnd) {
      if (!n->targets.empty()) TOVA_RETURN_IF_ERROR(expect_op(","));
      TOVA_ASSIGN_OR_RETURN(std::string name, expect_name());
      TOVA_RETURN_IF_ERROR(expect_op("="));
      TOVA_ASSIGN_OR_RETURN(ExprPtr e, expression());
      n->targets.push_back(std::move(name));
      n->exprs.push_back(std::move(e));
    }
    next();
    std::string stop;
    TOVA_ASSIGN_OR_RETURN(Body b, statements({"endwith"}, stop));
    n->bodies.push_back(std::move(b));
    TOVA_RETURN_IF_ERROR(expect_block_end());
    return n;
  }

  // ---- expressions ----

  // An expression, or a tuple of them separated by commas (as `{{ a, b }}` or `set x = a, b`).
  Result<ExprPtr> tuple_expr(bool allow_tuple, bool condexpr = true) {
    const Token at = cur();
    TOVA_ASSIGN_OR_RETURN(ExprPtr first, condexpr ? expression() : or_expr());
    if (!allow_tuple || !is_op(",")) return first;
    auto t = make(Expr::Kind::kTuple, at);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().kind == TK::kVarEnd || cur().kind == TK::kBlockEnd || is_op(")")) break;
      TOVA_ASSIGN_OR_RETURN(ExprPtr e, condexpr ? expression() : or_expr());
      t->args.push_back(std::move(e));
    }
    return t;
  }

  Result<ExprPtr> expression() {
    DepthGuard g(depth_);
    TOVA_RETURN_IF_ERROR(check_depth());
    const Token at = cur();
    const size_t unknown_before = unknown_.size();
    TOVA_ASSIGN_OR_RETURN(ExprPtr e, or_expr());
    if (is_name("if")) unknown_.resize(unknown_before);  // the first branch was soft
    SoftScope soft(soft_, soft_ || is_name("if"));
    while (skip_name("if")) {
      auto c = make(Expr::Kind::kCondExpr, at);
      TOVA_ASSIGN_OR_RETURN(ExprPtr cond, or_expr());
      ExprPtr otherwise;
      if (skip_name("else")) {
        TOVA_ASSIGN_OR_RETURN(otherwise, expression());
      }
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  Result<ExprPtr> or_expr() {
    TOVA_ASSIGN_OR_RETURN(ExprPtr e, and_expr());
    while (is_name("or")) {
      const Token at = cur();
      next();
      TOVA_ASSIGN_OR_RETURN(ExprPtr r, and_expr());
      auto n = make(Expr::Kind::kOr, at);
      n->args.push_back(std::move(e));
      n->args.push_back(std::move(r));
      e = std::move(n);
    }
    return e;
  }

  Result<ExprPtr> and_expr() {
    TOVA_ASSIGN_OR_RETURN(ExprPtr e, not_expr());
    while (is_name("and")) {
      const Token at = cur();
      next();
      TOVA_ASSIGN_OR_RETURN(ExprPtr r, not_expr());
      auto n = make(Expr::Kind::kAnd, at);
      n->args.push_back(std::move(e));
      n->args.push_back(std::move(r));
      e = std::move(n);
    }
    return e;
  }

  Result<ExprPtr> not_expr() {
    if (is_name("not")) {
      DepthGuard g(depth_);
      TOVA_RETURN_IF_ERROR(check_depth());
      const Token at = cur();
      next();
      TOVA_ASSIGN_OR_RETURN(ExprPtr inner, not_expr());
      auto n = make(Expr::Kind::kNot, at);
      n->args.push_back(std::move(inner));
      return n;
    }
    return compare();
  }

  Result<ExprPtr> compare() {
    const Token at = cur();
    TOVA_ASSIGN_OR_RETURN(ExprPtr e, math1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == TK::kOp && (cur().text == "==" || cur().text == "!=" ||
                                    cur().text == "<" || cur().text == "<=" ||
                                    cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().kind == TK::kName && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::kCompare, at);
        cmp->args.push_back(std::move(e));
      }
      TOVA_ASSIGN_OR_RETURN(ExprPtr r, math1());
      cmp->ops.push_back(op);
      cmp->args.push_back(std::move(r));
    }
    return cmp ? std::move(cmp) : std::move(e);
  }

  Result<ExprPtr> binary_chain(Result<ExprPtr> (Parser::*operand)(),
                               std::initializer_list<std::string_view> ops) {
    TOVA_ASSIGN_OR_RETURN(ExprPtr e, (this->*operand)());
    while (cur().kind == TK::kOp) {
      bool match = false;
      for (std::string_view o : ops) match = match || cur().text == o;
      if (!match) break;
      const Token at = cur();
      next();
      TOVA_ASSIGN_OR_RETURN(ExprPtr r, (this->*operand)());
      auto n = make(Expr::Kind::kBinary, at);
      n->name = at.text;
      n->args.push_back(std::move(e));
      n->args.push_back(std::move(r));
      e = std::move(n);
    }
    return e;
  }
  Result<ExprPtr> math1() { return binary_chain(&Parser::concat, {"+", "-"}); }
  Result<ExprPtr> concat() { return binary_chain(&Parser::math2, {"~"}); }
  Result<ExprPtr> math2() { return binary_chain(&Parser::pow, {"*", "/", "//", "%"}); }
  Result<ExprPtr> pow() { return binary_chain(&Parser::unary_filtered, {"**"}); }
  Result<ExprPtr> unary_filtered() { return unary(true); }

  Result<ExprPtr> unary(bool with_filter) {
    DepthGuard g(depth_);
    TOVA_RETURN_IF_ERROR(check_depth());
    const Token at = cur();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      next();
      TOVA_ASSIGN_OR_RETURN(ExprPtr inner, unary(false));
      e = make(at.text == "-" ? Expr::Kind::kNeg : Expr::Kind::kPos, at);
      e->args.push_back(std::move(inner));
    } else {
      TOVA_ASSIGN_OR_RETURN(e, primary());
    }
    TOVA_ASSIGN_OR_RETURN(e, postfix(std::move(e)));
    if (with_filter) return filter_expr(std::move(e));
    return e;
  }

  // A parenthesised expression or tuple, a list or a dict literal at `at` (an operator token);
  // null when `at` opens none of them.
  Result<ExprPtr> bracketed(const Token& at) {
    if (at.text == "(") {
      next();
      if (skip_op(")")) return make(Expr::Kind::kTuple, at);
      TOVA_ASSIGN_OR_RETURN(ExprPtr e, expression());
      if (is_op(",")) {
        auto t = make(Expr::Kind::kTuple, at);
        t->args.push_back(std::move(e));
        while (skip_op(",")) {
          if (is_op(")")) break;
          TOVA_ASSIGN_OR_RETURN(ExprPtr x, expression());
          t->args.push_back(std::move(x));
        }
        e = std::move(t);
      }
      TOVA_RETURN_IF_ERROR(expect_op(")"));
      return e;
    }
    if (at.text == "[") {
      next();
      auto l = make(Expr::Kind::kList, at);
      while (!is_op("]")) {
        if (!l->args.empty()) TOVA_RETURN_IF_ERROR(expect_op(","));
        if (is_op("]")) break;
        TOVA_ASSIGN_OR_RETURN(ExprPtr x, expression());
        l->args.push_back(std::move(x));
      }
      next();
      return l;
    }
    if (at.text == "{") {
      next();
      auto d = make(Expr::Kind::kDict, at);
      while (!is_op("}")) {
        if (!d->args.empty()) TOVA_RETURN_IF_ERROR(expect_op(","));
        if (is_op("}")) break;
        TOVA_ASSIGN_OR_RETURN(ExprPtr k, expression());
        TOVA_RETURN_IF_ERROR(expect_op(":"));
        TOVA_ASSIGN_OR_RETURN(ExprPtr v, expression());
        d->args.push_back(std::move(k));
        d->args.push_back(std::move(v));
      }
      next();
      return d;
    }
    return ExprPtr{};
  }

  Result<ExprPtr> primary() {
    const Token at = cur();
    switch (at.kind) {
      case TK::kName: {
        next();
        auto e = make(Expr::Kind::kLiteral, at);
        if (at.text == "true" || at.text == "True") {
          e->value = Value(true);
        } else if (at.text == "false" || at.text == "False") {
          e->value = Value(false);
        } else if (at.text == "none" || at.text == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = at.text;
        }
        return e;
      }
      case TK::kString: {
        std::string s;
        while (cur().kind == TK::kString) {
          s += cur().text;
          next();
        }
        auto e = make(Expr::Kind::kLiteral, at);
        e->value = Value(std::move(s));
        return e;
      }
      case TK::kInt: {
        next();
        auto e = make(Expr::Kind::kLiteral, at);
        int64_t v = 0;
        auto r = std::from_chars(at.text.data(), at.text.data() + at.text.size(), v);
        if (r.ec != std::errc()) return fail(at, "integer " + at.text + " is too large");
        e->value = Value(v);
        return e;
      }
      case TK::kFloat: {
        next();
        auto e = make(Expr::Kind::kLiteral, at);
        e->value = Value(std::strtod(at.text.c_str(), nullptr));
        return e;
      }
      case TK::kOp:
        if (auto e = bracketed(at); !e.ok() || *e != nullptr) return e;
        break;
      default:
        break;
    }
    return unexpected("an expression");
  }

  Result<ExprPtr> postfix(ExprPtr e) {
    while (true) {
      const Token at = cur();
      if (skip_op(".")) {
        if (cur().kind == TK::kName) {
          auto g = make(Expr::Kind::kGetAttr, at);
          g->name = cur().text;
          next();
          g->args.push_back(std::move(e));
          e = std::move(g);
        } else if (cur().kind == TK::kInt) {
          auto g = make(Expr::Kind::kGetItem, at);
          auto idx = make(Expr::Kind::kLiteral, cur());
          // from_chars, not stoll: `x.99999999999999999999` must be an error, not an exception.
          int64_t k = 0;
          const std::string& digits = cur().text;
          auto r = std::from_chars(digits.data(), digits.data() + digits.size(), k);
          if (r.ec != std::errc()) return fail(cur(), "integer " + digits + " is too large");
          idx->value = Value(k);
          next();
          g->args.push_back(std::move(e));
          g->args.push_back(std::move(idx));
          e = std::move(g);
        } else {
          return unexpected("an attribute name");
        }
      } else if (skip_op("[")) {
        TOVA_ASSIGN_OR_RETURN(e, subscript(std::move(e), at));
      } else if (is_op("(")) {
        TOVA_ASSIGN_OR_RETURN(e, call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  Result<ExprPtr> subscript(ExprPtr obj, const Token& at) {
    ExprPtr parts[3];
    bool slice = false;
    int part = 0;
    while (!is_op("]")) {
      if (skip_op(":")) {
        slice = true;
        if (++part > 2) return fail(cur(), "too many ':' in a slice");
        continue;
      }
      if (parts[part]) return unexpected("']'");
      TOVA_ASSIGN_OR_RETURN(parts[part], tuple_expr(true));
    }
    next();
    if (!slice) {
      if (!parts[0]) return fail(at, "expected a subscript");
      auto g = make(Expr::Kind::kGetItem, at);
      g->args.push_back(std::move(obj));
      g->args.push_back(std::move(parts[0]));
      return g;
    }
    auto s = make(Expr::Kind::kSlice, at);
    s->args.push_back(std::move(obj));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  // Call arguments into `e` (args after any already there, kwargs).
  Status call_args(Expr& e) {
    TOVA_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!is_op(")")) {
      if (!first) TOVA_RETURN_IF_ERROR(expect_op(","));
      first = false;
      if (is_op(")")) break;
      if (cur().kind == TK::kName && peek().kind == TK::kOp && peek().text == "=") {
        std::string key = cur().text;
        next();
        next();
        TOVA_ASSIGN_OR_RETURN(ExprPtr v, expression());
        e.kwargs.emplace_back(std::move(key), std::move(v));
      } else {
        if (!e.kwargs.empty()) return fail(cur(), "positional argument follows keyword argument");
        TOVA_ASSIGN_OR_RETURN(ExprPtr v, expression());
        e.args.push_back(std::move(v));
      }
    }
    next();
    return ok_status();
  }

  Result<ExprPtr> call(ExprPtr callee) {
    auto c = make(Expr::Kind::kCall, cur());
    c->args.push_back(std::move(callee));
    TOVA_RETURN_IF_ERROR(call_args(*c));
    return c;
  }

  Result<ExprPtr> filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        TOVA_ASSIGN_OR_RETURN(e, filters(std::move(e)));
      } else if (is_name("is")) {
        TOVA_ASSIGN_OR_RETURN(e, test(std::move(e)));
      } else if (is_op("(")) {
        TOVA_ASSIGN_OR_RETURN(e, call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  Result<std::string> dotted_name() {
    TOVA_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (skip_op(".")) {
      TOVA_ASSIGN_OR_RETURN(std::string part, expect_name());
      name += "." + part;
    }
    return name;
  }

  // `| f(args) | g ...` applied to `e` (null: the value of a filter block or set block).
  Result<ExprPtr> filters(ExprPtr e, bool start_inline = false) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const Token at = cur();
      TOVA_ASSIGN_OR_RETURN(std::string name, dotted_name());
      if (!has_filter(name)) unknown(at, "no filter named '" + name + "'");
      auto f = make(Expr::Kind::kFilter, at);
      f->name = std::move(name);
      f->args.push_back(std::move(e));
      if (is_op("(")) TOVA_RETURN_IF_ERROR(call_args(*f));
      e = std::move(f);
    }
    return e;
  }

  Result<ExprPtr> test(ExprPtr e) {
    next();  // is
    const bool negated = skip_name("not");
    const Token at = cur();
    TOVA_ASSIGN_OR_RETURN(std::string name, dotted_name());
    if (!has_test(name)) unknown(at, "no test named '" + name + "'");
    auto t = make(Expr::Kind::kTest, at);
    t->name = std::move(name);
    t->args.push_back(std::move(e));
    if (is_op("(")) {
      TOVA_RETURN_IF_ERROR(call_args(*t));
    } else if ((cur().kind == TK::kName || cur().kind == TK::kString || cur().kind == TK::kInt ||
                cur().kind == TK::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) return fail(cur(), "you cannot chain multiple tests with is");
      TOVA_ASSIGN_OR_RETURN(ExprPtr a, primary());
      TOVA_ASSIGN_OR_RETURN(a, postfix(std::move(a)));
      t->args.push_back(std::move(a));
    }
    if (!negated) return t;
    auto n = make(Expr::Kind::kNot, at);
    n->args.push_back(std::move(t));
    return n;
  }

  // An unknown filter or test: jinja2 fails to compile the template, unless the name is inside
  // an `if` or an inline if (its "soft" frames; a loop, macro or block body inside resets
  // that), where it fails only when run. Errors here wait until the whole expression is known.
  void unknown(const Token& at, std::string what) {
    if (!soft_) unknown_.push_back(fail(at, what));
  }
  struct SoftScope {
    SoftScope(bool& s, bool v) : s_(s), saved_(s) { s_ = v; }
    ~SoftScope() { s_ = saved_; }
    bool& s_;
    bool saved_;
  };

  const std::vector<Token>& t_;
  std::vector<Error> unknown_;
  bool soft_ = false;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace tova::jinja
