#include "tokenizer/spm.h"

#include <array>
#include <queue>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab_tokenizer.h"

namespace tova::tok {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

class SpmTokenizer final : public VocabTokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab) : VocabTokenizer(std::move(vocab)) {
    byte_token_.fill(-1);
    for (int b = 0; b < 256; ++b) {
      int32_t id = vocab_.find(fmt::format("<0x{:02X}>", b));
      if (id < 0) id = vocab_.find(std::string(1, static_cast<char>(b)));
      byte_token_[b] = id;
    }
    build_pieces();
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;

  std::string normal_piece(int32_t id) const override {
    const std::string& t = vocab_.text[id];
    std::string s;
    s.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
        s += ' ';
        i += kSpaceMark.size();
      } else {
        s += t[i++];
      }
    }
    return s;
  }

 private:
  // Bytes of a character the vocabulary lacks: byte tokens if all exist, else one unknown.
  void append_fallback(std::string_view ch, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_token_;  // <0xXX> (or the one-byte text) per byte, -1 if none
};

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;  // byte offset in the escaped text
  uint32_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;  // bytes of the merged text, to spot pairs that changed since they were queued
};

// Highest score first; on ties the leftmost pair, as SentencePiece does.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

void SpmTokenizer::append_fallback(std::string_view ch, std::vector<int32_t>& out) const {
  bool all_bytes = true;
  for (char c : ch) all_bytes = all_bytes && byte_token_[static_cast<uint8_t>(c)] >= 0;
  if (all_bytes) {
    for (char c : ch) out.push_back(byte_token_[static_cast<uint8_t>(c)]);
  } else if (vocab_.unk >= 0) {
    out.push_back(vocab_.unk);
  }
}

void SpmTokenizer::encode_fragment(std::string_view text, bool after_special,
                                   std::vector<int32_t>& out) const {
  std::string s;
  s.reserve(text.size() + 3);
  if (vocab_.add_space_prefix && after_special) s += kSpaceMark;
  for (char c : text) {
    if (c == ' ') {
      s += kSpaceMark;
    } else {
      s += c;
    }
  }
  if (s.empty()) return;

  // One symbol per UTF-8 character (a truncated one keeps the bytes that are there).
  std::vector<Symbol> sym;
  sym.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = std::min(utf8_len(static_cast<uint8_t>(s[i])), s.size() - i);
    const auto idx = static_cast<int32_t>(sym.size());
    sym.push_back({idx - 1, i + len < s.size() ? idx + 1 : -1, static_cast<uint32_t>(i),
                   static_cast<uint32_t>(len)});
    i += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t len = sym[left].len + sym[right].len;
    const int32_t id = vocab_.find(std::string_view(s).substr(sym[left].begin, len));
    if (id < 0) return;
    queue.push({vocab_.score[id], left, right, len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = sym[b.left];
    Symbol& right = sym[b.right];
    if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }

  // Merged symbols are always vocabulary tokens; only single characters can be missing.
  for (int32_t i = 0; i != -1; i = sym[i].next) {
    const std::string_view piece = std::string_view(s).substr(sym[i].begin, sym[i].len);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
    } else {
      append_fallback(piece, out);
    }
  }
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(const io::GgufFile& file) {
  const VocabDefaults defaults{.bos = 1,
                               .eos = 2,
                               .unk = 0,
                               .add_bos = true,
                               .add_eos = false,
                               .add_space_prefix = true};
  TOVA_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file, defaults));
  return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(vocab)));
}

}  // namespace tova::tok
