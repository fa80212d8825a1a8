// Timer is part of the public face (tova/timer.h).
#pragma once

#include "tova/timer.h"
