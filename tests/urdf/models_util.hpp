// Where the shared robot models are: NOETHER_MODELS_DIR, else ../shared/models next to the
// repository. Tests that need them print NOETHER_SKIP (ctest reports them as skipped) when absent.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace models {

inline std::string dir() {
    const char* env = std::getenv("NOETHER_MODELS_DIR");
    return env && *env ? env : std::string(NOETHER_SOURCE_DIR) + "/../shared/models";
}

inline bool available() {
    struct stat st;
    if (stat((dir() + "/MANIFEST.md").c_str(), &st) == 0) return true;
    std::printf("NOETHER_SKIP: the models directory %s is absent (set NOETHER_MODELS_DIR)\n", dir().c_str());
    return false;
}

}  // namespace models
