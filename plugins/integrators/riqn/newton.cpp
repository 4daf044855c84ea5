// riqn: one substep: the DRNEA residual (§4), the guess, the quasi-Newton iteration with the
// articulated-body solve (§5) and the exact Newton option (docs/design/riqn.md; layout in
// riqn.hpp).
#include "riqn.hpp"

namespace noether {
namespace riqn {

Attempt Riqn::substep(const Model& m, const Data& d, State& st, double h, bool last_resort) const {
    const TreeView& t = st.tree;
    const int n = t.size();
    if (!st.fresh) kinematics(m, d, st);
    forces(m, d, st);
    set_inputs(m, d, st, h);
    tree_abi_setup(t, st.T.data(), st.kd.data(), st.abi);
    guess(st, h);
    Attempt out;
    out.factorizations = 1;  // the impulse ABI of M(q_k) + (h/2)·D above: the quasi-Newton matrix
    const double tol = m.options.tolerance;
    bool exact = st.opt.newton != Newton::riqn, setup = true;
    double prev_rn = INFINITY;
    // Secant pairs measured at another substep length: dropped (carrying them over, rescaled by
    // the ratio of the lengths, and handing a failed attempt's pairs to its retry made no
    // difference on chains of 16–64 links at dt 0.01 over 30 s).
    if (st.sec_h != h) st.sec.drop(), st.sec_h = h;
    // (On trees of at most kExactFallbackLinks links: on the 512-link chain's whip at dt 0.01 the
    // pairs cost more than they saved.)
    const bool secants = st.opt.secants > 0 && n <= kExactFallbackLinks;
    const bool fallback = n <= kExactFallbackLinks || last_resort;  // the exact fallback may be taken
    st.sec.begin();
    bool corrected = false;  // the last update was corrected by the secant pairs
    double best_rn = INFINITY;  // the smallest residual of the RIQN updates, at st.qbest
    auto from_best = [&] {  // back to that iterate (the exact step starts there), its residual
        std::copy(st.qbest.begin(), st.qbest.end(), st.qp.begin());
        return drnea(m, st, h, &out.worst_node);
    };
    for (int it = 0;; ++it) {
        double rn = drnea(m, st, h, &out.worst_node);
        out.residual = rn;
        out.iterations = it;
        if (corrected && !(rn < kSecantGrowth * prev_rn) && it < m.options.max_iterations) {
            // The corrected update multiplied the residual (or turned a link by π): the plain
            // update from the iterate it left instead, counted as one more iteration.
            corrected = false;
            secant_reject(st);
            continue;
        }
        corrected = false;
        if (rn == INFINITY && !exact && best_rn < INFINITY && fallback) {
            // An RIQN update turned a link by π or more (a tiny inertia about an axis): the exact
            // step from the best iterate instead of a failed step.
            exact = true;
            rn = from_best();
            prev_rn = best_rn;
        }
        if (!std::isfinite(rn)) {
            out.status = rn == INFINITY ? StepStatus::rotation_limit : StepStatus::non_finite;
            return out;
        }
        if (rn <= tol) break;
        double far = 0;  // screw coordinates (rotations are bounded by the π check of drnea)
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) far = std::max(far, std::fabs(st.qp[l.iq] - st.q[l.iq]));
        }
        if (it == m.options.max_iterations || far > 3) {
            out.status = far > 3 ? StepStatus::diverged : StepStatus::not_converged;
            return out;
        }
        // A slow contraction (the RIQN matrix M(q_k) far from ∂r/∂q⁺: a body with a tiny inertia
        // about an axis, light links turning fast, a step too long for the motion): the exact
        // Newton step for the rest of this substep (kSlowContraction, kPredictedUpdates), also
        // when the first update made the residual worse; it starts from the RIQN iterate with the
        // smallest residual.
        if (!exact && fallback) {
            if (it == 1 && rn > prev_rn) exact = true;  // the first update made it worse
            if (it >= 2) {
                const double rho = rn / prev_rn;
                double left = rn;  // the residual after kPredictedUpdates more updates at this rate
                for (int k = 0; k < kPredictedUpdates; ++k) left *= rho;
                exact = rho > kSlowContraction || left > tol;
            }
            if (exact && rn > best_rn) {  // Newton from the best iterate so far
                rn = from_best();
                if (!std::isfinite(rn)) {
                    out.status = rn == INFINITY ? StepStatus::rotation_limit : StepStatus::non_finite;
                    return out;
                }
            } else if (!exact && rn < best_rn) {
                best_rn = rn;
                std::copy(st.qp.begin(), st.qp.end(), st.qbest.begin());
            }
        }
        const double last_rn = prev_rn;
        prev_rn = rn;
        if (exact && st.opt.newton != Newton::dense) {
            // Set up at the first exact iterate, again when the iterations contract too slowly to
            // finish within kChordUpdates (the fallback's chord; option "exact": every iteration).
            double left = rn;  // the residual after kChordUpdates more iterations at this rate
            for (int k = 0; k < kChordUpdates; ++k) left *= rn / last_rn;
            if (setup || st.opt.newton == Newton::exact || left > tol) {
                ++out.factorizations;
                if (!tree_newton_setup(st, h)) {
                    out.status = StepStatus::singular;
                    return out;
                }
                setup = false;
            }
            if (!tree_newton_solve(st)) {
                out.status = StepStatus::non_finite;
                return out;
            }
        } else if (exact) {
            ++out.factorizations;
            if (!exact_step(st, h)) {
                out.status = StepStatus::singular;
                return out;
            }
        } else {
            for (int k = 0; k < t.nv; ++k) st.u[k] = -h * st.r[k];
            tree_abi_solve(t, st.T.data(), st.abi, st.u.data(), st.dq.data());
            if (secants && (corrected = st.sec.correct(st.dq.data()))) std::copy(st.qp.begin(), st.qp.end(), st.sec_q.begin());
        }
        if (exact) st.sec.begin();  // (an exact update is no secant of the RIQN matrix)
        retract(t, st.qp.data(), st.dq.data());
        // At the round-off floor when the update is within step_tolerance (a screw coordinate: or
        // within its own resolution, coordinate_resolution, when that is coarser: a joint wound up
        // many turns), the plain update as well if it was corrected.
        auto small = [&](const double* v) {
            for (const TreeLink& l : t.links)
                for (int c = 0; c < l.nv; ++c) {
                    const double lim = l.type == TreeJoint::screw
                                           ? std::max(st.opt.step_tolerance, coordinate_resolution(st.qp[l.iq]))
                                           : st.opt.step_tolerance;
                    if (std::fabs(v[l.iv + c]) > lim) return false;
                }
            return true;
        };
        if (small(st.dq.data()) && (!corrected || small(st.sec.plain()))) {
            out.iterations = it + 1;
            out.residual = drnea(m, st, h, &out.worst_node);
            if (!std::isfinite(out.residual)) {
                out.status = StepStatus::non_finite;
                return out;
            }
            break;
        }
    }
    out.worst_node = -1;
    commit(st, h);
    return out;
}

