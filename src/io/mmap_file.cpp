#include "io/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tova::io {

Result<MappedRegion> map_file_read_only(const std::string& path) {
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
  MappedRegion region;
  region.size = static_cast<uint64_t>(st.st_size);
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

void unmap_region(const MappedRegion& region) {
  if (region.addr != nullptr) ::munmap(region.addr, region.size);
}

}  // namespace tova::io
