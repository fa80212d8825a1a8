// Parsing and validating GGUF files. Nothing read from the file is trusted: every count, length
// and offset is checked against the bytes that are actually there, with overflow-safe
// arithmetic, before it is used to allocate or to point into the data.
//
// Limits on what a hostile file controls (each checked before the allocation it guards; the
// fuzz harness tests/fuzz/fuzz_gguf_model.cpp runs under -rss_limit_mb / -malloc_limit_mb):
//   - metadata and tensor counts: at most (bytes after the header) / (smallest encoding of an
//     entry), so the tables reserved up front are bounded by the file size;
//   - strings: at most the bytes left and kMaxStringBytes (64 MiB); keys and tensor names at
//     most kMaxNameBytes (64 KiB);
//   - arrays: count at most (bytes left) / (smallest encoding of an element), nesting at most
//     kMaxArrayDepth (8), and at most kMaxArrayElements (4M) elements in all of a file's
//     metadata, since an element costs ~100 bytes in memory for 1 byte on disk;
//   - tensors: 1..4 dimensions, each >= 1; element count and byte size overflow-checked; data
//     inside the file, aligned and not overlapping, so weights are views, never allocations.
// The model layer adds its own shape limits (model/config.cpp).
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>

#include <fmt/ranges.h>

#include "io/gguf.h"
#include "io/gguf_format.h"
#include "io/mmap_file.h"

