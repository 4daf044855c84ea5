// vi-maximal and vi-midpoint: options and their checks, the state's creation and serialisation, the
// monitors (docs/design/maximal-vi.md, midpoint-vi.md; layout in state.hpp).
#include "state.hpp"

namespace noether {
namespace vi_max {
double max_turn(const Model& m) {
    const auto it = m.options.extra.find("max_turn");
    return it == m.options.extra.end() ? 0.0 : it->second;
}

// Option predictor: 1 starts Newton from a linear extrapolation of the last two steps'
// velocities and multipliers (when both steps and this one have the same length and the
// velocities were not changed from outside); 0 from the last step's (zeroth order); 2 (default)
// from the quadratic extrapolation of the last three while it predicts better than the linear one.
// Newton iterations per step (exact Newton, 0 → 1): double pendulum 3.92 → 3.10, four-bar 4.00 →
// 3.26, two_robots 3.97 → 3.01, revolute chain of 2 / 16 / 64 links 3.91 / 4.36 / 4.47 → 3.08 /
// 4.02 / 4.16; 1 → 2 (default chord iterations) in docs/integrators.md.
double predictor(const Model& m) {
    const auto it = m.options.extra.find("predictor");
    return it == m.options.extra.end() ? 2.0 : it->second;
}

double contact_tolerance(const Model& m) {
    const auto it = m.options.extra.find("contact_tolerance");
    return it == m.options.extra.end() ? kDefaultContactTolerance : it->second;
}

std::size_t State::saved_size() const {
    return sizeof dt_prev + 1 + sizeof(Vec3) * (prev_force.size() + prev_torque.size()) +
           sizeof(double) * (prev_u.size() + c1.size() + c2.size() + u.size()) + 1 + SubstepHold::kSavedSize +
           sizeof(Twist) * v_prev.size() + 1 + sizeof(double) * lam_prev.size() + sizeof h_pred + 1 +
           sizeof(Twist) * v_prev2.size() + sizeof(double) * lam_prev2.size() + sizeof h_pred2 + 2 + sizeof miss_count +
           sizeof miss_kind + sizeof miss_degree + sizeof miss_judged + sizeof miss_h +
           sizeof(double) * kGuessMisses * miss[0].size();
}

void State::save(std::string& out) const {
    // One resize of the snapshot string (StateWriter; its capacity stays from the last step), then
    // the bytes: the kernel takes this snapshot before every step.
    StateWriter w(out, saved_size());
    w.value(dt_prev);
    w.value(static_cast<char>(started ? 1 : 0));
    for (const std::vector<Vec3>* v : {&prev_force, &prev_torque}) w.values(*v);
    for (const std::vector<double>* v : {&prev_u, &c1, &c2, &u}) w.values(*v);
    w.value(static_cast<char>(coords ? 1 : 0));
    hold.save(w);
    w.values(v_prev);
    w.value(static_cast<char>(committed ? 1 : 0));
    w.values(lam_prev);
    w.value(h_pred);
    w.value(static_cast<char>(floor_hint ? 1 : 0));
    w.values(v_prev2);
    w.values(lam_prev2);
    w.value(h_pred2);
    w.value(static_cast<char>(quadratic_won ? 1 : 0));
    w.value(static_cast<char>(quadratic_won_lam ? 1 : 0));
    w.value(miss_count);
    w.value(miss_kind);
    w.value(miss_degree);
    w.value(miss_judged);
    w.value(miss_h);
    for (const std::vector<double>& v : miss) w.values(v);
}

bool State::restore(const char*& p, const char* end) {
    if (static_cast<std::size_t>(end - p) < saved_size()) return false;
    restore_value(p, dt_prev);
    started = *p++ != 0;
    for (std::vector<Vec3>* v : {&prev_force, &prev_torque}) restore_values(p, *v);
    for (std::vector<double>* v : {&prev_u, &c1, &c2, &u}) restore_values(p, *v);
    coords = *p++ != 0;
    if (!hold.restore(p)) return false;
    restore_values(p, v_prev);
    committed = *p++ != 0;
    restore_values(p, lam_prev);
    restore_value(p, h_pred);
    floor_hint = *p++ != 0;
    restore_values(p, v_prev2);
    restore_values(p, lam_prev2);
    restore_value(p, h_pred2);
    quadratic_won = *p++ != 0;
    quadratic_won_lam = *p++ != 0;
    restore_value(p, miss_count);
    restore_value(p, miss_kind);
    restore_value(p, miss_degree);
    restore_value(p, miss_judged);
    restore_value(p, miss_h);
    if (!misses_restorable(miss_count, miss_degree) || miss_judged < 0 || miss_judged >= kJudgeMisses) return false;
    for (std::vector<double>& v : miss) restore_values(p, v);
    return true;
}

namespace {
// dst = src for vectors of the same size (make_state() sized them: no allocation).
template <class T>
void copy_same(std::vector<T>& dst, const std::vector<T>& src) {
    if (dst.size() != src.size()) throw UsageError("vi-maximal: a Data field changed its size during a step");
    std::copy(src.begin(), src.end(), dst.begin());
}

// f(kept, field) for each Data field a commit writes and its kept copy: one list for keep_entry()
// and back_to_entry().
template <class S, class D, class F>
void each_kept_field(S& st, D& d, F&& f) {
    f(st.entry_pose, d.pose);
    f(st.entry_twist, d.twist);
    f(st.entry_twist_guess, d.twist_guess);
    f(st.entry_lambda, d.lambda);
    f(st.entry_contact, d.contact);
    f(st.entry_limit_force, d.limit_force);
    f(st.entry_coupling_force, d.coupling_force);
}
}  // namespace

void State::keep_entry(const Data& d) {
    if (entry.kept()) return;
    entry.keep(*this);
    each_kept_field(*this, d, [](auto& kept, const auto& field) { copy_same(kept, field); });
}

bool State::back_to_entry(Data& d) {
    if (!entry.kept()) {
        floor_hint = entry_floor_hint;
        return true;
    }
    if (!entry.put_back(*this)) return false;
    each_kept_field(*this, d, [](const auto& kept, auto& field) { copy_same(field, kept); });
    return true;
}

void check_options(const Model& m, const char* name, std::vector<Diagnostic>& out) {
    for (const char* opt : {"max_turn", "predictor", "contact_tolerance"})  // (substep_hold: below)
        if (m.options.extra_lists.count(opt))
            out.push_back({Severity::error, m.origin, std::string("options: ") + name + " option '" + opt + "' must be a number"});
    const double turn = max_turn(m);
    if (!(turn >= 0) || !std::isfinite(turn) || turn > kBranch)
        out.push_back({Severity::error, m.origin,
                       std::string("options: ") + name + " option 'max_turn' (radians per substep) must be in "
                       "[0, " + std::to_string(kBranch).substr(0, 5) + "] (0: off), got " + std::to_string(turn)});
    check_substep_hold_option(m, name, out);
    check_choice_option(m, name, "newton", {"chord", "exact"}, out);
    check_choice_option(m, name, "guess", {"feedback", "predictor"}, out);
    check_secants_option(m, name, "plain chord steps", out);
    const double pred = predictor(m);
    if (pred != 0 && pred != 1 && pred != 2) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "options: %s option 'predictor' must be 2 (extrapolate the warm start to second order where that "
                      "predicts better), 1 (linear) or 0 (none), got %g",
                      name, pred);
        out.push_back({Severity::error, m.origin, buf});
    }
    if (m.options.extra.count("contact_tolerance"))
        check_positive_option(m, name, "contact_tolerance", contact_tolerance(m), out);
    if (m.has_inequalities() || !m.couplings.empty()) {
        int body = 0;
        const long long n = largest_group_unknowns(m, &body);
        if (n > kMaxGroupUnknowns)
            out.push_back({Severity::error, m.bodies[body].origin,
                           "body '" + m.bodies[body].name + "': the contact points" + (m.couplings.empty() ? " and joint limits" : ", joint limits and couplings") +
                               " of its mechanism need " +
                               std::to_string(n) + " unknowns in one dense system; " + name + " takes at most " +
                               std::to_string(kMaxGroupUnknowns) + " (1024 points with friction) per mechanism"});
    }
    const double limit = kBranch / m.options.dt;
    for (const BodyInfo& b : m.bodies) {
        const double w = norm(b.twist0.w);
        if (w >= limit) {
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "body '%s': initial angular velocity |w| = %.6g rad/s is too fast for dt = %.6g s "
                          "(%s needs |w| < 1.41/dt = %.6g rad/s: less than a quarter turn per step); "
                          "use dt < %.6g s",
                          b.name.c_str(), w, m.options.dt, name, limit, kBranch / w);
            out.push_back({Severity::error, b.origin, buf});
        }
    }
}

