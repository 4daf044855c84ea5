// vi-maximal: the step with contacts and joint limits — the interior-point iteration of
// shared/design/contact-ip.md §5.1 around the step's Newton system (docs/contact.md; the units,
// their rows and the Schur complement: contact.hpp).
#include "vi_maximal.hpp"

namespace noether {
namespace vi_max {

// f = [f_T; f_Λ] at (s, y) for κ = 0, and its violations; leaves pose3 and the gaps of s.
void VIMaximal::ip_residual(const Model& m, const Data& d, State& st, double h, const std::vector<double>& s,
                 const std::vector<double>& y, std::vector<double>& fT, std::vector<double>& fy, double& rvio,
                 double& bvio, double& ovio) const {
    Inequalities& q = st.ineq;
    residual(m, d, st, h, s, fT);
    add_unit_forces(*st.G, q, y.data(), fT.data());
    unit_gaps(m, d, st.pose3.data(), q, false);
    unit_rows(*st.G, q, s.data(), y.data(), fy.data());
    violations(m, *st.G, q, fT.data(), y.data(), fy.data(), rvio, bvio, ovio);
}

// Stage, with contacts or limits: the interior-point iteration of CIP §5.1 (Mehrotra
// predictor–corrector, fraction to the boundary, a line search that accepts unless both
// violations grow) on the tree unknowns s and the unit unknowns y, from the warm start and the
// neutral point. On success st.s, q.y are the solution and st.pose3 its configuration.
// Option newton = "chord" (default): after an iteration that cut the tree rows' violation to
// kChordContraction of what it was or less (or to the tolerance) without raising the larger
// violation, the next keeps the tree factorisation and the Schur columns F⁻¹C made with it (and
// the gap rows R they pair with): no assembly, no factorisation, no tree solve per force column;
// the units' blocks and the Schur complement are formed anew at the iterate (the set of units
// does not change within this loop). The iterations are paced by the complementarity, not by the
// tree rows, so a linearisation a few iterates old serves: atlas_fall 10.7 → 1.5 matrices a step,
// iterations 10.83 → 10.90, instructions a step 4.16M → 1.71M. A chord iteration whose Schur
// complement is singular or that finds no admissible trial is taken again freshly linearised; one
// that stalls says nothing of the floor (the next, freshly linearised, judges it). "exact":
// assemble, factor and solve for the columns at every iteration.
Attempt VIMaximal::interior_point(const Model& m, const Data& d, State& st, double h, bool chord_on,
                                  bool* reused) const {
    const BlockGraph& g = *st.G;
    Inequalities& q = st.ineq;
    const double tol = st.contact_tolerance, limit = kBranch / h;
    const int nt = g.total_size;
    Attempt out;
    neutral_start(q);
    int stalls = 0;
    double rvio, bvio, ovio;
    ip_residual(m, d, st, h, st.s, q.y, st.f, q.fy, rvio, bvio, ovio);
    bool chord = false;  // this iteration: the last tree factorisation and Schur columns
    for (int it = 1; it <= m.options.max_iterations; ++it) {
        out.iterations = it;
        if (!std::isfinite(rvio) || !std::isfinite(bvio)) {
            out.status = StepStatus::non_finite;
            break;
        }
        unit_gaps(m, d, st.pose3.data(), q, true);
        if (chord && reused) *reused = true;
        if (!chord) {
            if (!assemble_and_factor(m, d, st, h, out)) break;
            schur_columns(m, g, *st.ws, q, st.s.data(), h);
        }
        schur_tree_rhs(m, g, *st.ws, q, st.f.data());
        const double worst = std::max(rvio, bvio);
        const double tau = std::max(0.95, 1 - worst * worst);
        const double nu = mean_complementarity(q, q.y.data(), nullptr, 0);
        // The Mehrotra direction with the cone rows as they are; if its step to the boundary is
        // short, the one with the NT-scaled cone rows, when that goes further.
        double alpha = -1;
        for (bool nt : {false, true}) {
            if (nt && (alpha >= kCenteringStep || q.pairs == 0)) break;
            if (nt) nt_scaling(q);
            if (!schur_complement(g, q, nt)) continue;
            double* dx = alpha < 0 ? st.dx.data() : st.s_try.data();
            double* dy = alpha < 0 ? q.dy.data() : q.y_try.data();
            // Predictor: the affine direction (κ = 0) and the centring it calls for (its unit
            // part only: the tree part is the corrector's).
            newton_rows(q, q.fy.data(), nullptr, 0.0, q.fc.data(), nt);
            schur_solve(q, q.fc.data(), nullptr, q.dya.data());
            const double alpha_a = step_to_boundary(q, q.y.data(), q.dya.data(), 0.95);
            const double nu_a = mean_complementarity(q, q.y.data(), q.dya.data(), alpha_a);
            const double ratio = nu > 0 ? std::min(1.0, std::max(0.0, nu_a / nu)) : 0.0;
            const double kappa = nu * ratio * ratio * ratio;
            // Corrector.
            newton_rows(q, q.fy.data(), q.dya.data(), kappa, q.fc.data(), nt);
            schur_solve(q, q.fc.data(), dx, dy);
            const double a = step_to_boundary(q, q.y.data(), dy, tau);
            if (alpha < 0) {
                alpha = a;
            } else if (a > alpha) {
                alpha = a;
                std::swap(st.dx, st.s_try);
                std::swap(q.dy, q.y_try);
            }
        }
        if (alpha < 0) {  // no Schur complement could be factored
            if (chord) {  // (of a kept linearisation: again freshly linearised)
                chord = false;
                continue;
            }
            out.status = StepStatus::singular;
            break;
        }
        // Line search: accept unless both violations grow; trials outside the rotation guard
        // are halved away; with none accepted the last admissible trial is taken.
        bool admissible = false;
        double r_try = rvio, b_try = bvio, o_try = ovio;
        for (int hv = 0; hv <= m.options.max_halvings; ++hv, alpha *= 0.5) {
            if (hv > 0) ++out.halvings;
            for (int i = 0; i < nt; ++i) st.s_try[i] = st.s[i] - alpha * st.dx[i];
            if (!within_guard(m, st.s_try, limit)) continue;
            for (int i = 0; i < q.m; ++i) q.y_try[i] = q.y[i] - alpha * q.dy[i];
            admissible = true;
            ip_residual(m, d, st, h, st.s_try, q.y_try, st.f_try, q.fy_try, r_try, b_try, o_try);
            // Accept unless both violations grow, or either grows a hundredfold (a direction
            // that trades one for the other wholesale).
            const double worst_try = std::max(r_try, b_try);
            if (!(r_try > rvio && b_try > bvio) && worst_try <= kMaxGrowth * worst) break;
        }
        if (!admissible) {
            if (chord) {  // (no trial was evaluated: pose3 is still the iterate's)
                chord = false;
                continue;
            }
            out.status = StepStatus::rotation_limit;
            break;
        }
        const bool was_chord = chord;
        chord = chord_on && (r_try <= kChordContraction * rvio || r_try <= tol) && std::max(r_try, b_try) <= worst;
        std::swap(st.s, st.s_try);
        std::swap(st.f, st.f_try);
        std::swap(q.y, q.y_try);
        std::swap(q.fy, q.fy_try);
        rvio = r_try, bvio = b_try, ovio = o_try;
        if (rvio <= tol && bvio <= tol && ovio <= tol) {
            out.residual = std::max(rvio, bvio);
            return out;
        }
        // Stationary: the step to the boundary no longer moves the iterate (it sits on a cone's
        // boundary to round-off). Within kFloorSlack of the tolerance that is the method's floor:
        // accepted and reported (StepReport::at_floor); further off, more iterations repeat this one.
        if (alpha < kStationary && was_chord) {
            chord = false;
        } else if (alpha < kStationary) {
            if (std::max({rvio, bvio, ovio}) < kFloorSlack * tol) {
                out.at_floor = true;
                out.residual = std::max(rvio, bvio);
                out.worst_node = worst_node(g, st.f);
                return out;
            }
            if (++stalls >= kMaxStalls) break;
        } else {
            stalls = 0;
        }
    }
    out.residual = std::max(rvio, bvio);
    if (out.status == StepStatus::ok)
        out.status = std::isfinite(out.residual) ? StepStatus::not_converged : StepStatus::non_finite;
    if (out.worst_node < 0) out.worst_node = worst_node(g, st.f);
    return out;
}

}  // namespace vi_max
}  // namespace noether
