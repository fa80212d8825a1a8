#include "tokenizer/bpe.h"

#include <queue>
#include <unordered_map>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_tokenizer.h"

namespace tova::tok {

namespace {

// How the vocabulary spells text: GPT-2's byte alphabet (tokenizer.ggml.model "gpt2"), or
// SentencePiece's raw UTF-8 with U+2581 for a space and <0xXX> byte tokens ("gemma4").
enum class BpeStyle { kByteLevel, kSentencePiece };

class BpeTokenizer final : public VocabTokenizer {
 public:
  BpeTokenizer(Vocab vocab, TokenMap ranks, PreTokenizerKind pre, bool ignore_merges,
               BpeStyle style = BpeStyle::kByteLevel)
      : VocabTokenizer(std::move(vocab)),
        ranks_(std::move(ranks)),
        pre_(pre),
        ignore_merges_(ignore_merges),
        style_(style) {
    build_pieces();
  }

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;

  // Maps the GPT-2 alphabet back to bytes; code points outside it stay as they are. In
  // SentencePiece style, U+2581 reads as a space.
  std::string normal_piece(int32_t id) const override {
    if (style_ == BpeStyle::kSentencePiece) return unescape_spaces(vocab_.text[id]);
    std::string s;
    for (uint32_t cpt : decode_utf8(vocab_.text[id])) {
      const int b = gpt2_cpt_to_byte(cpt);
      if (b >= 0) {
        s += static_cast<char>(b);
      } else {
        append_utf8(cpt, s);
      }
    }
    return s;
  }

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;

  // SentencePiece style (llama.cpp's gemma4 pre-tokenizer): spaces become U+2581, then the text
  // splits into runs of newlines and runs of anything else; a newline run that is itself a
  // token is emitted whole (Gemma 4 has tokens for them), every other run is merged.
  void encode_spm_fragment(std::string_view text, std::vector<int32_t>& out) const;
  static std::string unescape_spaces(const std::string& text);

  TokenMap ranks_;  // "left right" -> merge rank
  PreTokenizer pre_;
  bool ignore_merges_;  // a word that is itself a token is emitted whole (llama3)
  BpeStyle style_;
};

constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581

std::string BpeTokenizer::unescape_spaces(const std::string& text) {
  std::string s;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpmSpace.size(), kSpmSpace) == 0) {
      s += ' ';
      i += kSpmSpace.size();
    } else {
      s += text[i++];
    }
  }
  return s;
}

