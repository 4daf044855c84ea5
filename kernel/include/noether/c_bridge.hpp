// noether/c_bridge.hpp — for libraries that extend the C API (noether_lua.h, noether_urdf.h):
// turning C++ objects into the C API's handles and back, and its per-thread error message.
// Hosts use noether.h, not this.
#pragma once

#include "noether/export.h"

#include <memory>
#include <string>

#include "noether.h"
#include "noether/model.hpp"
#include "noether/run.hpp"

namespace noether {
namespace c_bridge {

NOETHER_API noether_model* wrap_model(std::shared_ptr<const Model> model);
NOETHER_API noether_run* wrap_run(std::unique_ptr<Run> run);
NOETHER_API Spec* spec_of(noether_spec* spec);
// Leave `message` for noether_last_error() on this thread; returns `status`.
NOETHER_API int set_error(int status, const std::string& message);

}  // namespace c_bridge
}  // namespace noether