double Riqn::drnea(const Model& m, State& st, double h, int* worst) const {
    const TreeView& t = st.tree;
    const int n = t.size();
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        Frame& Tp = st.Tq[i];  // (kept: tree_newton_setup() and, after commit(), kinematics() take it)
        Tp = l.type == TreeJoint::screw ? link_transform(l, st.qp[l.iq]) : link_transform(l, &st.qp[l.iq]);
        const Frame& Ti = st.Ti[i];
        st.f[i] = l.parent >= 0 ? Ti * (st.f[l.parent] * Tp) : Ti * Tp;
        double* x = &st.xl[6 * i];
        double th;
        if (l.parent < 0 && l.type == TreeJoint::screw) {
            // A screw on the ground: T(q) = exp(A q) M, so f_i = T(q_k)⁻¹ T(q⁺) = exp(S (q⁺ − q_k))
            // (S = Ad_{M⁻¹} A, the link-frame screw) and its logarithm is S (q⁺ − q_k) (its turn
            // |ω| |Δq|: a turn of π or more is the rotation-limit failure below, not wrapped).
            const double dqi = st.qp[l.iq] - st.q[l.iq];
            for (int k = 0; k < 6; ++k) x[k] = l.S[k] * dqi;
            th = norm(top(x));
        } else {
            th = se3_log(st.f[i], x);
        }
        if (!(th < kMaxTurn)) return INFINITY;
        double* mu = &st.mu[6 * i];
        momentum(x, l.inertia, l.mass, h, mu);
        double* G = &st.Gam[6 * i];
        for (int k = 0; k < 6; ++k) G[k] = mu[k] - st.pi[6 * i + k] - h * st.F[6 * i + k];
    }
    double rn = 0, worst_r = -1;
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const double* G = &st.Gam[6 * i];
        if (l.type == TreeJoint::screw) {
            const double spring = -l.stiffness * (st.q[l.iq] - l.rest);
            double ri = dot6(l.S, G) - st.Qminus[l.iv] - 0.5 * h * st.tau[l.iv] - h * spring +
                        0.5 * l.damping * (st.qp[l.iq] - st.q[l.iq]);
            if (st.any_servo) ri -= servo_half_impulse(st, l, h);
            st.r[l.iv] = ri;
            rn += ri * ri;
            if (std::fabs(ri) > worst_r) worst_r = std::fabs(ri), *worst = m.nbodies() + l.joint;
        } else {  // ball: Sᵀ Γ; free: Γ (their forcing is in F)
            for (int c = 0; c < l.nv; ++c) {
                double sc[6];
                link_motion(l, c, sc);
                const double ri = dot6(sc, G);
                st.r[l.iv + c] = ri;
                rn += ri * ri;
                if (std::fabs(ri) > worst_r) worst_r = std::fabs(ri), *worst = l.joint >= 0 ? m.nbodies() + l.joint : l.body;
            }
        }
        if (l.parent >= 0) {
            double w[6];
            wrench_to_parent(st.T[i], G, w);
            double* Gp = &st.Gam[6 * l.parent];
            for (int k = 0; k < 6; ++k) Gp[k] += w[k];
        }
    }
    return std::sqrt(rn);
}

