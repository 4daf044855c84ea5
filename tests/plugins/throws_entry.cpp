// A plugin whose entry point throws an exception of a type that lives in this library.
#include <stdexcept>

#include "noether/sdk/plugin.hpp"

namespace {
struct PluginOwnError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const noether_plugin_descriptor* noether_plugin(void) {
    throw PluginOwnError("the entry point of this plugin is broken");
}
