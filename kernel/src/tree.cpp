// The tree view of a Model (noether/sdk/tree.hpp): links in parents-first order, fixed joints merged,
// each 1-DOF joint as a screw and a rest pose, ball joints and free roots on their groups, and the
// maps between coordinates and body poses.
#include "noether/sdk/tree.hpp"

#include <algorithm>
#include <cmath>

#include "noether/data.hpp"
#include "noether/model.hpp"

namespace noether {

namespace {

constexpr double kTwoPi = 6.283185307179586;

// The screw of a joint's minimal description, in the spec parent body frame.
void minimal_screw(const MinimalJoint& mj, double* S) {
    const Vec3 a = normalized(mj.axis);
    Vec3 w, v;
    switch (mj.kind) {
        case MinimalJoint::Kind::prismatic: v = a; break;
        case MinimalJoint::Kind::revolute: w = a, v = cross(mj.point, a); break;
        case MinimalJoint::Kind::helical: w = a, v = cross(mj.point, a) + mj.pitch * a; break;
        case MinimalJoint::Kind::spherical: break;  // not a screw
    }
    S[0] = w.x, S[1] = w.y, S[2] = w.z, S[3] = v.x, S[4] = v.y, S[5] = v.z;
}

bool rotational(const TreeLink& l) { return l.kind != MinimalJoint::Kind::prismatic; }

Quat quat_at(const double* q) { return {q[0], q[1], q[2], q[3]}; }
void put_quat(const Quat& Q, double* q) { q[0] = Q.w, q[1] = Q.x, q[2] = Q.y, q[3] = Q.z; }
// The sign of Q closest to the reference quaternion at ref (w ≥ 0 without one).
Quat signed_like(Quat Q, const double* ref) {
    const double s = ref ? Q.w * ref[0] + Q.x * ref[1] + Q.y * ref[2] + Q.z * ref[3] : Q.w;
    if (s < 0) Q = {-Q.w, -Q.x, -Q.y, -Q.z};
    return Q;
}

}  // namespace

void link_motion(const TreeLink& l, int k, double* s) {
    switch (l.type) {
        case TreeJoint::screw:
            for (int a = 0; a < 6; ++a) s[a] = l.S[a];
            return;
        case TreeJoint::ball: {  // [e_k; c × e_k]
            Vec3 e;
            (k == 0 ? e.x : k == 1 ? e.y : e.z) = 1;
            const Vec3 v = cross(l.centre, e);
            s[0] = e.x, s[1] = e.y, s[2] = e.z, s[3] = v.x, s[4] = v.y, s[5] = v.z;
            return;
        }
        case TreeJoint::free:
            for (int a = 0; a < 6; ++a) s[a] = a == k ? 1.0 : 0.0;
            return;
    }
}

Frame se3_exp(const double* x) {
    const Vec3 phi{x[0], x[1], x[2]}, rho{x[3], x[4], x[5]};
    const double th = norm(phi);
    Frame f;
    f.R = rotation(quat_from_rotvec(phi));
    double B, C;  // Jl = I + B φ× + C φ×²
    if (th < 0.1) {
        const double t2 = th * th;
        B = 0.5 - t2 * (1.0 / 24 - t2 * (1.0 / 720 - t2 / 40320));
        C = 1.0 / 6 - t2 * (1.0 / 120 - t2 * (1.0 / 5040 - t2 / 362880));
    } else {
        const double sh = std::sin(0.5 * th);
        B = 2 * sh * sh / (th * th);
        C = (th - std::sin(th)) / (th * th * th);
    }
    const Vec3 pr = cross(phi, rho);
    f.p = rho + B * pr + C * cross(phi, pr);
    return f;
}

Frame screw_exp(const double* A, double q) {
    const Vec3 w{A[0], A[1], A[2]}, v{A[3], A[4], A[5]};
    Frame f;
    if (dot(w, w) < 0.25) {  // pure translation
        f.p = q * v;
        return f;
    }
    // Rodrigues for the unit axis w, angle q: R = c I + s [w]× + (1 − c) w wᵀ.
    const double s = std::sin(q), c = std::cos(q), t = 1 - c;
    const double w0 = w.x, w1 = w.y, w2 = w.z;
    f.R.m[0][0] = c + t * w0 * w0, f.R.m[0][1] = t * w0 * w1 - s * w2, f.R.m[0][2] = t * w0 * w2 + s * w1;
    f.R.m[1][0] = t * w1 * w0 + s * w2, f.R.m[1][1] = c + t * w1 * w1, f.R.m[1][2] = t * w1 * w2 - s * w0;
    f.R.m[2][0] = t * w2 * w0 - s * w1, f.R.m[2][1] = t * w2 * w1 + s * w0, f.R.m[2][2] = c + t * w2 * w2;
    f.p = (Mat3::identity() - f.R) * cross(w, v) + (dot(w, v) * q) * w;
    return f;
}

Frame link_transform(const TreeLink& l, double q) {
    Frame f;
    f.p = l.T0.p + q * l.pq;
    if (!l.turns) {
        f.R = l.T0.R;
        return f;
    }
    const double s = std::sin(q), c = std::cos(q);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) f.R.m[i][j] = l.T0.R.m[i][j] + c * l.Tc.R.m[i][j] + s * l.Ts.R.m[i][j];
    f.p = f.p + c * l.Tc.p + s * l.Ts.p;
    return f;
}