namespace tova::io {
namespace {

namespace fmt_ = gguf_format;

// Metadata strings (chat templates, merges) stay far below this; it bounds what a corrupt
// length can make us allocate even in a huge file.
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 26;
// Keys and tensor names are identifiers.
constexpr uint64_t kMaxNameBytes = uint64_t{1} << 16;
// Real files nest arrays at most once or twice; the cap bounds recursion on hostile input.
constexpr int kMaxArrayDepth = 8;
// Array elements in all of a file's metadata. Each element becomes a GgufValue (~100 bytes), so
// a 1-byte element on disk costs ~100x in memory: the count being below the file size is not
// enough. The largest real vocabularies (~262k tokens: tokens + scores + token types, plus
// merges) hold about 1.3M elements; 4M bounds a hostile file's metadata at ~400 MB.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 22;
// Smallest possible metadata entry: empty key (u64 length), u32 type, 1-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// Smallest possible tensor info: empty name, u32 n_dims, one u64 dim, u32 type, u64 offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Names quoted in error messages are cut to this many bytes so a message stays one line.
constexpr size_t kMaxQuotedName = 96;

// A name from the file, safe to put in a one-line message: control and non-ASCII bytes are
// escaped (a hostile name could hold '\n'), and long names are shortened.
std::string quoted(std::string_view s) {
  std::string out = "'";
  const size_t n = std::min(s.size(), kMaxQuotedName);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > n)
    out += fmt::format("...' ({} bytes)", s.size());
  else
    out.push_back('\'');
  return out;
}

bool is_power_of_two(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

// Reads little-endian values from [base, base + size) without ever reading past the end.
// Errors name what was being read and where; callers prefix the file and the key or tensor.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status read(T& out, std::string_view what) {
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    // memcpy: the file gives no alignment guarantee for metadata fields.
    std::memcpy(&out, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return ok_status();
  }

  Status read_string(std::string& out, uint64_t max_len, std::string_view what) {
    uint64_t len = 0;
    TOVA_RETURN_IF_ERROR(read(len, fmt::format("{} length", what)));
    if (len > max_len) {
      return make_error("{} length {} at byte {} exceeds the limit of {} bytes", what, len,
                        pos_ - 8, max_len);
    }
    if (len > remaining()) {
      return make_error("{} length {} at byte {} runs past the end of the file ({} bytes left)",
                        what, len, pos_ - 8, remaining());
    }
    out.assign(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return ok_status();
  }

 private:
  Error truncated(std::string_view what, uint64_t need) const {
    return make_error("file ends at byte {} while reading {} ({} bytes needed, {} left)", size_,
                      what, need, remaining());
  }

  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// What a file's metadata may still allocate (kMaxArrayElements), shared by all its values.
struct Budget {
  uint64_t array_elements_left = kMaxArrayElements;
};

Status read_value(Cursor& c, GgufValueType type, int depth, Budget& budget, GgufValue& out);

Result<GgufValueType> read_value_type(Cursor& c, std::string_view what) {
  uint32_t id = 0;
  TOVA_RETURN_IF_ERROR(c.read(id, what));
  if (!fmt_::is_valid_value_type(id)) {
    return make_error("{} id {} at byte {} is not a GGUF value type (0..12)", what, id,
                      c.pos() - 4);
  }
  return static_cast<GgufValueType>(id);
}

Status read_array(Cursor& c, int depth, Budget& budget, GgufValue& out) {
  if (depth >= kMaxArrayDepth) {
    return make_error("arrays nested deeper than {} levels", kMaxArrayDepth);
  }
  TOVA_ASSIGN_OR_RETURN(const GgufValueType elem_type, read_value_type(c, "array element type"));
  uint64_t count = 0;
  TOVA_RETURN_IF_ERROR(c.read(count, "array element count"));
  const uint64_t min_size = fmt_::min_encoded_size(elem_type);
  if (count > c.remaining() / min_size) {
    return make_error("array of {} {} elements cannot fit in the {} bytes left in the file", count,
                      value_type_name(elem_type), c.remaining());
  }
  if (count > budget.array_elements_left) {
    return make_error("array of {} elements exceeds the limit of {} array elements per file", count,
                      kMaxArrayElements);
  }
  budget.array_elements_left -= count;
  out.elem_type = elem_type;
  out.arr.resize(count);
  for (uint64_t j = 0; j < count; ++j) {
    Status s = read_value(c, elem_type, depth + 1, budget, out.arr[j]);
    if (!s.ok()) return make_error("element {} of {}: {}", j, count, s.message());
  }
  return ok_status();
}

Status read_value(Cursor& c, GgufValueType type, int depth, Budget& budget, GgufValue& out) {
  out.type = type;
  switch (type) {
    case GgufValueType::kUint8: {
      uint8_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "u8 value"));
      out.u = v;
      return ok_status();
    }
    case GgufValueType::kInt8: {
      int8_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "i8 value"));
      out.i = v;  // NOLINT(bugprone-signed-char-misuse): i8 is a number, sign-extend it
      return ok_status();
    }
    case GgufValueType::kUint16: {
      uint16_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "u16 value"));
      out.u = v;
      return ok_status();
    }
    case GgufValueType::kInt16: {
      int16_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "i16 value"));
      out.i = v;
      return ok_status();
    }
    case GgufValueType::kUint32: {
      uint32_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "u32 value"));
      out.u = v;
      return ok_status();
    }
    case GgufValueType::kInt32: {
      int32_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "i32 value"));
      out.i = v;
      return ok_status();
    }
    case GgufValueType::kUint64: {
      TOVA_RETURN_IF_ERROR(c.read(out.u, "u64 value"));
      return ok_status();
    }
    case GgufValueType::kInt64: {
      TOVA_RETURN_IF_ERROR(c.read(out.i, "i64 value"));
      return ok_status();
    }
    case GgufValueType::kFloat32: {
      float v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "f32 value"));
      out.f = v;
      return ok_status();
    }
    case GgufValueType::kFloat64: {
      TOVA_RETURN_IF_ERROR(c.read(out.f, "f64 value"));
      return ok_status();
    }
    case GgufValueType::kBool: {
      uint8_t v = 0;
      TOVA_RETURN_IF_ERROR(c.read(v, "bool value"));
      if (v > 1) return make_error("bool value byte {} at byte {} is not 0 or 1", v, c.pos() - 1);
      out.b = v != 0;
      return ok_status();
    }
    case GgufValueType::kString:
      return c.read_string(out.str, kMaxStringBytes, "string");
    case GgufValueType::kArray:
      return read_array(c, depth, budget, out);
  }
  return make_error("value type {} is not handled", static_cast<uint32_t>(type));
}

// ---- GgufFile::parse in steps: header, metadata, alignment, tensor table, data section ----

struct Header {
  uint32_t version = 0;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
};

