// noether/integrator.hpp — the integrator plugin interface.
//
// One interface carries implicit fixed-step (vi-maximal), explicit fixed-step (heun, rk4) and
// adaptive methods (dp45-projection): step() advances a Data by exactly Model::options.dt,
// taking whatever internal steps the method needs, and fills Data::last. Integrator state
// that must survive save/restore lives in Data::integrator_state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/error.hpp"
#include "noether/model.hpp"

namespace noether {

class Integrator {
public:
    enum class Scheme { implicit_fixed, explicit_fixed, adaptive };
    virtual ~Integrator() = default;
    virtual Scheme scheme() const = 0;
    // Names accepted in Options::extra / Options::extra_lists (others are compile errors).
    virtual std::vector<std::string> option_names() const { return {}; }
    // Further checks of the Model and its options; append errors/warnings.
    virtual void check(const Model& m, std::vector<Diagnostic>& out) const { (void)m; (void)out; }
    // The integrator's state in a new Data (workspaces sized for the Model).
    virtual std::unique_ptr<IntegratorState> create_state(const Model& m) const = 0;
    // Advance by Model::options.dt. On failure leave d at the last good step and d.warn().
    virtual StepStatus step(const Model& m, Data& d) const = 0;
    // Introspection for tests and tools: prepare a step of Model::options.dt from the committed
    // state of d, then evaluate the step equations f(s) at the unknowns s (laid out by
    // BlockGraph::node_offset) and, if A is not null, the Newton matrix ∂f/∂s into A. Returns
    // false if the method has no such system (explicit methods). Does not change the state of d.
    virtual bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const {
        (void)m; (void)d; (void)s; (void)f; (void)A;
        return false;
    }
    // Energy, momenta and violation of the committed state as this method defines them.
    virtual Monitors monitors(const Model& m, const Data& d) const {
        Monitors mon = continuous_monitors(m, d.pose.data(), d.twist.data());
        return mon;
    }
};

}  // namespace noether
