// Result<T> and Status are part of the public face (tova/result.h); the library's own code
// includes them from here as it always has.
#pragma once

#include "tova/result.h"
