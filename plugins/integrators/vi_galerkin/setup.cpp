// vi-galerkin: Gauss–Lobatto collocation, options, the small dense solves, the continuous start
// (§2.3) and the write-back (§2.2). (docs/design/galerkin-vi.md; layout in galerkin.hpp)
#include "galerkin.hpp"

namespace noether {
namespace galerkin_vi {

Lobatto make_lobatto(int s) {
    Lobatto L;
    L.s = s;
    double x[kMaxPoints + 1];
    for (int j = 0; j <= s; ++j) x[j] = -std::cos(M_PI * j / s);
    double Ps[kMaxPoints + 1];
    for (int it = 0; it < 100; ++it) {
        double change = 0;
        for (int j = 0; j <= s; ++j) {
            // P_{s−1}, P_s by the three-term recurrence; x P_s − P_{s−1} = (x² − 1) P_s' / s vanishes
            // at the Lobatto nodes, and its derivative there is (s + 1) P_s.
            double p0 = 1, p1 = x[j];
            for (int k = 2; k <= s; ++k) {
                const double p2 = ((2 * k - 1) * x[j] * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            Ps[j] = p1;
            if (j == 0 || j == s) continue;  // the end points are exact
            const double dx = (x[j] * p1 - p0) / ((s + 1) * p1);
            x[j] -= dx;
            change = std::max(change, std::fabs(dx));
        }
        if (change < 1e-16) break;
    }
    for (int j = 0; j <= s; ++j) {
        L.c[j] = 0.5 * (1 + x[j]);
        L.w[j] = 1.0 / (s * (s + 1) * Ps[j] * Ps[j]);  // 2/(s(s+1)P²) on [−1, 1], halved
    }
    if (s % 2 == 0) L.c[s / 2] = 0.5;  // the middle node exactly
    for (int j = 0; j <= s; ++j)
        for (int a = 0; a <= s; ++a) L.B[j][a] = L.basis_derivative(a, L.c[j]);
    // Gauss–Legendre with kG points (exact to degree 2 kG − 1 ≥ 2 s) for the products ℓ_a ℓ_b.
    constexpr int kG = kMaxPoints + 1;
    for (int g = 0; g < kG; ++g) {
        double y = std::cos(M_PI * (g + 0.75) / (kG + 0.5)), dp = 1;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1, p1 = y;
            for (int k = 2; k <= kG; ++k) {
                const double p2 = ((2 * k - 1) * y * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            dp = kG * (y * p1 - p0) / (y * y - 1);
            const double dy = p1 / dp;
            y -= dy;
            if (std::fabs(dy) < 1e-16) break;
        }
        const double x01 = 0.5 * (1 + y), wg = 1.0 / ((1 - y * y) * dp * dp);  // 2/((1−y²)P'²), halved
        for (int a = 0; a <= s; ++a)
            for (int b = 0; b <= s; ++b) L.M[a][b] += wg * L.basis(a, x01) * L.basis(b, x01);
    }
    return L;
}

GalerkinOptions galerkin_options(const Model& m) {
    GalerkinOptions o;
    auto it = m.options.extra.find("points");
    if (it != m.options.extra.end() && it->second >= 1 && it->second <= kMaxPoints) o.s = static_cast<int>(it->second);
    if (const std::string* s = string_option(m, "newton")) o.chord = *s != "exact";
    if (const std::string* s = string_option(m, "guess")) o.feedback = *s != "polynomial";
    it = m.options.extra.find("step_tolerance");
    if (it != m.options.extra.end()) o.step_tolerance = it->second;
    it = m.options.extra.find("max_turn");
    if (it != m.options.extra.end()) o.max_turn = it->second;
    return o;
}

void Galerkin::start(const Model& m, const Data& d, State& st) {
    const TreeView& t = st.tree;
    const int n = st.n;
    st.node0_ok = false;  // node 0's workspace is used below
    st.miss_count = 0;    // a new start: no guess has missed yet
    std::vector<double>& prev = st.qdot;  // scratch
    for (int i = 0; i < n; ++i) prev[i] = d.coord[t.links[i].dof] - tree_link_offset(m, t.links[i]);
    tree_coordinates(t, st.origin.view_poses(d.pose, st.bp), prev.data(), st.q.data());  // (st.bp: scratch here)
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        const Frame Ti = link_transform(l, st.q[i]);
        st.g[i] = l.parent >= 0 ? st.g[l.parent] * Ti : Ti;
        double* S = &st.Sb[6 * i];
        double* v = &st.vb[6 * i];
        ad_apply(st.g[i], l.S, S);
        double rel[6], vp[6] = {0, 0, 0, 0, 0, 0};
        spatial_twist(d, l.body, st.origin.c, rel);
        if (l.parent >= 0) spatial_twist(d, t.links[l.parent].body, st.origin.c, vp);
        for (int k = 0; k < 6; ++k) rel[k] -= vp[k];
        st.qd0[i] = dot6(S, rel) / dot6(S, S);
        for (int k = 0; k < 6; ++k) v[k] = (l.parent >= 0 ? st.vb[6 * l.parent + k] : 0.0) + S[k] * st.qd0[i];
        world_momentum(l, st.g[i], v, &st.mu[6 * i]);
    }
    for (int i = n - 1; i >= 0; --i) {
        const int par = t.links[i].parent;
        st.p[i] = dot6(&st.Sb[6 * i], &st.mu[6 * i]);
        if (par >= 0)
            for (int k = 0; k < 6; ++k) st.mu[6 * par + k] += st.mu[6 * i + k];
    }
    st.have_prev = false;
    st.started = true;
}

void Galerkin::set_servos(const Model& m, const Data& d, State& st) {
    for (int i = 0; i < st.n; ++i) {
        const TreeLink& l = st.tree.links[i];
        ServoTerms s = servo_terms(m, d, l.joint);
        s.target -= tree_link_offset(m, l);  // raw, like the link's rest
        st.servo[i] = s;
    }
}

void Galerkin::spatial_twist(const Data& d, int b, const Vec3& origin, double* v) {
    const Vec3 w = rotate(d.pose[b].q, d.twist[b].w);
    set6(v, w, d.twist[b].v - cross(w, d.pose[b].x - origin));
}

void Galerkin::world_momentum(const TreeLink& l, const Frame& g, const double* v, double* h) {
    double b[6], w[6];
    twist_to_child(g, v, b);
    const Vec3 Jw = l.inertia * top(b);
    set6(w, Jw, l.mass * bot(b));
    wrench_to_parent(g, w, h);
}

void Galerkin::world_inertia(const TreeLink& l, const Frame& g, double* Mb) {
    const Mat3 Jw = g.R * l.inertia * transpose(g.R);
    const Mat3 X = skew(g.p);
    // [x]×² = x xᵀ − |x|² I, written as the product [x]× [x]× rounds it (its zero terms dropped)
    const double x = g.p.x, y = g.p.y, z = g.p.z;
    const double XX[3][3] = {{-(z * z) - y * y, y * x, z * x},
                             {x * y, -(z * z) - x * x, z * y},
                             {x * z, y * z, -(y * y) - x * x}};
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            Mb[6 * a + b] = Jw(a, b) - l.mass * XX[a][b];
            Mb[6 * a + b + 3] = l.mass * X(a, b);
            Mb[6 * (a + 3) + b] = -l.mass * X(a, b);
            Mb[6 * (a + 3) + b + 3] = a == b ? l.mass : 0.0;
        }
}

bool Galerkin::any_body_forcing(const Model& m, const Data& d) { return !m.forces.empty() || d.any_applied_wrench(); }

void Galerkin::project_rates(State& st) {
    const TreeView& t = st.tree;
    const int n = st.n, s = st.lob.s, M = st.mrows;
    const std::size_t N = static_cast<std::size_t>(n);
    for (int row = 0; row < M; ++row) {
        double* a = &st.aproj[row * N];
        std::fill(a, a + N, 0.0);
        loop_row(st, s, row, 1.0, a, 1, 0, false);
        tree_abi_solve(t, st.T.data(), st.abi, a, &st.wproj[row * N]);
    }
    for (int r = 0; r < M; ++r) {
        const double* a = &st.aproj[r * N];
        double acc = 0;
        for (int i = 0; i < n; ++i) acc += a[i] * st.qdot[i];
        st.lrhs2[r] = acc;
        for (int c = 0; c < M; ++c) {
            const double* w = &st.wproj[c * N];
            double v = 0;
            for (int i = 0; i < n; ++i) v += a[i] * w[i];
            st.Sm[static_cast<std::size_t>(r) * M + c] = v;
        }
    }
    dense::solve_rank_revealing(M, st.Sm.data(), st.lrhs2.data(), st.dlam.data(), st.rperm.data(), st.cperm.data(),
                                st.ywork.data(), kRankTolerance);
    for (int c = 0; c < M; ++c)
        for (int i = 0; i < n; ++i) st.qdot[i] -= st.dlam[c] * st.wproj[c * N + i];
}

bool Galerkin::write_back(const Model& m, Data& d, State& st) {
    const TreeView& t = st.tree;
    const int n = st.n;
    // The link poses at q: node s's of the substep's last evaluate(), computed from these bits.
    const Frame* g = &st.g[static_cast<std::size_t>(st.lob.s) * n];
    for (int i = 0; i < n; ++i) st.T[i] = link_transform(t.links[i], st.q[i]);
    tree_body_poses(t, g, d.pose.data(), st.bp.data());
    st.origin.to_world(st.bp);
    tree_abi_setup(t, st.T.data(), nullptr, st.abi);
    tree_abi_solve(t, st.T.data(), st.abi, st.p.data(), st.qdot.data());
    if (!st.loops.empty()) project_rates(st);
    std::copy(st.qdot.begin(), st.qdot.end(), st.qd0.begin());  // the next step's guess (guess())
    tree_link_twists(t, st.q.data(), st.qdot.data(), reinterpret_cast<double(*)[6]>(st.Vl.data()));
    for (int b = 0; b < m.nbodies(); ++b) {
        d.pose[b] = st.bp[b];
        const Twist tw = tree_body_twist(t, g, reinterpret_cast<const double(*)[6]>(st.Vl.data()), b);
        d.twist[b] = tw;
        d.twist_guess[b] = tw;
    }
    // The joint coordinates and rates stepped, when the view holds every DOF (no loop joint with
    // coordinates of its own): StepReport::coordinates.
    return tree_write_coordinates(m, t, st.q.data(), st.qdot.data(), d);
}

}  // namespace galerkin_vi
}  // namespace noether