void BpeTokenizer::encode_spm_fragment(std::string_view text, std::vector<int32_t>& out) const {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    if (c == ' ') {
      escaped += kSpmSpace;
    } else {
      escaped += c;
    }
  }
  for (size_t i = 0; i < escaped.size();) {
    const bool newlines = escaped[i] == '\n';
    size_t j = i;
    while (j < escaped.size() && (escaped[j] == '\n') == newlines) ++j;
    const std::string word = escaped.substr(i, j - i);
    i = j;
    if (newlines) {
      if (const int32_t id = vocab_.find(word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    encode_word(word, out);
  }
}

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t begin;
  uint32_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  uint32_t left_len;  // lengths when queued: a pair whose sides grew since is stale
  uint32_t right_len;
};

// Lowest rank first; on ties the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

void BpeTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<int32_t>& out) const {
  if (style_ == BpeStyle::kSentencePiece) {
    encode_spm_fragment(text, out);
    return;
  }
  // Natural text repeats its words; remembering short ones within this call makes long
  // inputs several times faster without shared mutable state.
  constexpr size_t kMaxCachedWord = 48;
  std::unordered_map<std::string, std::pair<size_t, size_t>> seen;  // word -> ids in `memo`
  std::vector<int32_t> memo;
  for (const std::string& word : pre_.split(text)) {
    if (ignore_merges_) {
      if (const int32_t id = vocab_.find(word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    if (word.size() > kMaxCachedWord) {
      encode_word(word, out);
      continue;
    }
    auto it = seen.find(word);
    if (it == seen.end()) {
      const size_t begin = memo.size();
      encode_word(word, memo);
      it = seen.emplace(word, std::make_pair(begin, memo.size() - begin)).first;
    }
    out.insert(out.end(), memo.begin() + it->second.first,
               memo.begin() + it->second.first + it->second.second);
  }
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  std::vector<Symbol> sym;
  for (size_t i = 0; i < word.size();) {
    const size_t len = std::min(utf8_len(static_cast<uint8_t>(word[i])), word.size() - i);
    const auto idx = static_cast<int32_t>(sym.size());
    sym.push_back({idx - 1, i + len < word.size() ? idx + 1 : -1, static_cast<uint32_t>(i),
                   static_cast<uint32_t>(len)});
    i += len;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  std::string key;
  auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    key.assign(word, sym[left].begin, sym[left].len);
    key += ' ';
    key.append(word, sym[right].begin, sym[right].len);
    auto it = ranks_.find(key);
    if (it == ranks_.end()) return;
    queue.push({it->second, left, right, sym[left].len, sym[right].len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) try_pair(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = sym[b.left];
    Symbol& right = sym[b.right];
    if (left.len != b.left_len || right.len != b.right_len || right.len == 0) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }

  for (int32_t i = 0; i != -1 && !sym.empty(); i = sym[i].next) {
    const std::string_view piece = std::string_view(word).substr(sym[i].begin, sym[i].len);
    if (const int32_t id = vocab_.find(piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    if (style_ == BpeStyle::kSentencePiece) {
      // llama.cpp: each byte as its <0xXX> token; a byte without one is dropped.
      static constexpr char kHex[] = "0123456789ABCDEF";
      for (const char ch : piece) {
        const auto b = static_cast<uint8_t>(ch);
        const char name[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
        if (const int32_t id = vocab_.find(std::string_view(name, 6)); id >= 0) out.push_back(id);
      }
      continue;
    }
    // A merge produced a string the vocabulary lacks: fall back to its characters.
    for (size_t k = 0; k < piece.size();) {
      const size_t len = std::min(utf8_len(static_cast<uint8_t>(piece[k])), piece.size() - k);
      const int32_t id = vocab_.find(piece.substr(k, len));
      if (id >= 0) {
        out.push_back(id);
      } else if (vocab_.unk >= 0) {
        out.push_back(vocab_.unk);
      }
      k += len;
    }
  }
}

// tokenizer.ggml.merges as ranks ("left right" -> index).
Result<TokenMap> read_merges(const io::GgufFile& file) {
  if (file.find("tokenizer.ggml.merges") == nullptr) {
    return make_error("{}: BPE tokenizer without tokenizer.ggml.merges", file.path());
  }
  TOVA_ASSIGN_OR_RETURN(std::vector<std::string> merges,
                        file.get_string_array("tokenizer.ggml.merges"));
  TokenMap ranks;
  ranks.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // The separator is the first space after the first character, so a pair may start with one;
    // lookups build "left right", which equals the entry because symbols hold no raw spaces.
    // A malformed entry can never match a pair; llama.cpp skips it too.
    if (merges[i].find(' ', 1) == std::string::npos) continue;
    ranks.emplace(std::move(merges[i]), static_cast<int32_t>(i));  // first rank wins
  }
  return ranks;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_gemma4_tokenizer(const io::GgufFile& file) {
  // llama.cpp reads the pre-tokenizer as "gemma4" whatever tokenizer.ggml.pre says, and adds
  // BOS whatever tokenizer.ggml.add_bos_token says (its workaround for Gemma 4 files).
  TOVA_ASSIGN_OR_RETURN(TokenMap ranks, read_merges(file));
  const VocabDefaults defaults{.bos = -1, .eos = -1, .unk = -1, .add_bos = true};
  TOVA_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file, defaults));
  vocab.add_bos = true;
  vocab.add_space_prefix = false;
  if (vocab.bos < 0) return make_error("{}: gemma4 tokenizer without a BOS token", file.path());
  return std::unique_ptr<Tokenizer>(std::make_unique<BpeTokenizer>(
      std::move(vocab), std::move(ranks), PreTokenizerKind::kDefault, false,
      BpeStyle::kSentencePiece));
}

Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(const io::GgufFile& file) {
  std::string pre_name = "default";
  if (file.find("tokenizer.ggml.pre") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(pre_name, file.get_string("tokenizer.ggml.pre"));
  }
  const std::optional<PreTokenizerKind> pre = pre_tokenizer_from_name(pre_name);
  if (!pre) {
    return make_error("unsupported pre-tokenizer '{}' (tokenizer.ggml.pre) in {}", pre_name,
                      file.path());
  }
  const bool llama3 = *pre == PreTokenizerKind::kLlama3;

  TOVA_ASSIGN_OR_RETURN(TokenMap ranks, read_merges(file));

  // llama.cpp's defaults for BPE files that do not say (BOS/EOS 11 come from Falcon).
  const VocabDefaults defaults{.bos = 11, .eos = 11, .unk = -1, .add_bos = llama3};
  TOVA_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file, defaults));
  return std::unique_ptr<Tokenizer>(
      std::make_unique<BpeTokenizer>(std::move(vocab), std::move(ranks), *pre, llama3));
}

}  // namespace tova::tok