void Riqn::retract(const TreeView& t, double* q, const double* v) {
    for (const TreeLink& l : t.links) {
        if (l.type == TreeJoint::screw) q[l.iq] += v[l.iv];
        else link_retract(l, &q[l.iq], &v[l.iv], &q[l.iq]);
    }
}

void Riqn::secant_reject(State& st) {
    std::copy(st.sec_q.begin(), st.sec_q.end(), st.qp.begin());
    st.sec.take_plain();
    retract(st.tree, st.qp.data(), st.sec.plain());
}

void Riqn::guess(State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    if (st.opt.guess == Guess::position) {
        st.qp = st.q;
        return;
    }
    // The interval's mean velocity (q_k − q_{k−1})/h into st.dq.
    auto mean_velocity = [&] {
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) {
                st.dq[l.iv] = (st.q[l.iq] - st.qm[l.iq]) / st.dt_prev;
                continue;
            }
            link_difference(l, &st.qm[l.iq], &st.q[l.iq], &st.dq[l.iv]);
            for (int k = 0; k < l.nv; ++k) st.dq[l.iv + k] /= st.dt_prev;
        }
    };
    mean_velocity();
    const bool accel = st.opt.guess != Guess::velocity;
    if (st.opt.guess == Guess::momentum || st.opt.guess == Guess::feedback) {
        // q̈ at the velocity of node k (from its discrete momentum), not at the interval's mean
        // velocity (q_k − q_{k−1})/h: q_k + (q_k − q_{k−1}) + h² q̈_k is then the central difference
        // with q̈ right to O(h²).
        node_velocity(st, h);  // from the interval's mean velocity in st.dq, into st.dq
        forward_dynamics(st);
        mean_velocity();  // back, for the extrapolation below
    } else if (accel) {
        forward_dynamics(st);  // q̈ into st.u
    }
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        if (l.type == TreeJoint::screw) {
            st.qp[l.iq] = accel ? st.q[l.iq] + h * (st.dq[l.iv] + h * st.u[l.iv]) : st.q[l.iq] + h * st.dq[l.iv];
            continue;
        }
        double v[6];
        for (int k = 0; k < l.nv; ++k) v[k] = h * (st.dq[l.iv + k] + (accel ? h * st.u[l.iv + k] : 0.0));
        link_retract(l, &st.q[l.iq], v, &st.qp[l.iq]);
    }
    if (st.opt.guess != Guess::feedback) return;
    // The guess misses by an amount that changes smoothly from step to step (its O(h⁴) term): add
    // the misses of the last substeps of this length, extrapolated by the polynomial of degree
    // miss_degree (commit() picks it) through the newest of them (e_k; 2e_k − e_{k−1};
    // 3e_k − 3e_{k−1} + e_{k−2}; 4e_k − 6e_{k−1} + 4e_{k−2} − e_{k−3}). commit() records this
    // substep's miss against the raw guess kept here.
    std::copy(st.qp.begin(), st.qp.end(), st.qguess.begin());
    if (st.miss_count == 0 || st.miss_h != h) return;
    const int degree = std::min(st.miss_degree, st.miss_count - 1);
    for (int k = 0; k < t.nv; ++k) st.u[k] = extrapolated_miss(st.miss, degree, 0, k);  // (st.u: scratch from here)
    retract(t, st.qp.data(), st.u.data());
}