// The magic, a supported version (2 or 3, little-endian) and the two counts, which must fit in
// what follows the header: checked before anything is allocated.
Result<Header> read_header(Cursor& c, std::span<const uint8_t> file, const std::string& p) {
  if (file.size() < sizeof(fmt_::kMagic)) {
    return make_error("{}: not a GGUF file: only {} bytes", p, file.size());
  }
  if (std::memcmp(file.data(), fmt_::kMagic, sizeof(fmt_::kMagic)) != 0) {
    return make_error(
        "{}: not a GGUF file: magic bytes are {:02x} {:02x} {:02x} {:02x}, "
        "expected 'GGUF'",
        p, file[0], file[1], file[2], file[3]);
  }
  Header h;
  char magic[4];
  TOVA_RETURN_IF_ERROR(c.read(magic, "magic"));
  Status s = c.read(h.version, "the version");
  if (!s.ok()) return make_error("{}: header: {}", p, s.message());
  if (h.version == 1) {
    return make_error("{}: GGUF version 1 is not supported (only versions 2 and 3)", p);
  }
  if (h.version == 0x02000000u || h.version == 0x03000000u) {
    return make_error(
        "{}: big-endian GGUF file (version bytes 0x{:08x}); only little-endian "
        "files are supported",
        p, h.version);
  }
  if (h.version != 2 && h.version != 3) {
    return make_error("{}: unsupported GGUF version {} (only versions 2 and 3)", p, h.version);
  }
  s = c.read(h.n_tensors, "the tensor count");
  if (s.ok()) s = c.read(h.n_kv, "the metadata count");
  if (!s.ok()) return make_error("{}: header: {}", p, s.message());
  const uint64_t rest = c.remaining();
  if (h.n_kv > rest / kMinKvBytes) {
    return make_error(
        "{}: header claims {} metadata entries but the {} bytes after the header "
        "hold at most {}",
        p, h.n_kv, rest, rest / kMinKvBytes);
  }
  if (h.n_tensors > rest / kMinTensorInfoBytes ||
      h.n_kv * kMinKvBytes + h.n_tensors * kMinTensorInfoBytes > rest) {
    return make_error(
        "{}: header claims {} tensors (and {} metadata entries) but the {} bytes "
        "after the header cannot hold their descriptions",
        p, h.n_tensors, h.n_kv, rest);
  }
  return h;
}

using Metadata = std::vector<std::pair<std::string, GgufValue>>;

// n_kv entries of non-empty, distinct keys with their values.
Result<Metadata> read_metadata(Cursor& c, uint64_t n_kv, const std::string& p) {
  Metadata kv;
  kv.reserve(n_kv);
  std::unordered_set<std::string> keys;
  keys.reserve(n_kv);
  Budget budget;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    Status s = c.read_string(key, kMaxNameBytes, "key");
    if (!s.ok()) return make_error("{}: metadata entry {} of {}: {}", p, k, n_kv, s.message());
    if (key.empty()) return make_error("{}: metadata entry {} of {}: empty key", p, k, n_kv);
    if (!keys.insert(key).second) return make_error("{}: duplicate key {}", p, quoted(key));
    GgufValue value;
    Result<GgufValueType> type = read_value_type(c, "value type");
    if (type.ok()) s = read_value(c, *type, 0, budget, value);
    if (!type.ok() || !s.ok()) {
      return make_error("{}: key {}: {}", p, quoted(key), type.ok() ? s.message() : type.message());
    }
    kv.emplace_back(std::move(key), std::move(value));
  }
  return kv;
}

// general.alignment if given (a u32 power of two), else the default.
Result<uint64_t> read_alignment(const Metadata& kv, const std::string& p) {
  for (const auto& [key, a] : kv) {
    if (key != fmt_::kAlignmentKey) continue;
    if (a.type != GgufValueType::kUint32) {
      return make_error("{}: key '{}' has type {}, expected u32", p, fmt_::kAlignmentKey,
                        value_type_name(a.type));
    }
    if (!is_power_of_two(a.u)) {
      return make_error("{}: key '{}' is {}, expected a nonzero power of two", p,
                        fmt_::kAlignmentKey, a.u);
    }
    return a.u;
  }
  return uint64_t{fmt_::kDefaultAlignment};
}

