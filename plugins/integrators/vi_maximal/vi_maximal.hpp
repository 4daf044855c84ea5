// vi-maximal and vi-midpoint: the integrator class (docs/design/maximal-vi.md, midpoint-vi.md; the
// method and the source layout: the top of vi_maximal.cpp). Its Newton path is defined here, in the
// class, and compiled as one piece by vi_maximal.cpp; the interior-point step for contacts and
// limits is in interior_point.cpp.
#pragma once

#include "state.hpp"

namespace noether {
namespace vi_max {

class VIMaximal final : public Integrator {
public:
    explicit VIMaximal(bool midpoint) : midpoint_(midpoint) {}
    Scheme scheme() const override { return Scheme::implicit_fixed; }

    std::vector<std::string> option_names() const override {
        if (midpoint_) return {"max_turn", "substep_hold", "predictor", "guess", "newton", "secants"};
        return {"max_turn", "substep_hold", "predictor", "guess", "newton", "secants", "contact_tolerance"};
    }

    void check(const Model& m, std::vector<Diagnostic>& out) const override { check_options(m, name(), out); }

    // Contacts and limits: vi-maximal (contact.hpp); vi-midpoint's scaled rows and Legendre start
    // are not carried over yet.
    bool takes_inequalities() const override { return !midpoint_; }
    bool takes_couplings() const override { return true; }

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override { return make_state(m, midpoint_); }

    StepReport advance(const Model& m, Data& d) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        // Option max_turn, else the Data's whip guard.
        const int k0 = turn_substeps(m, d, st.max_turn > 0 ? st.max_turn : d.turn_guard);
        // Remembered subdivision: start where the last steps needed to be, or one halving below
        // once the hold is over.
        const int first = st.hold.first(k0, m.options.max_substeps);
        // The step's start, for the own rollback (rolls_back_itself(); State::keep_entry).
        st.begin_step();
        auto rollback = [&] {
            if (!st.back_to_entry(d)) throw UsageError(std::string(name()) + ": the integrator state did not restore from what its step kept");
        };
        StepReport report = undone_on_failure(
            [&] {
                // Subdivided: more substeps than max_turn asks for, because Newton needed them now or lately.
                return subdivide_with(
                    m, first, k0,
                    [&](int k, double) {
                        if (k > 1 || (st.any_implicit && !st.coords)) st.keep_entry(d);
                        st.first_substep = true;
                    },
                    [&](double h) {
                        const Attempt a = substep(m, d, st, h);
                        st.first_substep = false;
                        return a;
                    },
                    [](int, double) {}, rollback);
            },
            rollback);
        if (report.status == StepStatus::ok) st.hold.remember(d.step, k0, first, report.substeps);
        report.redundant_rows = st.ws->redundant_rows;  // of the last factorisation
        report.redundant_joints = &st.ws->redundant_joints;
        return report;
    }
    // A failed step (or a throw) leaves Data and the state as they were (State::keep_entry): the
    // kernel takes no step snapshot (~1k instructions a step on the double pendulum).
    bool rolls_back_itself() const override { return true; }

    bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        const double h = m.options.dt;
        set_scaling(st, h);
        prepare(m, d, st, h);
        std::copy(s, s + st.G->total_size, st.s.begin());
        residual(m, d, st, h, st.s, st.f, A != nullptr);
        std::copy(st.f.begin(), st.f.end(), f);
        if (A) {
            assemble(m, d, st, h);
            *A = st.A;
        }
        return true;
    }

    const BlockGraph& system_graph(const Model& m, const Data& d) const override {
        (void)m;
        return *static_cast<const State&>(*d.integrator_state).G;
    }

    Monitors monitors(const Model& m, const Data& d) const override { return state_monitors(m, d, midpoint_); }

private:
    // Option predictor = 2: the squared error of the quadratic extrapolation, as a fraction of the
    // linear one's, below which the next substep takes it. Newton iterations a step over 10 s, the
    // revolute chain of 2 / 16 / 64 / 512 links: linear 3.04 / 6.92 / 5.17 / 13.20; at 1 (the
    // better one) 2.41 / 6.27 / 5.05 / 14.21; at 0.25 2.42 / 6.30 / 5.00 / 13.18; at 0.05 2.48 /
    // 6.71 / 5.08 / 13.20.
    static constexpr double kQuadraticWins = 0.25;
    static constexpr double kCenteringStep = 0.1;  // interior point: a shorter step is retried NT-scaled
    static constexpr double kMaxGrowth = 100;      // interior point: largest growth of a violation in one step

    // One variational step of length h from the committed state; commits on success.
    Attempt substep(const Model& m, Data& d, State& st, double h) const {
        set_scaling(st, h);
        prepare(m, d, st, h);
        warm_start(m, d, st, h);
        Attempt out;
        if (st.ineq.any) {
            // Contacts and limits: the working set near closing by the interior-point method (none:
            // the plain Newton step); units found closed at the end join it and the step is redone.
            Inequalities& q = st.ineq;
            q.ft = st.rhoT * st.lam, q.fr = 2.0 * st.rhoR * st.lam, q.lam = st.lam;
            q.inv_rhoT = 1.0 / st.rhoT, q.inv_rhoJ = 1.0 / st.rhoJ, q.inv_rhoZ = 1.0 / st.rhoZ;
            prepare_units(m, d, q, st.first_substep);
            select_units(q, h);
            if (!q.set.empty()) drop_misses(st);
            int work = 0, factored = 0;
            for (;;) {
                bool reused = false;
                out = q.set.empty() ? newton(m, d, st, h) : interior_point(m, d, st, h, st.chord, &reused);
                if (out.status != StepStatus::ok && reused) {
                    // The chord iterations did not finish: the same solve with exact iterations
                    // before the step is subdivided (a stale linearisation can lead the iterates
                    // where the exact one would not go). Not when every iteration was freshly
                    // linearised: the exact solve would repeat this one.
                    work += out.iterations;
                    factored += out.factorizations;
                    warm_start(m, d, st, h);
                    drop_misses(st);
                    out = interior_point(m, d, st, h, false);
                }
                if (out.status != StepStatus::ok || !admit_violated(m, st.pose3.data(), q)) break;
                work += out.iterations;
                factored += out.factorizations;
                warm_start(m, d, st, h);
                drop_misses(st);
            }
            out.iterations += work;
            out.factorizations += factored;
        } else {
            out = newton(m, d, st, h);
            if (out.status != StepStatus::ok && st.misses_added) {
                // Newton failed from the prediction with the misses: once more from the prediction
                // alone before the step is subdivided, so that the misses never cost a subdivision
                // the prediction alone would not have needed.
                warm_start(m, d, st, h);
                drop_misses(st);
                Attempt again = newton(m, d, st, h);
                again.iterations += out.iterations;
                again.factorizations += out.factorizations;
                again.halvings += out.halvings;
                out = again;
            }
        }
        if (out.status == StepStatus::ok) {
            commit(m, d, st, h);
            if (st.ineq.any) commit_units(m, d, st.ineq, st.pose3.data());
        }
        return out;
    }