void Riqn::node_velocity(State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    // The node's momentum: per link π_i + (h/2)·F_i (the carried momentum is that of the last
    // interval, which the node's half forcing brings to t_k), gathered to the joints; the joint
    // terms Qminus + (h/2)·spring(q_k). Then q̇_k = (M(q_k) + k)⁻¹ (p + k v̄) by the impulse ABI of the
    // step (below).
    for (int k = 0; k < 6 * n; ++k) st.Gam[k] = st.pi[k] + 0.5 * h * st.F[k];
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const double* G = &st.Gam[6 * i];
        if (l.type == TreeJoint::screw) {
            // + k·v̄: the solve is with M + k (k: the dampers' and servos' share of the step's
            // matrix), so a joint with k ≫ M keeps the interval's mean velocity v̄ (st.dq on entry)
            // and one with k = 0 gets its node velocity.
            st.u[l.iv] = dot6(l.S, G) + st.Qminus[l.iv] - 0.5 * h * l.stiffness * (st.q[l.iq] - l.rest) +
                         st.kd[l.iv] * st.dq[l.iv];
        } else {
            for (int c = 0; c < l.nv; ++c) {
                double sc[6];
                link_motion(l, c, sc);
                st.u[l.iv + c] = dot6(sc, G);
            }
        }
        if (l.parent >= 0) {
            double w[6];
            wrench_to_parent(st.T[i], G, w);
            double* Gp = &st.Gam[6 * l.parent];
            for (int k = 0; k < 6; ++k) Gp[k] += w[k];
        }
    }
    tree_abi_solve(t, st.T.data(), st.abi, st.u.data(), st.dq.data());
}

void Riqn::forward_dynamics(State& st) {
    const TreeView& t = st.tree;
    const int n = t.size();
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        double* Vi = &st.V[6 * i];
        if (l.parent >= 0) twist_to_child(st.T[i], &st.V[6 * l.parent], Vi);
        else std::fill(Vi, Vi + 6, 0.0);
        const Vec3 wp = top(Vi), vp = bot(Vi);  // the part carried from the parent
        double Sq[6];  // S_i q̇_i
        if (l.type == TreeJoint::screw) {
            for (int k = 0; k < 6; ++k) Sq[k] = l.S[k] * st.dq[l.iv];
        } else {
            std::fill(Sq, Sq + 6, 0.0);
            for (int c = 0; c < l.nv; ++c) {
                double sc[6];
                link_motion(l, c, sc);
                for (int k = 0; k < 6; ++k) Sq[k] += sc[k] * st.dq[l.iv + c];
            }
        }
        for (int k = 0; k < 6; ++k) Vi[k] += Sq[k];
        // c_i = ad_{V_i} S_i q̇_i (= ad of the carried part, since ad_x x = 0)
        const Vec3 sw = top(Sq), sv = bot(Sq);
        set6(&st.c[6 * i], cross(wp, sw), cross(vp, sw) + cross(wp, sv));
        // bias wrench −ad_Vᵀ G V − F
        const Vec3 w = top(Vi), v = bot(Vi);
        const Vec3 Jw = l.inertia * w, mv = l.mass * v;
        double* p = &st.pA[6 * i];
        set6(p, cross(w, Jw) + cross(v, mv), cross(w, mv));
        for (int k = 0; k < 6; ++k) p[k] -= st.F[6 * i + k];
    }
    // The articulated inertias are those of the impulse ABI already built for this step
    // (M(q_k) + (h/2)·D: with dampers the guess's acceleration is that of an implicit damper).
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const double* U = &st.abi.U[6 * l.iv];
        const double* IA = &st.abi.IA[36 * i];
        const double* c = &st.c[6 * i];
        double pa[6], o[6];
        if (l.type == TreeJoint::screw) {
            const double Di = st.abi.D[l.id];
            double tau = st.tau[l.iv] - l.stiffness * (st.q[l.iq] - l.rest) - l.damping * st.dq[l.iv];
            if (st.any_servo) {
                const ServoTerms& s = st.servo[l.iv];
                tau += s.force - s.kp * (st.q[l.iq] - s.target) - s.kv * st.dq[l.iv];
            }
            const double ui = tau - dot6(l.S, &st.pA[6 * i]);
            st.fdu[l.iv] = ui;
            if (l.parent < 0) continue;
            const double Uc = dot6(U, c);
            for (int k = 0; k < 6; ++k) pa[k] = st.pA[6 * i + k] + dot6(&IA[6 * k], c) + U[k] * (ui - Uc) / Di;
        } else {  // no joint forces here: a ball's actuation and springs are in F
            const int nv = l.nv;
            const double* Dinv = &st.abi.D[l.id];
            double y[6];
            for (int e = 0; e < nv; ++e) {
                double sc[6];
                link_motion(l, e, sc);
                st.fdu[l.iv + e] = -dot6(sc, &st.pA[6 * i]);
                y[e] = st.fdu[l.iv + e] - dot6(&U[6 * e], c);
            }
            if (l.parent < 0) continue;
            for (int k = 0; k < 6; ++k) pa[k] = st.pA[6 * i + k] + dot6(&IA[6 * k], c);
            for (int e = 0; e < nv; ++e) {
                double z = 0;
                for (int f = 0; f < nv; ++f) z += Dinv[e * nv + f] * y[f];
                for (int k = 0; k < 6; ++k) pa[k] += U[6 * e + k] * z;
            }
        }
        wrench_to_parent(st.T[i], pa, o);
        for (int k = 0; k < 6; ++k) st.pA[6 * l.parent + k] += o[k];
    }
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        double* a = &st.dV[6 * i];
        if (l.parent >= 0) twist_to_child(st.T[i], &st.dV[6 * l.parent], a);
        else std::fill(a, a + 6, 0.0);
        for (int k = 0; k < 6; ++k) a[k] += st.c[6 * i + k];
        if (l.type == TreeJoint::screw) {
            const double qdd = (st.fdu[l.iv] - dot6(&st.abi.U[6 * l.iv], a)) / st.abi.D[l.id];
            st.u[l.iv] = qdd;
            for (int k = 0; k < 6; ++k) a[k] += l.S[k] * qdd;
            continue;
        }
        const int nv = l.nv;
        const double* Dinv = &st.abi.D[l.id];
        double y[6];
        for (int e = 0; e < nv; ++e) y[e] = st.fdu[l.iv + e] - dot6(&st.abi.U[6 * (l.iv + e)], a);
        for (int e = 0; e < nv; ++e) {
            double z = 0;
            for (int f = 0; f < nv; ++f) z += Dinv[e * nv + f] * y[f];
            st.u[l.iv + e] = z;
            double sc[6];
            link_motion(l, e, sc);
            for (int k = 0; k < 6; ++k) a[k] += sc[k] * z;
        }
    }
}

