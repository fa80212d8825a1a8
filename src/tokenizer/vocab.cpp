#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace tova::tok {

namespace {

uint32_t attr_of_type(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal:
      return kAttrNormal;
    case TokenType::kUnknown:
      return kAttrUnknown;
    case TokenType::kControl:
      return kAttrControl;
    case TokenType::kUserDefined:
      return kAttrUserDefined;
    case TokenType::kUnused:
      return kAttrUnused;
    case TokenType::kByte:
      return kAttrByte;
    default:
      return kAttrNone;
  }
}

// Converters do not always mark these as control tokens or list them as EOS/EOT, yet they end a
// turn (or must never be produced from plain text). llama.cpp recognises them by text; so do we,
// so that parsing and end-of-generation agree with it.
struct KnownSpecial {
  std::string_view text;
  bool ends_generation;
};
constexpr KnownSpecial kKnownSpecials[] = {
    {"<|eot_id|>", true},      {"<|im_end|>", true},       {"<|end|>", true},
    {"<end_of_turn>", true},   {"<|endoftext|>", true},    {"<|end_of_text|>", true},
    {"<|eom_id|>", true},      {"<EOT>", true},            {"_<EOT>", true},
    {"</s>", true},            {"<end_of_utterance>", true},
    {"<|return|>", true},      {"<|call|>", true},         // gpt-oss (harmony)
    {"<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>", true},  // DeepSeek
    // Fill-in-the-middle markers: prefix/suffix/middle are control; pad/repo/file-sep end it.
    {"<|fim_prefix|>", false}, {"<fim-prefix>", false},    {"<fim_prefix>", false},
    {"<PRE>", false},          {"\xE2\x96\x81<PRE>", false},
    {"<|fim_suffix|>", false}, {"<fim-suffix>", false},    {"<fim_suffix>", false},
    {"<SUF>", false},          {"\xE2\x96\x81<SUF>", false},
    {"<|fim_middle|>", false}, {"<fim-middle>", false},    {"<fim_middle>", false},
    {"<MID>", false},          {"\xE2\x96\x81<MID>", false},
    {"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", false},
    {"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", false},
    {"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", false},
    {"<|fim_pad|>", true},     {"<fim-pad>", true},        {"<fim_pad>", true},
    {"<PAD>", true},           {"<|fim_repo|>", true},     {"<|repo_name|>", true},
    {"<fim-repo>", true},      {"<REPO>", true},           {"<reponame>", true},
    {"<|file_sep|>", true},
};

// A special token id from `key`, or `fallback` when the key is missing or names no token
// (files write 0xFFFFFFFF or -1 for "none"); a default outside the vocabulary means none.
Result<int32_t> read_token_id(const io::GgufFile& file, std::string_view key, int32_t fallback,
                              int32_t n_vocab) {
  if (fallback >= n_vocab) fallback = -1;
  if (file.find(key) == nullptr) return fallback;
  TOVA_ASSIGN_OR_RETURN(int64_t id, file.get_i64(key));
  if (id < 0 || id >= n_vocab) return fallback;
  return static_cast<int32_t>(id);
}

Result<bool> read_flag(const io::GgufFile& file, std::string_view key, bool fallback) {
  if (file.find(key) == nullptr) return fallback;
  return file.get_bool(key);
}

bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

