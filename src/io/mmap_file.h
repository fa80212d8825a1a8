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
// mapping of the page cache: 30 vs 23 GB/s summing a 2 GiB model with 2 threads on this
// project's machine. Anonymous memory was as fast with 4 KiB pages as with huge pages, so the
// page cache's physical layout, not the TLB, is the likely cause. The cost is a copy at load
// time. Release it with unmap_region.
//
// drop_page_cache: hand the page cache's copy of each chunk back (POSIX_FADV_DONTNEED) as soon
// as it is copied, so that at no time are two copies of the file resident beyond one chunk
// (chunk_bytes, 64 MiB): for files too large for both copies. The next open reads the disk
// again.
Result<MappedRegion> read_file_to_memory(const std::string& path, bool drop_page_cache = false,
                                         uint64_t chunk_bytes = uint64_t{64} << 20);

void unmap_region(const MappedRegion& region);

// Makes a region of map_file_read_only or read_file_to_memory writable, or read-only again
// (mprotect). Written pages of a file mapping become private copies (MAP_PRIVATE): the file and
// the page cache never change.
Status set_region_writable(const MappedRegion& region, bool writable);

}  // namespace tova::io