void Riqn::newton_block(const State& st, int i, double h, double* Bout) {
    const TreeLink& li = st.tree.links[i];
    double x[6];
    se3_log(st.f[i], x);
    Eigen::Matrix<double, 6, 6> dmu, ad, Dinv, Adf;
    constexpr double eps = 1e-30;
    for (int k = 0; k < 6; ++k) {
        std::complex<double> xc[6], mc[6];
        for (int a = 0; a < 6; ++a) xc[a] = x[a];
        xc[k] += std::complex<double>(0, eps);
        momentum(xc, li.inertia, li.mass, h, mc);
        for (int a = 0; a < 6; ++a) dmu(a, k) = mc[a].imag() / eps;
    }
    const Mat3 P = skew(top(x)), Q = skew(bot(x));
    ad.setZero();
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            ad(a, b) = ad(a + 3, b + 3) = P(a, b);
            ad(a + 3, b) = Q(a, b);
        }
    double th = norm(top(x)), ca, cb;
    dexpinv_coeffs(th, ca, cb);
    const Eigen::Matrix<double, 6, 6> ad2 = ad * ad;
    Dinv = Eigen::Matrix<double, 6, 6>::Identity() - 0.5 * ad + ca * ad2 + cb * ad2 * ad2;
    const Frame& f = st.f[i];
    const Mat3 pR = skew(f.p) * f.R;
    Adf.setZero();
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            Adf(a, b) = Adf(a + 3, b + 3) = f.R(a, b);
            Adf(a + 3, b) = pR(a, b);
        }
    const Eigen::Matrix<double, 6, 6> B = dmu * Dinv * Adf;
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b) Bout[6 * a + b] = B(a, b);
}

