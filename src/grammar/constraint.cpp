#include "grammar/constraint.h"

#include <algorithm>

namespace tova::grammar {

Constraint::Constraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> vocab)
    : vocab_(std::move(vocab)), m_(std::move(g)) {}

std::string_view Constraint::text(int32_t id, bool at_start) const {
  std::string_view t = vocab_->vocab().text[id];
  if (at_start && vocab_->vocab().strip_space_at_start && !t.empty() && t[0] == ' ') {
    t.remove_prefix(1);
  }
  return t;
}

int32_t Constraint::first_eog() const {
  const auto& eog = vocab_->vocab().eog;
  for (size_t id = 0; id < eog.size(); ++id) {
    if (eog[id]) return static_cast<int32_t>(id);
  }
  return -1;
}

bool Constraint::allows(int32_t id, bool at_start) {
  if (id < 0 || id >= vocab_->n_vocab() || ended_) return false;
  if (vocab_->vocab().eog[id]) return m_.can_end();
  const std::string_view t = text(id, at_start);
  return !t.empty() && m_.accepts(t);
}

bool Constraint::accept(int32_t id, bool at_start) {
  if (!allows(id, at_start)) return false;
  if (vocab_->vocab().eog[id]) {
    ended_ = true;
    return true;
  }
  return m_.accept(text(id, at_start));
}

int Constraint::mask(bool at_start, std::vector<char>& allowed) {
  const int n_vocab = vocab_->n_vocab();
  allowed.assign(n_vocab, 0);
  if (ended_) return 0;
  int n = 0;
  if (m_.can_end()) {
    for (int32_t id = 0; id < n_vocab; ++id) {
      if (vocab_->vocab().eog[id]) {
        allowed[id] = 1;
        ++n;
      }
    }
  }
  if (m_.only_end()) return n;
  buf_.resize(vocab_->max_depth() + 2);
  const size_t mark = m_.mark();
  const auto& nodes = vocab_->nodes();
  const bool strip = at_start && vocab_->vocab().strip_space_at_start;
  for (uint32_t i = 0; i < nodes.size(); i = nodes[i].end) {
    m_.rollback(mark);  // the last subtree's nodes: the arena stays as small as one path
    if (strip && nodes[i].byte == ' ') {
      // " x" reads as "x" here; " " alone is no text.
      walk(i + 1, nodes[i].end, m_.state(), 1, allowed, n);
      continue;
    }
    Matcher::State& t = buf_[0];
    if (!m_.advance_byte(m_.state(), nodes[i].byte, t)) continue;
    for (uint32_t k = nodes[i].tok_begin; k < nodes[i].tok_end; ++k) {
      if (!vocab_->vocab().eog[vocab_->ids(nodes[i])[k - nodes[i].tok_begin]]) {
        allowed[vocab_->ids(nodes[i])[k - nodes[i].tok_begin]] = 1;
        ++n;
      }
    }
    walk(i + 1, nodes[i].end, t, 1, allowed, n);
  }
  m_.rollback(mark);
  return n;
}

void Constraint::walk(uint32_t begin, uint32_t end, const Matcher::State& s, int depth,
                      std::vector<char>& allowed, int& n) {
  const auto& nodes = vocab_->nodes();
  Matcher::State& t = buf_[depth];
  const size_t mark = m_.mark();
  for (uint32_t i = begin; i < end; i = nodes[i].end) {
    const TokenTrie::Node& node = nodes[i];
    // The previous sibling's nodes (no state kept refers to them): the arena, and the index
    // each node is hashed into, stay as small as one path of the trie.
    m_.rollback(mark);
    if (!m_.advance_byte(s, node.byte, t)) continue;
    const int32_t* ids = vocab_->ids(node);
    for (uint32_t k = 0; k < node.tok_end - node.tok_begin; ++k) {
      if (!vocab_->vocab().eog[ids[k]]) {
        allowed[ids[k]] = 1;
        ++n;
      }
    }
    if (node.end > i + 1) walk(i + 1, node.end, t, depth + 1, allowed, n);
  }
}

}  // namespace tova::grammar