// T0, Tc, Ts, pq, turns of a screw link from A and M (TreeLink): with ω, v the screw's parts and
// R(q) = ω ωᵀ + cos q (I − ω ωᵀ) + sin q [ω]× (Rodrigues, |ω| = 1),
//   R(q) · M.R                                  rotation,
//   R(q) · u + ω × v + q (ω · v) ω,  u = M.p − ω × v   translation (exp(Aq) · M.p).
void link_set_screw(TreeLink& l) {
    const Vec3 w{l.A[0], l.A[1], l.A[2]}, v{l.A[3], l.A[4], l.A[5]};
    l.Tc = Frame{Mat3{}, Vec3{}};
    l.Ts = Frame{Mat3{}, Vec3{}};
    l.turns = !(dot(w, w) < 0.25);  // (screw_exp's test)
    if (!l.turns) {  // pure translation: {M.R, M.p + q v}
        l.T0 = l.M;
        l.pq = v;
        return;
    }
    const Mat3 P = outer(w, w), K = skew(w);
    l.T0.R = P * l.M.R;
    l.Tc.R = l.M.R - l.T0.R;
    l.Ts.R = K * l.M.R;
    const Vec3 wv = cross(w, v), u = l.M.p - wv;
    const Vec3 uw = dot(w, u) * w;
    l.T0.p = uw + wv;
    l.Tc.p = u - uw;
    l.Ts.p = cross(w, u);
    l.pq = dot(w, v) * w;
}

// The view in the world frame moved to c (free links: nothing in the view; their coordinates
// are the caller's).
void tree_rebase(TreeView& t, const Vec3& c) {
    for (TreeLink& l : t.links) {
        if (l.parent >= 0 || l.type == TreeJoint::free) continue;
        l.M.p = l.M.p - c;
        if (l.type != TreeJoint::screw) continue;
        const Vec3 v = Vec3{l.A[3], l.A[4], l.A[5]} - cross(c, Vec3{l.A[0], l.A[1], l.A[2]});
        l.A[3] = v.x, l.A[4] = v.y, l.A[5] = v.z;
        link_set_screw(l);
    }
    for (std::size_t b = 0; b < t.body_link.size(); ++b)
        if (t.body_link[b] < 0) t.body_offset[b].p = t.body_offset[b].p - c;
}

TreeOrigin tree_rebase_far(const Model& m, TreeView& t) {
    for (const TreeLink& l : t.links) {
        if (l.parent >= 0) continue;
        const Vec3 c = l.type == TreeJoint::free ? m.bodies[l.body].pose0.x : l.M.p;  // the first root
        if (norm(c) <= kNearOrigin) return {};
        tree_rebase(t, c);
        return {c, true};
    }
    return {};
}

Frame link_transform(const TreeLink& l, const double* q) {
    switch (l.type) {
        case TreeJoint::screw: return link_transform(l, q[0]);
        case TreeJoint::ball: {
            const Mat3 E = rotation(quat_at(q));
            return l.M * Frame{E, l.centre - E * l.centre};
        }
        case TreeJoint::free: return {rotation(quat_at(q + 3)), Vec3{q[0], q[1], q[2]}};
    }
    return {};
}

