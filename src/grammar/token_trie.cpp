#include "grammar/token_trie.h"

#include <algorithm>

namespace tova::grammar {

TokenTrie::TokenTrie(VocabText v) : v_(std::move(v)) {
  std::vector<int32_t> sorted;
  for (int32_t id = 0; id < n_vocab(); ++id) {
    if (!v_.text[id].empty()) sorted.push_back(id);
  }
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    return v_.text[a] != v_.text[b] ? v_.text[a] < v_.text[b] : a < b;
  });
  // Children of the (implicit) root: groups of equal first byte.
  size_t i = 0;
  while (i < sorted.size()) {
    const char b = v_.text[sorted[i]][0];
    size_t j = i;
    while (j < sorted.size() && v_.text[sorted[j]][0] == b) ++j;
    build(sorted, i, j, 1);
    i = j;
  }
}

// sorted[lo, hi) share their first `depth` bytes; they make one node and its subtree.
void TokenTrie::build(const std::vector<int32_t>& sorted, size_t lo, size_t hi, size_t depth) {
  max_depth_ = std::max(max_depth_, static_cast<int>(depth));
  const size_t me = nodes_.size();
  nodes_.push_back({.end = 0,
                    .tok_begin = static_cast<uint32_t>(ids_.size()),
                    .tok_end = 0,
                    .byte = static_cast<uint8_t>(v_.text[sorted[lo]][depth - 1])});
  // The shortest texts sort first: those that end here.
  size_t i = lo;
  while (i < hi && v_.text[sorted[i]].size() == depth) ids_.push_back(sorted[i++]);
  nodes_[me].tok_end = static_cast<uint32_t>(ids_.size());
  while (i < hi) {
    const char b = v_.text[sorted[i]][depth];
    size_t j = i;
    while (j < hi && v_.text[sorted[j]][depth] == b) ++j;
    build(sorted, i, j, depth + 1);
    i = j;
  }
  nodes_[me].end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace tova::grammar
