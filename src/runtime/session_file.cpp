#include "runtime/session_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "runtime/sequence.h"

namespace tova::runtime {

namespace {

constexpr char kMagic[8] = {'T', 'O', 'V', 'A', 'S', 'E', 'S', 'S'};
constexpr size_t kHeader = 8 + 4 + 4 + 8 + 8;
// The sampler state is text of varying length; a fixed field keeps the file size constant
// (mt19937_64: 313 numbers of at most 20 digits and their separators).
constexpr size_t kRngField = 8192;


class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void str(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }

 private:
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  Result<T> get(const char* what) {
    if (in_.size() - at_ < sizeof(T)) return make_error("session file ends inside {}", what);
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  Result<std::span<const uint8_t>> bytes(size_t n, const char* what) {
    if (in_.size() - at_ < n) return make_error("session file ends inside {}", what);
    auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }
  // A name (the architecture, the policy): printable ASCII only, so that an error quoting it
  // stays one line of text whatever the file holds.
  Result<std::string> str(size_t max, const char* what) {
    TOVA_ASSIGN_OR_RETURN(uint32_t n, get<uint32_t>(what));
    if (n > max) return make_error("session file has an invalid {} length {}", what, n);
    TOVA_ASSIGN_OR_RETURN(auto b, bytes(n, what));
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] < 0x20 || b[i] > 0x7E) {
        return make_error("session file's {} is not a name (byte 0x{:02X} at {} of it)", what,
                          b[i], i);
      }
    }
    return std::string(b.begin(), b.end());
  }
  size_t left() const { return in_.size() - at_; }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

template <typename T>
std::span<const T> as(std::span<const uint8_t> b) {
  return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
}

// The K/V storage of a saved state: version 1 has one tag for both (f32 or f16); version 2 the
// key and value tags, the rotation flag and the blocks per row of each, checked against the
// model's head_dim.
Result<KvFormat> read_kv_format(Reader& r, uint32_t version, int head_dim) {
  if (version == 1) {
    TOVA_ASSIGN_OR_RETURN(uint8_t tag, r.get<uint8_t>("the K/V type"));
    if (tag > 1) return make_error("session file has an unknown K/V type tag {}", tag);
    return KvFormat(static_cast<KvType>(tag));
  }
  TOVA_ASSIGN_OR_RETURN(uint8_t k_tag, r.get<uint8_t>("the key type"));
  TOVA_ASSIGN_OR_RETURN(uint8_t v_tag, r.get<uint8_t>("the value type"));
  TOVA_ASSIGN_OR_RETURN(uint8_t rotate, r.get<uint8_t>("the rotation flag"));
  TOVA_ASSIGN_OR_RETURN(uint16_t k_blocks, r.get<uint16_t>("the key blocks"));
  TOVA_ASSIGN_OR_RETURN(uint16_t v_blocks, r.get<uint16_t>("the value blocks"));
  const std::optional<KvType> k = kv_type_from_tag(k_tag), v = kv_type_from_tag(v_tag);
  if (!k) return make_error("session file has an unknown key type tag {}", k_tag);
  if (!v) return make_error("session file has an unknown value type tag {}", v_tag);
  if (rotate > 1) return make_error("session file has an invalid rotation flag {}", rotate);
  const KvFormat f(*k, *v, rotate == 1);
  TOVA_RETURN_IF_ERROR(check_kv_format(f, head_dim));
  for (const auto& [t, blocks, what] : {std::tuple{f.k, k_blocks, "key"}, {f.v, v_blocks, "value"}}) {
    const int want = head_dim / kv_block_size(t, head_dim).value();
    if (blocks != want) {
      return make_error("session file's {} rows have {} blocks of {}, this model's head_dim {} "
                        "gives {}",
                        what, blocks, kv_type_name(t), head_dim, want);
    }
  }
  return f;
}

}  // namespace

uint64_t model_fingerprint(const model::Model& m) { return m.fingerprint(); }

