// A plugin whose factory throws.
#include <stdexcept>

#include "noether/sdk/plugin.hpp"

extern "C" __attribute__((visibility("default"))) const noether_plugin_descriptor* noether_plugin(void) {
    static const noether_plugin_descriptor d = {NOETHER_PLUGIN_ABI, sizeof(noether_plugin_descriptor),
                                                NOETHER_PLUGIN_SOLVER, "throws-in-create", "factory throws",
                                                []() -> void* { throw std::runtime_error("out of coffee"); }};
    return &d;
}
