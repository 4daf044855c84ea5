// Step-size advice from the energy the mechanism can release (noether/advice.hpp).
#include "noether/advice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "noether/data.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/model.hpp"
#include "noether/sdk/tree.hpp"

#include "sym3.hpp"

namespace noether {

namespace {

// The point of the line through p along unit u closest to x.
Vec3 closest_on_line(const Vec3& p, const Vec3& u, const Vec3& x) { return p + u * dot(x - p, u); }

// The tree view both estimates work on, with the link coordinates q and poses g of the state in d,
// or false and why there is none (loop closures; a joint the view does not take: the first clause
// of its message, which names the joint and the rule).
bool advice_tree(const Model& m, const Data& d, TreeView& tv, std::vector<double>& q, std::vector<Frame>& g,
                 std::string& reason) {
    std::vector<Diagnostic> why;
    if (!m.graph.loop_joints.empty()) {
        reason = "loop closures (joint '" + m.joints[m.graph.loop_joints.front()].name + "'): trees only";
        return false;
    }
    if (!build_tree_view(m, "", tv, why)) {
        reason = why.empty() ? std::string("not a tree of revolute, prismatic, helical and spherical joints")
                             : why.front().message;
        if (reason.rfind(": ", 0) == 0) reason.erase(0, 2);
        const std::size_t cut = reason.find("; ");
        if (cut != std::string::npos) reason.resize(cut);
        return false;
    }
    q.assign(static_cast<std::size_t>(tv.nq), 0.0);
    tree_coordinates(tv, d.pose.data(), nullptr, q.data());
    g.assign(static_cast<std::size_t>(tv.size()), Frame{});
    tree_link_poses(tv, q.data(), g.data());
    return true;
}

}  // namespace

StepAdvice step_advice(const Model& m, const Data& d) {
    StepAdvice a;
    TreeView tv;
    std::vector<double> q;
    std::vector<Frame> g;
    if (!advice_tree(m, d, tv, q, g, a.reason)) return a;
    if (tv.nv > kAdviceMaxCoordinates) {
        a.reason = "the tree has " + std::to_string(tv.nv) + " velocity coordinates (the estimate stops at " +
                   std::to_string(kAdviceMaxCoordinates) + ")";
        return a;
    }
    const int n = tv.size(), nv = tv.nv;

    // The largest release of potential energy: each centre of mass at most as low as the link
    // lengths to the world allow.
    const double gmag = norm(m.gravity);
    const Vec3 up = gmag > 0 ? m.gravity * (-1.0 / gmag) : Vec3{0, 0, 1};
    std::vector<double> low(n, 0.0);
    double drop = 0;
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = tv.links[i];
        const Vec3 c = g[i].p;  // link frames sit at the link centre of mass
        const std::string jname = l.joint >= 0 ? m.joints[l.joint].name : std::string("-");
        Vec3 anchor = c;        // a point of the joint fixed in both the link and its parent
        bool translates = false;
        switch (l.type) {
            case TreeJoint::free:
                anchor = c;  // a floating link: its own fall is not motion of the mechanism
                break;
            case TreeJoint::ball:
                anchor = g[i].R * l.centre + g[i].p;
                break;
            case TreeJoint::screw: {
                const Vec3 w{l.S[0], l.S[1], l.S[2]}, v{l.S[3], l.S[4], l.S[5]};
                if (norm(w) < 0.5 || std::fabs(dot(w, v)) > 1e-12) translates = true;  // prismatic, helical
                else anchor = closest_on_line(g[i].R * cross(w, v) + g[i].p, g[i].R * w, c);
                break;
            }
        }
        if (translates && gmag > 0) {
            a.reason = "joint '" + jname + "' translates, so gravity does not bound how far it can move";
            return a;
        }
        const double hang = norm(c - anchor);
        if (l.parent < 0) low[i] = (l.type == TreeJoint::free ? dot(c, up) : dot(anchor, up) - hang);
        else low[i] = low[l.parent] - norm(anchor - g[l.parent].p) - hang;
        drop += l.mass * gmag * (dot(c, up) - low[i]);
    }
    const Monitors mon = continuous_monitors(m, d.pose.data(), d.twist.data());
    const double springs = spring_energy(m, d.coord.data());
    a.energy = std::max(0.0, mon.kinetic + drop + springs);

    // M⁻¹ at this configuration.
    std::vector<double> M(static_cast<std::size_t>(nv) * nv), X(M.size(), 0.0);
    std::vector<int> piv(nv);
    tree_mass_matrix(tv, q.data(), M.data());
    if (!dense::lu_factor(nv, M.data(), piv.data())) {
        a.reason = "the joint-space mass matrix is singular (a massless link?)";
        return a;
    }
    for (int k = 0; k < nv; ++k) {  // row k = M⁻¹ e_k (= column k: M is symmetric)
        double* row = &X[static_cast<std::size_t>(k) * nv];
        row[k] = 1;
        dense::lu_solve(nv, M.data(), piv.data(), row);
    }

