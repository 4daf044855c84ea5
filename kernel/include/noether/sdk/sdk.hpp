// noether/sdk/sdk.hpp — everything a plugin author builds on, in one include: the host API
// (noether/noether.hpp) and the plugin interfaces and kits — joint types and the joint SDK
// (joint.hpp), integrators and the subdivide() driver (integrator.hpp), linear solvers
// (solver.hpp), the tree view, spatial algebra and articulated-body passes for joint-coordinate
// integrators (tree.hpp, spatial.hpp), the tree LDU and loop node (tree_ldu.hpp), small dense
// kernels (dense.hpp), secant pairs for fixed-point iterations (secant.hpp), the entry point
// (plugin.hpp), and for libraries that extend the C API,
// c_bridge.hpp. docs/plugins.md is the guide; the ABI is NOETHER_PLUGIN_ABI.
#pragma once

#include "noether/noether.hpp"
#include "noether/sdk/c_bridge.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/secant.hpp"
#include "noether/sdk/solver.hpp"
#include "noether/sdk/spatial.hpp"
#include "noether/sdk/tree.hpp"
#include "noether/sdk/tree_ldu.hpp"