    // f = [f_T; f_Λ] at (s, y) for κ = 0, and its violations; leaves pose3 and the gaps of s
    // (interior_point.cpp).
    void ip_residual(const Model& m, const Data& d, State& st, double h, const std::vector<double>& s,
                     const std::vector<double>& y, std::vector<double>& fT, std::vector<double>& fy, double& rvio,
                     double& bvio, double& ovio) const;
    // Stage, with contacts or limits: the interior-point iteration (interior_point.cpp); chord_on:
    // with chord iterations (option newton = "chord"); *reused (if given) set true when an
    // iteration kept the last linearisation.
    Attempt interior_point(const Model& m, const Data& d, State& st, double h, bool chord_on,
                           bool* reused = nullptr) const;

    // Does Data still hold the velocities of the last commit? Within a step after its first
    // substep always; at its start unless a host changed the state (the kernel's test); before
    // the first commit of all, if every body starts at rest (the predictor's pair starts at 0).
    static bool velocities_kept(const Data& d, const State& st) {
        if (!st.committed) {
            for (const Twist& t : d.twist_guess)
                for (double x : {t.v.x, t.v.y, t.v.z, t.w.x, t.w.y, t.w.z})
                    if (x != 0 || std::signbit(x)) return false;
            return true;
        }
        return !st.first_substep || !d.host_changed();
    }

    // The predictor's extrapolations to the next interval from the last two (x1, x0) or three
    // (x1, x0, xm) of equal length, and whether they can be formed for a substep of length h: the
    // intervals have that length and nobody changed the velocities since (warm_start(), and
    // commit(), which judges them).
    template <class T>
    static T linear_guess(const T& x1, const T& x0) {
        return 2.0 * x1 - x0;
    }
    template <class T>
    static T quadratic_guess(const T& x1, const T& x0, const T& xm) {
        return 3.0 * (x1 - x0) + xm;
    }
    static bool linear_ready(const Data& d, const State& st, double h) {
        return st.predict && st.h_pred == h && st.dt_prev == h && velocities_kept(d, st);
    }
    static bool quadratic_ready(const Data& d, const State& st, double h) {
        return st.quadratic && st.h_pred2 == h && linear_ready(d, st, h);
    }

    // Guess "feedback" off for this substep (contacts or limits in the working set; the retry of a
    // step Newton failed): the prediction alone, and no miss recorded.
    static void drop_misses(State& st) {
        if (st.guess_kind < 0) return;
        std::copy(st.sguess.begin(), st.sguess.end(), st.s.begin());
        st.guess_kind = -1;
        st.misses_added = false;
    }

    // Stage: the unknowns start at the previous velocities (kept inside the rotation guard)
    // and multipliers.
    static void warm_start(const Model& m, const Data& d, State& st, double h) {
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        const double limit = kBranch / h;
        // Linear extrapolation from the last two steps when they and this one have the same length
        // and nobody changed the velocities since; quadratic from the last three (option predictor
        // = 2) when the step before them had that length too and the quadratic one predicted the
        // last substep it could better than the linear one (commit()).
        const bool extrapolate = linear_ready(d, st, h), ready2 = quadratic_ready(d, st, h);
        const bool quad = ready2 && st.quadratic_won, quad_lam = ready2 && st.quadratic_won_lam;
        bool clipped = false;
        for (int b = 0; b < nb; ++b) {
            double* sb = &st.s[g.node_offset[b]];
            Twist t = d.twist_guess[b];
            if (quad)
                t = {quadratic_guess(t.v, st.v_prev[b].v, st.v_prev2[b].v), quadratic_guess(t.w, st.v_prev[b].w, st.v_prev2[b].w)};
            else if (extrapolate)
                t = {linear_guess(t.v, st.v_prev[b].v), linear_guess(t.w, st.v_prev[b].w)};
            const double w = norm(t.w);
            if (w >= limit) t.w = t.w * (0.5 * limit / w), clipped = true;
            sb[0] = t.v.x, sb[1] = t.v.y, sb[2] = t.v.z, sb[3] = t.w.x, sb[4] = t.w.y, sb[5] = t.w.z;
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            for (int r = 0; r < ji.rows; ++r) {
                const int i = ji.row_offset + r;
                const double x = quad_lam      ? quadratic_guess(d.lambda[i], st.lam_prev[i], st.lam_prev2[i])
                                 : extrapolate ? linear_guess(d.lambda[i], st.lam_prev[i])
                                               : d.lambda[i];
                st.s[g.node_offset[nb + j] + r] = x / st.lam;
            }
            if (st.implicit[j])
                for (int k = 0; k < ji.dofs; ++k) st.s[g.node_offset[nb + j] + ji.rows + k] = st.u[ji.dof_offset + k] / st.lam;
        }
        // Option guess = "feedback": the predicted velocities miss by the extrapolation's truncation
        // term, which changes smoothly along a motion the step resolves; the misses of the last
        // predictions of this kind and length, extrapolated (miss_degree, commit()), are added while
        // the last two agree within kMissAgreement (where the step does not resolve the motion, a
        // whip, they jump from step to step). The bodies' velocities only (the first 6·nb unknowns:
        // node-id order): the multipliers' misses added as well cost more than they saved (the
        // peers double pendulum 26.32k against 25.98k instructions a step, both gated at 1). Not
        // past the rotation guard; not with contacts or limits in the working set (drop_misses());
        // not on mechanisms with closed loops (make_state()).
        st.misses_added = false;
        st.guess_kind = st.feedback && extrapolate && !clipped ? 3 * (quad ? 2 : 1) + (quad_lam ? 2 : 1) : -1;
        if (st.guess_kind < 0) return;
        const std::size_t nv = st.sguess.size();  // 6·nb
        std::copy(st.s.begin(), st.s.begin() + static_cast<std::ptrdiff_t>(nv), st.sguess.begin());
        if (st.miss_count < 2 || st.miss_kind != st.guess_kind || st.miss_h != h) return;
        if (!misses_agree(st.miss, 0, nv, kMissAgreement)) return;
        const int degree = std::min(st.miss_degree, st.miss_count - 1);
        for (std::size_t k = 0; k < nv; ++k) st.s[k] += extrapolated_miss(st.miss, degree, 0, k);
        for (int b = 0; b < nb; ++b) {
            const double* sb = &st.s[g.node_offset[b]];
            if (norm(Vec3{sb[3], sb[4], sb[5]}) >= limit) {  // (back to the prediction alone)
                std::copy(st.sguess.begin(), st.sguess.end(), st.s.begin());
                return;
            }
        }
        st.misses_added = true;
    }