// A tensor's dimensions (1 to kMaxDims, each >= 1) and their element count, checked for
// overflow; `tn` is the quoted name for errors.
Status read_dims(Cursor& c, const std::string& tn, const std::string& p, GgufTensorInfo& info) {
  uint32_t n_dims = 0;
  Status s = c.read(n_dims, "the number of dimensions");
  if (!s.ok()) return make_error("{}: tensor {}: {}", p, tn, s.message());
  if (n_dims < 1 || n_dims > fmt_::kMaxDims) {
    return make_error("{}: tensor {}: {} dimensions, expected 1 to {}", p, tn, n_dims,
                      fmt_::kMaxDims);
  }
  info.dims.resize(n_dims);
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    s = c.read(dim, "a dimension");
    if (!s.ok()) return make_error("{}: tensor {}: {}", p, tn, s.message());
    if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return make_error("{}: tensor {}: dimension {} is {}, expected at least 1", p, tn, d,
                        static_cast<int64_t>(dim));
    }
    info.dims[d] = static_cast<int64_t>(dim);
    if (__builtin_mul_overflow(n_elements, info.dims[d], &n_elements)) {
      return make_error("{}: tensor {}: element count of dimensions {} overflows int64", p, tn,
                        fmt::join(info.dims.begin(), info.dims.begin() + d + 1, " x "));
    }
  }
  info.n_elements = n_elements;
  return ok_status();
}

// A tensor's ggml type (known, its block dividing the row) and its byte size, checked for
// overflow.
Status read_type(Cursor& c, const std::string& tn, const std::string& p, GgufTensorInfo& info) {
  uint32_t type_id = 0;
  Status s = c.read(type_id, "the type");
  if (!s.ok()) return make_error("{}: tensor {}: {}", p, tn, s.message());
  const TypeTraits* traits = find_type_traits(type_id);
  if (traits == nullptr) {
    return make_error("{}: tensor {}: unknown ggml type id {}", p, tn, type_id);
  }
  info.type = static_cast<GgmlType>(type_id);
  if (info.dims[0] % traits->block_size != 0) {
    return make_error("{}: tensor {}: row length {} is not a multiple of the {} block size {}", p,
                      tn, info.dims[0], traits->name, traits->block_size);
  }
  // n_bytes = blocks per row * block bytes * rows, each product checked.
  uint64_t n_bytes = static_cast<uint64_t>(info.dims[0] / traits->block_size);
  bool overflow =
      __builtin_mul_overflow(n_bytes, static_cast<uint64_t>(traits->type_size), &n_bytes);
  for (size_t d = 1; d < info.dims.size() && !overflow; ++d) {
    overflow = __builtin_mul_overflow(n_bytes, static_cast<uint64_t>(info.dims[d]), &n_bytes);
  }
  if (overflow) return make_error("{}: tensor {}: byte size overflows uint64", p, tn);
  info.n_bytes = n_bytes;
  return ok_status();
}

// n_tensors descriptions: distinct non-empty names, dimensions, type, an aligned data offset.
Result<std::vector<GgufTensorInfo>> read_tensor_table(Cursor& c, uint64_t n_tensors,
                                                      uint64_t alignment, const std::string& p) {
  std::vector<GgufTensorInfo> tensors;
  tensors.reserve(n_tensors);
  std::unordered_set<std::string> names;
  names.reserve(n_tensors);
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo info;
    Status s = c.read_string(info.name, kMaxNameBytes, "tensor name");
    if (!s.ok()) return make_error("{}: tensor {} of {}: {}", p, t, n_tensors, s.message());
    if (info.name.empty()) {
      return make_error("{}: tensor {} of {}: empty name", p, t, n_tensors);
    }
    const std::string tn = quoted(info.name);
    if (!names.insert(info.name).second) return make_error("{}: duplicate tensor {}", p, tn);
    TOVA_RETURN_IF_ERROR(read_dims(c, tn, p, info));
    TOVA_RETURN_IF_ERROR(read_type(c, tn, p, info));
    s = c.read(info.offset, "the data offset");
    if (!s.ok()) return make_error("{}: tensor {}: {}", p, tn, s.message());
    if (info.offset % alignment != 0) {
      return make_error("{}: tensor {}: data offset {} is not a multiple of the alignment {}", p,
                        tn, info.offset, alignment);
    }
    tensors.push_back(std::move(info));
  }
  return tensors;
}

