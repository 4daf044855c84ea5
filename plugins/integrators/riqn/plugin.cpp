// riqn: the plugin class (options, checks, state, the step through the kernel's subdivide(),
// introspection, monitors) and its entry point (docs/design/riqn.md; layout in riqn.hpp).
#include "riqn.hpp"

namespace noether {
namespace riqn {

RiqnOptions riqn_options(const Model& m) {
    RiqnOptions o;
    if (const std::string* s = string_option(m, "newton"))
        o.newton = *s == "exact" ? Newton::exact : *s == "dense" ? Newton::dense : Newton::riqn;
    if (const std::string* s = string_option(m, "guess"))
        o.guess = *s == "position"   ? Guess::position
                  : *s == "velocity" ? Guess::velocity
                  : *s == "acceleration" ? Guess::acceleration
                  : *s == "momentum" ? Guess::momentum
                                     : Guess::feedback;
    auto it = m.options.extra.find("step_tolerance");
    if (it != m.options.extra.end()) o.step_tolerance = it->second;
    it = m.options.extra.find("max_turn");
    if (it != m.options.extra.end()) o.max_turn = it->second;
    o.secants = secants_option(m, o.secants);
    return o;
}

void Riqn::check(const Model& m, std::vector<Diagnostic>& out) const {
    refuse_armature(m, "riqn", out);
    TreeView t;
    if (build_tree_view(m, "riqn", t, out)) {
        for (const TreeLink& l : t.links) {
            if (l.type != TreeJoint::ball) continue;
            const JointInfo& ji = m.joints[l.joint];
            for (std::size_t k = 0; k < ji.damping.size(); ++k) {
                if (ji.damping[k] == 0) continue;
                char buf[96];
                std::snprintf(buf, sizeof buf, "%g", ji.damping[k]);
                out.push_back({Severity::error, ji.origin,
                               "riqn: joint '" + ji.name + "' (" + ji.type + ") has damping " + buf +
                                   "; riqn takes undamped ball joints (their springs and actuation are applied); "
                                   "use vi-maximal or vi-midpoint for a damped ball joint"});
                break;
            }
        }
    }
    check_choice_option(m, "riqn", "newton", {"riqn", "exact", "dense"}, out);
    check_choice_option(m, "riqn", "guess", {"position", "velocity", "acceleration", "momentum", "feedback"}, out);
    for (const char* name : {"step_tolerance", "max_turn"})  // (substep_hold: check_substep_hold_option)
        if (m.options.extra_lists.count(name))
            out.push_back({Severity::error, m.origin, std::string("options: riqn option '") + name + "' must be a number"});
    const RiqnOptions o = riqn_options(m);
    check_positive_option(m, "riqn", "step_tolerance", o.step_tolerance, out);
    check_max_turn_option(m, "riqn", o.max_turn, kMaxTurn, out);
    check_secants_option(m, "riqn", "the plain RIQN update", out);
    check_substep_hold_option(m, "riqn", out);
}

std::unique_ptr<IntegratorState> Riqn::create_state(const Model& m) const {
    auto st = std::make_unique<State>();
    std::vector<Diagnostic> errors;
    if (!build_tree_view(m, "riqn", st->tree, errors)) throw ModelError(errors);
    st->origin = tree_rebase_far(m, st->tree);
    st->opt = riqn_options(m);
    const int n = st->tree.size(), nb = m.nbodies(), nq = st->tree.nq, nv = st->tree.nv;
    st->dt_prev = m.options.dt;
    for (std::vector<double>* v : {&st->q, &st->qm, &st->qp}) v->assign(nq, 0.0);
    for (const TreeLink& l : st->tree.links)
        for (std::vector<double>* v : {&st->q, &st->qm, &st->qp}) link_neutral(l, v->data() + l.iq);
    for (std::vector<double>* v : {&st->Qminus, &st->r, &st->dq, &st->tau, &st->kd, &st->u, &st->fdu})
        v->assign(nv, 0.0);
    st->servo.assign(nv, ServoTerms{});
    st->any_servo = m.servos > 0;
    for (std::vector<double>* v : {&st->pi, &st->F, &st->mu, &st->Gam, &st->dV, &st->V, &st->c, &st->pA})
        v->assign(6 * static_cast<std::size_t>(n), 0.0);
    st->T.assign(n, Frame{});
    st->Ti.assign(n, Frame{});
    st->g.assign(n, Frame{});
    st->f.assign(n, Frame{});
    st->bp.assign(nb, Pose{});
    st->prev_pose.assign(nb, Pose{});
    st->bw.assign(nb, Wrench{});
    st->Tp.assign(n, Frame{});
    st->Tq.assign(n, Frame{});
    for (std::vector<double>* v : {&st->nIA}) v->assign(36 * static_cast<std::size_t>(n), 0.0);
    for (std::vector<double>* v : {&st->nP, &st->ndV, &st->xl}) v->assign(6 * static_cast<std::size_t>(n), 0.0);
    for (std::vector<double>* v : {&st->nU, &st->nV}) v->assign(6 * static_cast<std::size_t>(nv), 0.0);
    st->nD.assign(static_cast<std::size_t>(st->tree.nd), 0.0);
    st->nu.assign(static_cast<std::size_t>(nv), 0.0);
    st->qbest.assign(static_cast<std::size_t>(st->tree.nq), 0.0);
    st->qguess.assign(static_cast<std::size_t>(st->tree.nq), 0.0);
    st->sec.resize(st->tree.nv, st->opt.secants, kSecantPivot);
    st->hold.hold = SubstepHold::steps(substep_hold_option(m));
    st->sec_q.assign(static_cast<std::size_t>(st->tree.nq), 0.0);
    for (std::vector<double>& v : st->miss) v.assign(static_cast<std::size_t>(nv), 0.0);
    if (st->opt.newton == Newton::dense) {
        st->gp.assign(n, Frame{});
        st->K.resize(nv, nv);
        st->Jk.resize(6, nv);
        st->Jp.resize(6, nv);
        st->kr.resize(nv);
        st->lu = Eigen::PartialPivLU<Eigen::MatrixXd>(nv);
    }
    st->entry.reserve(st->saved_size());  // (every saved vector sized above: keep_entry() does not allocate)
    return st;
}

StepReport Riqn::advance(const Model& m, Data& d) const {
    State& st = static_cast<State&>(*d.integrator_state);
    // The step's start, for riqn's own rollback (rolls_back_itself()): Data is written only by
    // write_back() after a successful attempt; of the state, an attempt of one substep without a
    // restart changes the secant pairs alone (kept by SecantPairs::mark() at their first change),
    // and every other attempt starts by keeping what save() writes. Returning to the start is
    // then what the kernel's restore of its snapshot did: the same bits.
    st.begin_step();
    auto keep_entry = [&st] { st.keep_entry(); };
    auto rollback = [&st] {
        if (!st.back_to_entry()) throw UsageError("riqn: the integrator state did not restore from what its step kept");
    };
    return undone_on_failure([&] { return advance_kept(m, d, st, keep_entry, rollback); }, rollback);
}

template <class Keep, class Rollback>
StepReport Riqn::advance_kept(const Model& m, Data& d, State& st, Keep& keep_entry, Rollback& rollback) const {
    const double h = m.options.dt;
    // Option max_turn, else the Data's whip guard.
    const int k0 = turn_substeps(m, d, st.opt.max_turn > 0 ? st.opt.max_turn : d.turn_guard);
    // Remembered subdivision: start where the last steps needed to be, or one halving below once
    // the hold is over.
    const int first = st.hold.first(k0, m.options.max_substeps);
    auto begin = [&](int k, double hs) {
        const bool restart = !st.started || d.host_changed();  // the kernel's host-edit test
        if (restart || k > 1) keep_entry();
        if (restart) start(m, d, st, h);
        if (k > 1) shift_momentum(m, d, st, 0.5 * (h - hs));  // keep p⁻ = π + (h/2)F across the change of h
    };
    // A step that needed the last resort (below) is followed by steps that start with it, for as
    // long as the remembered subdivision's hold; then one tries without it again.
    const bool large = st.opt.newton == Newton::riqn && st.tree.size() > kExactFallbackLinks;
    const bool held = large && st.resort_left > 0;
    bool last_resort = held;  // the exact fallback on a large tree
    auto one = [&](double hs) { return substep(m, d, st, hs, last_resort); };
    auto done = [&](int k, double hs) {
        if (k > 1) shift_momentum(m, d, st, 0.5 * (hs - h));
    };
    StepReport report = subdivide_with(m, held ? m.options.max_substeps : first, k0, begin, one, done, rollback);
    const bool unconverged = report.status == StepStatus::not_converged || report.status == StepStatus::diverged ||
                             report.status == StepStatus::rotation_limit;
    if (unconverged && large && !held) {
        // The last resort of a large tree (kExactFallbackLinks): the most substeps once more, now
        // with the exact Newton fallback, before the step is reported failed.
        rollback();
        last_resort = true;
        const std::int64_t work = report.work;
        report = subdivide_with(m, m.options.max_substeps, k0, begin, one, done, rollback);
        report.work += work;
    }
    if (report.status == StepStatus::ok) {
        report.coordinates = write_back(m, d, st);
        st.hold.remember(d.step, k0, first, report.substeps);
        if (held) {
            --st.resort_left;
        } else if (last_resort && st.hold.hold > 0) {  // needed it: hold it, longer after a try without
            st.resort_len = st.resort_len == 0 ? st.hold.hold
                                               : std::min(SubstepHold::kHoldMax * st.hold.hold, 2 * st.resort_len);
            st.resort_left = st.resort_len;
        } else {
            st.resort_left = st.resort_len = 0;
        }
    }
    return report;
}

bool Riqn::step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const {
    if (A) return false;  // riqn's unknowns are joint coordinates: no Newton matrix of the maximal system
    return with_state_kept(*d.integrator_state, [&] {
        State& st = static_cast<State&>(*d.integrator_state);
        const double h = m.options.dt;
        if (!st.started || d.changed_since_commit()) start(m, d, st, h);
        kinematics(m, d, st);
        forces(m, d, st);
        set_inputs(m, d, st, h);
        std::copy(s, s + st.tree.nq, st.qp.begin());
        int worst = -1;
        drnea(m, st, h, &worst);
        std::copy(st.r.begin(), st.r.end(), f);
        return true;
    });
}

Monitors Riqn::monitors(const Model& m, const Data& d) const {
    const State& st = static_cast<const State&>(*d.integrator_state);
    if (!st.started) return default_monitors(m, d);  // before the first step: the continuous state
    Monitors mon = discrete_monitors(m, d, st.dt_prev);
    // The momenta riqn's discrete Noether theorem conserves: Σ Ad_{g_i⁻¹}ᵀ π_i over the links,
    // world frame about the origin (π_i: the last interval's momentum μ_i carried to q_k).
    mon.momentum = Vec3{};
    mon.angular_momentum = Vec3{};
    const TreeView& t = st.tree;
    for (int i = 0; i < t.size(); ++i) {
        const int b = t.links[i].body;
        const Frame g = frame_of(d.pose[b]) * inverse(t.body_offset[b]);
        const double* p = &st.pi[6 * i];
        const Vec3 f = g.R * bot(p);
        mon.momentum += f;
        mon.angular_momentum += g.R * top(p) + cross(g.p, f);
    }
    return mon;
}

}  // namespace riqn
}  // namespace noether

// The entry point (global scope, as the loader looks it up).
using RiqnPlugin = noether::riqn::Riqn;
NOETHER_PLUGIN(NOETHER_PLUGIN_INTEGRATOR, "riqn",
               "second-order variational integrator in joint coordinates, linear time per iteration (paper 001)",
               RiqnPlugin)
