// GGUF (v2 and v3) reader: bytes -> validated metadata and named tensor views, nothing else.
// Everything is validated before use; each problem is one error naming the key or tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"

namespace tova::io {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view value_type_name(GgufValueType t);

// One metadata value. Scalars use the field matching their type (all integer types widen into
// `i` for signed or `u` for unsigned; floats into `f`); arrays hold elements of one type (which
// may itself be kArray: nested arrays).
struct GgufValue {
  GgufValueType type = GgufValueType::kUint32;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  std::string str;
  GgufValueType elem_type = GgufValueType::kUint8;  // arrays only
  std::vector<GgufValue> arr;                       // arrays only

  static GgufValue make_u32(uint32_t v);
  static GgufValue make_i32(int32_t v);
  static GgufValue make_u64(uint64_t v);
  static GgufValue make_f32(float v);
  static GgufValue make_bool(bool v);
  static GgufValue make_str(std::string v);
  static GgufValue make_str_array(const std::vector<std::string>& v);
  static GgufValue make_f32_array(const std::vector<float>& v);
  static GgufValue make_i32_array(const std::vector<int32_t>& v);
  static GgufValue make_u8(uint8_t v);
  static GgufValue make_i8(int8_t v);
  static GgufValue make_u16(uint16_t v);
  static GgufValue make_i16(int16_t v);
  static GgufValue make_i64(int64_t v);
  static GgufValue make_f64(double v);
  // An array of `elem_type` elements (each element's `type` must be `elem_type`; elements may
  // themselves be arrays).
  static GgufValue make_array(GgufValueType elem_type, std::vector<GgufValue> elems);

  bool operator==(const GgufValue& other) const = default;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length (fastest varying)
  int64_t n_elements = 0;
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapped file
};

class GgufFile {
 public:
  // Maps the file read-only and validates all of it (header, metadata, tensor table, data).
  // Beyond the format itself, rejected: duplicate keys or tensor names, empty keys or names,
  // n_dims outside 1..4, any dimension < 1 (no empty tensors), unknown ggml type ids, rows
  // that are not whole blocks, misaligned or overlapping tensor data, bool bytes other than
  // 0/1, arrays nested deeper than 8, more than 4M array elements in all, strings over 64 MiB
  // (keys and names over 64 KiB). The limits are listed in gguf_reader.cpp.
  // A file without tensors may end right after its tables (llama.cpp's vocab-only files do).
  // kRead copies the file into memory of its own (io::read_file_to_memory) instead of mapping
  // it: slower to open, faster to stream weights from; kReadDropCache does the same and drops
  // the page cache's copy behind the read (one copy resident, not two).
  enum class Load { kMap, kRead, kReadDropCache };
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path, Load load = Load::kMap);
  // Parses an in-memory image (tests); the bytes are copied and owned by the file.
  static Result<std::unique_ptr<GgufFile>> from_bytes(std::span<const uint8_t> bytes,
                                                      std::string name = "<memory>");
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  // Where the data section starts in the file; a tensor's bytes are at data_offset() + offset.
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: an error names the key if it is missing or of an incompatible type.
  // Integer getters accept any integer type whose value fits.
  Result<std::string> get_string(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<int64_t> get_i64(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;  // accepts f32/f64
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;  // any integer elems

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Lets the model loader rewrite tensor data in place (a load-time repack of weights into a
  // layout of tova's own, model/weight_repack.cpp): true makes the file's memory writable, false
  // read-only again. A mapped file's written pages become private copies (MAP_PRIVATE), so the
  // file on disk and the page cache never change; an in-memory image (from_bytes) is writable
  // already.
  Status set_data_writable(bool writable);

 private:
  GgufFile() = default;
  Status parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;         // mmap'd region (Open) or nullptr
  std::vector<uint8_t> owned_;  // from_bytes copy
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
};

// GGUF v3 writer: tests use it to craft (also broken) files, `tova make-random` to write models.
class GgufWriter {
 public:
  void set(std::string key, GgufValue value);  // replaces an existing key
  // `data` must hold exactly bytes_per_row(type, dims[0]) * (product of the other dims) bytes.
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                  std::vector<uint8_t> data);
  // A tensor whose bytes `produce` writes into its argument (sized to the tensor) only when the
  // file is written, one tensor at a time: write_file then holds one tensor's data at once, so
  // a file of many gigabytes is written in little memory. `produce` must give the same bytes
  // every call.
  using Producer = std::function<void(std::span<uint8_t> out)>;
  void add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims, Producer produce);
  // Alignment of the tensor data (a nonzero power of two). It is recorded as general.alignment
  // when it is not the default 32, unless general.alignment was set explicitly: then that value
  // is written as given (tests use this to craft inconsistent files).
  void set_alignment(uint64_t a) { alignment_ = a; }

  std::vector<uint8_t> to_bytes() const;
  // Writes PATH.tmp, then renames it over PATH, so no partial file is left on failure. Streams:
  // the header, then each tensor's data (produced tensor by tensor for deferred ones).
  Status write_file(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> data;  // empty for a deferred tensor
    Producer produce;           // set for a deferred tensor
    uint64_t n_bytes = 0;
  };
  static uint64_t checked_bytes(GgmlType type, const std::vector<int64_t>& dims);
  // Everything before the first tensor's data, padded to the alignment.
  std::vector<uint8_t> header() const;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace tova::io