    // World angular columns of every velocity coordinate.
    std::vector<Vec3> W(nv);
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = tv.links[i];
        for (int k = 0; k < l.nv; ++k) {
            double s[6];
            link_motion(l, k, s);
            W[l.iv + k] = g[i].R * Vec3{s[0], s[1], s[2]};
        }
    }
    a.available = true;
    std::vector<int> path;
    for (int i = 0; i < n; ++i) {
        path.clear();
        for (int k = i; k >= 0; k = tv.links[k].parent)
            for (int c = 0; c < tv.links[k].nv; ++c) path.push_back(tv.links[k].iv + c);
        Mat3 C;  // J_b M⁻¹ J_bᵀ
        for (int r : path)
            for (int c : path) {
                const double x = X[static_cast<std::size_t>(r) * nv + c];
                const double wr[3] = {W[r].x, W[r].y, W[r].z}, wc[3] = {W[c].x, W[c].y, W[c].z};
                for (int p = 0; p < 3; ++p)
                    for (int s = 0; s < 3; ++s) C.m[p][s] += wr[p] * x * wc[s];
            }
        double ev[3];
        detail::sym_eigenvalues(C, ev);
        const double rate = std::sqrt(2 * a.energy * std::max(ev[2], 0.0));
        if (rate > a.rate) {
            a.rate = rate;
            a.body = m.bodies[tv.links[i].body].name;
        }
    }
    for (int i = 0; i < n; ++i) {  // the joint coordinate that can turn fastest
        const TreeLink& l = tv.links[i];
        if (l.joint < 0 || l.type != TreeJoint::screw) continue;
        const double rate = std::sqrt(2 * a.energy * std::max(0.0, X[static_cast<std::size_t>(l.iv) * nv + l.iv]));
        if (rate > a.joint_rate) {
            a.joint_rate = rate;
            a.joint = m.joints[l.joint].name;
        }
    }
    const double inf = std::numeric_limits<double>::infinity();
    a.guard_step = a.rate > 0 ? std::sqrt(2.0) / a.rate : inf;
    a.accurate_step = a.rate > 0 ? kAdviceTurn / a.rate : inf;
    return a;
}

std::string step_advice_text(const StepAdvice& a, double dt) {
    char buf[768];
    if (!a.available) {
        std::snprintf(buf, sizeof buf, "step advice: none (%s)\n", a.reason.c_str());
        return buf;
    }
    if (a.rate <= 0) return "step advice: nothing can turn (no kinetic energy and none to release)\n";
    std::string joint;
    if (!a.joint.empty()) {
        std::snprintf(buf, sizeof buf, " (joint '%s' at %.4g rad/s)", a.joint.c_str(), a.joint_rate);
        joint = buf;
    }
    std::snprintf(buf, sizeof buf,
                  "step advice: with %.4g J to release, body '%s' can turn at up to %.4g rad/s%s\n"
                  "  steps on the safe side: %.3g s for at most %.2g rad per step, %.3g s for the rotation update; "
                  "dt %.3g s is %s (a bound: docs/integrators.md says how far real runs stay from it)\n",
                  a.energy, a.body.c_str(), a.rate, joint.c_str(), a.accurate_step, kAdviceTurn, a.guard_step, dt,
                  dt <= a.accurate_step ? "within both" : dt <= a.guard_step ? "beyond the first" : "beyond both");
    return buf;
}