// Where the data section starts (the tables' end, padded to the alignment); every tensor's
// bytes inside it, no two overlapping. A file without tensors may end right after its tables,
// unpadded (llama.cpp's vocab-only files do), so a data start past the end just means an empty
// data section.
Result<uint64_t> place_data(const std::vector<GgufTensorInfo>& tensors, uint64_t table_end,
                            uint64_t alignment, uint64_t file_size, const std::string& p) {
  const uint64_t padding = (alignment - table_end % alignment) % alignment;
  const uint64_t data_offset =
      padding <= file_size - table_end ? table_end + padding : file_size;
  const uint64_t data_size = file_size - data_offset;
  for (const GgufTensorInfo& info : tensors) {
    if (info.offset > data_size || info.n_bytes > data_size - info.offset) {
      const uint64_t begin = info.offset;
      if (begin > std::numeric_limits<uint64_t>::max() - data_offset ||
          info.n_bytes > std::numeric_limits<uint64_t>::max() - data_offset - begin) {
        return make_error(
            "{}: tensor {}: data offset {} (+{} bytes) is far past the end of the "
            "file ({} bytes)",
            p, quoted(info.name), begin, info.n_bytes, file_size);
      }
      return make_error(
          "{}: tensor {}: data [{}, {}) extends past the end of the file ({} "
          "bytes)",
          p, quoted(info.name), data_offset + begin, data_offset + begin + info.n_bytes,
          file_size);
    }
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& a = tensors[order[k - 1]];
    const GgufTensorInfo& b = tensors[order[k]];
    if (a.offset + a.n_bytes > b.offset) {  // no overflow: both lie inside the data section
      return make_error("{}: tensors {} (data [{}, {})) and {} (data [{}, {})) overlap", p,
                        quoted(a.name), data_offset + a.offset,
                        data_offset + a.offset + a.n_bytes, quoted(b.name),
                        data_offset + b.offset, data_offset + b.offset + b.n_bytes);
    }
  }
  return data_offset;
}

}  // namespace

GgufFile::~GgufFile() { unmap_region(MappedRegion{map_, size_}); }

Status GgufFile::set_data_writable(bool writable) {
  if (map_ == nullptr) return ok_status();  // from_bytes: owned_ is writable
  Status s = set_region_writable(MappedRegion{map_, size_}, writable);
  if (!s.ok()) return make_error("{}: {}", path_, s.message());
  return ok_status();
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path, Load load) {
  TOVA_ASSIGN_OR_RETURN(const MappedRegion region,
                        load == Load::kMap ? map_file_read_only(path)
                                           : read_file_to_memory(path, load == Load::kReadDropCache));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->map_ = region.addr;
  file->size_ = region.size;
  file->base_ = static_cast<const uint8_t*>(region.addr);
  TOVA_RETURN_IF_ERROR(file->parse());
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_bytes(std::span<const uint8_t> bytes,
                                                       std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(name);
  // Start the copy on a 64-byte boundary so tensor data is as aligned as in a mapped file
  // (kernels may use aligned SIMD loads on the data section).
  constexpr size_t kBufferAlignment = 64;
  file->owned_.resize(bytes.size() + kBufferAlignment);
  const auto addr = reinterpret_cast<uintptr_t>(file->owned_.data());
  const size_t skew = (kBufferAlignment - addr % kBufferAlignment) % kBufferAlignment;
  uint8_t* base = file->owned_.data() + skew;
  if (!bytes.empty()) std::memcpy(base, bytes.data(), bytes.size());
  file->base_ = base;
  file->size_ = bytes.size();
  TOVA_RETURN_IF_ERROR(file->parse());
  return file;
}

Status GgufFile::parse() {
  Cursor c(base_, size_);
  TOVA_ASSIGN_OR_RETURN(const Header h, read_header(c, {base_, size_}, path_));
  version_ = h.version;
  TOVA_ASSIGN_OR_RETURN(kv_, read_metadata(c, h.n_kv, path_));
  TOVA_ASSIGN_OR_RETURN(alignment_, read_alignment(kv_, path_));
  TOVA_ASSIGN_OR_RETURN(tensors_, read_tensor_table(c, h.n_tensors, alignment_, path_));
  TOVA_ASSIGN_OR_RETURN(data_offset_, place_data(tensors_, c.pos(), alignment_, size_, path_));
  for (GgufTensorInfo& info : tensors_) info.data = base_ + data_offset_ + info.offset;
  return ok_status();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace tova::io