std::unique_ptr<IntegratorState> make_state(const Model& m, bool midpoint) {
    auto st = std::make_unique<State>();
    const int nb = m.nbodies(), nd = m.total_dofs;
    st->dt_prev = m.options.dt;
    st->max_turn = max_turn(m);
    st->v_prev.assign(nb, Twist{});
    st->lam_prev.assign(m.total_rows, 0.0);
    st->predict = predictor(m) != 0;
    st->quadratic = predictor(m) == 2;
    st->v_prev2.assign(st->quadratic ? nb : 0, Twist{});
    st->lam_prev2.assign(st->quadratic ? m.total_rows : 0, 0.0);
    if (const std::string* s = string_option(m, "newton")) st->chord = *s != "exact";
    if (const std::string* s = string_option(m, "guess")) st->feedback = *s != "predictor";
    // Misses of an extrapolation only, and on trees: a closed loop has singular poses, and near one
    // (the folding four-bar of test_hardening) the guesses with the misses led Newton where a step
    // failed with 16 substeps.
    st->feedback = st->feedback && st->predict && m.graph.loop_rows == 0 && m.couplings.empty();
    st->hold.hold = SubstepHold::steps(substep_hold_option(m));
    st->implicit.assign(m.njoints(), 0);
    std::vector<int> ja, jb, size;
    for (int j = 0; j < m.njoints(); ++j) {
        const JointInfo& ji = m.joints[j];
        st->implicit[j] = ji.has_force_element && ji.dofs > 0;
        st->any_implicit = st->any_implicit || st->implicit[j];
        ja.push_back(ji.a);
        jb.push_back(ji.b);
        size.push_back(ji.rows + (st->implicit[j] ? ji.dofs : 0));
    }
    st->c1.assign(nd, 0.0);
    st->c2.assign(nd, 0.0);
    st->u.assign(nd, 0.0);
    if (st->any_implicit) {
        st->graph = build_block_graph(nb, ja, jb, size);
        st->G = &st->graph;
        st->alpha.assign(nd, 0.0);
        st->kappa.assign(nd, 0.0);
        st->beta.assign(nd, 0.0);
        st->zscale.assign(nd, 1.0);
        st->c3.assign(nd, 0.0);
        for (auto* v : {&st->C2a, &st->C2b, &st->C3a, &st->C3b}) v->assign(6 * static_cast<std::size_t>(nd), 0.0);
    } else {
        st->G = &m.graph;
    }
    const int n = st->G->total_size;
    st->A = BlockMatrix(*st->G);
    st->ws = m.solver->create(m, *st->G);
    // Residual parts this far below the tolerance are round-off: a nearly dependent direction
    // is not solved for them (dense-loop near singular poses; see dense::RankRevealingQR).
    st->ws->negligible_rhs = 1e-2 * m.options.tolerance;
    st->s.assign(n, 0.0);
    st->s_try.assign(n, 0.0);
    st->f.assign(n, 0.0);
    st->f_try.assign(n, 0.0);
    st->dx.assign(n, 0.0);
    st->terms.assign(n, 0.0);
    st->sec.resize(n, st->chord ? secants_option(m, kDefaultSecants) : 0);
    if (st->feedback) {  // the bodies' velocities (VIMaximal::warm_start)
        st->sguess.assign(6 * static_cast<std::size_t>(nb), 0.0);
        for (std::vector<double>& v : st->miss) v.assign(6 * static_cast<std::size_t>(nb), 0.0);
    }
    st->wrench.assign(nb, Wrench{});
    const std::size_t jr = 6 * static_cast<std::size_t>(m.total_rows);
    st->J2a.assign(jr, 0.0);
    st->J2b.assign(jr, 0.0);
    st->J3a.assign(jr, 0.0);
    st->J3b.assign(jr, 0.0);
    st->g.assign(m.total_rows, 0.0);
    st->pose3.assign(nb, Pose{});
    st->in_R.assign(nb, Vec3{});
    if ((!midpoint && m.has_inequalities()) || !m.couplings.empty()) {  // vi-midpoint: couplings only
        setup_inequalities(m, *st->G, st->ineq);
        st->contact_tolerance = contact_tolerance(m);
        st->ineq.tree_weight = st->contact_tolerance / m.options.tolerance;
    }
    if (midpoint) {  // the previous interval's inputs: vi-midpoint only (and in its snapshots)
        st->prev_force.assign(nb, Vec3{});
        st->prev_torque.assign(nb, Vec3{});
        st->cur_force.assign(nb, Vec3{});
        st->cur_torque.assign(nb, Vec3{});
        st->prev_u.assign(m.total_dofs, 0.0);
        st->cur_u.assign(m.total_dofs, 0.0);
    }
    // The own rollback's buffers (State::keep_entry), sized as Data's fields (Data::reset) and
    // after every saved vector above.
    st->entry.reserve(st->saved_size());
    st->entry_pose.assign(nb, Pose{});
    st->entry_twist.assign(nb, Twist{});
    st->entry_twist_guess.assign(nb, Twist{});
    st->entry_lambda.assign(m.total_rows, 0.0);
    st->entry_contact.assign(m.contacts.size(), ContactResult{});
    st->entry_limit_force.assign(m.total_dofs, 0.0);
    st->entry_coupling_force.assign(m.couplings.size(), 0.0);
    return st;
}