std::vector<uint8_t> encode_session(const model::Model& m, const SessionData& d) {
  const kv::MultiState& s = *d.state;
  std::vector<uint8_t> payload;
  Writer w(payload);
  w.put<uint64_t>(model_fingerprint(m));
  w.str(m.config().arch_name);
  w.put<uint32_t>(static_cast<uint32_t>(s.n_recurrent()));
  for (int ir = 0; ir < s.n_recurrent(); ++ir) {
    const kv::RecurrentState& rs = s.recurrent(ir);
    const int64_t nc = rs.shape().conv_floats(), nd = rs.shape().delta_floats();
    w.put<uint32_t>(static_cast<uint32_t>(nc));
    w.put<uint32_t>(static_cast<uint32_t>(nd));
    w.bytes(rs.conv(), nc * sizeof(float));
    w.bytes(rs.delta(), nd * sizeof(float));
  }
  // A policy that takes a policy ("adakv:snapkv:16") is written whole in the name field.
  w.str(s.policy().base.empty() ? s.policy().name : s.policy().label());
  w.put<int32_t>(s.policy().arg.value_or(-1));
  w.put<int32_t>(s.policy().budget);
  w.put<uint8_t>(static_cast<uint8_t>(s.positions()));
  const KvFormat& fmt = s.kv_type();
  const int hd = m.config().head_dim;
  w.put<uint8_t>(static_cast<uint8_t>(fmt.k));
  w.put<uint8_t>(static_cast<uint8_t>(fmt.v));
  w.put<uint8_t>(fmt.rotate ? 1 : 0);
  w.put<uint16_t>(static_cast<uint16_t>(hd / kv_block_size(fmt.k, hd).value()));
  w.put<uint16_t>(static_cast<uint16_t>(hd / kv_block_size(fmt.v, hd).value()));
  w.put<int32_t>(s.max_new());
  w.put<int64_t>(s.n_seen());
  // Version 4: the images' positions, and whether they are kept (with how many at most).
  w.put<uint8_t>(s.keep_images() ? 1 : 0);
  w.put<uint32_t>(static_cast<uint32_t>(s.max_kept_images()));
  const std::vector<kv::PosRange> images = s.images_held();
  w.put<uint32_t>(static_cast<uint32_t>(images.size()));
  for (const kv::PosRange& r : images) {
    w.put<int64_t>(r.begin);
    w.put<int64_t>(r.end);
  }
  w.put<uint32_t>(static_cast<uint32_t>(s.n_layer()));
  for (int il = 0; il < s.n_layer(); ++il) {
    const kv::LayerState& L = s.layer(il);
    const size_t n_pos = static_cast<size_t>(L.n_head_kv()) * L.n_slot();
    w.put<int32_t>(L.n_slot());
    w.put<int64_t>(L.n_evicted());
    w.bytes(L.pos(), n_pos * sizeof(int64_t));
    // Keys as canonical rows, whatever the pool's tiling.
    std::vector<uint8_t> row(kv_row_bytes(fmt.k, L.head_dim()));
    for (int g = 0; g < L.n_head_kv(); ++g) {
      for (int sl = 0; sl < L.n_slot(); ++sl) {
        L.key_row(g, sl, row.data());
        w.bytes(row.data(), row.size());
      }
    }
    w.bytes(L.values(), n_pos * kv_row_bytes(fmt.v, L.head_dim()));
    const std::vector<double> ps = L.policy().state();
    w.put<uint32_t>(static_cast<uint32_t>(ps.size()));
    w.bytes(ps.data(), ps.size() * sizeof(double));
  }
  // A fixed-size history field: the last kSessionHistory tokens, padded with -1.
  w.put<uint32_t>(static_cast<uint32_t>(std::min<size_t>(d.history.size(), kSessionHistory)));
  for (int i = 0; i < kSessionHistory; ++i) {
    const size_t n = d.history.size();
    const size_t from = n > kSessionHistory ? n - kSessionHistory : 0;
    w.put<int32_t>(from + i < n ? d.history[from + i] : -1);
  }
  w.put<int32_t>(d.pending);
  w.put<uint8_t>(d.logits.empty() ? 0 : 1);
  std::vector<float> logits(m.config().n_vocab, 0.f);
  std::copy_n(d.logits.begin(), std::min(d.logits.size(), logits.size()), logits.begin());
  w.bytes(logits.data(), logits.size() * sizeof(float));
  std::string rng = d.rng_state;
  rng.resize(kRngField, '\0');
  w.put<uint32_t>(static_cast<uint32_t>(std::min(d.rng_state.size(), kRngField)));
  w.bytes(rng.data(), rng.size());
  if (!d.note.empty()) {
    w.put<uint64_t>(d.note.size());
    w.bytes(d.note.data(), d.note.size());
  }

  std::vector<uint8_t> out;
  Writer h(out);
  h.bytes(kMagic, sizeof(kMagic));
  h.put<uint32_t>(kSessionVersion);
  h.put<uint32_t>(d.note.empty() ? 0 : kSessionFlagNote);
  h.put<uint64_t>(payload.size());
  h.put<uint64_t>(fnv1a(payload.data(), payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

namespace {

// The header of a session file: its version and flags, and the payload it checks.
struct SessionHeader {
  uint32_t version = 0;
  uint32_t flags = 0;
  std::span<const uint8_t> payload;
};

Result<SessionHeader> read_session_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return make_error("not a tova session file");
  }
  Reader hr(bytes.subspan(8));
  SessionHeader h;
  TOVA_ASSIGN_OR_RETURN(h.version, hr.get<uint32_t>("the header"));
  if (h.version < 1 || h.version > kSessionVersion) {
    return make_error("session file version {}, this tova reads versions 1 to {}", h.version,
                      kSessionVersion);
  }
  TOVA_ASSIGN_OR_RETURN(h.flags, hr.get<uint32_t>("the header"));
  TOVA_ASSIGN_OR_RETURN(uint64_t size, hr.get<uint64_t>("the header"));
  TOVA_ASSIGN_OR_RETURN(uint64_t hash, hr.get<uint64_t>("the header"));
  if ((h.flags & ~kSessionFlagNote) != 0) {
    return make_error("session file has unknown flags {}", h.flags);
  }
  if (size != bytes.size() - kHeader) {
    return make_error("session file is {} bytes, its header says {} (truncated or extended)",
                      bytes.size(), size + kHeader);
  }
  h.payload = bytes.subspan(kHeader);
  if (fnv1a(h.payload.data(), h.payload.size()) != hash) {
    return make_error("session file is corrupted (checksum mismatch)");
  }
  return h;
}

using RecurrentBytes = std::vector<std::pair<std::vector<float>, std::vector<float>>>;

// The model the file was saved with (its fingerprint, and from version 3 its architecture),
// then from version 3 the recurrent states (restored once the state exists).
Result<RecurrentBytes> read_model_and_recurrent(Reader& r, const model::Model& m,
                                                uint32_t version) {
  TOVA_ASSIGN_OR_RETURN(uint64_t fp, r.get<uint64_t>("the model fingerprint"));
  RecurrentBytes recurrent;
  if (version >= 3) {
    TOVA_ASSIGN_OR_RETURN(std::string arch, r.str(64, "the architecture"));
    if (arch != m.config().arch_name) {
      return make_error("session file was saved with a model of architecture '{}', this model's "
                        "is '{}'",
                        arch, m.config().arch_name);
    }
  }
  if (fp != model_fingerprint(m)) {
    return make_error("session file was saved with another model");
  }
  if (version < 3) return recurrent;
  TOVA_ASSIGN_OR_RETURN(uint32_t n_rec, r.get<uint32_t>("the recurrent states"));
  if (n_rec > 4096) return make_error("session file has {} recurrent states", n_rec);
  for (uint32_t i = 0; i < n_rec; ++i) {
    TOVA_ASSIGN_OR_RETURN(uint32_t nc, r.get<uint32_t>("a recurrent state"));
    TOVA_ASSIGN_OR_RETURN(uint32_t nd, r.get<uint32_t>("a recurrent state"));
    if ((static_cast<uint64_t>(nc) + nd) * sizeof(float) > r.left()) {
      return make_error("session file ends inside recurrent state {}", i);
    }
    TOVA_ASSIGN_OR_RETURN(auto cb, r.bytes(nc * sizeof(float), "a recurrent state"));
    TOVA_ASSIGN_OR_RETURN(auto db, r.bytes(nd * sizeof(float), "a recurrent state"));
    std::vector<float> conv(nc), delta(nd);
    if (nc > 0) std::memcpy(conv.data(), cb.data(), cb.size());
    if (nd > 0) std::memcpy(delta.data(), db.data(), db.size());
    recurrent.emplace_back(std::move(conv), std::move(delta));
  }
  return recurrent;
}

// The cache options (policy, positions, K/V format, chunk size), the multi-state they make with
// the recurrent states restored into it, and the tokens seen.
struct SessionState {
  std::unique_ptr<kv::MultiState> state;
  KvFormat fmt;
  int64_t n_seen = 0;
};

Result<SessionState> read_cache_options(Reader& r, const model::Model& m, uint32_t version,
                                        const RecurrentBytes& recurrent, int max_image) {
  TOVA_ASSIGN_OR_RETURN(std::string name, r.str(64, "the policy name"));
  TOVA_ASSIGN_OR_RETURN(int32_t arg, r.get<int32_t>("the policy"));
  TOVA_ASSIGN_OR_RETURN(int32_t budget, r.get<int32_t>("the policy"));
  TOVA_ASSIGN_OR_RETURN(uint8_t positions, r.get<uint8_t>("the position mode"));
  SessionState out;
  TOVA_ASSIGN_OR_RETURN(out.fmt, read_kv_format(r, version, m.config().head_dim));
  TOVA_ASSIGN_OR_RETURN(int32_t max_new, r.get<int32_t>("the chunk size"));
  TOVA_ASSIGN_OR_RETURN(out.n_seen, r.get<int64_t>("the tokens seen"));
  if (positions > 2 || max_new < 1 || out.n_seen < 0) {
    return make_error("session file has invalid cache options");
  }
  // Version 4: the images' positions and whether they are kept; older files kept none.
  uint8_t keep = 0;
  uint32_t max_kept = 0;
  std::vector<kv::PosRange> images;
  if (version >= 4) {
    TOVA_ASSIGN_OR_RETURN(keep, r.get<uint8_t>("the kept-images flag"));
    TOVA_ASSIGN_OR_RETURN(max_kept, r.get<uint32_t>("the kept images"));
    TOVA_ASSIGN_OR_RETURN(uint32_t n_images, r.get<uint32_t>("the images"));
    if (keep > 1 || (keep == 1 && (max_kept < 1 || max_kept > (1u << 16))) ||
        n_images > (1u << 20)) {
      return make_error("session file has invalid image marks");
    }
    for (uint32_t i = 0; i < n_images; ++i) {
      TOVA_ASSIGN_OR_RETURN(int64_t b, r.get<int64_t>("the images"));
      TOVA_ASSIGN_OR_RETURN(int64_t e, r.get<int64_t>("the images"));
      if (b < 0 || e <= b || e > out.n_seen || (!images.empty() && b < images.back().end)) {
        return make_error("session file has an invalid image at positions {}..{}", b, e);
      }
      images.push_back({.begin = b, .end = e});
    }
    if (keep == 1 && max_image <= 0) {
      return make_error("session file keeps its image states (--kv-keep-images), but the engine "
                        "has no mmproj (--mmproj) to size them");
    }
  }
  const std::string spec_text = arg >= 0 ? name + ":" + std::to_string(arg) : name;
  TOVA_ASSIGN_OR_RETURN(kv::PolicySpec spec, kv::parse_policy(spec_text, budget));
  kv::MultiStateOptions so = m.state_options(spec, out.fmt, static_cast<int>(max_new));
  so.positions = static_cast<kv::PositionMode>(positions);
  so.initial_slots = 1;  // each layer grows to its saved size in restore()
  so.max_image = max_image;  // a pool that took an image may hold more slots than k + extra
  so.keep_images = keep == 1;
  so.max_kept_images = static_cast<int>(max_kept);
  TOVA_ASSIGN_OR_RETURN(out.state, kv::MultiState::create(so));
  kv::MultiState& state = *out.state;
  state.restore_images(images);
  if (static_cast<int>(recurrent.size()) != state.n_recurrent()) {
    return make_error("session file (version {}) has {} recurrent states, the model {}", version,
                      recurrent.size(), state.n_recurrent());
  }
  for (int ir = 0; ir < state.n_recurrent(); ++ir) {
    const Status st = state.recurrent(ir).restore(recurrent[ir].first, recurrent[ir].second);
    if (!st.ok()) return make_error("session recurrent state {}: {}", ir, st.message());
  }
  return out;
}

// Every K/V layer: its slots' positions, keys, values and policy state.
Status read_layers(Reader& r, SessionState& s) {
  kv::MultiState& state = *s.state;
  const KvFormat& fmt = s.fmt;
  TOVA_ASSIGN_OR_RETURN(uint32_t n_layer, r.get<uint32_t>("the layer count"));
  if (static_cast<int>(n_layer) != state.n_layer()) {
    return make_error("session file has {} layers, the model {}", n_layer, state.n_layer());
  }
  for (int il = 0; il < state.n_layer(); ++il) {
    kv::LayerState& L = state.layer(il);
    TOVA_ASSIGN_OR_RETURN(int32_t n_slot, r.get<int32_t>("a layer"));
    TOVA_ASSIGN_OR_RETURN(int64_t n_evicted, r.get<int64_t>("a layer"));
    if (n_slot < 1 || n_slot > (1 << 26)) return make_error("session layer has {} slots", n_slot);
    const size_t n_pos = static_cast<size_t>(L.n_head_kv()) * n_slot;
    const size_t k_bytes = n_pos * kv_row_bytes(fmt.k, L.head_dim());
    const size_t v_bytes = n_pos * kv_row_bytes(fmt.v, L.head_dim());
    if (r.left() < n_pos * sizeof(int64_t) + k_bytes + v_bytes) {
      return make_error("session file ends inside layer {}", il);
    }
    TOVA_ASSIGN_OR_RETURN(auto pos, r.bytes(n_pos * sizeof(int64_t), "positions"));
    TOVA_ASSIGN_OR_RETURN(auto keys, r.bytes(k_bytes, "keys"));
    TOVA_ASSIGN_OR_RETURN(auto values, r.bytes(v_bytes, "values"));
    TOVA_ASSIGN_OR_RETURN(uint32_t n_ps, r.get<uint32_t>("a policy state"));
    if (n_ps > (1u << 28)) return make_error("session policy state too large");
    TOVA_ASSIGN_OR_RETURN(auto ps,
                          r.bytes(static_cast<size_t>(n_ps) * sizeof(double), "a policy state"));
    // Positions and doubles may be unaligned in the buffer: copy them.
    std::vector<int64_t> pos_v(n_pos);
    if (!pos.empty()) std::memcpy(pos_v.data(), pos.data(), pos.size());
    std::vector<double> ps_v(n_ps);
    if (!ps.empty()) std::memcpy(ps_v.data(), ps.data(), ps.size());  // empty: a stateless policy
    for (int64_t p : pos_v) {
      if (p >= s.n_seen)
        return make_error("session layer {} holds position {} >= {} seen", il, p, s.n_seen);
    }
    const Status st = L.restore(n_slot, pos_v, keys, values, n_evicted, ps_v);
    if (!st.ok()) return make_error("session layer {}: {}", il, st.message());
    // The layer's own budget: a sliding-window layer's is at most window - 1, even under full.
    if (L.over_budget()) {
      return make_error("session layer {} holds {} states, above the budget {}", il, L.n_held(),
                        L.budget());
    }
  }
  return ok_status();
}

// What follows the state: the history, the pending token, the logits, the sampler's state and
// the note.
Status read_generation(Reader& r, const model::Model& m, uint32_t flags, SessionData& d) {
  TOVA_ASSIGN_OR_RETURN(uint32_t n_hist, r.get<uint32_t>("the history"));
  if (n_hist > kSessionHistory) return make_error("session history too long");
  const int n_vocab = m.config().n_vocab;
  for (int i = 0; i < kSessionHistory; ++i) {
    TOVA_ASSIGN_OR_RETURN(int32_t t, r.get<int32_t>("the history"));
    if (static_cast<uint32_t>(i) < n_hist) {
      // An image's tokens are held as image_token_id()s (below -1).
      if (t == -1 || t >= n_vocab) return make_error("session history has token {}", t);
      d.history.push_back(t);
    }
  }
  TOVA_ASSIGN_OR_RETURN(d.pending, r.get<int32_t>("the pending token"));
  if (d.pending < -1 || d.pending >= n_vocab) {
    return make_error("session pending token {} is outside the vocabulary", d.pending);
  }
  TOVA_ASSIGN_OR_RETURN(uint8_t has_logits, r.get<uint8_t>("the logits"));
  TOVA_ASSIGN_OR_RETURN(auto lb,
                        r.bytes(static_cast<size_t>(n_vocab) * sizeof(float), "the logits"));
  if (has_logits > 1) return make_error("session file has invalid logits flag");
  if (has_logits) {
    d.logits.resize(n_vocab);
    if (!lb.empty()) std::memcpy(d.logits.data(), lb.data(), lb.size());
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t rng_len, r.get<uint32_t>("the sampler state"));
  TOVA_ASSIGN_OR_RETURN(auto rng, r.bytes(kRngField, "the sampler state"));
  if (rng_len > kRngField) return make_error("session sampler state too long");
  d.rng_state.assign(rng.begin(), rng.begin() + rng_len);
  if ((flags & kSessionFlagNote) != 0) {
    TOVA_ASSIGN_OR_RETURN(uint64_t note_len, r.get<uint64_t>("the note"));
    if (note_len == 0 || note_len > r.left()) {
      return make_error("session note of {} bytes, {} left in the file", note_len, r.left());
    }
    TOVA_ASSIGN_OR_RETURN(auto note, r.bytes(static_cast<size_t>(note_len), "the note"));
    d.note.assign(note.begin(), note.end());
  }
  return ok_status();
}

}  // namespace

Result<SessionData> decode_session_bytes(const model::Model& m, std::span<const uint8_t> bytes,
                                         int max_image) {
  TOVA_ASSIGN_OR_RETURN(const SessionHeader h, read_session_header(bytes));
  Reader r(h.payload);
  TOVA_ASSIGN_OR_RETURN(const RecurrentBytes recurrent,
                        read_model_and_recurrent(r, m, h.version));
  TOVA_ASSIGN_OR_RETURN(SessionState s, read_cache_options(r, m, h.version, recurrent, max_image));
  TOVA_RETURN_IF_ERROR(read_layers(r, s));
  s.state->set_n_seen(s.n_seen);
  SessionData d;
  d.state = std::move(s.state);
  TOVA_RETURN_IF_ERROR(read_generation(r, m, h.flags, d));
  if (r.left() != 0) return make_error("session file has {} bytes of trailing data", r.left());
  return d;
}

namespace {

// Writes all of `bytes` to a new file; with `sync`, forces them to disk before returning.
Status write_file(const std::string& path, std::span<const uint8_t> bytes, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("cannot write session file '{}': {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return make_error("cannot write session file '{}': {}", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error("cannot write session file '{}': {}", path, std::strerror(err));
  }
  if (::close(fd) != 0) {
    return make_error("cannot write session file '{}': {}", path, std::strerror(errno));
  }
  return ok_status();
}

}  // namespace

// Atomic (and with `sync` durable): the bytes go to a temporary file that is synced, then
// renamed over `path`, then the directory entry is synced; a crash at any point leaves the old
// file or the new one, never a mix.
Result<uint64_t> save_session(const std::string& path, const model::Model& m, const SessionData& d,
                    bool sync) {
  const std::vector<uint8_t> bytes = encode_session(m, d);
  const std::string tmp = path + ".tmp";
  if (Status st = write_file(tmp, bytes, sync); !st.ok()) {
    std::remove(tmp.c_str());
    return make_error("{}", st.message());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return make_error("cannot replace session file '{}': {}", path, ec.message());
  }
  if (!sync) return bytes.size();
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // best effort: some file systems cannot sync a directory
    ::fsync(dfd);
    ::close(dfd);
  }
  return bytes.size();
}

Result<SessionData> load_session(const std::string& path, const model::Model& m,
                                 uint64_t* file_bytes, int max_image) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open session file '{}'", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (file_bytes != nullptr) *file_bytes = bytes.size();
  auto d = decode_session_bytes(m, bytes, max_image);
  if (!d.ok()) return make_error("{}: {}", path, d.message());
  return d;
}

}  // namespace tova::runtime
