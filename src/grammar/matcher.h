// Runs a Grammar over text as a pushdown automaton: the state is a set of stacks of grammar
// positions (element indices), one per way the text so far can be read, plus a UTF-8 sequence
// begun and not finished (a byte-level BPE token may end inside a code point). A stack's top is
// always a character element (rule references are expanded as they are reached); an empty
// stack means the root rule is complete. Stacks share their tails in an arena (a push is one
// node, a copy is an index), so advancing and trying a whole vocabulary cost no allocation.
//
// The arena holds each (position, stack below) pair once (hash-consed): two readings that reach
// the same stack by different paths get the same id, so the sorted set of ids merges them. An
// ambiguous grammar (`term ::= factor (op? factor)*` with `factor ::= [a-z]+`: 2^n ways to cut
// n letters) then keeps as many stacks as there are distinct ones, a number the grammar's shape
// bounds, instead of one per way of reading the text. A grammar whose distinct stacks really
// do multiply (`s ::= "a" s "b" | "a" s "c" | ""`: after n a's, 2^n continuations) is stopped at
// kMaxStacks: the step is refused and error() says why, so each byte costs at most
// kMaxStacks stacks' work.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace tova::grammar {

class Matcher {
 public:
  static constexpr uint32_t kNil = UINT32_MAX;  // the empty stack

  struct State {
    std::vector<uint32_t> stacks;  // sorted, unique (arena ids; kNil: the root is complete)
    uint32_t partial = 0;          // the bits of an unfinished UTF-8 sequence
    uint8_t need = 0;              // its continuation bytes still to come (0: none)
    uint8_t len = 0;               // its whole length in bytes (overlong forms are refused)
  };

  // The most readings a state may hold; a step that would need more is refused (error()).
  static constexpr size_t kMaxStacks = 4096;

  explicit Matcher(std::shared_ptr<const Grammar> g);

  const Grammar& grammar() const { return *g_; }
  const State& state() const { return cur_; }

  // Consumes `bytes` if the grammar allows them from here (a prefix of some sentence of it);
  // returns false and changes nothing otherwise.
  bool accept(std::string_view bytes);
  // Whether accept(bytes) would succeed (the state is unchanged).
  bool accepts(std::string_view bytes);
  // The text so far is a whole sentence of the grammar (an end of generation may come now).
  bool can_end() const;
  // Nothing but the end can follow.
  bool only_end() const { return cur_.need == 0 && cur_.stacks.size() == 1 && can_end(); }
  // Empty, or why a step was refused although the grammar might allow it: the readings of the
  // text would have exceeded kMaxStacks (the first such step; it stays set).
  const std::string& error() const { return error_; }

  // The step the vocabulary walk takes: `to` = `from` advanced by one byte; false (and `to`
  // unspecified) if no reading survives. Arena nodes made after mark() are dropped by
  // rollback(mark) once no state made from them is kept.
  bool advance_byte(const State& from, uint8_t byte, State& to);
  size_t mark() const { return arena_.size(); }
  void rollback(size_t mark);

 private:
  struct Node {
    uint32_t elem;    // the position: an element index in grammar().elems
    uint32_t parent;  // the stack below (kNil: none)
  };
  // The node (elem, parent), made if the arena does not hold it yet.
  uint32_t push(uint32_t elem, uint32_t parent);
  size_t slot_of(uint32_t elem, uint32_t parent) const;
  void reindex();
  // Adds to `out` every stack with a character on top that `st` can become without reading;
  // false (out unspecified) if that made more than kMaxStacks distinct stacks.
  bool expand(uint32_t st, std::vector<uint32_t>& out);
  bool add(uint32_t st, std::vector<uint32_t>& out);
  // expand(): whether stack `st` was expanded already in this step (marks it if not).
  bool seen(uint32_t st);
  // Sets error_ (the first time) for a step reading `c` (kNil: the initial expansion), clears
  // `out`; returns false.
  bool refuse(uint32_t c, std::vector<uint32_t>& out);
  // Every reading of `in` that takes code point `c`, expanded, into `out` (sorted, unique).
  // False if the readings exceeded kMaxStacks (error_ says so).
  bool step(const std::vector<uint32_t>& in, uint32_t c, std::vector<uint32_t>& out);
  // Some stack's top can take a code point in [lo, hi].
  bool viable(const std::vector<uint32_t>& stacks, uint32_t lo, uint32_t hi) const;
  // Rewrites the arena to hold only what cur_ uses (it grows with every step otherwise).
  void compact();

  std::shared_ptr<const Grammar> g_;
  std::vector<Node> arena_;
  // Open addressing over arena_ (linear probing, at most half full): each node by (elem,
  // parent), the key kept beside the id so a probe touches one cache line; id kNil: empty.
  // Nodes are only ever removed newest first (rollback), which undoes their insertion exactly,
  // so no tombstones are needed.
  struct Slot {
    uint32_t elem;
    uint32_t parent;
    uint32_t id;
  };
  std::vector<Slot> index_;
  State cur_;
  State tmp_[2];
  std::vector<uint64_t> pend_;  // step(): (element or kPop, parent) pairs before expansion
  std::vector<uint32_t> seen_;  // [arena] the step (epoch_) that last expanded each stack
  uint32_t epoch_ = 0;
  size_t visits_ = 0;  // stacks expanded in this step
  std::string error_;
};

}  // namespace tova::grammar