void link_retract(const TreeLink& l, const double* q, const double* v, double* out) {
    switch (l.type) {
        case TreeJoint::screw: out[0] = q[0] + v[0]; return;
        case TreeJoint::ball: put_quat(qnormalized(quat_at(q) * quat_from_rotvec({v[0], v[1], v[2]})), out); return;
        case TreeJoint::free: {
            const Quat Q = quat_at(q + 3);
            const Vec3 dp = rotation(Q) * se3_exp(v).p;
            out[0] = q[0] + dp.x, out[1] = q[1] + dp.y, out[2] = q[2] + dp.z;
            put_quat(qnormalized(Q * quat_from_rotvec({v[0], v[1], v[2]})), out + 3);
            return;
        }
    }
}

void link_difference(const TreeLink& l, const double* q0, const double* q1, double* v) {
    switch (l.type) {
        case TreeJoint::screw: v[0] = q1[0] - q0[0]; return;
        case TreeJoint::ball: {
            const Vec3 r = rotvec_from_quat(conj(quat_at(q0)) * quat_at(q1));
            v[0] = r.x, v[1] = r.y, v[2] = r.z;
            return;
        }
        case TreeJoint::free: {  // log(g0⁻¹ g1) = [φ; Jl(φ)⁻¹ p]
            const Quat Q0 = quat_at(q0 + 3);
            const Vec3 phi = rotvec_from_quat(conj(Q0) * quat_at(q1 + 3));
            const Vec3 p = rotate_inv(Q0, Vec3{q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]});
            const Vec3 rho = se3_log_translation(phi, norm(phi), p);
            v[0] = phi.x, v[1] = phi.y, v[2] = phi.z, v[3] = rho.x, v[4] = rho.y, v[5] = rho.z;
            return;
        }
    }
}

double tree_link_offset(const Model& m, const TreeLink& l) {
    const JointInfo& j = m.joints[l.joint];
    return j.offset.empty() ? 0 : j.offset[0];
}

bool tree_write_coordinates(const Model& m, const TreeView& t, const double* q, const double* v, Data& d) {
    if (!t.screws_only || t.nv != m.total_dofs) return false;
    for (const TreeLink& l : t.links) {
        d.coord[l.dof] = q[l.iq] + tree_link_offset(m, l);
        d.rate[l.dof] = v[l.iv];
    }
    return true;
}

void link_neutral(const TreeLink& l, double* q) {
    for (int k = 0; k < l.nq; ++k) q[k] = 0;
    if (l.type == TreeJoint::ball) q[0] = 1;
    if (l.type == TreeJoint::free) q[3] = 1;
}

bool build_tree_view(const Model& m, const char* integrator, TreeView& out, std::vector<Diagnostic>& errors) {
    return build_tree_view(m, integrator, out, errors, false);
}

