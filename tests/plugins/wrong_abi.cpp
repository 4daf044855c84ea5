// A plugin built for a different plugin ABI version.
#include "noether/sdk/plugin.hpp"

extern "C" __attribute__((visibility("default"))) const noether_plugin_descriptor* noether_plugin(void) {
    static const noether_plugin_descriptor d = {NOETHER_PLUGIN_ABI + 41, sizeof(noether_plugin_descriptor),
                                                NOETHER_PLUGIN_JOINT, "from-the-future", "wrong ABI",
                                                []() -> void* { return nullptr; }};
    return &d;
}
