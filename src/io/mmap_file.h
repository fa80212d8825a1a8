// Read-only file mappings. Model files are hundreds of MB: tensors are views into the mapping,
// never copies, and the page cache shares them between processes.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace tova::io {

struct MappedRegion {
  void* addr = nullptr;  // nullptr for an empty file (mmap cannot map 0 bytes)
  uint64_t size = 0;
};

// Maps all of a regular file with PROT_READ / MAP_PRIVATE. Errors name the path.
Result<MappedRegion> map_file_read_only(const std::string& path);
void unmap_region(const MappedRegion& region);

}  // namespace tova::io