namespace {

// The tokens' texts, scores and types, and the map from text to id.
Status read_tokens(const io::GgufFile& file, Vocab& v) {
  TOVA_ASSIGN_OR_RETURN(v.text, file.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = v.text.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) {
    return make_error("{}: tokenizer.ggml.tokens has {} entries", file.path(), n);
  }
  const int32_t n_vocab = static_cast<int32_t>(n);

  if (file.find("tokenizer.ggml.scores") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(v.score, file.get_f32_array("tokenizer.ggml.scores"));
    if (v.score.size() < n) {
      return make_error("{}: tokenizer.ggml.scores has {} entries for {} tokens", file.path(),
                        v.score.size(), n);
    }
    v.score.resize(n);
  } else {
    v.score.assign(n, 0.0f);
  }

  v.attr.assign(n, kAttrNormal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(std::vector<int32_t> types,
                          file.get_i32_array("tokenizer.ggml.token_type"));
    if (types.size() < n) {
      return make_error("{}: tokenizer.ggml.token_type has {} entries for {} tokens",
                        file.path(), types.size(), n);
    }
    for (size_t i = 0; i < n; ++i) v.attr[i] = attr_of_type(types[i]);
  }

  v.id_of.reserve(n);
  for (int32_t i = 0; i < n_vocab; ++i) {
    // An empty text could never be matched and would collide with "no token".
    if (v.text[i].empty()) v.text[i] = fmt::format("[EMPTY_{}]", i);
    v.id_of.insert_or_assign(v.text[i], i);
  }
  return ok_status();
}

// The special ids (BOS, EOS, UNK, EOT, EOM) and the flags that add them.
Status read_special_ids(const io::GgufFile& file, const VocabDefaults& defaults, Vocab& v) {
  const int32_t n_vocab = static_cast<int32_t>(v.text.size());
  TOVA_ASSIGN_OR_RETURN(v.bos, read_token_id(file, "tokenizer.ggml.bos_token_id", defaults.bos,
                                             n_vocab));
  TOVA_ASSIGN_OR_RETURN(v.eos, read_token_id(file, "tokenizer.ggml.eos_token_id", defaults.eos,
                                             n_vocab));
  TOVA_ASSIGN_OR_RETURN(v.unk, read_token_id(file, "tokenizer.ggml.unknown_token_id",
                                             defaults.unk, n_vocab));
  TOVA_ASSIGN_OR_RETURN(v.eot, read_token_id(file, "tokenizer.ggml.eot_token_id", -1, n_vocab));
  TOVA_ASSIGN_OR_RETURN(v.eom, read_token_id(file, "tokenizer.ggml.eom_token_id", -1, n_vocab));
  TOVA_ASSIGN_OR_RETURN(v.add_bos,
                        read_flag(file, "tokenizer.ggml.add_bos_token", defaults.add_bos));
  TOVA_ASSIGN_OR_RETURN(v.add_eos,
                        read_flag(file, "tokenizer.ggml.add_eos_token", defaults.add_eos));
  TOVA_ASSIGN_OR_RETURN(v.add_space_prefix, read_flag(file, "tokenizer.ggml.add_space_prefix",
                                                      defaults.add_space_prefix));
  if (v.add_bos && v.bos < 0) {
    return make_error("{}: tokenizer.ggml.add_bos_token is set but there is no BOS token",
                      file.path());
  }
  if (v.add_eos && v.eos < 0) {
    return make_error("{}: tokenizer.ggml.add_eos_token is set but there is no EOS token",
                      file.path());
  }
  return ok_status();
}

// The tokens that end generation: the known specials that do, EOS, EOT and EOM.
void mark_end_of_generation(Vocab& v) {
  for (const KnownSpecial& k : kKnownSpecials) {
    const int32_t id = v.find(k.text);
    if (id < 0) continue;
    v.attr[id] |= kAttrControl;
    if (k.ends_generation) v.eog.push_back(id);
  }
  for (int32_t id : {v.eos, v.eot, v.eom}) {
    if (id >= 0) v.eog.push_back(id);
  }
  // Harmony (gpt-oss): <|end|> ends one message of a turn (the analysis before the final
  // answer), <|return|> and <|call|> end the turn. A vocabulary with both keeps generating past
  // <|end|>, as llama.cpp does.
  if (v.find("<|return|>") >= 0 && v.find("<|call|>") >= 0) {
    const int32_t end = v.find("<|end|>");
    v.eog.erase(std::remove(v.eog.begin(), v.eog.end(), end), v.eog.end());
  }
  std::sort(v.eog.begin(), v.eog.end());
  v.eog.erase(std::unique(v.eog.begin(), v.eog.end()), v.eog.end());
}

}  // namespace

Result<Vocab> load_vocab(const io::GgufFile& file, const VocabDefaults& defaults) {
  Vocab v;
  TOVA_RETURN_IF_ERROR(read_tokens(file, v));
  TOVA_RETURN_IF_ERROR(read_special_ids(file, defaults, v));
  mark_end_of_generation(v);
  const int32_t n_vocab = v.n_vocab();
  // Phi-3's special tokens swallow the whitespace after them (its tokenizer.json says rstrip);
  // GGUF has no field for it, so llama.cpp keys it on the model name, and so do we.
  if (file.find("general.name") != nullptr) {
    TOVA_ASSIGN_OR_RETURN(std::string name, file.get_string("general.name"));
    name = lowercase(std::move(name));
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
      for (int32_t i = 0; i < n_vocab; ++i) {
        if (v.attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v.attr[i] |= kAttrRstrip;
      }
      for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (const int32_t id = v.find(t); id >= 0) v.attr[id] &= ~kAttrRstrip;
      }
    }
  }
  return v;
}