void Riqn::newton_block_fast(const State& st, int i, double h, double* Bout) {
    const TreeLink& li = st.tree.links[i];
    const double* x = &st.xl[6 * i];  // log f_i of the last DRNEA
    // h μ = w − ½ t1 + a t2 + b t4, w = G x, t_{j+1} = ad_xᵀ t_j (t_0 = w), a, b of θ = |φ|. With
    // ad_δᵀ v = Λ(v) δ, Λ([n; f]) = [[n×, f×], [f×, 0]], the derivatives T_j = ∂t_j/∂x are
    // T_0 = G, T_{j+1} = A T_j + Λ(t_j) (A = ad_xᵀ), and a, b add t2 (a'/θ) φᵀ, t4 (b'/θ) φᵀ.
    const Vec3 phi = top(x), rho = bot(x);
    double A[36] = {};
    {
        const Mat3 P = skew(phi), R = skew(rho);  // ad_x = [[φ×, 0], [ρ×, φ×]], A = ad_xᵀ
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                A[6 * a + b] = P(b, a);
                A[6 * a + b + 3] = R(b, a);
                A[6 * (a + 3) + b + 3] = P(b, a);
            }
    }
    double t[5][6], T[36], Tn[36], dmu[36];
    for (int a = 0; a < 3; ++a) {
        t[0][a] = li.inertia(a, 0) * x[0] + li.inertia(a, 1) * x[1] + li.inertia(a, 2) * x[2];
        t[0][a + 3] = li.mass * x[a + 3];
    }
    for (int j = 0; j < 4; ++j) adT(x, t[j], t[j + 1]);
    for (int k = 0; k < 36; ++k) T[k] = 0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) T[6 * a + b] = li.inertia(a, b);
    for (int a = 3; a < 6; ++a) T[6 * a + a] = li.mass;
    double th = norm(phi), ca, cb;
    dexpinv_coeffs(th, ca, cb);
    for (int k = 0; k < 36; ++k) dmu[k] = T[k];
    for (int j = 0; j < 4; ++j) {
        // Tn = A T + Λ(t_j), A T column by column.
        for (int b = 0; b < 6; ++b) {
            double col[6], o[6];
            for (int a = 0; a < 6; ++a) col[a] = T[6 * a + b];
            adT(x, col, o);
            for (int a = 0; a < 6; ++a) Tn[6 * a + b] = o[a];
        }
        const Mat3 N = skew(top(t[j])), F = skew(bot(t[j]));
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                Tn[6 * a + b] += N(a, b);
                Tn[6 * a + b + 3] += F(a, b);
                Tn[6 * (a + 3) + b] += F(a, b);
            }
        const double w = j == 0 ? -0.5 : j == 1 ? ca : j == 3 ? cb : 0.0;
        if (w != 0)
            for (int k = 0; k < 36; ++k) dmu[k] += w * Tn[k];
        std::copy(Tn, Tn + 36, T);
    }
    if (th > 0) {  // a'(θ)/θ and b'(θ)/θ by a complex step of the scalar coefficients
        constexpr double eps = 1e-30;
        std::complex<double> ac, bc;
        dexpinv_coeffs(std::complex<double>(th, eps), ac, bc);
        const double da = ac.imag() / eps / th, db = bc.imag() / eps / th;
        for (int a = 0; a < 6; ++a)
            for (int b = 0; b < 3; ++b) dmu[6 * a + b] += (t[2][a] * da + t[4][a] * db) * x[b];
    }
    // B = (dmu / h) · dexp⁻¹_x · Ad_f.
    double D2[36], D4[36], Dinv[36], M1[36], adm[36] = {};
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b) adm[6 * a + b] = A[6 * b + a];  // ad_x
    auto mul = [](const double* L, const double* R, double* O) {
        for (int a = 0; a < 6; ++a)
            for (int b = 0; b < 6; ++b) {
                double v = 0;
                for (int c = 0; c < 6; ++c) v += L[6 * a + c] * R[6 * c + b];
                O[6 * a + b] = v;
            }
    };
    mul(adm, adm, D2);
    mul(D2, D2, D4);
    for (int k = 0; k < 36; ++k) Dinv[k] = (k % 7 == 0 ? 1.0 : 0.0) - 0.5 * adm[k] + ca * D2[k] + cb * D4[k];
    mul(dmu, Dinv, M1);
    double Adf[36] = {};
    const Frame& f = st.f[i];
    const Mat3 pR = skew(f.p) * f.R;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            Adf[6 * a + b] = Adf[6 * (a + 3) + b + 3] = f.R(a, b);
            Adf[6 * (a + 3) + b] = pR(a, b);
        }
    mul(M1, Adf, Bout);
    for (int k = 0; k < 36; ++k) Bout[k] /= h;
}

