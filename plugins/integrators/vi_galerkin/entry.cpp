// vi-galerkin's entry point: the one symbol the plugin loader looks up. Apart from the rest of the
// plugin so that the white-box test links every pass and the class without it.
#include "galerkin.hpp"

NOETHER_PLUGIN(NOETHER_PLUGIN_INTEGRATOR, "vi-galerkin",
               "higher-order (2s) Galerkin variational integrator in joint coordinates, O(n) Newton (paper 002)",
               noether::galerkin_vi::Galerkin)