SpecialSplitter::SpecialSplitter(const Vocab& vocab) : vocab_(vocab) {
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    if (vocab.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) order_.push_back(id);
  }
  std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return vocab.text[a].size() > vocab.text[b].size();
  });
  nodes_.emplace_back();
  for (size_t rank = 0; rank < order_.size(); ++rank) {
    const int32_t id = order_[rank];
    if (active(id, false)) has_user_defined_ = true;
    int32_t node = 0;
    for (char c : vocab.text[id]) {
      const uint8_t b = static_cast<uint8_t>(c);
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& kids = nodes_[node].next;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, int32_t{0})),
                    {b, next});
      }
      node = next;
    }
    // A repeated text keeps its first (highest-priority) id, which is the one that would match.
    if (nodes_[node].rank < 0) nodes_[node].rank = static_cast<int32_t>(rank);
  }
}

int32_t SpecialSplitter::child(int32_t node, uint8_t byte) const {
  const auto& kids = nodes_[node].next;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, int32_t{0}));
  return (it != kids.end() && it->first == byte) ? it->second : -1;
}

bool SpecialSplitter::active(int32_t id, bool parse_special) const {
  return parse_special || (vocab_.attr[id] & (kAttrControl | kAttrUnknown)) == 0;
}

std::vector<Fragment> SpecialSplitter::split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  if (text.empty()) return out;
  if (order_.empty() || (!parse_special && !has_user_defined_)) {
    out.push_back({-1, 0, text.size()});
    return out;
  }

  // Every place where an active special text starts, found with one trie walk per position.
  std::vector<Occurrence> occ;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    int32_t node = 0;
    for (size_t k = pos; k < text.size(); ++k) {
      node = child(node, static_cast<uint8_t>(text[k]));
      if (node < 0) break;
      const int32_t rank = nodes_[node].rank;
      if (rank >= 0 && active(order_[rank], parse_special)) occ.push_back({rank, pos});
    }
  }
  if (occ.empty()) {
    out.push_back({-1, 0, text.size()});
    return out;
  }
  std::sort(occ.begin(), occ.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
  });

  // llama.cpp applies one special token at a time, in priority order, to every raw fragment
  // left so far, taking its leftmost occurrences first. Walking each token's occurrences in
  // order and splitting the raw fragment that still holds one whole is the same thing.
  std::map<size_t, size_t> raw = {{0, text.size()}};  // begin -> end
  std::map<size_t, int32_t> tokens;                    // begin -> id
  for (const Occurrence& o : occ) {
    const int32_t id = order_[o.rank];
    const size_t len = vocab_.text[id].size();
    auto it = raw.upper_bound(o.pos);
    if (it == raw.begin()) continue;
    --it;
    const size_t begin = it->first;
    const size_t end = it->second;
    if (o.pos + len > end) continue;
    raw.erase(it);
    size_t left_end = o.pos;
    if (vocab_.attr[id] & kAttrLstrip) {
      while (left_end > begin && is_c_space(text[left_end - 1])) --left_end;
    }
    if (left_end > begin) raw.emplace(begin, left_end);
    size_t right_begin = o.pos + len;
    if (vocab_.attr[id] & kAttrRstrip) {
      while (right_begin < end && is_c_space(text[right_begin])) ++right_begin;
    }
    if (right_begin < end) raw.emplace(right_begin, end);
    tokens.emplace(o.pos, id);
  }

  auto r = raw.begin();
  auto t = tokens.begin();
  while (r != raw.end() || t != tokens.end()) {
    if (t == tokens.end() || (r != raw.end() && r->first < t->first)) {
      out.push_back({-1, r->first, r->second});
      ++r;
    } else {
      out.push_back({t->second, t->first, t->first + vocab_.text[t->second].size()});
      ++t;
    }
  }
  return out;
}

}  // namespace tova::tok