bool Riqn::exact_step(State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        const Frame Tp = link_transform(l, &st.qp[l.iq]);
        st.gp[i] = l.parent >= 0 ? st.gp[l.parent] * Tp : Tp;
    }
    st.K.setZero();
    for (int i = 0; i < n; ++i) {
        double Bm[36];
        newton_block(st, i, h, Bm);
        const Eigen::Matrix<double, 6, 6> B = Eigen::Map<const Eigen::Matrix<double, 6, 6, Eigen::RowMajor>>(Bm);
        // Jacobian columns of the ancestors j of i (and i): Ad_{g_i⁻¹ g_j} S_j at q_k and at q⁺
        // (for ball and free links, one column per velocity: T(q ⊕ v) = T(q) exp(S v)).
        const Frame gi_k = inverse(st.g[i]), gi_p = inverse(st.gp[i]);
        for (int j = i; j >= 0; j = t.links[j].parent) {
            const TreeLink& lj = t.links[j];
            const Frame ak = gi_k * st.g[j], ap = gi_p * st.gp[j];
            for (int e = 0; e < lj.nv; ++e) {
                double sc[6], ck[6], cp[6];
                link_motion(lj, e, sc);
                ad_apply(ak, sc, ck);
                ad_apply(ap, sc, cp);
                Eigen::Map<const Eigen::Matrix<double, 6, 1>> Ck(ck), Cp(cp);
                st.Jk.col(lj.iv + e) = Ck;
                st.Jp.col(lj.iv + e) = Cp;
            }
        }
        for (int j = i; j >= 0; j = t.links[j].parent)
            for (int a = t.links[j].iv; a < t.links[j].iv + t.links[j].nv; ++a) {
                const Eigen::Matrix<double, 1, 6> row = st.Jk.col(a).transpose() * B;
                for (int k = i; k >= 0; k = t.links[k].parent)
                    for (int b = t.links[k].iv; b < t.links[k].iv + t.links[k].nv; ++b) st.K(a, b) += row.dot(st.Jp.col(b));
            }
    }
    for (const TreeLink& l : t.links)
        if (l.type == TreeJoint::screw) {
            st.K(l.iv, l.iv) += 0.5 * l.damping;
            if (st.any_servo) st.K(l.iv, l.iv) += 0.25 * h * st.servo[l.iv].kp + 0.5 * st.servo[l.iv].kv;
        }
    for (int k = 0; k < t.nv; ++k) st.kr(k) = -st.r[k];
    st.lu.compute(st.K);
    // Singular or not finite: judged from the pivots (rcond() would allocate in the step).
    const auto piv = st.lu.matrixLU().diagonal().cwiseAbs();
    if (!(piv.minCoeff() > 1e-14 * piv.maxCoeff())) return false;
    Eigen::Map<Eigen::VectorXd> dq(st.dq.data(), t.nv);
    dq.noalias() = st.lu.solve(st.kr);
    return true;
}

namespace {

// Inverse of a general m×m block (m ≤ 6; A is overwritten by its LU factors); false if a pivot is
// below 1e-14 of the block's largest entry (singular to working precision) or not finite.
bool invert_small(int m, double* A, double* out) {
    int piv[6];
    const double floor = 1e-14 * dense::max_abs(m * m, A);
    if (!(floor > 0) || !dense::lu_factor(m, A, piv, floor)) return false;
    for (int i = 0; i < m * m; ++i) out[i] = i % (m + 1) == 0 ? 1.0 : 0.0;
    dense::lu_solve_matrix(m, m, A, piv, out);
    return true;
}

}  // namespace