JointForceMode joint_force_mode(const Model& m, const Data& d, const Vec3* acceleration) {
    JointForceMode out;
    if (!m.contacts.empty()) {
        out.reason = "contacts (their forces are not known here)";
        return out;
    }
    TreeView tv;
    std::vector<double> q;
    std::vector<Frame> g;
    if (!advice_tree(m, d, tv, q, g, out.reason)) return out;
    const int n = tv.size();
    // What each link's subtree needs from the joint above it: Σ m (a − g) − applied forces.
    std::vector<Vec3> need(static_cast<std::size_t>(n));
    auto link_of = [&](int b) { return tv.body_link[static_cast<std::size_t>(b)]; };
    for (int b = 0; b < m.nbodies(); ++b) {
        const int i = link_of(b);
        if (i < 0) continue;
        const Vec3 a = acceleration ? acceleration[b] : Vec3{};
        Vec3& ni = need[static_cast<std::size_t>(i)];
        ni += m.bodies[b].mass * (a - m.gravity);
        ni -= d.applied_force[b];
    }
    for (const ForceInfo& f : m.forces) {
        const int i = link_of(f.body);
        if (i >= 0) need[static_cast<std::size_t>(i)] -= f.body_frame ? rotate(d.pose[f.body].q, f.force) : f.force;
    }
    for (int i = n - 1; i >= 0; --i) {
        const int p = tv.links[static_cast<std::size_t>(i)].parent;
        if (p >= 0) need[static_cast<std::size_t>(p)] += need[static_cast<std::size_t>(i)];
    }
    // Where each link's joint holds it and the turns it frees (world): every direction (ball, free
    // root), its axis (a turning screw), none (a slider).
    enum class Free { all, axis, none };
    struct Hold {
        Free free = Free::all;
        Vec3 axis, point;
        bool force = false;  // a joint to a parent or the world carries `need` at `point`
    };
    std::vector<Hold> hold(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = tv.links[static_cast<std::size_t>(i)];
        Hold& h = hold[static_cast<std::size_t>(i)];
        const Frame& gi = g[static_cast<std::size_t>(i)];
        if (l.type == TreeJoint::free) continue;
        h.force = true;
        if (l.type == TreeJoint::ball) {
            h.point = gi.R * l.centre + gi.p;
            continue;
        }
        const Vec3 w{l.S[0], l.S[1], l.S[2]}, v{l.S[3], l.S[4], l.S[5]};
        if (norm(w) < 0.5) {  // prismatic: no turn; where along its line it holds is not defined
            h.free = Free::none;
            h.force = false;
            continue;
        }
        h.free = Free::axis;
        h.axis = gi.R * w;
        h.point = closest_on_line(gi.R * cross(w, v) + gi.p, h.axis, gi.p);
    }
    // A link swings alone only about the turns its own joint and every child's free.
    std::vector<Hold> alone(hold);
    auto meet = [](Hold& a, const Hold& b) {
        if (b.free == Free::all || a.free == Free::none) return;
        if (b.free == Free::none || (a.free == Free::axis && norm(cross(a.axis, b.axis)) > 1e-9)) {
            a.free = Free::none;
            return;
        }
        a.free = Free::axis, a.axis = b.axis;
    };
    for (int i = 0; i < n; ++i) {
        const int p = tv.links[static_cast<std::size_t>(i)].parent;
        if (p >= 0) meet(alone[static_cast<std::size_t>(p)], hold[static_cast<std::size_t>(i)]);
    }
    // K of every link, and the largest joint force on it.
    std::vector<Mat3> K(static_cast<std::size_t>(n));
    std::vector<double> fmax(static_cast<std::size_t>(n), 0.0);
    auto add = [&](int i, const Vec3& point, const Vec3& f) {
        const Vec3 r = point - g[static_cast<std::size_t>(i)].p;
        const double fr = dot(f, r);
        const double rv[3] = {r.x, r.y, r.z}, fv[3] = {f.x, f.y, f.z};
        Mat3& k = K[static_cast<std::size_t>(i)];
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) k.m[a][b] += (a == b ? fr : 0.0) - 0.5 * (rv[a] * fv[b] + fv[a] * rv[b]);
        fmax[static_cast<std::size_t>(i)] = std::max(fmax[static_cast<std::size_t>(i)], norm(f));
    };
    for (int i = 0; i < n; ++i) {
        const Hold& h = hold[static_cast<std::size_t>(i)];
        if (!h.force) continue;
        add(i, h.point, need[static_cast<std::size_t>(i)]);
        const int p = tv.links[static_cast<std::size_t>(i)].parent;
        if (p >= 0) add(p, h.point, -1.0 * need[static_cast<std::size_t>(i)]);
    }
    out.available = true;
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = tv.links[static_cast<std::size_t>(i)];
        const Hold& h = alone[static_cast<std::size_t>(i)];
        const Mat3 I = g[static_cast<std::size_t>(i)].R * l.inertia * transpose(g[static_cast<std::size_t>(i)].R);
        const Mat3& k = K[static_cast<std::size_t>(i)];
        double rate2 = 0;
        if (h.free == Free::axis) {
            const double ia = dot(h.axis, I * h.axis);
            if (ia > 0) rate2 = std::fabs(dot(h.axis, k * h.axis)) / ia;
        } else if (h.free == Free::all) {
            // λ(I⁻¹K) = λ(I^{-1/2} K I^{-1/2}), in I's principal axes.
            double ev[3], lam[3];
            Mat3 V;
            detail::sym_eigenvalues(I, ev, &V);
            if (!(ev[0] > 0)) continue;  // a point mass or a line: no rotation to swing
            const Mat3 Kp = transpose(V) * k * V;
            Mat3 C;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) C.m[a][b] = Kp.m[a][b] / std::sqrt(ev[a] * ev[b]);
            detail::sym_eigenvalues(C, lam);
            rate2 = std::max(std::fabs(lam[0]), std::fabs(lam[2]));
        }
        const double rate = std::sqrt(rate2);
        if (rate > out.rate) {
            out.rate = rate;
            out.body = m.bodies[l.body].name;
            out.force = fmax[static_cast<std::size_t>(i)];
        }
    }
    return out;
}

}  // namespace noether