    // Stage: Newton on f(s) = 0 from the warm start. On success st.s is the solution and
    // st.pose3 its next configuration. Option newton = "chord" (default): after an iteration
    // that took the full step and cut ‖f‖ fast enough (chord_pays), the next iterations keep
    // that factorisation (chord_step: a solve and one trial, no assembly, no factorisation) while
    // each of them does as well; a chord step that does less is taken if it lowered ‖f‖ at all
    // (else dropped) and the iteration after it assembles and factors again. "exact": assemble
    // and factor at every iterate, the confirming step excepted (chord_confirms).
    Attempt newton(const Model& m, const Data& d, State& st, double h) const {
        const BlockGraph& g = *st.G;
        const double eps = m.options.tolerance;
        Attempt out;
        double fn = residual(m, d, st, h, st.s, st.f, true);
        int stalls = 0;
        bool chord = false;  // this iteration: a chord step with the last factorisation
        bool secant = false;  // the chord steps take secant pairs (since a slow one, until a factorisation)
        double last_step = INFINITY;  // the norm of the last correction taken in full
        const double fn_first = fn;
        // After a substep accepted at the round-off floor above the tolerance (far from the origin:
        // vi-midpoint's rows scaled by 1/h), chord steps only confirm: one would stall at the floor
        // before the Newton step that accepts it.
        const bool chord_on = st.chord && !st.floor_hint;
        // Every row of f within kFloor of the size of its own terms (row_terms): the iterate solves
        // exactly a system whose every term is perturbed by less than the round-off floor the
        // stall rule below accepts; a further iteration only confirms. Asked only of an iterate
        // within the tolerance reached by a fast contraction (a chord step that pays, a Newton step
        // after which one would), not of a stalled one: near a singular pose the multipliers' large
        // terms make the floor coarse while the iterate is still moving (the dense-lu four-bar
        // folding, test_hardening, failed a step at t = 12 s when any iterate was judged so). The
        // terms' sizes are taken at the first iterate asked and kept for the rest of the solve.
        bool sized = false;
        auto at_round_off = [&] {
            if (!sized) row_terms(m, d, st, h, st.s, st.terms), sized = true;
            for (int i = 0; i < g.total_size; ++i)
                if (!(std::fabs(st.f[i]) <= kFloor * st.terms[i])) return false;
            return true;
        };
        auto finish = [&](Attempt& o, double f) {
            st.floor_hint = !(f < eps);
            o.residual = f;
            return o;
        };
        for (int it = 1; it <= m.options.max_iterations; ++it) {
            out.iterations = it;
            if (!std::isfinite(fn)) {
                out.status = StepStatus::non_finite;
                break;
            }
            if (chord) {
                const double fn_before = fn;
                const ChordStep c = chord_step(m, d, st, h, eps, fn, secant);
                // Converged as after chord_confirms(): within the tolerance, and the step was small
                // or no longer halved ‖f‖ (round-off); or ‖f‖ is down to kChordResidual of the
                // step's first and the corrections contract at a rate θ <= kChordContraction for
                // which θ / (1 − θ) ‖dx‖ < eps: the corrections still to come would add up to less
                // than the tolerance (the simplified Newton's stopping rule of Hairer & Wanner,
                // Solving ODEs II, IV.8), so the confirming step that would find so is not taken.
                const double step = vnorm(st.dx), theta = step / last_step;
                if (c != ChordStep::dropped) last_step = step;
                if (c != ChordStep::dropped && fn < eps &&
                    (step < eps || c == ChordStep::slow ||
                     (fn < kChordResidual * fn_first && theta <= kChordContraction && theta / (1 - theta) * step < eps) ||
                     (c == ChordStep::fast && at_round_off())))
                    return finish(out, fn);
                // (A chord step that stalls says nothing about the round-off floor: the Newton step
                // after it judges that. Accepting at the floor after a stalled chord step failed the
                // dense-lu four-bar at its folded pose: test_hardening.)
                // With secant pairs (option secants) a slow step that still contracted by
                // kChordContraction keeps the factorisation too: from it on, each chord step adds a
                // pair (the first: this step's update, recorded now) and is corrected by the last
                // ones along the directions the factorisation misses. Fast steps take no pairs: the
                // double pendulum's chord steps, nearly all fast, paid 0.7 % of its step for their
                // bookkeeping; the 256-link chain saved 0.9 % more with them.
                chord = chord_on && (c == ChordStep::fast || (c == ChordStep::slow && st.sec.capacity() > 0 &&
                                                              fn <= kChordContraction * fn_before));
                if (chord && !secant && c == ChordStep::slow) {
                    st.sec.correct(st.dx.data());  // (no pairs yet: records the update only)
                    secant = true;
                }
                continue;
            }
            if (!assemble_and_factor(m, d, st, h, out)) break;
            st.sec.drop();  // (pairs of the last factorisation's chord steps)
            secant = false;
            // f is solved in place as dx (no copy: on the 512-link chain a copy of f before each
            // solve was 5 % of the step's instructions); f is the trial's after the line search.
            std::swap(st.dx, st.f);
            m.solver->solve(g, *st.ws, st.dx.data());
            double alpha = 1, fn_try = fn;
            if (!line_search(m, d, st, h, fn, alpha, fn_try, out.halvings)) {
                out.status = StepStatus::rotation_limit;
                residual(m, d, st, h, st.s, st.f);  // f(s) again, for the failure's worst node
                break;
            }
            const bool stalled = !(fn_try <= 0.5 * fn);
            chord = chord_on && alpha == 1 && chord_pays(fn, fn_try, eps);
            std::swap(st.s, st.s_try);  // the last evaluated trial is taken even if not accepted
            std::swap(st.f, st.f_try);
            fn = fn_try;
            last_step = alpha == 1 ? vnorm(st.dx) : INFINITY;
            if (fn < eps && (alpha * vnorm(st.dx) < eps || stalled || (chord && at_round_off()))) return finish(out, fn);
            // At the round-off floor of large terms: accepted only if the joints themselves meet the
            // tolerance (a stalled step is never committed with its constraints violated).
            if (stalled && fn < kFloor * round_off_scale(m, d, st, h, st.s) && joints_within(m, st, eps)) return finish(out, fn);
            if (stalled && fn >= eps && alpha * vnorm(st.dx) <= kStationary * std::max(1.0, vnorm(st.s))) {
                if (fn < kFloorSlack * eps) {
                    out.at_floor = true;
                    out.worst_node = worst_node(*st.G, st.f);
                    return finish(out, fn);
                }
                break;  // stationary far above the tolerance: more iterations repeat this one
            }
            stalls = stalled && fn >= eps ? stalls + 1 : 0;
            if (stalls >= kMaxStalls) break;
            if (st.chord) {
                chord = chord || fn < eps;  // (within the tolerance: the next chord step confirms)
            } else if (fn < eps && it < m.options.max_iterations && chord_confirms(m, d, st, h, fn)) {
                out.iterations = it + 1;
                return finish(out, fn);
            }
        }
        out.residual = fn;
        if (out.status == StepStatus::ok) out.status = std::isfinite(fn) ? StepStatus::not_converged : StepStatus::non_finite;
        if (out.worst_node < 0) out.worst_node = worst_node(*st.G, st.f);
        return out;
    }

