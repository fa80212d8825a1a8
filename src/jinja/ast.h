// The parsed template: expressions and statements, each with the line and column it came from.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace tova::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // args: items
    kTuple,     // args: items
    kDict,      // kwargs: key expressions in args (even) and values (odd)
    kGetAttr,   // args[0] . name
    kGetItem,   // args[0] [ args[1] ]
    kSlice,     // args[0] [ args[1] : args[2] : args[3] ] (null parts absent)
    kCall,      // args[0] ( args[1..], kwargs )
    kFilter,    // args[0] | name ( args[1..], kwargs ); args[0] null in a filter block
    kTest,      // args[0] is [not] name ( args[1..], kwargs )
    kNeg,       // - args[0]
    kPos,       // + args[0]
    kNot,       // not args[0]
    kBinary,    // args[0] op args[1]: + - * / // % ** ~
    kAnd,       // args[0] and args[1]
    kOr,        // args[0] or args[1]
    kCompare,   // args[0] ops[0] args[1] ops[1] args[2] ... (==, !=, <, <=, >, >=, in, notin)
    kCondExpr,  // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  Value value;
  std::string name;  // name, attribute, filter/test name, binary operator
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Node {
  enum class Kind {
    kText,         // text
    kPrint,        // {{ exprs[0] }}
    kIf,           // exprs: conditions; bodies: one per condition, then else if present
    kFor,          // targets in exprs[0] [if exprs[1]]; bodies[0] body, bodies[1] else
    kSet,          // targets (or target + attribute) = exprs[0]
    kSetBlock,     // {% set targets[0] [| filters exprs[0]] %} bodies[0] {% endset %}
    kMacro,        // name(params) bodies[0]
    kCallBlock,    // {% call(params) exprs[0] %} bodies[0]
    kFilterBlock,  // {% filter exprs[0] %} bodies[0]
    kWith,         // {% with targets = exprs %} bodies[0]
    kBreak,
    kContinue,
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;                  // kText; kMacro: the macro's name; kSet: namespace attr
  std::vector<std::string> targets;  // kFor/kSet/kSetBlock/kWith names
  bool unpack = false;               // a tuple target (for a, b in ...)
  bool recursive = false;            // for ... recursive
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
  std::vector<MacroParam> params;
};

}  // namespace tova::jinja