bool build_tree_view(const Model& m, const char* integrator, TreeView& out, std::vector<Diagnostic>& errors,
                     bool allow_loops) {
    const BlockGraph& g = m.graph;
    const int nb = m.nbodies();
    const std::size_t before = errors.size();
    const std::string who = std::string(integrator) + ": ";
    // The default integrator (Options::integrator) works in maximal coordinates.
    const std::string use = "; use the default integrator, " + Options{}.integrator +
                            ", or another in maximal coordinates (they take any joint and closed loops)";
    const std::string kinds = " takes revolute, prismatic, helical, spherical and fixed joints";
    for (int j = 0; j < m.njoints(); ++j) {
        const JointInfo& ji = m.joints[j];
        MinimalJoint mj;
        if (g.is_loop[j]) {
            if (allow_loops) continue;
            errors.push_back({Severity::error, ji.origin,
                              who + "joint '" + ji.name + "' closes a kinematic loop; minimal coordinates take trees only" + use});
        } else if (ji.dofs == 0 && ji.rows != 6) {
            errors.push_back({Severity::error, ji.origin,
                              who + "joint '" + ji.name + "' (" + ji.type + ") has no degrees of freedom but " +
                                  std::to_string(ji.rows) + " rows (not a weld)" + use});
        } else if (ji.dofs > 0 && !ji.impl->minimal(&mj)) {
            errors.push_back({Severity::error, ji.origin,
                              who + "joint '" + ji.name + "' (" + ji.type + ", " + std::to_string(ji.dofs) +
                                  (ji.dofs == 1 ? " degree of freedom" : " degrees of freedom") +
                                  ") gives no minimal-coordinate description (JointModel::minimal); " + integrator +
                                  kinds + use});
        } else if (ji.dofs > 0 && (mj.kind == MinimalJoint::Kind::spherical) != (ji.dofs == 3)) {
            errors.push_back({Severity::error, ji.origin,
                              who + "joint '" + ji.name + "' (" + ji.type + ") has " + std::to_string(ji.dofs) +
                                  " degrees of freedom but describes itself as " +
                                  (ji.dofs == 3 ? "a 1-DOF joint" : "a spherical joint") + use});
        }
    }
    if (errors.size() != before) return false;

    // Pass 1: link membership in parents-first order (the elimination list read backwards). The
    // root body of a floating component starts a free link.
    out = TreeView{};
    out.body_link.assign(nb, -1);
    out.body_offset.assign(nb, Frame{});
    for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
        const int n = *it;
        if (!g.is_body(n)) continue;
        TreeLink l;
        l.body = n;
        if (g.parent[n] < 0) {
            l.type = TreeJoint::free;
            l.nq = 7, l.nv = 6;
        } else {
            const int j = g.parent[n] - nb;
            const JointInfo& ji = m.joints[j];
            const int other = ji.b == n ? ji.a : ji.b;
            if (ji.dofs == 0) {
                out.body_link[n] = other >= 0 ? out.body_link[other] : -1;
                continue;
            }
            l.parent = other >= 0 ? out.body_link[other] : -1;
            l.joint = j;
            l.dof = ji.dof_offset;
            if (ji.dofs == 3) {
                l.type = TreeJoint::ball;
                l.nq = 4, l.nv = 3;
            } else {
                l.damping = ji.damping.empty() ? 0 : ji.damping[0];
                l.stiffness = ji.stiffness.empty() ? 0 : ji.stiffness[0];
                l.rest = (ji.rest.empty() ? 0 : ji.rest[0]) - (ji.offset.empty() ? 0 : ji.offset[0]);
            }
        }
        l.iq = out.nq, l.iv = out.nv, l.id = out.nd;
        out.nq += l.nq, out.nv += l.nv, out.nd += l.nv * l.nv;
        out.screws_only = out.screws_only && l.type == TreeJoint::screw;
        out.body_link[n] = out.size();
        out.links.push_back(l);
    }

    // Pass 2: composite mass and inertia; body offsets in their link frames.
    // The bodies of each link in increasing order (a counting sort: O(n), not O(links · n)).
    std::vector<int> first(out.size() + 1, 0), members(nb);
    for (int b = 0; b < nb; ++b)
        if (out.body_link[b] < 0) out.body_offset[b] = frame_of(m.bodies[b].pose0);
        else ++first[out.body_link[b] + 1];
    for (int i = 0; i < out.size(); ++i) first[i + 1] += first[i];
    {
        std::vector<int> next(first.begin(), first.end() - 1);
        for (int b = 0; b < nb; ++b)
            if (out.body_link[b] >= 0) members[next[out.body_link[b]]++] = b;
    }
    for (int i = 0; i < out.size(); ++i) {
        TreeLink& l = out.links[i];
        const Frame top_inv = inverse(frame_of(m.bodies[l.body].pose0));
        Vec3 c;
        for (int k = first[i]; k < first[i + 1]; ++k) {
            const int b = members[k];
            const Frame rel = top_inv * frame_of(m.bodies[b].pose0);
            out.body_offset[b] = rel;
            l.mass += m.bodies[b].mass;
            c += m.bodies[b].mass * rel.p;
        }
        c = c / l.mass;
        for (int k = first[i]; k < first[i + 1]; ++k) {
            const int b = members[k];
            Frame& o = out.body_offset[b];
            o.p -= c;
            const double mb = m.bodies[b].mass;
            l.inertia = l.inertia + o.R * m.bodies[b].inertia * transpose(o.R) +
                        mb * (dot(o.p, o.p) * Mat3::identity() - outer(o.p, o.p));
        }
    }

    // Pass 3: each link's joint in the parent link frame: a screw and a rest pose, or a ball's
    // rest pose and centre. Free links have neither (their pose is their coordinate).
    for (int i = 0; i < out.size(); ++i) {
        TreeLink& l = out.links[i];
        if (l.type == TreeJoint::free) continue;
        const JointInfo& ji = m.joints[l.joint];
        MinimalJoint mj;
        ji.impl->minimal(&mj);
        l.kind = mj.kind;
        const Frame Oa = ji.a >= 0 ? out.body_offset[ji.a] : Frame{};
        const Frame Ob = out.body_offset[ji.b];
        if (l.type == TreeJoint::ball) {
            // Spec child in spec parent at zero coordinates: N, the centre at mj.point in a.
            const Frame N{rotation(mj.rest.q), mj.rest.x};
            if (ji.b == l.body) {
                l.M = Oa * N * inverse(Ob);
                l.centre = Ob.R * (inverse(N).R * mj.point + inverse(N).p) + Ob.p;
            } else {
                l.M = Ob * inverse(N) * inverse(Oa);
                l.centre = Oa.R * mj.point + Oa.p;
            }
            continue;
        }
        double S0[6];
        minimal_screw(mj, S0);
        // Body transform of the spec child in the spec parent: exp(S0 (c − c0)) · rest, c0 the raw
        // coordinate at the initial poses; N = exp(−S0 c0) · rest.
        const Pose a0 = ji.a >= 0 ? m.bodies[ji.a].pose0 : Pose{};
        double c0 = 0;
        ji.impl->coordinates(a0, m.bodies[ji.b].pose0, nullptr, &c0);
        const Frame N = screw_exp(S0, -c0) * Frame{rotation(mj.rest.q), mj.rest.x};
        if (ji.b == l.body) {  // tree direction = spec direction
            ad_apply(Oa, S0, l.A);
            l.M = Oa * N * inverse(Ob);
        } else {  // the link is the spec parent: pose of a in b is N⁻¹ exp(−S0 q)
            const Frame Ni = inverse(N);
            double t[6];
            ad_apply(Ni, S0, t);
            ad_apply(Ob, t, l.A);
            for (double& x : l.A) x = -x;
            l.M = Ob * Ni * inverse(Oa);
        }
        ad_apply(inverse(l.M), l.A, l.S);
        link_set_screw(l);
    }
    return true;
}

