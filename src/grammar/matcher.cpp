#include "grammar/matcher.h"

#include <algorithm>

#include <fmt/format.h>

namespace tova::grammar {

namespace {

constexpr uint32_t kPop = UINT32_MAX;  // step(): the stack continues at its parent
// Past this many arena nodes an accepted step rewrites the arena to the live stacks.
constexpr size_t kCompactAt = size_t{1} << 20;
// expand(): the stacks one step may expand (each once), a bound on a step's work whatever
// the grammar.
constexpr size_t kMaxVisits = 16 * Matcher::kMaxStacks;

void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  ++epoch_;
  visits_ = 0;
  for (uint32_t a : g_->alts[g_->root]) {
    if (!expand(g_->elems[a].kind == ElemKind::kEnd ? kNil : push(a, kNil), cur_.stacks)) {
      refuse(kNil, cur_.stacks);  // nothing is accepted then; error() says why
      return;
    }
  }
  sort_unique(cur_.stacks);
  if (cur_.stacks.size() > kMaxStacks) refuse(kNil, cur_.stacks);
}

size_t Matcher::slot_of(uint32_t elem, uint32_t parent) const {
  uint64_t k = (uint64_t{elem} << 32) | parent;
  k ^= k >> 31;
  k *= 0x9E3779B97F4A7C15ull;
  k ^= k >> 29;
  const size_t mask = index_.size() - 1;
  for (size_t i = k & mask;; i = (i + 1) & mask) {
    const Slot& s = index_[i];
    if (s.id == kNil || (s.elem == elem && s.parent == parent)) return i;
  }
}

void Matcher::reindex() {
  std::fill(index_.begin(), index_.end(), Slot{0, 0, kNil});
  for (uint32_t id = 0; id < arena_.size(); ++id) {
    index_[slot_of(arena_[id].elem, arena_[id].parent)] = {arena_[id].elem, arena_[id].parent, id};
  }
}

uint32_t Matcher::push(uint32_t elem, uint32_t parent) {
  if (2 * (arena_.size() + 1) > index_.size()) {
    index_.resize(std::max<size_t>(1024, 2 * index_.size()));
    reindex();
  }
  Slot& s = index_[slot_of(elem, parent)];
  if (s.id == kNil) {
    arena_.push_back({elem, parent});
    s = {elem, parent, static_cast<uint32_t>(arena_.size() - 1)};
  }
  return s.id;
}

void Matcher::rollback(size_t mark) {
  // Newest first: each removal undoes that node's insertion into the index exactly.
  for (size_t id = arena_.size(); id-- > mark;) {
    index_[slot_of(arena_[id].elem, arena_[id].parent)].id = kNil;
  }
  arena_.resize(mark);
}

bool Matcher::seen(uint32_t st) {
  if (st >= seen_.size()) seen_.resize(arena_.size(), 0);
  if (seen_[st] == epoch_) return true;
  seen_[st] = epoch_;
  return false;
}

bool Matcher::add(uint32_t st, std::vector<uint32_t>& out) {
  out.push_back(st);
  if (out.size() <= 2 * kMaxStacks) return true;
  sort_unique(out);
  return out.size() <= kMaxStacks;
}

bool Matcher::refuse(uint32_t c, std::vector<uint32_t>& out) {
  if (error_.empty()) {
    const std::string at = c == kNil ? "the start" : fmt::format("reading U+{:04X}", c);
    error_ = fmt::format(
        "grammar too ambiguous: {} would take more than {} readings of the text at once (or {} "
        "expansions); the text is refused there",
        at, kMaxStacks, kMaxVisits);
  }
  out.clear();
  return false;
}

bool Matcher::expand(uint32_t st, std::vector<uint32_t>& out) {
  const std::vector<Elem>& elems = g_->elems;
  for (;;) {
    if (st == kNil) return add(kNil, out);
    const Node n = arena_[st];
    const Elem e = elems[n.elem];
    if (e.kind == ElemKind::kChars) return add(st, out);  // duplicates go at the sort
    // Stacks are hash-consed: one expanded earlier in this step put its stacks in `out` already
    // (no rule reaches itself without reading: left recursion is refused by the parser).
    if (seen(st)) return true;
    if (++visits_ > kMaxVisits) return false;
    if (e.kind == ElemKind::kEnd) {
      st = n.parent;
      continue;
    }
    // A reference: the stack continues after it (dropped when the alternative ends there, so
    // right recursion keeps stacks flat), under each alternative of the rule.
    const uint32_t next = n.elem + 1;
    const uint32_t cont = elems[next].kind == ElemKind::kEnd ? n.parent : push(next, n.parent);
    const std::vector<uint32_t>& alts = g_->alts[e.value];
    for (size_t i = 0; i + 1 < alts.size(); ++i) {
      if (!expand(elems[alts[i]].kind == ElemKind::kEnd ? cont : push(alts[i], cont), out)) {
        return false;
      }
    }
    st = elems[alts.back()].kind == ElemKind::kEnd ? cont : push(alts.back(), cont);
  }
}

bool Matcher::step(const std::vector<uint32_t>& in, uint32_t c, std::vector<uint32_t>& out) {
  const std::vector<Elem>& elems = g_->elems;
  pend_.clear();
  for (uint32_t st : in) {
    if (st == kNil) continue;
    const Node n = arena_[st];
    if (!g_->classes[elems[n.elem].value].matches(c)) continue;
    const uint32_t next = n.elem + 1;
    const uint32_t at = elems[next].kind == ElemKind::kEnd ? kPop : next;
    pend_.push_back((uint64_t{at} << 32) | n.parent);
  }
  // Readings that reach the same position over the same stack are one.
  std::sort(pend_.begin(), pend_.end());
  pend_.erase(std::unique(pend_.begin(), pend_.end()), pend_.end());
  out.clear();
  if (++epoch_ == 0) {  // wrapped: no stamp may look current
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
  visits_ = 0;
  for (uint64_t p : pend_) {
    const auto at = static_cast<uint32_t>(p >> 32);
    const auto parent = static_cast<uint32_t>(p);
    if (!expand(at == kPop ? parent : push(at, parent), out)) return refuse(c, out);
  }
  sort_unique(out);
  if (out.size() > kMaxStacks) return refuse(c, out);
  return true;
}

bool Matcher::viable(const std::vector<uint32_t>& stacks, uint32_t lo, uint32_t hi) const {
  for (uint32_t st : stacks) {
    if (st == kNil) continue;
    if (g_->classes[g_->elems[arena_[st].elem].value].intersects(lo, hi)) return true;
  }
  return false;
}

namespace {

// The smallest code point a UTF-8 sequence of `len` bytes may encode (shorter forms of the same
// code point are invalid UTF-8: a token of such bytes is refused, as a decoder would).
constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};

// A complete code point the UTF-8 rules allow.
bool valid_code_point(uint32_t c, uint8_t len) {
  return c >= kMinOfLength[len] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
}

}  // namespace

bool Matcher::advance_byte(const State& from, uint8_t b, State& to) {
  uint32_t v = 0;
  uint8_t need = 0;
  uint8_t len = 0;
  if (from.need == 0) {
    if (b < 0x80) {
      to.need = 0;
      to.partial = 0;
      to.len = 0;
      return step(from.stacks, b, to.stacks) && !to.stacks.empty();
    }
    if ((b >> 5) == 6) {
      v = b & 0x1F;
      need = 1;
    } else if ((b >> 4) == 14) {
      v = b & 0x0F;
      need = 2;
    } else if ((b >> 3) == 30) {
      v = b & 0x07;
      need = 3;
    } else {
      return false;  // a continuation byte with no lead, or not UTF-8 at all
    }
    len = need + 1;
  } else {
    if ((b >> 6) != 2) return false;
    v = (from.partial << 6) | (b & 0x3F);
    need = from.need - 1;
    len = from.len;
  }
  if (need == 0) {
    if (!valid_code_point(v, len)) return false;
    to.need = 0;
    to.partial = 0;
    to.len = 0;
    return step(from.stacks, v, to.stacks) && !to.stacks.empty();
  }
  // Still incomplete: some code point the sequence can still become must be valid for its
  // length and taken by some reading.
  uint32_t lo = v << (6 * need);
  const uint32_t hi = std::min<uint32_t>(lo | ((uint32_t{1} << (6 * need)) - 1), 0x10FFFF);
  lo = std::max(lo, kMinOfLength[len]);
  if (lo > hi || !viable(from.stacks, lo, hi)) return false;
  to.stacks = from.stacks;
  to.partial = v;
  to.need = need;
  to.len = len;
  return true;
}

bool Matcher::accepts(std::string_view bytes) {
  const size_t m = mark();
  const State* s = &cur_;
  int k = 0;
  bool ok = true;
  for (char ch : bytes) {
    if (!advance_byte(*s, static_cast<uint8_t>(ch), tmp_[k])) {
      ok = false;
      break;
    }
    s = &tmp_[k];
    k ^= 1;
  }
  rollback(m);
  return ok;
}

bool Matcher::accept(std::string_view bytes) {
  const size_t m = mark();
  const State* s = &cur_;
  int k = 0;
  for (char ch : bytes) {
    if (!advance_byte(*s, static_cast<uint8_t>(ch), tmp_[k])) {
      rollback(m);
      return false;
    }
    s = &tmp_[k];
    k ^= 1;
  }
  if (s != &cur_) cur_ = *s;
  if (arena_.size() > kCompactAt) compact();
  return true;
}

bool Matcher::can_end() const {
  return cur_.need == 0 && !cur_.stacks.empty() && cur_.stacks.back() == kNil;
}

void Matcher::compact() {
  constexpr uint32_t kUnmapped = UINT32_MAX - 1;
  std::vector<uint32_t> remap(arena_.size(), kUnmapped);
  std::vector<Node> fresh;
  std::vector<uint32_t> chain;
  for (uint32_t& st : cur_.stacks) {
    chain.clear();
    for (uint32_t x = st; x != kNil && remap[x] == kUnmapped; x = arena_[x].parent) {
      chain.push_back(x);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node n = arena_[*it];
      fresh.push_back({n.elem, n.parent == kNil ? kNil : remap[n.parent]});
      remap[*it] = static_cast<uint32_t>(fresh.size() - 1);
    }
    if (st != kNil) st = remap[st];
  }
  sort_unique(cur_.stacks);
  arena_ = std::move(fresh);
  reindex();  // the copied nodes are distinct still (distinct stacks, distinct ids)
  std::fill(seen_.begin(), seen_.end(), 0);
}

}  // namespace tova::grammar
