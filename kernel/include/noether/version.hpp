// noether/version.hpp
#pragma once

#include "noether/export.h"

#define NOETHER_VERSION_MAJOR 0
#define NOETHER_VERSION_MINOR 1
#define NOETHER_VERSION_PATCH 0
#define NOETHER_VERSION_STRING "0.1.0"

namespace noether {
NOETHER_API const char* version();
}
