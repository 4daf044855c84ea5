// noether/noether.hpp — the kernel's whole C++ API for hosts in one include: describe a mechanism
// (Spec), compile it (Model), step it (Data, step), run it with outputs and a summary (Run), query
// it (monitors, advice, linearize), list the plugins (Registry), write and read files.
// Plugin authors include noether/sdk/sdk.hpp (this and the plugin interfaces). Ensembles:
// noether/ensemble.hpp (libnoether_parallel); URDF: noether/urdf.hpp; Lua: noether/lua.hpp.
#pragma once

#include "noether/advice.hpp"
#include "noether/data.hpp"
#include "noether/error.hpp"
#include "noether/graph.hpp"
#include "noether/limits.hpp"
#include "noether/linearize.hpp"
#include "noether/queries.hpp"
#include "noether/math.hpp"
#include "noether/model.hpp"
#include "noether/output_file.hpp"
#include "noether/recording_reader.hpp"
#include "noether/registry.hpp"
#include "noether/run.hpp"
#include "noether/spec.hpp"
#include "noether/version.hpp"