void tree_link_poses(const TreeView& t, const double* q, Frame* g) {
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        const Frame T = link_transform(l, q + l.iq);
        g[i] = l.parent >= 0 ? g[l.parent] * T : T;
    }
}

void tree_body_poses(const TreeView& t, const Frame* link_g, const Pose* sign_ref, Pose* out) {
    for (std::size_t b = 0; b < t.body_link.size(); ++b) {
        const int L = t.body_link[b];
        const Frame f = L >= 0 ? link_g[L] * t.body_offset[b] : t.body_offset[b];
        Quat q = quat_from_matrix(f.R);
        if (sign_ref) {
            const Quat r = sign_ref[b].q;
            if (q.w * r.w + q.x * r.x + q.y * r.y + q.z * r.z < 0) q = {-q.w, -q.x, -q.y, -q.z};
        }
        out[b] = {f.p, q};
    }
}

void tree_coordinates(const TreeView& t, const Pose* body_poses, const double* prev, double* q) {
    auto link_pose = [&](int L) {
        const int b = t.links[L].body;
        return frame_of(body_poses[b]) * inverse(t.body_offset[b]);
    };
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        double* qi = q + l.iq;
        const double* pi = prev ? prev + l.iq : nullptr;
        const Frame gi = link_pose(i);
        if (l.type == TreeJoint::free) {
            qi[0] = gi.p.x, qi[1] = gi.p.y, qi[2] = gi.p.z;
            put_quat(signed_like(quat_from_matrix(gi.R), pi ? pi + 3 : nullptr), qi + 3);
            continue;
        }
        const Frame rel = inverse(l.parent >= 0 ? link_pose(l.parent) * l.M : l.M) * gi;  // = exp(S q)
        if (l.type == TreeJoint::ball) {  // rel = [E, c − E c]
            put_quat(signed_like(quat_from_matrix(rel.R), pi), qi);
            continue;
        }
        const Vec3 w{l.S[0], l.S[1], l.S[2]}, v{l.S[3], l.S[4], l.S[5]};
        if (!rotational(l)) {
            qi[0] = dot(v, rel.p);
            continue;
        }
        const Mat3& R = rel.R;
        const Vec3 s{0.5 * (R(2, 1) - R(1, 2)), 0.5 * (R(0, 2) - R(2, 0)), 0.5 * (R(1, 0) - R(0, 1))};
        double a = std::atan2(dot(w, s), 0.5 * (R(0, 0) + R(1, 1) + R(2, 2) - 1));
        double near = 0;
        bool have = false;
        if (pi) near = pi[0], have = true;
        else if (l.kind == MinimalJoint::Kind::helical && dot(w, v) != 0) near = dot(w, rel.p) / dot(w, v), have = true;
        if (have) a += kTwoPi * std::round((near - a) / kTwoPi);
        qi[0] = a;
    }
}

