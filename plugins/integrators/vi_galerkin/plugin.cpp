// vi-galerkin: the plugin class: checks, state, the step through the kernel's subdivide(),
// introspection (docs/design/galerkin-vi.md; layout in galerkin.hpp).
#include "galerkin.hpp"

namespace noether {
namespace galerkin_vi {

bool Galerkin::take_tree(const Model& m, TreeView& t, std::vector<Diagnostic>& out) {
    const std::size_t first = out.size();
    const bool tree = build_tree_view(m, "vi-galerkin", t, out, true);  // loops stay constraints (§7)
    for (std::size_t k = first; k < out.size(); ++k) {  // the tree view's list includes ball joints
        std::string& msg = out[k].message;
        const std::string kinds = "helical, spherical and fixed joints";
        const std::size_t at = msg.find(kinds);
        if (at != std::string::npos) msg.replace(at, kinds.size(), "helical and fixed joints");
    }
    if (!tree) return false;
    for (const TreeLink& l : t.links) {
        if (l.type == TreeJoint::screw) continue;
        if (l.type == TreeJoint::ball) {
            const JointInfo& ji = m.joints[l.joint];
            out.push_back({Severity::error, ji.origin,
                           "vi-galerkin: joint '" + ji.name + "' (" + ji.type +
                               ") has 3 degrees of freedom; vi-galerkin takes 1-DOF joints (revolute, prismatic, "
                               "helical) and fixed joints; use riqn, vi-maximal or vi-midpoint"});
        } else {
            const BodyInfo& b = m.bodies[l.body];
            out.push_back({Severity::error, b.origin,
                           "vi-galerkin: body '" + b.name +
                               "' floats free (no chain of joints to the world); vi-galerkin takes mechanisms "
                               "attached to the world by 1-DOF joints; use riqn, vi-maximal or vi-midpoint"});
        }
    }
    for (int j : m.graph.loop_joints) {
        const JointInfo& ji = m.joints[j];
        bool forced = false;
        for (double v : ji.stiffness) forced = forced || v != 0;
        for (double v : ji.damping) forced = forced || v != 0;
        forced = forced || ji.servo != ServoSpec::Kind::none;
        if (forced)
            out.push_back({Severity::error, ji.origin,
                           "vi-galerkin: joint '" + ji.name +
                               "' closes a kinematic loop and has a spring, damper or servo; vi-galerkin keeps loop "
                               "closures as constraints without forces; put them on a tree joint or "
                               "use vi-maximal or vi-midpoint"});
    }
    for (const CouplingInfo& c : m.couplings)
        for (const CouplingInfo::Term& term : c.terms) {
            const int jn = term.joint;
            bool tree_link = false;
            for (const TreeLink& l : t.links) tree_link = tree_link || l.joint == jn;
            if (!tree_link)
                out.push_back({Severity::error, c.origin,
                               "vi-galerkin: coupling '" + c.name + "': joint '" + m.joints[jn].name +
                                   "' closes a kinematic loop; vi-galerkin couples tree joints (use vi-maximal or vi-midpoint)"});
        }
    return out.size() == first;
}

void Galerkin::check(const Model& m, std::vector<Diagnostic>& out) const {
    refuse_armature(m, "vi-galerkin", out);
    TreeView t;
    take_tree(m, t, out);
    const Origin none = m.origin;
    if (m.options.extra_lists.count("points") || m.options.extra_lists.count("step_tolerance") ||
        m.options.extra_lists.count("max_turn"))
        out.push_back({Severity::error, none, "options: vi-galerkin options 'points', 'step_tolerance' and 'max_turn' are numbers"});
    auto it = m.options.extra.find("points");
    if (it != m.options.extra.end()) {
        const double v = it->second;
        if (!(v >= 1 && v <= kMaxPoints && v == std::floor(v))) {
            char buf[200];
            std::snprintf(buf, sizeof buf,
                          "options: vi-galerkin option 'points' must be an integer from 1 to %d (1: trapezoid, "
                          "order 2; 2: Simpson, order 4; s: order 2s), got %g",
                          kMaxPoints, v);
            out.push_back({Severity::error, none, buf});
        }
    }
    check_choice_option(m, "vi-galerkin", "newton", {"chord", "exact"}, out);
    check_choice_option(m, "vi-galerkin", "guess", {"feedback", "polynomial"}, out);
    const GalerkinOptions o = galerkin_options(m);
    check_positive_option(m, "vi-galerkin", "step_tolerance", o.step_tolerance, out);
    check_max_turn_option(m, "vi-galerkin", o.max_turn, kMaxTurnOption, out);
    check_substep_hold_option(m, "vi-galerkin", out);
}

std::unique_ptr<IntegratorState> Galerkin::create_state(const Model& m) const {
    auto st = std::make_unique<State>();
    std::vector<Diagnostic> errors;
    if (!take_tree(m, st->tree, errors)) throw ModelError(errors);
    st->origin = tree_rebase_far(m, st->tree);
    st->opt = galerkin_options(m);
    st->hold.hold = SubstepHold::steps(substep_hold_option(m));
    st->lob = make_lobatto(st->opt.s);
    const int n = st->tree.size(), s = st->opt.s, nn = s + 1, d = 12 * s + 6, nb = m.nbodies();
    st->n = n, st->nn = nn, st->d = d;
    const std::size_t N = static_cast<std::size_t>(n), NN = N * nn;
    st->q.assign(N, 0.0);
    st->servo.assign(N, ServoTerms{});
    st->any_servo = m.servos > 0;
    st->p.assign(N, 0.0);
    st->qd0.assign(N, 0.0);
    st->pn.assign(N, 0.0);
    st->node0_q.assign(N, 0.0);
    st->node_s_q.assign(N, 0.0);
    st->qdot.assign(N, 0.0);
    st->prev_ctrl.assign(NN, 0.0);
    st->ctrl.assign(NN, 0.0);
    st->qdn.assign(NN, 0.0);
    st->g.assign(NN, Frame{});
    for (std::vector<double>* v : {&st->Sb, &st->vb, &st->Sd, &st->hm, &st->mu, &st->Gam, &st->E}) v->assign(6 * NN, 0.0);
    st->Mb.assign(36 * NN, 0.0);
    st->KA.assign(9 * NN, 0.0);
    st->KB.assign(9 * NN, 0.0);
    st->Fs.assign(3 * NN, 0.0);
    st->r.assign(N * s, 0.0);
    st->dx.assign(N * s, 0.0);
    for (std::vector<double>* v : {&st->U, &st->V, &st->G, &st->W, &st->K}) v->assign(N * d * s, 0.0);
    st->Dlu.assign(N * s * s, 0.0);
    st->piv.assign(N * s, 0);
    st->YA.assign(N * d * d, 0.0);
    // Which links keep Y^A as blocks plus terms (factor()): all children low-rank and at most
    // kMaxTerms of them below; their terms, children's first (parents-first order: the children
    // of i come after i, so a backward pass has them complete).
    st->lowrank.assign(N, 1);
    std::vector<std::vector<int>> terms(N);
    for (int i = static_cast<int>(N) - 1; i >= 0; --i) {
        const int p = st->tree.links[static_cast<std::size_t>(i)].parent;
        if (p < 0) continue;
        if (!st->lowrank[static_cast<std::size_t>(i)]) {
            st->lowrank[static_cast<std::size_t>(p)] = 0;
            continue;
        }
        std::vector<int>& tp = terms[static_cast<std::size_t>(p)];
        tp.insert(tp.end(), terms[static_cast<std::size_t>(i)].begin(), terms[static_cast<std::size_t>(i)].end());
        tp.push_back(i);
        if (tp.size() > static_cast<std::size_t>(State::kMaxTerms)) st->lowrank[static_cast<std::size_t>(p)] = 0;
    }
    st->term_begin.assign(N + 1, 0);
    st->term_list.clear();
    for (std::size_t i = 0; i < N; ++i) {
        if (st->lowrank[i]) st->term_list.insert(st->term_list.end(), terms[i].begin(), terms[i].end());
        st->term_begin[i + 1] = static_cast<int>(st->term_list.size());
    }
    st->chat.assign(N * d, 0.0);
    st->X.assign(N * d, 0.0);
    st->uu.assign(N * s, 0.0);
    for (int j : m.graph.loop_joints) {
        const JointInfo& ji = m.joints[j];
        State::Loop c;
        c.joint = j, c.a = ji.a, c.b = ji.b, c.rows = ji.rows, c.row0 = st->mrows;
        c.la = ji.a >= 0 ? st->tree.body_link[ji.a] : -1;
        c.lb = st->tree.body_link[ji.b];
        st->loops.push_back(c);
        st->mrows += ji.rows;
    }
    for (int k = 0; k < static_cast<int>(m.couplings.size()); ++k) {  // after the loops (take_tree checked them)
        const CouplingInfo& ci = m.couplings[k];
        State::Loop c;
        c.coupling = k, c.joint = ci.joint, c.rows = 1, c.row0 = st->mrows;
        c.nterms = static_cast<int>(ci.terms.size());
        double off = 0;
        for (int t = 0; t < c.nterms; ++t) {
            const CouplingInfo::Term& term = ci.terms[t];
            for (int i = 0; i < n; ++i)  // the link of the term's joint (one per joint: couplings take 1-DOF coordinates)
                if (st->tree.links[i].joint == term.joint) c.link[t] = i;
            c.coef[t] = term.coef;
            const double o = tree_link_offset(m, st->tree.links[c.link[t]]);
            off = t == 0 ? o : off + term.coef * o;  // (the follower's coef is 1)
        }
        c.c = off - ci.offset;
        st->loops.push_back(c);
        st->mrows += 1;
        st->any_coupling = true;
    }
    if (st->any_coupling) st->cf.assign(N * s, 0.0);
    if (st->mrows > 0) {
        const std::size_t M = static_cast<std::size_t>(st->mrows), K = M * s;
        st->Ga.assign(6 * M * nn, 0.0);
        st->Gb.assign(6 * M * nn, 0.0);
        st->hv.assign(M * nn, 0.0);
        st->lam.assign(K, 0.0);
        st->Zc.assign(K * N * s, 0.0);
        st->Sm.assign(K * K, 0.0);
        for (std::vector<double>* v : {&st->lrhs2, &st->dlam, &st->ywork}) v->assign(K, 0.0);
        st->dqr.assign(N * s, 0.0);
        st->wproj.assign(M * N, 0.0);
        st->aproj.assign(M * N, 0.0);
        st->u0.assign(N, 0.0);
        st->rperm.assign(K, 0);
        st->cperm.assign(K, 0);
    }
    st->T.assign(N, Frame{});
    st->Vl.assign(6 * N, 0.0);
    for (std::vector<double>* v : {&st->LX, &st->LPhi}) v->assign(12 * NN, 0.0);
    for (std::vector<double>* v : {&st->ldq, &st->ldqd, &st->ldR, &st->bk_prev, &st->ctrl_guess}) v->assign(NN, 0.0);
    for (int k = 0; k < kGuessMisses; ++k) st->miss[k].assign(NN, 0.0), st->bk_miss[k].assign(NN, 0.0);
    for (std::vector<double>* v : {&st->lrhs, &st->lz}) v->assign(N * s, 0.0);
    for (std::vector<double>* v : {&st->ldp, &st->ldp1, &st->bk_q, &st->bk_p, &st->bk_qd0}) v->assign(N, 0.0);
    for (State::Kinematics* k : {&st->kin0, &st->kin1}) {
        k->g.assign(N, Frame{});
        for (std::vector<double>* v : {&k->S, &k->Sd, &k->v, &k->h, &k->mu, &k->xi, &k->ze, &k->dmu})
            v->assign(6 * N, 0.0);
        k->Mb.assign(36 * N, 0.0);
    }
    st->bp.assign(nb, Pose{});
    st->entry_lam.assign(st->lam.size(), 0.0);
    st->entry.reserve(st->saved_size());  // (every saved vector sized above: keep_entry() does not allocate)
    return st;
}

StepReport Galerkin::advance(const Model& m, Data& d) const {
    State& st = static_cast<State&>(*d.integrator_state);
    // Option max_turn, else the Data's whip guard: the substeps the fastest body asks for.
    const int k0 = turn_substeps(m, d, st.opt.max_turn > 0 ? st.opt.max_turn : d.turn_guard);
    // Remembered subdivision: start where the last steps needed to be, or one halving below once
    // the hold is over.
    const int first = st.hold.first(k0, m.options.max_substeps);
    // The step's start, for the own rollback (rolls_back_itself(); State::keep_entry).
    st.begin_step();
    auto rollback = [&st] {
        if (!st.back_to_entry()) throw UsageError("vi-galerkin: the integrator state did not restore from what its step kept");
    };
    return undone_on_failure([&] { return advance_kept(m, d, st, first, k0, rollback); }, rollback);
}

template <class Rollback>
StepReport Galerkin::advance_kept(const Model& m, Data& d, State& st, int first, int k0, Rollback& rollback) const {
    StepReport report = subdivide_with(
        m, first, k0,
        [&](int k, double) {
            const bool restart = !st.started || d.host_changed();  // the kernel's host-edit test
            if (restart || k > 1) st.keep_entry();
            if (restart) start(m, d, st);
        },
        [&](double hs) { return substep(m, d, st, hs); }, [](int, double) {}, rollback);
    if (report.status == StepStatus::ok) {
        report.coordinates = write_back(m, d, st);
        st.hold.remember(d.step, k0, first, report.substeps);
        // A coupling's force on its follower: its multipliers are the impulses of the (last) substep's
        // nodes α < s, whose sum over the interval is the force times its length.
        for (const State::Loop& c : st.loops) {
            if (c.coupling < 0) continue;
            double impulse = 0;
            for (int a = 0; a < st.lob.s; ++a) impulse += st.lam[static_cast<std::size_t>(a) * st.mrows + c.row0];
            d.coupling_force[c.coupling] = impulse / st.prev_h;
        }
    }
    return report;
}

bool Galerkin::step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const {
    if (A) return false;
    State& st = static_cast<State&>(*d.integrator_state);
    return with_state_kept(st, [&] {
        if (!st.started || d.changed_since_commit()) start(m, d, st);
        const int n = st.n, S = st.opt.s;
        if (st.any_servo) set_servos(m, d, st);
        std::copy(st.q.begin(), st.q.end(), st.ctrl.begin());
        std::copy(s, s + static_cast<std::size_t>(S) * n, st.ctrl.begin() + n);
        int worst = -1;
        evaluate(m, d, st, m.options.dt, &worst);
        for (int a = 0; a < S; ++a)
            for (int i = 0; i < n; ++i) f[a * n + i] = st.r[i * S + a];
        return true;
    });
}

}  // namespace galerkin_vi
}  // namespace noether
