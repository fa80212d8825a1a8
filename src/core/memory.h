// How much memory this machine has, and byte counts as people read them (for error messages
// that refuse a size).
#pragma once

#include <cstdint>
#include <string>

namespace tova {

// Physical memory of the machine in bytes (0 if the system does not say).
uint64_t physical_memory_bytes();

// Memory the system can give a process without swapping (Linux's MemAvailable: free memory
// plus reclaimable page cache), in bytes; 0 if the system does not say.
uint64_t available_memory_bytes();

// "1.50 GiB", "23.5 MiB", "512 B" (powers of 1024).
std::string human_bytes(uint64_t bytes);

}  // namespace tova