Twist tree_body_twist(const TreeView& t, const Frame* link_g, const double (*V)[6], int b) {
    Twist tw;
    const int L = t.body_link[b];
    if (L < 0) return tw;
    const Frame& O = t.body_offset[b];
    const double* v = V[L];
    const Vec3 wl{v[0], v[1], v[2]}, vl{v[3], v[4], v[5]};
    tw.w = transpose(O.R) * wl;
    tw.v = link_g[L].R * (vl + cross(wl, O.p));
    return tw;
}

namespace {

// V_i of link i (tree_link_twists) with its transform T = link_transform(l, q) (read only when the
// link has a parent).
inline void link_twist(const TreeLink& l, const Frame& T, const double* qdot, double (*V)[6], int i) {
    double* Vi = V[i];
    if (l.parent >= 0) {
        const double* Vp = V[l.parent];
        const Vec3 wp{Vp[0], Vp[1], Vp[2]}, vp{Vp[3], Vp[4], Vp[5]};
        const Mat3 Rt = transpose(T.R);
        const Vec3 w = Rt * wp, v = Rt * (vp - cross(T.p, wp));
        Vi[0] = w.x, Vi[1] = w.y, Vi[2] = w.z, Vi[3] = v.x, Vi[4] = v.y, Vi[5] = v.z;
    } else {
        for (int k = 0; k < 6; ++k) Vi[k] = 0;
    }
    if (l.type == TreeJoint::screw) {
        for (int k = 0; k < 6; ++k) Vi[k] += l.S[k] * qdot[l.iv];
        return;
    }
    for (int c = 0; c < l.nv; ++c) {
        double s[6];
        link_motion(l, c, s);
        for (int k = 0; k < 6; ++k) Vi[k] += s[k] * qdot[l.iv + c];
    }
}

}  // namespace

void tree_link_twists(const TreeView& t, const double* q, const double* qdot, double (*V)[6]) {
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        link_twist(l, l.parent >= 0 ? link_transform(l, q + l.iq) : Frame{}, qdot, V, i);
    }
}

void tree_link_twists(const TreeView& t, const Frame* T, const double* qdot, double (*V)[6]) {
    for (int i = 0; i < t.size(); ++i) link_twist(t.links[i], T[i], qdot, V, i);
}

// ---- articulated-body passes ------------------------------------------------------------------