bool Riqn::tree_newton_setup(State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    std::copy(st.Tq.begin(), st.Tq.end(), st.Tp.begin());  // T_i at q⁺, as the last DRNEA made them
    for (int i = 0; i < n; ++i) newton_block_fast(st, i, h, &st.nIA[36 * static_cast<std::size_t>(i)]);
    // Articulated blocks, children first.
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const int m = l.nv;
        const double* IA = &st.nIA[36 * static_cast<std::size_t>(i)];
        double* U = &st.nU[6 * static_cast<std::size_t>(l.iv)];  // IA S, column by column
        double* V = &st.nV[6 * static_cast<std::size_t>(l.iv)];  // Sᵀ IA, row by row
        double S[36], Dm[36];
        for (int c = 0; c < m; ++c) {
            link_motion(l, c, &S[6 * c]);
            for (int a = 0; a < 6; ++a) {
                U[6 * c + a] = dot6(&IA[6 * a], &S[6 * c]);
                double v = 0;
                for (int b = 0; b < 6; ++b) v += S[6 * c + b] * IA[6 * b + a];
                V[6 * c + a] = v;
            }
        }
        for (int a = 0; a < m; ++a)
            for (int b = 0; b < m; ++b) Dm[a * m + b] = dot6(&S[6 * a], &U[6 * b]);
        if (l.type == TreeJoint::screw) {  // the joint's damper and servo (exact_step's diagonal)
            Dm[0] += 0.5 * l.damping;
            if (st.any_servo) Dm[0] += 0.25 * h * st.servo[l.iv].kp + 0.5 * st.servo[l.iv].kv;
        }
        double* Di = &st.nD[static_cast<std::size_t>(l.id)];
        if (!invert_small(m, Dm, Di)) return false;
        if (l.parent < 0) continue;
        // Ia = IA − U D⁻¹ V, into the parent as X_iᵀ Ia X⁺_i.
        double Ia[36], Xk[36], Xp[36];
        for (int a = 0; a < 6; ++a)
            for (int b = 0; b < 6; ++b) {
                double x = 0;
                for (int c = 0; c < m; ++c) {
                    double y = 0;
                    for (int e = 0; e < m; ++e) y += Di[c * m + e] * V[6 * e + b];
                    x += U[6 * c + a] * y;
                }
                Ia[6 * a + b] = IA[6 * a + b] - x;
            }
        ad_inv_matrix(st.T[i], Xk);
        ad_inv_matrix(st.Tp[i], Xp);
        add_congruence(Xk, Ia, Xp, &st.nIA[36 * static_cast<std::size_t>(l.parent)]);
    }
    return true;
}

bool Riqn::tree_newton_solve(State& st) {
    const TreeView& t = st.tree;
    const int n = t.size();
    // ∂r/∂q⁺ Δq = −r: wrenches children first, then twists parents first.
    std::fill(st.nP.begin(), st.nP.end(), 0.0);
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const int m = l.nv;
        const double* P = &st.nP[6 * static_cast<std::size_t>(i)];
        for (int c = 0; c < m; ++c) {
            double s[6];
            link_motion(l, c, s);
            st.nu[l.iv + c] = -st.r[l.iv + c] - dot6(s, P);
        }
        if (l.parent < 0) continue;
        const double* Di = &st.nD[static_cast<std::size_t>(l.id)];
        const double* U = &st.nU[6 * static_cast<std::size_t>(l.iv)];
        double z[6], o[6];
        for (int k = 0; k < 6; ++k) z[k] = P[k];
        for (int c = 0; c < m; ++c) {
            double y = 0;
            for (int e = 0; e < m; ++e) y += Di[c * m + e] * st.nu[l.iv + e];
            for (int k = 0; k < 6; ++k) z[k] += U[6 * c + k] * y;
        }
        wrench_to_parent(st.T[i], z, o);
        double* Pp = &st.nP[6 * static_cast<std::size_t>(l.parent)];
        for (int k = 0; k < 6; ++k) Pp[k] += o[k];
    }
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        const int m = l.nv;
        double* dV = &st.ndV[6 * static_cast<std::size_t>(i)];
        if (l.parent >= 0) twist_to_child(st.Tp[i], &st.ndV[6 * static_cast<std::size_t>(l.parent)], dV);
        else for (int k = 0; k < 6; ++k) dV[k] = 0;
        const double* Di = &st.nD[static_cast<std::size_t>(l.id)];
        const double* V = &st.nV[6 * static_cast<std::size_t>(l.iv)];
        double y[6];
        for (int c = 0; c < m; ++c) y[c] = st.nu[l.iv + c] - dot6(&V[6 * c], dV);
        for (int c = 0; c < m; ++c) {
            double x = 0;
            for (int e = 0; e < m; ++e) x += Di[c * m + e] * y[e];
            st.dq[l.iv + c] = x;
        }
        for (int c = 0; c < m; ++c) {
            double s[6];
            link_motion(l, c, s);
            for (int k = 0; k < 6; ++k) dV[k] += s[k] * st.dq[l.iv + c];
        }
    }
    for (int k = 0; k < t.nv; ++k)
        if (!std::isfinite(st.dq[k])) return false;
    return true;
}

}  // namespace riqn
}  // namespace noether
