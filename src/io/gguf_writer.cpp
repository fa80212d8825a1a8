#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "io/gguf.h"
#include "io/gguf_format.h"

namespace tova::io {
namespace {

namespace fmt_ = gguf_format;

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}

  template <typename T>
  void put(T v) {
    put_bytes(&v, sizeof(T));  // the format is little-endian, like every host we target
  }
  void put_bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    while (out_.size() % alignment != 0) out_.push_back(0);
  }
  uint64_t size() const { return out_.size(); }

 private:
  std::vector<uint8_t>& out_;
};

// Writes the payload of `v` as type `t` (the caller wrote the type id, if the context has one).
void put_value(ByteSink& sink, GgufValueType t, const GgufValue& v) {
  switch (t) {
    case GgufValueType::kUint8:
      sink.put(static_cast<uint8_t>(v.u));
      break;
    case GgufValueType::kInt8:
      sink.put(static_cast<int8_t>(v.i));
      break;
    case GgufValueType::kUint16:
      sink.put(static_cast<uint16_t>(v.u));
      break;
    case GgufValueType::kInt16:
      sink.put(static_cast<int16_t>(v.i));
      break;
    case GgufValueType::kUint32:
      sink.put(static_cast<uint32_t>(v.u));
      break;
    case GgufValueType::kInt32:
      sink.put(static_cast<int32_t>(v.i));
      break;
    case GgufValueType::kUint64:
      sink.put(static_cast<uint64_t>(v.u));
      break;
    case GgufValueType::kInt64:
      sink.put(static_cast<int64_t>(v.i));
      break;
    case GgufValueType::kFloat32:
      sink.put(static_cast<float>(v.f));
      break;
    case GgufValueType::kFloat64:
      sink.put(static_cast<double>(v.f));
      break;
    case GgufValueType::kBool:
      sink.put(static_cast<uint8_t>(v.b ? 1 : 0));
      break;
    case GgufValueType::kString:
      sink.put_string(v.str);
      break;
    case GgufValueType::kArray:
      sink.put(static_cast<uint32_t>(v.elem_type));
      sink.put<uint64_t>(v.arr.size());
      for (const GgufValue& e : v.arr) {
        TOVA_CHECK(e.type == v.elem_type);
        put_value(sink, v.elem_type, e);
      }
      break;
  }
}

bool is_power_of_two(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

uint64_t GgufWriter::checked_bytes(GgmlType type, const std::vector<int64_t>& dims) {
  TOVA_CHECK(find_type_traits(static_cast<uint32_t>(type)) != nullptr);
  TOVA_CHECK(!dims.empty() && dims.size() <= fmt_::kMaxDims);
  uint64_t rows = 1;
  for (size_t d = 1; d < dims.size(); ++d) {
    TOVA_CHECK(dims[d] >= 1);
    rows *= static_cast<uint64_t>(dims[d]);
  }
  const Result<uint64_t> row_bytes = bytes_per_row(type, dims[0]);
  TOVA_CHECK(row_bytes.ok() && dims[0] >= 1);
  return *row_bytes * rows;
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                            std::vector<uint8_t> data) {
  const uint64_t n = checked_bytes(type, dims);
  TOVA_CHECK(data.size() == n);
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), std::move(data), {}, n});
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                            Producer produce) {
  const uint64_t n = checked_bytes(type, dims);
  TOVA_CHECK(produce != nullptr);
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), {}, std::move(produce), n});
}

std::vector<uint8_t> GgufWriter::header() const {
  TOVA_CHECK(is_power_of_two(alignment_));
  bool has_alignment_key = false;
  for (const auto& [k, v] : kv_) has_alignment_key |= (k == fmt_::kAlignmentKey);
  const bool add_alignment_key = !has_alignment_key && alignment_ != fmt_::kDefaultAlignment;

  std::vector<uint8_t> out;
  ByteSink sink(out);
  sink.put_bytes(fmt_::kMagic, sizeof(fmt_::kMagic));
  sink.put<uint32_t>(fmt_::kWriteVersion);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(kv_.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [k, v] : kv_) {
    sink.put_string(k);
    sink.put(static_cast<uint32_t>(v.type));
    put_value(sink, v.type, v);
  }
  if (add_alignment_key) {
    sink.put_string(fmt_::kAlignmentKey);
    sink.put(static_cast<uint32_t>(GgufValueType::kUint32));
    sink.put(static_cast<uint32_t>(alignment_));
  }

  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) sink.put<int64_t>(d);
    sink.put(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset += t.n_bytes;
    offset = (offset + alignment_ - 1) / alignment_ * alignment_;
  }
  sink.pad_to(alignment_);
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out = header();
  // Each tensor is padded to the alignment, the last one too, as llama.cpp's writer does.
  for (const Tensor& t : tensors_) {
    const size_t at = out.size();
    if (t.produce) {
      out.resize(at + t.n_bytes);
      t.produce(std::span<uint8_t>(out.data() + at, t.n_bytes));
    } else {
      out.insert(out.end(), t.data.begin(), t.data.end());
    }
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return make_error("{}: cannot create: {}", tmp, std::strerror(errno));
  uint64_t total = 0;
  auto put = [&](const uint8_t* p, size_t n) {
    if (n > 0 && std::fwrite(p, 1, n, f) != n) return false;
    total += n;
    return true;
  };
  bool ok = true;
  int write_errno = 0;
  {
    const std::vector<uint8_t> head = header();
    ok = put(head.data(), head.size());
  }
  std::vector<uint8_t> buf;
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    if (t.produce) {
      buf.resize(t.n_bytes);
      t.produce(std::span<uint8_t>(buf.data(), buf.size()));
      ok = put(buf.data(), buf.size());
    } else {
      ok = put(t.data.data(), t.data.size());
    }
    const uint64_t pad = (alignment_ - total % alignment_) % alignment_;
    if (ok) ok = put(zeros.data(), pad);
  }
  if (!ok) write_errno = errno;
  buf = {};
  const bool close_ok = std::fclose(f) == 0;
  const int close_errno = errno;
  if (!ok || !close_ok) {
    std::remove(tmp.c_str());
    return make_error("{}: write failed after {} bytes: {}", tmp, total,
                      std::strerror(!ok ? write_errno : close_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return make_error("{}: cannot rename {} over it: {}", path, tmp, std::strerror(err));
  }
  return ok_status();
}

}  // namespace tova::io
