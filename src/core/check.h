// Asserts for programmer errors only (never for bad input, which gets a Result error).
// TOVA_CHECK is always on; TOVA_DCHECK only in debug builds, for checks on hot paths.
#pragma once

#include <cstdio>
#include <cstdlib>

#define TOVA_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: internal check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

#ifdef NDEBUG
#define TOVA_DCHECK(cond) \
  do {                    \
  } while (0)
#else
#define TOVA_DCHECK(cond) TOVA_CHECK(cond)
#endif
