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

// Reads all of a regular file into fresh anonymous memory (2 MiB aligned, transparent huge
// pages requested), then makes it read-only. Streaming weights from it is faster than from a
// mapping of the page cache, whose 4 KiB frames lie scattered in physical memory (about 30 vs
// 23 GB/s on this project's machine, 2 threads); the cost is a copy at load time. Release it
// with unmap_region.
Result<MappedRegion> read_file_to_memory(const std::string& path);

void unmap_region(const MappedRegion& region);

}  // namespace tova::io
