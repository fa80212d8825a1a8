#include "tokenizer/vocab_tokenizer.h"

#include <algorithm>

namespace tova::tok {

namespace {

// "<0x0A>" -> 0x0A; -1 if the text is not a byte token's.
int parse_byte_token(const std::string& text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(text[3]);
  const int lo = hex(text[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

}  // namespace

VocabTokenizer::VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)), special_(vocab_) {}

void VocabTokenizer::build_pieces() {
  piece_.resize(vocab_.text.size());
  for (int32_t id = 0; id < vocab_.n_vocab(); ++id) {
    const uint32_t attr = vocab_.attr[id];
    if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) {
      piece_[id] = vocab_.text[id];
    } else if (attr & kAttrNormal) {
      piece_[id] = normal_piece(id);
    } else if (attr & kAttrByte) {
      const int b = parse_byte_token(vocab_.text[id]);
      piece_[id] = b >= 0 ? std::string(1, static_cast<char>(b)) : normal_piece(id);
    }
    // Unused and undefined tokens render as nothing.
  }
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos);
  bool after_special = true;
  for (const Fragment& f : special_.split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_fragment(text.substr(f.begin, f.end - f.begin), after_special, out);
      after_special = false;
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos);
  return out;
}

std::string VocabTokenizer::piece(int32_t id, int32_t prev, const DecodeOptions& options) const {
  if (id < 0 || id >= vocab_.n_vocab()) return {};
  const uint32_t attr = vocab_.attr[id];
  if ((attr & (kAttrUnknown | kAttrControl)) && !options.render_special) return {};
  const std::string& p = piece_[id];
  const bool at_start = prev < 0 || (options.strip_space_after_bos && prev == vocab_.bos);
  if (vocab_.add_space_prefix && at_start && !p.empty() && p[0] == ' ') return p.substr(1);
  return p;
}

std::string VocabTokenizer::token_to_piece(int32_t id, int32_t prev) const {
  return piece(id, prev, DecodeOptions{});
}

std::string VocabTokenizer::decode(std::span<const int32_t> ids) const {
  return decode(ids, DecodeOptions{});
}

std::string VocabTokenizer::decode(std::span<const int32_t> ids,
                                   const DecodeOptions& options) const {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    out += piece(id, prev, options);
    prev = id;
  }
  return out;
}

bool VocabTokenizer::is_eog(int32_t id) const {
  return std::binary_search(vocab_.eog.begin(), vocab_.eog.end(), id);
}

const std::string& VocabTokenizer::token_text(int32_t id) const {
  static const std::string kNone;
  if (id < 0 || id >= vocab_.n_vocab()) return kNone;
  return vocab_.text[id];
}

}  // namespace tova::tok
