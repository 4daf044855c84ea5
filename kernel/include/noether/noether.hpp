// noether/noether.hpp — the whole public C++ API in one include.
#pragma once

#include "noether/data.hpp"
#include "noether/error.hpp"
#include "noether/graph.hpp"
#include "noether/integrator.hpp"
#include "noether/joint.hpp"
#include "noether/limits.hpp"
#include "noether/math.hpp"
#include "noether/model.hpp"
#include "noether/plugin.hpp"
#include "noether/solver.hpp"
#include "noether/spec.hpp"
#include "noether/version.hpp"
