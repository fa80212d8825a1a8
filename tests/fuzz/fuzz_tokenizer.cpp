// Harness: encode arbitrary bytes with every vocabulary of shared/vocab (SentencePiece and
// byte-level BPE, every pre-tokenizer family tova supports) and stories260K, then decode.
// Input: byte 0 picks the vocabulary, byte 1 the flags (bit 0 add_special, bit 1
// parse_special), the rest is the text.
//
// Checked: no crash; every id is in [0, n_vocab); decode() equals the concatenation of
// token_to_piece(); and decode(encode(x)) == x whenever the vocabulary can represent x, which
// we define (tests/fuzz/README.md) as:
//   - parse_special is off (recognised control tokens render empty by design), and
//   - x is valid UTF-8 (BPE replaces invalid bytes with U+FFFD before the byte mapping, as
//     llama.cpp does), and
//   - no id of the encoding is the unknown token (a SentencePiece vocabulary without a byte
//     token for some byte cannot represent it), and
//   - for BPE: every byte of x has a token of its own (its GPT-2 alphabet symbol); a byte
//     without one is dropped (as llama.cpp drops it), and
//   - for SentencePiece: x holds no U+2581 (SentencePiece writes spaces as U+2581, so a literal
//     one decodes as a space).
#include <algorithm>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "fuzz_shared_dir.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

struct Vocab {
  std::string name;
  bool spm = false;
  int32_t unk = -1;
  // BPE: the bytes whose GPT-2 alphabet symbol is a token. A byte without one cannot be
  // encoded: it is dropped, as llama.cpp drops it (falcon's vocabulary lacks some controls).
  std::bitset<256> byte_token;
  std::unique_ptr<tova::io::GgufFile> file;
  std::unique_ptr<tova::tok::Tokenizer> tok;
};

std::vector<Vocab>* g_vocabs = nullptr;


bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      n = 0, cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size() && n > 0) return false;  // truncated sequence
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

void load_vocabs() {
  namespace fs = std::filesystem;
  const std::string dir = tova::fuzz::shared_dir();
  std::error_code ec;
  if (!fs::is_directory(dir + "/vocab", ec)) {
    const char* ci = std::getenv("CI");
    std::fprintf(stderr, "fuzz_tokenizer: no vocabularies in %s/vocab (set TOVA_SHARED_DIR)\n",
                 dir.c_str());
    std::exit(ci != nullptr && std::string_view(ci) == "true" ? 1 : 77);  // 77: ctest skip
  }
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir + "/vocab", ec)) {
    if (e.path().extension() == ".gguf") paths.push_back(e.path().string());
  }
  paths.push_back(dir + "/models/stories260K.gguf");
  std::sort(paths.begin(), paths.end());
  g_vocabs = new std::vector<Vocab>();
  for (const std::string& p : paths) {
    auto file = tova::io::GgufFile::open(p);
    if (!file.ok()) continue;
    auto tok = tova::tok::Tokenizer::from_gguf(**file);
    if (!tok.ok()) continue;  // e.g. WordPiece (bert): not a tova tokenizer
    Vocab v;
    v.name = fs::path(p).filename().string();
    auto model = (*file)->get_string("tokenizer.ggml.model");
    v.spm = model.ok() && *model == "llama";
    if ((*file)->find("tokenizer.ggml.unknown_token_id") != nullptr) {
      auto unk = (*file)->get_u32("tokenizer.ggml.unknown_token_id");
      if (unk.ok()) v.unk = static_cast<int32_t>(*unk);
    } else if (v.spm) {
      v.unk = 0;  // SentencePiece's default
    }
    if (!v.spm) {
      auto tokens = (*file)->get_string_array("tokenizer.ggml.tokens");
      if (tokens.ok()) {
        const std::unordered_set<std::string> set(tokens->begin(), tokens->end());
        for (int b = 0; b < 256; ++b) {
          v.byte_token[b] = set.count(tova::tok::byte_to_gpt2_utf8(static_cast<uint8_t>(b))) > 0;
        }
      }
      if (v.byte_token.count() < 256) {
        std::fprintf(stderr, "fuzz_tokenizer: %s has no token for %zu of the 256 bytes\n",
                     v.name.c_str(), 256 - v.byte_token.count());
      }
    }
    v.file = std::move(*file);
    v.tok = std::move(*tok);
    g_vocabs->push_back(std::move(v));
  }
  if (g_vocabs->empty()) {
    std::fprintf(stderr, "fuzz_tokenizer: no usable vocabulary in %s/vocab\n", dir.c_str());
    std::exit(1);
  }
}

std::string escaped(std::string_view s) {
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(ch);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

[[noreturn]] void fail(const Vocab& v, const char* what, std::string_view text,
                       const std::vector<int32_t>& ids, std::string_view decoded) {
  std::string id_list;
  for (int32_t id : ids) {
    id_list += ' ';
    id_list += std::to_string(id);
  }
  std::fprintf(
      stderr, "fuzz_tokenizer: %s: %s\n  text:    \"%s\"\n  ids:    %s\n  decoded: \"%s\"\n",
      v.name.c_str(), what, escaped(text).c_str(), id_list.c_str(), escaped(decoded).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  load_vocabs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_vocabs == nullptr) load_vocabs();
  if (size < 2) return 0;
  const Vocab& v = (*g_vocabs)[data[0] % g_vocabs->size()];
  const bool add_special = (data[1] & 1) != 0;
  const bool parse_special = (data[1] & 2) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  const std::vector<int32_t> ids = v.tok->encode(text, add_special, parse_special);
  bool has_unk = false;
  for (int32_t id : ids) {
    if (id < 0 || id >= v.tok->n_vocab()) {
      fail(v, "encode gave an id outside the vocabulary", text, ids, "");
    }
    has_unk |= id == v.unk;
  }
  const std::string decoded = v.tok->decode(ids);
  std::string pieces;
  int32_t prev = -1;
  for (int32_t id : ids) {
    pieces += v.tok->token_to_piece(id, prev);
    prev = id;
  }
  if (pieces != decoded) fail(v, "decode differs from the concatenated pieces", text, ids, decoded);
  (void)v.tok->decode(ids, {.render_special = true, .strip_space_after_bos = false});

  bool bytes_ok = true;
  if (!v.spm) {
    for (char ch : text) bytes_ok &= v.byte_token[static_cast<unsigned char>(ch)];
  }
  const bool representable = !parse_special && valid_utf8(text) && !has_unk && bytes_ok &&
                             (!v.spm || text.find("\xE2\x96\x81") == std::string_view::npos);
  if (representable && decoded != text) fail(v, "decode(encode(x)) != x", text, ids, decoded);
  return 0;
}