namespace {

// Inverse of a symmetric positive definite n×n matrix (n ≤ 6) by Cholesky; NaN if it is not.
void spd_inverse(int n, const double* A, double* out) {
    double L[36] = {}, Li[36] = {};
    bool ok = true;
    for (int j = 0; j < n && ok; ++j) {
        double d = A[j * n + j];
        for (int k = 0; k < j; ++k) d -= L[j * 6 + k] * L[j * 6 + k];
        ok = d > 0;
        L[j * 6 + j] = std::sqrt(d);
        for (int i = j + 1; i < n; ++i) {
            double x = A[i * n + j];
            for (int k = 0; k < j; ++k) x -= L[i * 6 + k] * L[j * 6 + k];
            L[i * 6 + j] = x / L[j * 6 + j];
        }
    }
    if (!ok) {
        for (int k = 0; k < n * n; ++k) out[k] = std::nan("");
        return;
    }
    for (int j = 0; j < n; ++j) {  // L⁻¹ column by column
        for (int i = j; i < n; ++i) {
            double x = i == j ? 1.0 : 0.0;
            for (int k = j; k < i; ++k) x -= L[i * 6 + k] * Li[k * 6 + j];
            Li[i * 6 + j] = x / L[i * 6 + i];
        }
    }
    for (int i = 0; i < n; ++i)  // A⁻¹ = L⁻ᵀ L⁻¹
        for (int j = 0; j < n; ++j) {
            double x = 0;
            for (int k = std::max(i, j); k < n; ++k) x += Li[k * 6 + i] * Li[k * 6 + j];
            out[i * n + j] = x;
        }
}

}  // namespace

void tree_abi_setup(const TreeView& t, const Frame* T, const double* k, TreeABI& w) {
    const std::size_t n = static_cast<std::size_t>(t.size()), nv = static_cast<std::size_t>(t.nv);
    if (w.P.size() != 6 * n || w.u.size() != nv || w.D.size() != static_cast<std::size_t>(t.nd)) {
        w.IA.assign(36 * n, 0.0);
        w.U.assign(6 * nv, 0.0);
        w.P.assign(6 * n, 0.0);
        w.dV.assign(6 * n, 0.0);
        w.D.assign(static_cast<std::size_t>(t.nd), 0.0);
        w.u.assign(nv, 0.0);
    }
    for (int i = 0; i < t.size(); ++i) spatial_inertia(t.links[i], &w.IA[36 * i]);
    for (int i = t.size() - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const double* IA = &w.IA[36 * i];
        double* U = &w.U[6 * l.iv];
        double Ia[36];
        if (l.type == TreeJoint::screw) {
            for (int a = 0; a < 6; ++a) U[a] = dot6(&IA[6 * a], l.S);
            w.D[l.id] = dot6(l.S, U) + (k ? k[l.iv] : 0.0);
            if (l.parent < 0) continue;
            // (U_a U_b) / D by one reciprocal: exactly symmetric still, and no division per entry.
            const double inv = 1.0 / w.D[l.id];
            for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) Ia[6 * a + b] = IA[6 * a + b] - U[a] * U[b] * inv;
        } else {
            const int m = l.nv;
            double S[36], Dm[36];
            for (int c = 0; c < m; ++c) {
                link_motion(l, c, &S[6 * c]);
                for (int a = 0; a < 6; ++a) U[6 * c + a] = dot6(&IA[6 * a], &S[6 * c]);
            }
            for (int a = 0; a < m; ++a)
                for (int b = 0; b < m; ++b) Dm[a * m + b] = dot6(&S[6 * a], &U[6 * b]) + (a == b && k ? k[l.iv + a] : 0.0);
            double* Di = &w.D[l.id];
            spd_inverse(m, Dm, Di);
            if (l.parent < 0) continue;
            for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) {
                    double x = 0;
                    for (int c = 0; c < m; ++c)
                        for (int e = 0; e < m; ++e) x += U[6 * c + a] * Di[c * m + e] * U[6 * e + b];
                    Ia[6 * a + b] = IA[6 * a + b] - x;
                }
        }
        add_congruence_ad(T[i], Ia, &w.IA[36 * l.parent]);
    }
}