    // An iteration took ‖f‖ from before to after: is a chord step next worth it? When ‖f‖ fell to
    // kChordContraction of what it was or less and kChordSteps more steps at that rate would reach
    // the tolerance.
    static bool chord_pays(double before, double after, double eps) {
        const double rate = after / before;
        if (!(rate <= kChordContraction)) return false;
        double left = after;
        for (int k = 0; k < kChordSteps; ++k) left *= rate;
        return left < eps;
    }

    // The correction with the current factorisation into dx and s_try = s − dx; its residual into
    // f_try and fc (and pose3 its configuration), unless s_try breaks the rotation guard: false,
    // and f, pose3 and J3 are those of s again (f is solved in place).
    bool chord_trial(const Model& m, const Data& d, State& st, double h, double& fc, bool secant) const {
        const BlockGraph& g = *st.G;
        std::swap(st.dx, st.f);  // solved in place (as in newton())
        m.solver->solve(g, *st.ws, st.dx.data());
        // Corrected by the secant pairs of the chord steps before it (the iteration on −s with the
        // update dx: SecantPairs' x ← x + f with x = −s, f = dx).
        if (secant) st.sec.correct(st.dx.data());
        for (int i = 0; i < g.total_size; ++i) st.s_try[i] = st.s[i] - st.dx[i];
        if (!within_guard(m, st.s_try, kBranch / h)) {
            residual(m, d, st, h, st.s, st.f, true);  // f(s) again (and J3: Newton assembles there next)
            return false;
        }
        fc = residual(m, d, st, h, st.s_try, st.f_try);
        return true;
    }

    // Stage: one chord step (the last factorisation, the full step, no line search). Taken if it
    // lowers ‖f‖ or ends within the tolerance (s, f, fn updated; fast if chord_pays: the next
    // iteration is a chord step too); otherwise dropped: the current iterate is evaluated again
    // (pose3, J3: the next iteration assembles there).
    enum class ChordStep { dropped, slow, fast };
    ChordStep chord_step(const Model& m, const Data& d, State& st, double h, double eps, double& fn, bool secant) const {
        double fc = INFINITY;
        const bool evaluated = chord_trial(m, d, st, h, fc, secant);
        if (!(fc < fn || fc < eps)) {
            if (evaluated) residual(m, d, st, h, st.s, st.f, true);
            return ChordStep::dropped;
        }
        std::swap(st.s, st.s_try);
        std::swap(st.f, st.f_try);
        const bool fast = chord_pays(fn, fc, eps);
        fn = fc;
        return fast ? ChordStep::fast : ChordStep::slow;
    }