Monitors state_monitors(const Model& m, const Data& d, bool midpoint) {
    const State& st = static_cast<const State&>(*d.integrator_state);
    if (midpoint && !st.started) return Integrator::default_monitors(m, d);  // before the first step: the continuous values
    Monitors mon = discrete_monitors(m, d, st.dt_prev);
    if (st.any_implicit) {
        // Implicit springs: their energy at the interval midpoint (c1 + c2)/2, like gravity's
        // (with it a linear spring's energy is exactly conserved).
        double e = 0, ek = 0;
        for (const JointInfo& j : m.joints) {
            if (!j.has_force_element) continue;
            for (int k = 0; k < j.dofs; ++k) {
                const int i = j.dof_offset + k;
                const double mid = st.coords ? 0.5 * (st.c1[i] + st.c2[i]) : d.coord[i] - 0.5 * st.dt_prev * d.rate[i];
                const double x = mid - j.rest[k], x2 = d.coord[i] - j.rest[k];
                e += 0.5 * j.stiffness[k] * (x * x - x2 * x2);
                // Armature: its kinetic energy at the interval's rate (c2 − c1)/h1, as the bodies'.
                if (j.armature[k] != 0 && st.coords) {
                    const double r = (st.c2[i] - st.c1[i]) / st.dt_prev;
                    ek += 0.5 * j.armature[k] * (r * r - d.rate[i] * d.rate[i]);
                }
            }
        }
        mon.potential += e;
        mon.kinetic += ek;
        mon.total += e + ek;
    }
    return mon;
}

}  // namespace vi_max
}  // namespace noether
