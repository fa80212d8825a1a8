// The vocabulary shared by every tokenizer model: token texts, scores, attributes, special ids
// and flags read from tokenizer.ggml.*, and the splitting of input text around special tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"

namespace tova::tok {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Per-token attribute bits (a token can be both user-defined and control: see load_vocab).
enum TokenAttr : uint32_t {
  kAttrNone = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 6,  // drop whitespace left of the token when it is split out of text
  kAttrRstrip = 1u << 7,  // drop whitespace right of it
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// What a tokenizer model assumes when the file is silent.
struct VocabDefaults {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
};

struct Vocab {
  std::vector<std::string> text;  // [n_vocab] as stored ("▁the", "Ġthe", "<0x0A>")
  std::vector<float> score;       // [n_vocab], 0 when the file has no scores
  std::vector<uint32_t> attr;     // [n_vocab] TokenAttr bits
  TokenMap id_of;                 // text -> id (the last id if a text repeats, as llama.cpp)

  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t eot = -1;
  int32_t eom = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;
  std::vector<int32_t> eog;  // sorted: EOS, EOT, EOM and end-of-turn-looking control tokens

  int32_t n_vocab() const { return static_cast<int32_t>(text.size()); }
  int32_t find(std::string_view s) const {
    auto it = id_of.find(s);
    return it == id_of.end() ? -1 : it->second;
  }
};

// Reads tokens, scores, token types, special ids and add_* flags. Keys the model does not
// define (tokenizer.ggml.add_space_prefix for BPE, say) keep `defaults`.
Result<Vocab> load_vocab(const io::GgufFile& file, const VocabDefaults& defaults);

// A piece of input text: either raw text to tokenize or an already recognised special token.
struct Fragment {
  int32_t token = -1;  // -1: raw text
  size_t begin = 0;    // raw text bytes [begin, end) of the input
  size_t end = 0;
};

// Splits input text around the texts of special tokens (control, user-defined, unknown), longest
// token first, as llama.cpp does. User-defined tokens are always split out; control and unknown
// ones only with parse_special. Linear-ish in the text: one trie walk finds every occurrence,
// then only tokens that occur are applied.
class SpecialSplitter {
 public:
  explicit SpecialSplitter(const Vocab& vocab);
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // child per byte, sorted by byte
    int32_t rank = -1;                              // index into order_ if a token ends here
  };
  struct Occurrence {
    int32_t rank;
    size_t pos;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  bool active(int32_t id, bool parse_special) const;

  const Vocab& vocab_;
  std::vector<int32_t> order_;  // special ids by priority: longer text first, then lower id
  std::vector<Node> nodes_;     // trie of special texts; nodes_[0] is the root
  bool has_user_defined_ = false;
};

}  // namespace tova::tok
