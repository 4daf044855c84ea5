// Internal to the kernel: FNV-1a, 64 bit (the Model's structure fingerprint, ensemble hashes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace noether {
namespace detail {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;

inline std::uint64_t fnv(std::uint64_t h, const void* p, std::size_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}

}  // namespace detail
}  // namespace noether
