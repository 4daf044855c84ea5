// Helpers the benchmark programs share.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace bench {

// "a,b,c" → {"a", "b", "c"} (command-line lists).
inline std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(item);
    return out;
}

}  // namespace bench