void tree_abi_solve(const TreeView& t, const Frame* T, TreeABI& w, const double* u, double* dq) {
    const int n = t.size();
    for (double& x : w.P) x = 0;
    for (int i = n - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        const double* P = &w.P[6 * i];
        const double* U = &w.U[6 * l.iv];
        double z[6], o[6];
        if (l.type == TreeJoint::screw) {
            w.u[l.iv] = u[l.iv] - dot6(l.S, P);  // ũ_i
            if (l.parent < 0) continue;
            const double s = w.u[l.iv] / w.D[l.id];
            for (int k = 0; k < 6; ++k) z[k] = P[k] + U[k] * s;
        } else {
            const int m = l.nv;
            const double* Di = &w.D[l.id];
            for (int c = 0; c < m; ++c) {
                double s[6];
                link_motion(l, c, s);
                w.u[l.iv + c] = u[l.iv + c] - dot6(s, P);
            }
            if (l.parent < 0) continue;
            for (int k = 0; k < 6; ++k) z[k] = P[k];
            for (int c = 0; c < m; ++c) {
                double y = 0;
                for (int e = 0; e < m; ++e) y += Di[c * m + e] * w.u[l.iv + e];
                for (int k = 0; k < 6; ++k) z[k] += U[6 * c + k] * y;
            }
        }
        wrench_to_parent(T[i], z, o);
        double* Pp = &w.P[6 * l.parent];
        for (int k = 0; k < 6; ++k) Pp[k] += o[k];
    }
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        double* dV = &w.dV[6 * i];
        if (l.parent >= 0) twist_to_child(T[i], &w.dV[6 * l.parent], dV);
        else for (int k = 0; k < 6; ++k) dV[k] = 0;
        if (l.type == TreeJoint::screw) {
            dq[l.iv] = (w.u[l.iv] - dot6(&w.U[6 * l.iv], dV)) / w.D[l.id];
            for (int k = 0; k < 6; ++k) dV[k] += l.S[k] * dq[l.iv];
            continue;
        }
        const int m = l.nv;
        const double* Di = &w.D[l.id];
        double y[6];
        for (int c = 0; c < m; ++c) y[c] = w.u[l.iv + c] - dot6(&w.U[6 * (l.iv + c)], dV);
        for (int c = 0; c < m; ++c) {
            double x = 0;
            for (int e = 0; e < m; ++e) x += Di[c * m + e] * y[e];
            dq[l.iv + c] = x;
        }
        for (int c = 0; c < m; ++c) {
            double s[6];
            link_motion(l, c, s);
            for (int k = 0; k < 6; ++k) dV[k] += s[k] * dq[l.iv + c];
        }
    }
}

void tree_mass_matrix(const TreeView& t, const double* q, double* M) {
    const int n = t.size(), nv = t.nv;
    // Entries of links on different branches are zero and never visited below.
    std::fill(M, M + static_cast<std::size_t>(nv) * nv, 0.0);
    std::vector<Frame> T(n);
    std::vector<double> Ic(36 * static_cast<std::size_t>(n)), X(36 * static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        T[i] = link_transform(t.links[i], q + t.links[i].iq);
        spatial_inertia(t.links[i], &Ic[36 * i]);
        ad_inv_matrix(T[i], &X[36 * i]);
    }
    for (int i = n - 1; i >= 0; --i)  // composite inertias
        if (t.links[i].parent >= 0) add_congruence(&X[36 * i], &Ic[36 * i], &X[36 * i], &Ic[36 * t.links[i].parent]);
    for (int i = 0; i < n; ++i) {
        const TreeLink& li = t.links[i];
        const double* I = &Ic[36 * i];
        for (int c = 0; c < li.nv; ++c) {
            double F[6], o[6], s[6];
            link_motion(li, c, s);
            for (int a = 0; a < 6; ++a) F[a] = dot6(&I[6 * a], s);
            const int r = li.iv + c;
            for (int e = 0; e < li.nv; ++e) {
                link_motion(li, e, s);
                M[static_cast<std::size_t>(r) * nv + li.iv + e] = dot6(s, F);
            }
            int j = i;
            while (t.links[j].parent >= 0) {  // carry the composite wrench up the ancestors
                wrench_to_parent(T[j], F, o);
                for (int k = 0; k < 6; ++k) F[k] = o[k];
                j = t.links[j].parent;
                const TreeLink& lj = t.links[j];
                for (int e = 0; e < lj.nv; ++e) {
                    link_motion(lj, e, s);
                    const int col = lj.iv + e;
                    M[static_cast<std::size_t>(r) * nv + col] = M[static_cast<std::size_t>(col) * nv + r] = dot6(s, F);
                }
            }
        }
    }
}

}  // namespace noether
