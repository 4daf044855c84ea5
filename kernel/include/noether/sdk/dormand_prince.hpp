// noether/sdk/dormand_prince.hpp — the Dormand–Prince 5(4) pair and the step-size control shared by
// the error-controlled integrators (dp45-projection, dp45-joint): Hairer, Nørsett & Wanner, Solving
// Ordinary Differential Equations I, §II.5 (Table 5.2) and §II.4 (the step-size factor).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "noether/model.hpp"
#include "noether/sdk/integrator.hpp"

namespace noether {
namespace dp45 {

// Stage s evaluates at y + h Σ_{r<s} kA[s][r] k_r; row 6 holds the fifth-order weights (the
// solution, where stage 6 is evaluated: first same as last). kE: fifth- less fourth-order weights,
// the error estimate h Σ kE[s] k_s.
inline constexpr double kA[7][6] = {{0, 0, 0, 0, 0, 0},
                                    {1.0 / 5, 0, 0, 0, 0, 0},
                                    {3.0 / 40, 9.0 / 40, 0, 0, 0, 0},
                                    {44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0},
                                    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0},
                                    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0},
                                    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}};
inline constexpr double kE[7] = {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

// Options::extra "atol", "rtol", "fac_max", "initial_step" (0: the step's dt), "max_internal_steps":
// internal steps (accepted and rejected) one step may take before it fails as not converged. Without
// it a state far outside the tolerances' scale (a link at 1e6 rad/s from a host or a restored state)
// took ~1e5 internal steps a step, and the step-size floor (1e-12 dt) allowed up to ~1e12: a hang.
struct Options {
    double atol = 1e-6, rtol = 1e-6, fac_max = 3.0, initial_step = 0, max_internal_steps = 100000;
};
// Their names, in the order of Options' fields: what option_names() of each integrator lists and
// check_options() checks.
inline constexpr const char* kOptionNames[] = {"atol", "rtol", "fac_max", "initial_step", "max_internal_steps"};
inline Options options(const Model& m) {
    Options o;
    double* const fields[] = {&o.atol, &o.rtol, &o.fac_max, &o.initial_step, &o.max_internal_steps};
    static_assert(sizeof fields / sizeof fields[0] == sizeof kOptionNames / sizeof kOptionNames[0]);
    // (Read every step: keys made once, so that the lookup does not allocate — a name past the short
    // string length would on every call.)
    static const std::vector<std::string> keys(std::begin(kOptionNames), std::end(kOptionNames));
    for (std::size_t k = 0; k < keys.size(); ++k) {
        auto it = m.options.extra.find(keys[k]);
        if (it != m.options.extra.end()) *fields[k] = it->second;
    }
    return o;
}

// The local error estimate of a step is computed in double precision: a relative tolerance below
// about 50 machine epsilons cannot be met (atol = rtol = 1e-300 failed dp45-projection's first step
// as "non-finite value" when its error ratio overflowed, dp45-joint's as "not converged").
inline constexpr double kMinRtol = 1e-14;

// The checks of these options for integrator `name` (dp45-projection, dp45-joint), one error each
// appended to out: a number, not a list; atol and rtol positive and finite, rtol at least kMinRtol;
// fac_max finite and greater than 1; initial_step 0 (the step's dt) or positive, and finite;
// max_internal_steps a whole number of at least 1.
inline void check_options(const Model& m, const char* name, std::vector<Diagnostic>& out) {
    auto error = [&](const char* format, double v) {  // format: the integrator's name (%s), the value (%g)
        char buf[240];
        std::snprintf(buf, sizeof buf, format, name, v);
        out.push_back({Severity::error, m.origin, buf});
    };
    for (const char* opt : kOptionNames)
        if (m.options.extra_lists.count(opt))
            out.push_back({Severity::error, m.origin, std::string("options: ") + name + " option '" + opt + "' must be a number"});
    const Options o = options(m);
    check_positive_option(m, name, "atol", o.atol, out);
    check_positive_option(m, name, "rtol", o.rtol, out);
    if (o.rtol > 0 && o.rtol < kMinRtol)
        error("options: %s option 'rtol' is %g: a step's error cannot be told that finely in double precision (at least "
              "1e-14)",
              o.rtol);
    if (!(o.fac_max > 1) || !std::isfinite(o.fac_max))
        error("options: %s option 'fac_max' must be finite and greater than 1, got %g", o.fac_max);
    if (!(o.initial_step >= 0) || !std::isfinite(o.initial_step))
        error("options: %s option 'initial_step' must be 0 (the step's dt) or positive, and finite, got %g", o.initial_step);
    if (!(o.max_internal_steps >= 1) || !std::isfinite(o.max_internal_steps) ||
        o.max_internal_steps != std::floor(o.max_internal_steps))
        error("options: %s option 'max_internal_steps' must be a whole number of at least 1, got %g", o.max_internal_steps);
}

// The factor on the step size after a step whose scaled error norm is err (accepted when ≤ 1):
// 0.9 err^(−1/5), at least 0.2 and, after an accepted step, at most fac_max.
inline double factor(double err, double fac_max) { return err > 0 ? 0.9 * std::pow(err, -0.2) : fac_max; }

}  // namespace dp45
}  // namespace noether
