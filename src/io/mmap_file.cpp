#include "io/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tova::io {

namespace {

// An open descriptor of a regular file and the file's size; errors name the path.
struct OpenFile {
  int fd = -1;
  uint64_t size = 0;
};

Result<OpenFile> open_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error("{}: not a regular file", path);
  }
  return OpenFile{fd, static_cast<uint64_t>(st.st_size)};
}

// The size of a transparent huge page: 2 MiB on x86 and on ARM kernels with 4 KiB pages, but
// 32 MiB with 16 KiB pages and 512 MiB with 64 KiB pages (common on ARM servers). Read once from
// the kernel; 2 MiB where it does not say (or says something that is not a power of two between
// the base page and 1 GiB).
uint64_t huge_page_bytes() {
  static const uint64_t bytes = [] {
    constexpr uint64_t kDefault = uint64_t{2} << 20;
    const long page = ::sysconf(_SC_PAGESIZE);
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    if (f == nullptr) return kDefault;
    unsigned long long v = 0;
    const bool read = std::fscanf(f, "%llu", &v) == 1;
    std::fclose(f);
    const bool sane = read && page > 0 && v >= static_cast<unsigned long long>(page) &&
                      v <= (uint64_t{1} << 30) && (v & (v - 1)) == 0;
    return sane ? static_cast<uint64_t>(v) : kDefault;
  }();
  return bytes;
}

}  // namespace

Result<MappedRegion> map_file_read_only(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(const OpenFile file, open_regular_file(path));
  const int fd = file.fd;
  MappedRegion region;
  region.size = file.size;
  if (region.size > 0) {
    void* p = ::mmap(nullptr, region.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return make_error("{}: cannot map {} bytes: {}", path, region.size, std::strerror(err));
    }
    region.addr = p;
  }
  // The mapping keeps the file's pages alive; the descriptor is no longer needed.
  ::close(fd);
  return region;
}

Result<MappedRegion> read_file_to_memory(const std::string& path, bool drop_page_cache,
                                         uint64_t chunk_bytes) {
  TOVA_ASSIGN_OR_RETURN(const OpenFile file, open_regular_file(path));
  const int fd = file.fd;
  MappedRegion region;
  region.size = file.size;
  if (region.size == 0) {
    ::close(fd);
    return region;
  }
  // Over-allocate by one huge page and keep a window aligned to it, so huge pages can back it.
  const uint64_t kHuge = huge_page_bytes();
  const uint64_t reserve = region.size + kHuge;
  void* raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    return make_error("{}: cannot allocate {} bytes: {}", path, region.size, std::strerror(err));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHuge - 1) / kHuge * kHuge;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t span = (region.size + page - 1) / page * page;
  // Give back what lies outside the window (both ends are page multiples).
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t end = start + reserve;
  if (aligned + span < end) ::munmap(reinterpret_cast<void*>(aligned + span), end - aligned - span);
  auto* dst = reinterpret_cast<uint8_t*>(aligned);
  ::madvise(dst, span, MADV_HUGEPAGE);  // advisory: no error if THP is unavailable
  // Chunks, so that the page cache's copy of each can be dropped right after it is copied.
  const uint64_t kChunk = std::max<uint64_t>(chunk_bytes, 1);
  uint64_t done = 0;
  uint64_t dropped = 0;  // the page cache holds no more of [0, dropped) than it did before
  while (done < region.size) {
    if (drop_page_cache && done - dropped >= kChunk) {
      ::posix_fadvise(fd, static_cast<off_t>(dropped), static_cast<off_t>(done - dropped),
                      POSIX_FADV_DONTNEED);  // advisory: pages mapped elsewhere stay
      dropped = done;
    }
    const uint64_t want = std::min(region.size - done, kChunk);
    const ssize_t n = ::pread(fd, dst + done, want, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::munmap(dst, span);
      ::close(fd);
      return err != 0 ? make_error("{}: read failed: {}", path, std::strerror(err))
                      : make_error("{}: file shrank while reading ({} of {} bytes)", path, done,
                                   region.size);
    }
    done += static_cast<uint64_t>(n);
  }
  if (drop_page_cache) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // 0, 0: to the end
  ::close(fd);
  ::mprotect(dst, span, PROT_READ);
  region.addr = dst;  // munmap rounds region.size up to whole pages
  return region;
}

Status set_region_writable(const MappedRegion& region, bool writable) {
  if (region.addr == nullptr || region.size == 0) return ok_status();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t span = (region.size + page - 1) / page * page;
  if (::mprotect(region.addr, span, writable ? PROT_READ | PROT_WRITE : PROT_READ) != 0) {
    return make_error("cannot make {} bytes of model memory {}: {}", region.size,
                      writable ? "writable" : "read-only", std::strerror(errno));
  }
  return ok_status();
}

void unmap_region(const MappedRegion& region) {
  if (region.addr != nullptr) ::munmap(region.addr, region.size);
}

}  // namespace tova::io