    // Every constraint row of the last evaluated residual within eps (in units of g), or within the
    // resolution of its bodies' positions where that is coarser (row_limit: a joint 1000 km
    // out cannot be closed to 1e-10).
    static bool joints_within(const Model& m, const State& st, double eps) {
        const BlockGraph& g = *st.G;
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const double* fj = &st.f[g.node_offset[m.nbodies() + j]];
            const double lim = row_limit(ji, st.pose3.data(), eps) * st.rhoJ;
            for (int r = 0; r < ji.rows; ++r)
                if (!(std::fabs(fj[r]) < lim)) return false;
        }
        return true;
    }

    // Stage: backtracking line search on ‖f‖ along −dx; trials that break the rotation guard
    // are halved away. Leaves the last evaluated trial in s_try/f_try; false if none was
    // admissible.
    bool line_search(const Model& m, const Data& d, State& st, double h, double fn, double& alpha, double& fn_try,
                     int& halvings) const {
        const BlockGraph& g = *st.G;
        const double limit = kBranch / h;
        bool admissible = false;
        for (int hv = 0; hv <= m.options.max_halvings; ++hv, alpha *= 0.5) {
            if (hv > 0) ++halvings;
            for (int i = 0; i < g.total_size; ++i) st.s_try[i] = st.s[i] - alpha * st.dx[i];
            if (!within_guard(m, st.s_try, limit)) continue;
            admissible = true;
            fn_try = residual(m, d, st, h, st.s_try, st.f_try);
            if (fn_try < fn || fn_try < m.options.tolerance) break;
        }
        return admissible;
    }

    // Stage: the residual is converged but the step that got there was not yet small, so the
    // next Newton step only confirms. Take it as a chord step with the current factorisation
    // (no assembly, no factorisation). True (and s, f, fn updated) if it confirms; otherwise
    // the current iterate is evaluated again (pose3, J3) and Newton goes on as usual.
    bool chord_confirms(const Model& m, const Data& d, State& st, double h, double& fn) const {
        const double eps = m.options.tolerance;
        double fc = INFINITY;
        if (!chord_trial(m, d, st, h, fc, false)) return false;
        if (fc < eps && (vnorm(st.dx) < eps || !(fc <= 0.5 * fn))) {
            std::swap(st.s, st.s_try);
            std::swap(st.f, st.f_try);
            fn = fc;
            return true;
        }
        residual(m, d, st, h, st.s, st.f, true);
        return false;
    }

    // Stage: write the accepted solution into Data (pose3 holds the configuration of the
    // accepted s, the last one evaluated).
    void commit(const Model& m, Data& d, State& st, double h) const {
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        // The predictor's pair: the velocities and multipliers this step started from, if they
        // were the previous commit's (else no pair); with predictor = 2 also the pair's older
        // velocities and multipliers (v_prev2, lam_prev2, their interval h_pred2).
        const bool kept = velocities_kept(d, st);
        if (st.quadratic) {
            // Which extrapolation would have come closer to this substep's velocities, whichever
            // was taken: the next substep takes the quadratic one if it came at least twice as
            // close (kQuadraticWins) — its coefficients (3, −3, 1 against 2, −1) carry more of the
            // velocities' round-off, and a whip, not smooth over three steps, is predicted no
            // better by it. The multipliers are judged on their own: at a singular pose (a
            // four-bar folding) they are not smooth where the velocities are; extrapolated
            // quadratically with the velocities, the folding four-bar of test_hardening failed a
            // step at t = 6.2 s even with 16 substeps.
            if (quadratic_ready(d, st, h)) {
                double el = 0, eq = 0;
                for (int b = 0; b < nb; ++b) {
                    const double* sb = &st.s[g.node_offset[b]];
                    const Twist& w1 = d.twist_guess[b];
                    const Twist& w0 = st.v_prev[b];
                    const Twist& wm = st.v_prev2[b];
                    const Vec3 nv{sb[0], sb[1], sb[2]}, nw{sb[3], sb[4], sb[5]};
                    const Vec3 lv = nv - linear_guess(w1.v, w0.v), lw = nw - linear_guess(w1.w, w0.w);
                    const Vec3 qv = nv - quadratic_guess(w1.v, w0.v, wm.v), qw = nw - quadratic_guess(w1.w, w0.w, wm.w);
                    el += dot(lv, lv) + dot(lw, lw);
                    eq += dot(qv, qv) + dot(qw, qw);
                }
                st.quadratic_won = eq < kQuadraticWins * el;
                el = eq = 0;
                for (int j = 0; j < m.njoints(); ++j) {
                    const JointInfo& ji = m.joints[j];
                    for (int r = 0; r < ji.rows; ++r) {
                        const int i = ji.row_offset + r;
                        const double x = st.s[g.node_offset[nb + j] + r] * st.lam;
                        const double l = x - linear_guess(d.lambda[i], st.lam_prev[i]);
                        const double q = x - quadratic_guess(d.lambda[i], st.lam_prev[i], st.lam_prev2[i]);
                        el += l * l;
                        eq += q * q;
                    }
                }
                st.quadratic_won_lam = eq < kQuadraticWins * el;
            }
            st.h_pred2 = kept && st.h_pred != 0 ? st.h_pred : 0;
            st.v_prev2.swap(st.v_prev);
            st.lam_prev2.swap(st.lam_prev);
        }
        if (st.feedback) {  // this substep's miss (warm_start())
            if (st.guess_kind < 0) {
                st.miss_count = 0;
            } else {
                const bool same = st.miss_count > 0 && st.miss_kind == st.guess_kind && st.miss_h == h;
                shift_misses(st.miss);
                for (std::size_t k = 0; k < st.sguess.size(); ++k) st.miss[0][k] = st.s[k] - st.sguess[k];
                st.miss_count = misses_after_record(st.miss_count, same);
                st.miss_kind = st.guess_kind;
                st.miss_h = h;
                if (!same) st.miss_degree = 1, st.miss_judged = 0;
                // The degree: the one whose extrapolation from the older misses came closest to this
                // one, judged at the fifth miss in a row and every kJudgeMisses after.
                if (st.miss_count == kGuessMisses) {
                    if (st.miss_judged == 0) st.miss_degree = best_miss_degree(st.miss, st.miss_count, 0, st.sguess.size());
                    st.miss_judged = (st.miss_judged + 1) % kJudgeMisses;
                }
            }
        }
        st.h_pred = kept ? st.dt_prev : 0;
        std::copy(d.twist_guess.begin(), d.twist_guess.end(), st.v_prev.begin());
        std::copy(d.lambda.begin(), d.lambda.end(), st.lam_prev.begin());
        for (int b = 0; b < nb; ++b) {
            const double* sb = &st.s[g.node_offset[b]];
            d.pose[b] = {st.pose3[b].x, qnormalized(st.pose3[b].q)};
            d.twist[b] = {{sb[0], sb[1], sb[2]}, {sb[3], sb[4], sb[5]}};
            d.twist_guess[b] = d.twist[b];
        }
        st.committed = true;
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            for (int r = 0; r < ji.rows; ++r) d.lambda[ji.row_offset + r] = st.s[g.node_offset[nb + j] + r] * st.lam;
            if (!st.implicit[j]) continue;
            for (int k = 0; k < ji.dofs; ++k) {  // c3 is that of the accepted s, the last evaluated
                const int i = ji.dof_offset + k;
                st.u[i] = st.s[g.node_offset[nb + j] + ji.rows + k] * st.lam;
                st.c1[i] = st.c2[i];
                st.c2[i] = st.c3[i];
            }
        }
        st.dt_prev = h;
        if (midpoint_) {  // this interval's input values become the previous ones
            st.started = true;
            st.prev_force = d.applied_force;
            st.prev_torque = d.applied_torque;
            st.prev_u = d.actuation;
        }
    }

    // Row scaling and the start flag of a substep of length h.
    void set_scaling(State& st, double h) const {
        if (midpoint_) {
            st.rhoT = h, st.rhoR = 0.5 * h, st.rhoJ = 1.0 / h, st.lam = 1.0 / h, st.rhoZ = h;
            st.start = !st.started;
        } else {
            st.rhoT = st.rhoR = st.rhoJ = st.lam = st.rhoZ = 1.0;
            st.start = false;
        }
    }

    // Stage: prepare a step: forcing and config-2 Jacobians (constant during the Newton
    // iterations), written into the force-mapping blocks F[b, j] = −[∂g/∂xᵀ; 2 ∂g/∂θᵀ].
    void prepare(const Model& m, const Data& d, State& st, double h) const {
        Inputs avg = d.inputs();
        if (midpoint_ && !st.start) {
            // Midpoint sampling: the node gets the average of the two adjacent intervals' input
            // values, mapped at its own configuration.
            for (int b = 0; b < m.nbodies(); ++b) {
                st.cur_force[b] = 0.5 * (st.prev_force[b] + d.applied_force[b]);
                st.cur_torque[b] = 0.5 * (st.prev_torque[b] + d.applied_torque[b]);
            }
            for (int k = 0; k < m.total_dofs; ++k) st.cur_u[k] = 0.5 * (st.prev_u[k] + d.actuation[k]);
            avg = Inputs{st.cur_u.data(), st.cur_force.data(), st.cur_torque.data()};
        }
        if (st.any_implicit) {
            // Springs and dampers are unknowns of the step: only the inputs act explicitly.
            input_wrenches(m, avg, d.pose.data(), st.wrench.data());
            if (!st.coords) {
                // The first step: the current coordinates are the Data's; the previous node lies
                // one interval back along the current rates.
                for (int i = 0; i < m.total_dofs; ++i) {
                    st.c2[i] = d.coord[i];
                    st.c1[i] = d.coord[i] - st.dt_prev * d.rate[i];
                }
                st.coords = true;
            }
        } else {
            applied_wrenches(m, d, avg, d.pose.data(), d.twist.data(), st.wrench.data());
        }
        if (st.start)  // the start node receives half of the first interval's impulse
            for (Wrench& w : st.wrench) w.force = 0.5 * w.force, w.torque = 0.5 * w.torque;
        // Incoming angular momentum: the last interval's (first-order units), or at the Legendre
        // start the continuous one (with half of gravity's impulse, in residual()). Fixed during
        // the substep's iterations.
        for (int b = 0; b < m.nbodies(); ++b) {
            const Vec3& w1 = d.twist[b].w;
            const Vec3 Jw1 = m.bodies[b].inertia * w1;
            st.in_R[b] = st.start ? (2.0 / h) * Jw1 : (st.dt_prev / h) * (s_of(w1, st.dt_prev) * Jw1 - cross(w1, Jw1));
        }
        const BlockGraph& g = *st.G;
        double sc[6];  // row r of F[b, j]: the scale of ∂g/∂x (r < 3) or of 2 ∂g/∂θ
        for (int r = 0; r < 6; ++r) sc[r] = (r < 3 ? -st.rhoT : -2.0 * st.rhoR) * st.lam;
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const std::size_t o = 6 * static_cast<std::size_t>(ji.row_offset);
            const Pose a = ji.a >= 0 ? d.pose[ji.a] : Pose{};
            ji.impl->constraint(a, d.pose[ji.b], &st.g[ji.row_offset], ji.a >= 0 ? &st.J2a[o] : nullptr, &st.J2b[o]);
            const int mj = ji.rows, nj = g.node_size[m.nbodies() + j];
            const std::size_t oc = 6 * static_cast<std::size_t>(ji.dof_offset);
            if (st.implicit[j]) implicit_terms(m, d, st, h, j);
            for (int side = 0; side < 2; ++side) {
                double* B = st.A.bj(j, side);
                if (!B) continue;
                const double* J = side == 0 ? &st.J2a[o] : &st.J2b[o];
                for (int c = 0; c < mj; ++c)
                    for (int r = 0; r < 6; ++r) B[r * nj + c] = sc[r] * J[c * 6 + r];
                if (!st.implicit[j]) continue;
                const double* C = side == 0 ? &st.C2a[oc] : &st.C2b[oc];  // the force through Cᵀ, like an actuation
                for (int k = 0; k < ji.dofs; ++k)
                    for (int r = 0; r < 6; ++r) B[r * nj + mj + k] = sc[r] * C[k * 6 + r];
            }
        }
    }

    // The implicit force of joint j for a step of length h: the Jacobians of its current
    // coordinates, and u(c3) = alpha − kappa c3 (see the top of the file).
    void implicit_terms(const Model& m, const Data& d, State& st, double h, int j) const {
        const JointInfo& ji = m.joints[j];
        const Pose a = ji.a >= 0 ? d.pose[ji.a] : Pose{};
        const std::size_t oc = 6 * static_cast<std::size_t>(ji.dof_offset);
        ji.impl->coordinate_jacobian(a, d.pose[ji.b], ji.a >= 0 ? &st.C2a[oc] : nullptr, &st.C2b[oc]);
        const double ratio = st.dt_prev / h;
        // A spring K at rest position r and a damper dmp on coordinate i: u = alpha − kappa c3.
        // spring: −K [ (ratio/2)((c1 + c2)/2 − r) + ½((c2 + c3)/2 − r) ], the first part only
        // after the start of vi-midpoint (which takes half of the first interval alone);
        // damper: −(d/2h)(c3 − c1), the mean of the two intervals' rates (at the start of
        // vi-midpoint half of the first interval's: −(d/2h)(c3 − c2)).
        struct Linear {
            double alpha, kappa;
        };
        auto spring_damper = [&](int i, double K, double r, double dmp) {
            const double c1 = st.c1[i], c2 = st.c2[i];
            const double spring_known = st.start ? -0.5 * K * (0.5 * c2 - r)
                                                 : -K * (0.5 * ratio * (0.5 * (c1 + c2) - r) + 0.5 * (0.5 * c2 - r));
            const double damp_alpha = 0.5 * dmp * (st.start ? c2 : c1) / h, damp_kappa = 0.5 * dmp / h;
            return Linear{spring_known + damp_alpha, 0.25 * K + damp_kappa};
        };
        for (int k = 0; k < ji.dofs; ++k) {
            const int i = ji.dof_offset + k;
            const Linear u = spring_damper(i, ji.stiffness[k], ji.rest[k], ji.damping[k]);
            st.alpha[i] = u.alpha;
            st.kappa[i] = u.kappa;
            // Armature a: the discrete kinetic energy ½ a ((c3 − c2)/h)² h of the coordinate gives
            // the node the force −(a/h)((c3 − c2)/h − (c2 − c1)/h1), the rate change over the node
            // like a body's (m/h)(v2 − v1) (at the start of vi-midpoint c1 lies one interval back
            // along the continuous rate, so the incoming rate is the continuous one).
            // Written as alpha + beta (c2 − c3) (beta = a/h²: no cancellation of two large terms), its
            // row scaled by 1/(1 + a/h), which keeps c3's round-off (× a/h²) below the tolerance.
            const double a = ji.armature[k];
            if (a != 0) {
                st.alpha[i] += (a / h) * (st.c2[i] - st.c1[i]) / st.dt_prev;
                st.beta[i] = a / (h * h);
                st.zscale[i] = 1.0 / (1.0 + a / h);
            }
        }
        if (ji.servo == ServoSpec::Kind::none) return;
        // A servo (1 DOF, docs/servos.md): a spring kp to its target and a damper kv discretised
        // like the joint's own, and its constant force like an actuation (half at the start).
        const ServoTerms sv = servo_terms(m, d, j);
        const Linear u = spring_damper(ji.dof_offset, sv.kp, sv.target, sv.kv);
        st.alpha[ji.dof_offset] += u.alpha + (st.start ? 0.5 : 1.0) * sv.force;
        st.kappa[ji.dof_offset] += u.kappa;
    }

    // The terms of body b's rows of f(s) that depend on its velocities (sb: its unknowns), shared by
    // residual() and round_off_scale().
    struct BodyTerms {
        Vec3 v2, w2, Jw2, in_R;  // new velocities, J ω2, incoming angular momentum
        double s2;
    };
    static BodyTerms body_terms(const Model& m, const State& st, double h, const double* sb, int b) {
        BodyTerms t;
        t.v2 = {sb[0], sb[1], sb[2]};
        t.w2 = {sb[3], sb[4], sb[5]};
        t.s2 = s_of(t.w2, h);
        t.Jw2 = m.bodies[b].inertia * t.w2;
        t.in_R = st.in_R[b];
        return t;
    }

    // The size of the terms of body b's translational and rotational rows (ρ_T, ρ_R included; a
    // vector's size by `size`: euclidean for round_off_scale(), sum_abs for row_terms()), and of a
    // force row i of the implicit joint coordinates (zl: its z · lam): for the round-off floor.
    template <class Norm>
    static void body_term_sizes(const Model& m, const Data& d, const State& st, double h, const BodyTerms& t, int b,
                                Norm size, double& tT, double& tR) {
        const BodyInfo& body = m.bodies[b];
        const Wrench& F = st.wrench[b];
        tT = st.rhoT * (body.mass / h * (size(t.v2) + size(d.twist[b].v)) + body.mass * size(m.gravity) + size(F.force));
        tR = st.rhoR * (t.s2 * size(t.Jw2) + size(t.w2) * size(t.Jw2) + size(t.in_R) + 2.0 * size(F.torque));
    }
    static double euclidean(const Vec3& v) { return norm(v); }
    static double sum_abs(const Vec3& v) { return std::fabs(v.x) + std::fabs(v.y) + std::fabs(v.z); }
    static double force_row_size(const State& st, int i, double zl) {
        double t = (st.rhoZ * st.zscale[i]) * (std::fabs(zl) + std::fabs(st.alpha[i]) + std::fabs(st.kappa[i] * st.c3[i]));
        if (st.beta[i] != 0) t += (st.rhoZ * st.zscale[i]) * st.beta[i] * std::fabs(st.c3[i]);
        return t;
    }

    // f(s) and ‖f‖; also leaves the next configuration of s in st.pose3, and with `jacobians` the
    // joints' Jacobians there in J3a/J3b (for the assembly that follows: the same call gives the
    // value and the Jacobians, so assemble() does not evaluate the constraints again).
    double residual(const Model& m, const Data& d, State& st, double h, const std::vector<double>& s,
                    std::vector<double>& f, bool jacobians = false) const {
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        for (int b = 0; b < nb; ++b) {
            const BodyInfo& body = m.bodies[b];
            const BodyTerms t = body_terms(m, st, h, &s[g.node_offset[b]], b);
            const Vec3 &v2 = t.v2, &w2 = t.w2;
            st.pose3[b].x = d.pose[b].x + h * v2;
            st.pose3[b].q = d.pose[b].q * Quat{0.5 * h * t.s2, 0.5 * h * w2.x, 0.5 * h * w2.y, 0.5 * h * w2.z};
            const Wrench& F = st.wrench[b];
            const double cg = st.start ? 0.5 : 1.0;
            const Vec3 dT = (body.mass / h) * (v2 - d.twist[b].v) - cg * body.mass * m.gravity - F.force;
            const Vec3 dR = t.s2 * t.Jw2 + cross(w2, t.Jw2) - t.in_R - 2.0 * F.torque;
            double* fb = &f[g.node_offset[b]];
            fb[0] = st.rhoT * dT.x, fb[1] = st.rhoT * dT.y, fb[2] = st.rhoT * dT.z;
            fb[3] = st.rhoR * dR.x, fb[4] = st.rhoR * dR.y, fb[5] = st.rhoR * dR.z;
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const double* lam = &s[g.node_offset[nb + j]];
            const int mj = ji.rows, nj = g.node_size[nb + j];
            for (int side = 0; side < 2; ++side) {
                const double* B = st.A.bj(j, side);
                if (!B) continue;
                add_block_times(nj, B, lam, &f[g.node_offset[side == 0 ? ji.a : ji.b]]);
            }
            const Pose a = ji.a >= 0 ? st.pose3[ji.a] : Pose{};
            double* fj = &f[g.node_offset[nb + j]];
            // The value only, unless the matrix is rebuilt at this iterate next (assemble()): not
            // for line-search trials or the confirming step.
            if (jacobians) {
                const std::size_t o = 6 * static_cast<std::size_t>(ji.row_offset);
                ji.impl->constraint(a, st.pose3[ji.b], fj, ji.a >= 0 ? &st.J3a[o] : nullptr, &st.J3b[o]);
            } else {
                ji.impl->constraint(a, st.pose3[ji.b], fj, nullptr, nullptr);
            }
            if (st.rhoJ != 1.0)
                for (int r = 0; r < mj; ++r) fj[r] *= st.rhoJ;
            if (!st.implicit[j]) continue;
            // Force rows: ρ_Z (z·lam − u(c3)), c3 unwrapped against c2.
            double prev[kMaxJointDofs], c3[kMaxJointDofs];
            for (int k = 0; k < ji.dofs; ++k) prev[k] = st.c2[ji.dof_offset + k] - ji.offset[k];
            ji.impl->coordinates(a, st.pose3[ji.b], prev, c3);
            for (int k = 0; k < ji.dofs; ++k) {
                const int i = ji.dof_offset + k;
                st.c3[i] = c3[k] + ji.offset[k];
                double u = st.alpha[i] - st.kappa[i] * st.c3[i];
                if (st.beta[i] != 0) u += st.beta[i] * (st.c2[i] - st.c3[i]);  // armature
                const double zl = lam[mj + k] * st.lam;
                fj[mj + k] = (st.rhoZ * st.zscale[i]) * (zl - u);
            }
        }
        st.j3_current = jacobians;
        return vnorm(f);
    }

    // The size of the terms that make up f(s), for the round-off floor: the norm of their summed
    // magnitudes, term by term as in residual(). Only asked for when Newton stalls; s must be the
    // last evaluated iterate (st.c3 is its coordinates, st.pose3 its configuration).
    // A constraint row g(q3) is a difference of world positions (a point row: xb + Rb pb − xa −
    // Ra pa) or of unit-quaternion components (a rotation row); its terms are taken as 1 + |xa| +
    // |xb|, times the row scale ρ_J. vi-midpoint scales these rows by 1/h, so their round-off grows
    // as a step is subdivided (the 512-link chain: 1.1e-10 at h = 0.005 up to 6.1e-10 at 16 substeps
    // with every joint within 1e-14 of closure): left out, substeps only raised the floor they
    // could not get under.
    double round_off_scale(const Model& m, const Data& d, const State& st, double h, const std::vector<double>& s) const {
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        double scale2 = 0;
        for (int b = 0; b < nb; ++b) {
            double tT, tR;
            body_term_sizes(m, d, st, h, body_terms(m, st, h, &s[g.node_offset[b]], b), b, euclidean, tT, tR);
            scale2 += tT * tT + tR * tR;
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const double* lam = &s[g.node_offset[nb + j]];
            const int mj = ji.rows, nj = g.node_size[nb + j];
            const double tg = st.rhoJ * row_magnitude(ji, st.pose3.data());
            scale2 += mj * tg * tg;
            for (int side = 0; side < 2; ++side) {
                const double* B = st.A.bj(j, side);
                if (!B) continue;
                double mag[6] = {};
                add_block_times<true>(nj, B, lam, mag);
                for (int r = 0; r < 6; ++r) scale2 += mag[r] * mag[r];
            }
            if (!st.implicit[j]) continue;
            for (int k = 0; k < ji.dofs; ++k) {
                const double t = force_row_size(st, ji.dof_offset + k, lam[mj + k] * st.lam);
                scale2 += t * t;
            }
        }
        return std::sqrt(scale2);
    }

    // The size of the terms that make up each row of f(s), row by row: a body's rows the sizes of
    // its momentum, gravity and applied terms (each vector's size the sum of its components'
    // magnitudes: no square roots, and never below the Euclidean norm round_off_scale() takes)
    // plus the magnitudes |B_rc λ_c| of the joints' reactions on the row; a joint's rows
    // 1 + |xa| + |xb|; a force row its force terms.
    void row_terms(const Model& m, const Data& d, const State& st, double h, const std::vector<double>& s,
                   std::vector<double>& out) const {
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        for (int b = 0; b < nb; ++b) {
            double tT, tR;
            body_term_sizes(m, d, st, h, body_terms(m, st, h, &s[g.node_offset[b]], b), b, sum_abs, tT, tR);
            double* o = &out[g.node_offset[b]];
            o[0] = o[1] = o[2] = tT;
            o[3] = o[4] = o[5] = tR;
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const double* lam = &s[g.node_offset[nb + j]];
            const int mj = ji.rows, nj = g.node_size[nb + j];
            double* o = &out[g.node_offset[nb + j]];
            const double tg = st.rhoJ * row_magnitude(ji, st.pose3.data());
            for (int r = 0; r < mj; ++r) o[r] = tg;
            for (int side = 0; side < 2; ++side) {
                const double* B = st.A.bj(j, side);
                if (!B) continue;
                add_block_times<true>(nj, B, lam, &out[g.node_offset[side == 0 ? ji.a : ji.b]]);
            }
            if (!st.implicit[j]) continue;
            for (int k = 0; k < ji.dofs; ++k) o[mj + k] = force_row_size(st, ji.dof_offset + k, lam[mj + k] * st.lam);
        }
    }

    // fb += B lam for a body's 6 × nj block of the matrix (the joint's reaction on the body); each
    // entry sums its terms in column order. With Sizes, fb += |B| |lam| entry by entry instead (the
    // size of those terms, row_terms()). The row counts of the shipped joints call the body with a
    // constant nj, where its loops unroll.
    template <bool Sizes>
    static inline __attribute__((always_inline)) void add_block_times_n(int nj, const double* B, const double* lam,
                                                                        double* fb) {
        for (int r = 0; r < 6; ++r) {
            double acc = 0;
            for (int c = 0; c < nj; ++c) acc += Sizes ? std::fabs(B[r * nj + c] * lam[c]) : B[r * nj + c] * lam[c];
            fb[r] += acc;
        }
    }
    template <bool Sizes = false>
    static void add_block_times(int nj, const double* B, const double* lam, double* fb) {
        switch (nj) {
            case 1: return add_block_times_n<Sizes>(1, B, lam, fb);
            case 2: return add_block_times_n<Sizes>(2, B, lam, fb);
            case 3: return add_block_times_n<Sizes>(3, B, lam, fb);
            case 4: return add_block_times_n<Sizes>(4, B, lam, fb);
            case 5: return add_block_times_n<Sizes>(5, B, lam, fb);
            case 6: return add_block_times_n<Sizes>(6, B, lam, fb);
            default: return add_block_times_n<Sizes>(nj, B, lam, fb);
        }
    }

    // A fresh linearisation for Newton and the interior point: the Newton matrix at the current s
    // (assemble), factored by the Model's solver and counted in out; false if singular (out.status,
    // out.worst_node the failed node).
    bool assemble_and_factor(const Model& m, const Data& d, State& st, double h, Attempt& out) const {
        assemble(m, d, st, h);
        ++out.factorizations;
        if (m.solver->factor(*st.G, st.A, *st.ws)) return true;
        out.status = StepStatus::singular;
        out.worst_node = st.ws->failed_node;
        out.solver_error = &st.ws->error;
        return false;
    }

    // Newton matrix at the current s (whose next configuration is in st.pose3).
    void assemble(const Model& m, const Data& d, State& st, double h) const {
        (void)d;
        const int nb = m.nbodies();
        const BlockGraph& g = *st.G;
        for (int b = 0; b < nb; ++b) {
            const BodyInfo& body = m.bodies[b];
            const double* sb = &st.s[g.node_offset[b]];
            const Vec3 w{sb[3], sb[4], sb[5]};
            const double s2 = s_of(w, h);
            const Vec3 Jw = body.inertia * w;
            // D_R = (s2 I + [ω]×) J − [Jω]× − (Jω) ωᵀ / s2
            const Mat3 DR = (s2 * Mat3::identity() + skew(w)) * body.inertia - skew(Jw) - (1.0 / s2) * outer(Jw, w);
            double* D = st.A.diag(b);
            std::memset(D, 0, sizeof(double) * 36);
            for (int i = 0; i < 3; ++i) {
                D[i * 6 + i] = st.rhoT * body.mass / h;
                for (int k = 0; k < 3; ++k) D[(3 + i) * 6 + 3 + k] = st.rhoR * DR.m[i][k];
            }
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            // Jacobians at the next configuration of s (pose3, left by the last residual(), which
            // may have made them); the value goes to scratch.
            const std::size_t o = 6 * static_cast<std::size_t>(ji.row_offset);
            const std::size_t oc = 6 * static_cast<std::size_t>(ji.dof_offset);
            const Pose a = ji.a >= 0 ? st.pose3[ji.a] : Pose{};
            if (!st.j3_current)
                ji.impl->constraint(a, st.pose3[ji.b], &st.g[ji.row_offset], ji.a >= 0 ? &st.J3a[o] : nullptr, &st.J3b[o]);
            if (st.implicit[j])
                ji.impl->coordinate_jacobian(a, st.pose3[ji.b], ji.a >= 0 ? &st.C3a[oc] : nullptr, &st.C3b[oc]);
            const int nj = g.node_size[nb + j];
            if (st.implicit[j]) {  // ∂(force rows)/∂z = ρ_Z lam I; constraint rows have no diagonal
                double* D = st.A.diag(nb + j);
                std::memset(D, 0, sizeof(double) * nj * nj);
                for (int k = ji.rows; k < nj; ++k) D[k * nj + k] = (st.rhoZ * st.zscale[ji.dof_offset + k - ji.rows]) * st.lam;
            }
            for (int side = 0; side < 2; ++side) {
                double* H = st.A.jb(j, side);  // m_j × 6: [h ∂g/∂x, ∂g/∂θ K(ω2)]
                if (!H) continue;
                const int b = side == 0 ? ji.a : ji.b;
                const double* sb = &st.s[g.node_offset[b]];
                const Vec3 w{sb[3], sb[4], sb[5]};
                const double s2 = s_of(w, h);
                const Mat3 K = (0.5 * h * h) * (s2 * Mat3::identity() - skew(w) + (1.0 / s2) * outer(w, w));
                const double* J = side == 0 ? &st.J3a[o] : &st.J3b[o];
                const double rj = st.rhoJ, rjh = st.rhoJ * h;  // (locals: H's stores cannot alias them)
                for (int r = 0; r < ji.rows; ++r) {
                    const double* Jr = J + 6 * r;
                    double* Hr = H + 6 * r;
                    for (int k = 0; k < 3; ++k) {
                        Hr[k] = rjh * Jr[k];
                        Hr[3 + k] = rj * (Jr[3] * K.m[0][k] + Jr[4] * K.m[1][k] + Jr[5] * K.m[2][k]);
                    }
                }
                if (!st.implicit[j]) continue;
                // Force rows: ∂(−ρ_Z u(c3))/∂s = ρ_Z κ ∂c3/∂s = ρ_Z κ C3 [h I, K(ω2)]
                const double* C = side == 0 ? &st.C3a[oc] : &st.C3b[oc];
                for (int q = 0; q < ji.dofs; ++q) {
                    const double* Cr = C + 6 * q;
                    double* Hr = H + 6 * (ji.rows + q);
                    const int i = ji.dof_offset + q;
                    const double sc = (st.rhoZ * st.zscale[i]) * (st.kappa[i] + st.beta[i]);
                    for (int k = 0; k < 3; ++k) {
                        Hr[k] = sc * h * Cr[k];
                        Hr[3 + k] = sc * (Cr[3] * K.m[0][k] + Cr[4] * K.m[1][k] + Cr[5] * K.m[2][k]);
                    }
                }
            }
        }
    }

    const char* name() const { return midpoint_ ? "vi-midpoint" : "vi-maximal"; }

    static int worst_node(const BlockGraph& g, const std::vector<double>& f) {
        int worst = -1;
        double wv = -1;
        for (int n = 0; n < g.nnodes(); ++n) {
            double s = 0;
            for (int i = 0; i < g.node_size[n]; ++i) s += f[g.node_offset[n] + i] * f[g.node_offset[n] + i];
            if (!(s <= wv)) wv = s, worst = n;
        }
        return worst;
    }

    bool midpoint_;
};

}  // namespace vi_max
}  // namespace noether
