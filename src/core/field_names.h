// The library's option names are part of the public face (tova/field_names.h).
#pragma once

#include "tova/field_names.h"
