// noether/linearize.hpp — the linearisation of one step, for trajectory optimisation (hosts);
// integrators that provide it implement Integrator::linearize (noether/sdk/integrator.hpp).
#pragma once

#include "noether/export.h"

#include <vector>

#include "noether/data.hpp"
#include "noether/model.hpp"

namespace noether {

// The linearisation of one step of Model::options.dt from the committed state of a Data, for
// trajectory optimisation (iLQR, DDP, shooting): x = (q, q̇) with q = Data::coord and
// q̇ = Data::rate (Model::total_dofs each, DOF order), u = Data::actuation. Filled by
// noether::linearize() (kernel/src/linearize.cpp); sized on the first call, reused after.
struct NOETHER_API Linearization {
    int n = 0;                       // coordinates (Model::total_dofs)
    std::vector<double> x, x_next;   // 2n: (q, q̇) at the start and at the end of the step
    std::vector<double> A;           // 2n × 2n, row-major: ∂x_next/∂x
    std::vector<double> B;           // 2n × n,  row-major: ∂x_next/∂u
};

// The linearisation of the next step (see Linearization) by the Model's integrator. Sizes `out`
// on the first call (no allocation after that for the same Model). Throws UsageError if the
// integrator has none (it names the ones that do). Does not change the Data. Returns the status
// of the step; `out` holds the linearisation only when it is ok.
NOETHER_API StepStatus linearize(const Model& m, Data& d, Linearization& out);

}  // namespace noether
