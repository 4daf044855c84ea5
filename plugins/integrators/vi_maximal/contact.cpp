// vi-maximal: the units of contacts and joint limits, their rows and Jacobians, the Schur
// complement of the unit block and the interior-point helpers (layout and method: contact.hpp).
#include "contact.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>

#include "noether/sdk/dense.hpp"

namespace noether {
namespace vi_max {

namespace {

constexpr double kReferenceGravity = 9.81;  // scales of a scene without gravity
// A contact's force scale: the weight of its mechanism shared by the few points it rests on — at
// most this many, whatever the number of contact points declared. Shared by all of them, an A1
// with every collision box a contact (76 points) had forces of 20 scales at its first step and
// the iteration did not converge; on 4 it does (and the cube's drop takes 3.9 instead of 4.6
// iterations per step).
constexpr int kRestingPoints = 4;
// Fraction to a cone's boundary at most (never 1: an iterate on the boundary has no NT scaling).
constexpr double kMaxConeTau = 0.995;

double gravity_scale(const Model& m) {
    const double g = norm(m.gravity);
    return g > 0 ? g : kReferenceGravity;
}

// The radius of gyration of a body, a length that sizes it (a point mass: 1 mm).
double body_length(const BodyInfo& b) {
    const double tr = b.inertia.m[0][0] + b.inertia.m[1][1] + b.inertia.m[2][2];
    const double l = std::sqrt(std::max(tr, 0.0) / (2 * b.mass));
    return l > 1e-3 ? l : 1e-3;
}

void put6(double* r, const Vec3& a, const Vec3& b) {
    r[0] = a.x, r[1] = a.y, r[2] = a.z, r[3] = b.x, r[4] = b.y, r[5] = b.z;
}

double dot6(const double* a, const double* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

// Gap row of a sphere centre c = x + R p on a body moving the gap along n: [n, Rᵀ((R p) × n)].
void gap_row(const Pose& P, const Vec3& p, const Vec3& n, double sign, double* row) {
    const Vec3 lever = rotate(P.q, p);
    put6(row, sign * n, sign * rotate_inv(P.q, cross(lever, n)));
}

// Contact geometry at poses `pose`: gap, unit normal (from the other side towards the body) and,
// if G is given, the gap Jacobian per side.
double contact_gap(const ContactInfo& ci, const Pose* pose, Vec3& n, double (*G)[6]) {
    const Pose& A = pose[ci.body];
    const Vec3 ca = A.x + rotate(A.q, ci.point);
    double gap;
    if (ci.other < 0) {
        n = ci.normal;
        gap = dot(n, ca) - ci.offset - ci.radius;
    } else {
        const Pose& B = pose[ci.other];
        const Vec3 d = ca - (B.x + rotate(B.q, ci.other_point));
        const double dist = norm(d);
        n = dist > 0 ? (1.0 / dist) * d : Vec3{0, 0, 1};
        gap = dist - ci.radius - ci.other_radius;
    }
    if (G) {
        gap_row(A, ci.point, n, 1.0, G[0]);
        if (ci.other >= 0) gap_row(pose[ci.other], ci.other_point, n, -1.0, G[1]);
    }
    return gap;
}

// Coordinate k (with offset) of a limited joint at poses `pose`, unwrapped against prev (the joint's
// coordinates, with offset); its Jacobian per side if C is given.
double limit_coordinate(const JointInfo& j, int k, const Pose* pose, const double* prev, double (*C)[6]) {
    const Pose a = j.a >= 0 ? pose[j.a] : Pose{};
    double c[kMaxJointDofs];
    joint_coordinates(j, a, pose[j.b], prev, c);
    if (C) joint_coordinate_row(j, a, pose[j.b], k, C[0], C[1]);
    return c[k];
}

// A side of a coupling's range from its residual r (and Jacobian G, 4 sides): φ = sign (r − bound).
void range_side(const Unit& u, double& r, double (*G)[6]) {
    r = u.sign * (r - u.bound);
    if (G)
        for (int side = 0; side < 4; ++side)
            for (int k = 0; k < 6; ++k) G[side][k] *= u.sign;
}

// The coordinates (with offset) of joint j at pose3, unwrapped against and written into c2 (per DOF
// of the Model): carried to the next substep.
void carry_coordinates(const JointInfo& j, const Pose* pose3, std::vector<double>& c2) {
    double* c = &c2[j.dof_offset];
    joint_coordinates(j, j.a >= 0 ? pose3[j.a] : Pose{}, pose3[j.b], c, c);
}
}  // namespace

namespace {

// Per body, a representative of its set of bodies joined by joints (and, with body_contacts, by
// body–body contacts and couplings): bodies with the same representative belong together.
std::vector<int> joined_bodies(const Model& m, bool body_contacts) {
    const int nb = m.nbodies();
    std::vector<int> root(nb);
    for (int b = 0; b < nb; ++b) root[b] = b;
    auto find = [&](int b) {
        while (root[b] != b) b = root[b] = root[root[b]];
        return b;
    };
    for (const JointInfo& j : m.joints)
        if (j.a >= 0) root[find(j.a)] = find(j.b);
    if (body_contacts) {
        for (const ContactInfo& ci : m.contacts)
            if (ci.other >= 0) root[find(ci.body)] = find(ci.other);
        for (const CouplingInfo& c : m.couplings)
            for (std::size_t t = 1; t < c.terms.size(); ++t) root[find(m.joints[c.joint].b)] = find(m.joints[c.terms[t].joint].b);
    }
    for (int b = 0; b < nb; ++b) root[b] = find(b);
    return root;
}

}  // namespace

long long largest_group_unknowns(const Model& m, int* body) {
    const int nb = m.nbodies();
    const std::vector<int> group = joined_bodies(m, true);
    std::vector<long long> n(nb, 0);
    for (const ContactInfo& ci : m.contacts) n[group[ci.body]] += ci.mu > 0 ? 8 : 2;
    for (const JointInfo& j : m.joints)
        if (j.limited)
            for (int k = 0; k < j.dofs; ++k)
                n[group[j.b]] += 2 * ((std::isfinite(j.lower[k]) ? 1 : 0) + (std::isfinite(j.upper[k]) ? 1 : 0));
    for (const CouplingInfo& c : m.couplings)
        n[group[m.joints[c.joint].b]] += c.range ? 2 * ((std::isfinite(c.lower) ? 1 : 0) + (std::isfinite(c.upper) ? 1 : 0)) : 1;
    long long best = 0;
    for (int b = 0; b < nb; ++b)
        if (n[b] > best) best = n[b], *body = b;
    return best;
}

void setup_inequalities(const Model& m, const BlockGraph& g, Inequalities& q) {
    const int nb = m.nbodies();
    const double g0 = gravity_scale(m);
    // Components (bodies joined by joints): their mass and contact count size the forces.
    const std::vector<int> root = joined_bodies(m, false);
    auto find = [&](int b) { return root[b]; };
    // Groups of the Schur complement's blocks: joints and body-body contacts join bodies.
    std::vector<int> group(nb);
    {
        const std::vector<int> g2 = joined_bodies(m, true);
        auto find2 = [&](int b) { return g2[b]; };
        // Groups numbered 0, 1, ... in order of their first body.
        std::vector<int> number(nb, -1);
        int groups = 0;
        for (int b = 0; b < nb; ++b) {
            const int r = find2(b);
            if (number[r] < 0) number[r] = groups++;
            group[b] = number[r];
        }
        // Each group's tree entries: its bodies' (6 each), then its joints' rows.
        q.g_off.assign(groups + 1, 0);
        q.b_pos.assign(nb, 0);
        std::vector<int> count(groups, 0);
        for (int b = 0; b < nb; ++b) q.b_pos[b] = count[group[b]], count[group[b]] += 6;
        for (int j = 0; j < m.njoints(); ++j) count[group[m.joints[j].b]] += g.node_size[nb + j];
        for (int k = 0; k < groups; ++k) q.g_off[k + 1] = q.g_off[k] + count[k];
        q.g_idx.assign(q.g_off[groups], 0);
        std::vector<int> fill(q.g_off.begin(), q.g_off.end() - 1);
        for (int b = 0; b < nb; ++b)
            for (int k = 0; k < 6; ++k) q.g_idx[fill[group[b]]++] = g.node_offset[b] + k;
        for (int j = 0; j < m.njoints(); ++j)
            for (int k = 0; k < g.node_size[nb + j]; ++k) q.g_idx[fill[group[m.joints[j].b]]++] = g.node_offset[nb + j] + k;
    }
    std::vector<double> mass(nb, 0.0);
    std::vector<int> contacts(nb, 0);
    for (int b = 0; b < nb; ++b) mass[find(b)] += m.bodies[b].mass;
    for (const ContactInfo& ci : m.contacts) ++contacts[find(ci.body)];
    q.units.clear();
    for (int k = 0; k < static_cast<int>(m.contacts.size()); ++k) {
        const ContactInfo& ci = m.contacts[k];
        Unit u;
        u.index = k;
        u.friction = ci.mu > 0;
        u.n = u.friction ? 8 : 2;
        u.mu = ci.mu;
        u.body[0] = ci.body;
        u.body[1] = ci.other;
        u.comp = group[ci.body];
        const int r = find(ci.body);
        u.F = mass[r] * g0 / std::min(contacts[r], kRestingPoints);
        u.L = std::max(body_length(m.bodies[ci.body]), ci.radius);
        u.V = g0 * m.options.dt;
        q.units.push_back(u);
    }
    for (int j = 0; j < m.njoints(); ++j) {
        const JointInfo& ji = m.joints[j];
        if (!ji.limited) continue;
        const double lb = body_length(m.bodies[ji.b]);
        for (int k = 0; k < ji.dofs; ++k)
        for (int side = 0; side < 2; ++side) {
            const double bound = side == 0 ? ji.lower[k] : ji.upper[k];
            if (!std::isfinite(bound)) continue;
            const bool angle = std::strncmp(ji.impl->coordinate_name(k), "angle", 5) == 0;
            Unit u;
            u.limit = true;
            u.index = j;
            u.dof = k;
            u.sign = side == 0 ? 1.0 : -1.0;
            u.bound = bound;
            u.body[0] = ji.a;
            u.body[1] = ji.b;
            u.comp = group[ji.b];
            u.L = angle ? 1.0 : lb;
            u.F = mass[find(ji.b)] * g0 * (angle ? lb : 1.0);
            u.V = g0 * m.options.dt;
            q.units.push_back(u);
        }
    }
    for (int k = 0; k < static_cast<int>(m.couplings.size()); ++k) {
        const CouplingInfo& c = m.couplings[k];
        const JointInfo& jf = m.joints[c.joint];
        const bool angle = std::strncmp(jf.impl->coordinate_name(c.dof), "angle", 5) == 0;
        const double lb = body_length(m.bodies[jf.b]);
        Unit u;
        u.coupling = true;
        u.index = k;
        u.sides = c.sides();
        coupling_bodies(m, c, u.body);
        u.comp = group[jf.b];
        u.L = angle ? 1.0 : lb;
        u.F = mass[find(jf.b)] * g0 * (angle ? lb : 1.0);
        u.V = g0 * m.options.dt;
        if (!c.range) {
            u.equality = true;
            u.n = 1;
            q.units.push_back(u);
            continue;
        }
        for (int side = 0; side < 2; ++side) {  // a range: a unit per finite side, like a limit
            const double bound = side == 0 ? c.lower : c.upper;
            if (!std::isfinite(bound)) continue;
            u.sign = side == 0 ? 1.0 : -1.0;
            u.bound = bound;
            q.units.push_back(u);
        }
    }
    q.set.clear();
    for (int i = 0; i < static_cast<int>(q.units.size()); ++i) q.set.push_back(i);  // sizes the workspaces
    q.in_set.assign(q.units.size(), 1);
    q.col_var.reserve(3 * q.units.size());
    q.blocks.reserve(q.units.size());
    layout(q);
    q.any = !q.units.empty();
    const std::size_t mm = static_cast<std::size_t>(q.m), nt = static_cast<std::size_t>(g.total_size);
    for (auto* v : {&q.y, &q.y_try, &q.fy, &q.fy_try, &q.dy, &q.dya, &q.fc, &q.ry1}) v->assign(mm, 0.0);
    std::size_t zsize = 0;  // every unit in the set: the most Z can hold
    for (const Unit& u : q.units) zsize += static_cast<std::size_t>(u.friction ? 3 : 1) * (q.g_off[u.comp + 1] - q.g_off[u.comp]);
    q.Z.assign(zsize, 0.0);
    q.z_off.assign(q.ncols + 1, 0);
    layout(q);  // again, now with Z's offsets
    q.RZ.assign(static_cast<std::size_t>(q.ncols) * q.ncols, 0.0);
    const std::size_t mr = static_cast<std::size_t>(q.mr);
    q.S.assign(mr * mr, 0.0);
    q.piv.assign(mr, 0);
    q.rr.assign(mr, 0.0);
    for (auto* v : {&q.t1, &q.t2, &q.t3}) v->assign(nt, 0.0);
    q.wT.assign(nb, 1.0);
    q.wR.assign(nb, 1.0);
    for (int b = 0; b < nb; ++b) {
        const double W = m.bodies[b].mass * g0;
        q.wT[b] = 1.0 / W;
        q.wR[b] = 1.0 / (W * body_length(m.bodies[b]));
    }
    q.c2.assign(m.total_dofs, 0.0);
}

void layout(Inequalities& q) {
    // Group by group (insertion sort: the set is small and nearly ordered; no allocation).
    for (std::size_t a = 1; a < q.set.size(); ++a)
        for (std::size_t b = a; b > 0; --b) {
            const Unit &x = q.units[q.set[b - 1]], &y = q.units[q.set[b]];
            if (x.comp < y.comp || (x.comp == y.comp && q.set[b - 1] < q.set[b])) break;
            std::swap(q.set[b - 1], q.set[b]);
        }
    q.m = q.ncols = q.pairs = q.mr = 0;
    q.col_var.clear();
    q.col_red.clear();
    q.blocks.clear();
    std::size_t s_off = 0, rz_off = 0;
    for (std::size_t k = 0; k < q.set.size(); ++k) {
        Unit& u = q.units[q.set[k]];
        if (k == 0 || u.comp != q.units[q.set[k - 1]].comp) {
            if (!q.blocks.empty()) {
                Inequalities::Block& last = q.blocks.back();
                last.n = q.m - last.off, last.col_end = q.ncols, last.rn = q.mr - last.roff;
                s_off += static_cast<std::size_t>(last.rn) * last.rn;
                rz_off += static_cast<std::size_t>(last.col_end - last.col_begin) * (last.col_end - last.col_begin);
            }
            Inequalities::Block b;
            b.off = q.m, b.col_begin = q.ncols, b.roff = q.mr, b.s_off = s_off, b.rz_off = rz_off;
            q.blocks.push_back(b);
        }
        u.off = q.m;
        u.col = q.ncols;
        u.roff = q.mr;
        q.m += u.n;
        q.mr += u.equality ? 1 : u.friction ? 6 : 1;
        q.col_var.push_back(u.off);  // γ
        q.col_red.push_back(u.roff);
        if (u.friction) {  // β1, β2
            q.col_var.push_back(u.off + 2), q.col_var.push_back(u.off + 3);
            q.col_red.push_back(u.roff + 1), q.col_red.push_back(u.roff + 2);
        }
        q.ncols = static_cast<int>(q.col_var.size());
        q.pairs += u.equality ? 0 : u.friction ? 2 : 1;
    }
    if (!q.blocks.empty()) {
        Inequalities::Block& last = q.blocks.back();
        last.n = q.m - last.off, last.col_end = q.ncols, last.rn = q.mr - last.roff;
    }
    // Z's columns, each the length of its group's entries.
    if (q.z_off.size() < static_cast<std::size_t>(q.ncols) + 1) return;  // during setup: sized after
    std::size_t z = 0;
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const std::size_t len = static_cast<std::size_t>(q.g_off[u.comp + 1] - q.g_off[u.comp]);
        for (int c = 0; c < (u.friction ? 3 : 1); ++c) q.z_off[u.col + c] = z, z += len;
    }
    q.z_off[q.ncols] = z;
}

void select_units(Inequalities& q, double h) {
    q.set.clear();
    for (int i = 0; i < static_cast<int>(q.units.size()); ++i) {
        const Unit& u = q.units[i];
        const bool near = u.equality || std::min(u.phi2, u.phi2 + 2 * h * u.rate1) <= kNear * u.L;
        q.in_set[i] = near ? 1 : 0;
        if (near) q.set.push_back(i);
    }
    layout(q);
}

bool admit_violated(const Model& m, const Pose* pose3, Inequalities& q) {
    bool added = false;
    for (int i = 0; i < static_cast<int>(q.units.size()); ++i) {
        if (q.in_set[i]) continue;
        Unit& u = q.units[i];
        double phi;
        if (u.coupling) {
            phi = coupling_residual(m, m.couplings[u.index], pose3, q.c2.data(), nullptr);
            range_side(u, phi, nullptr);
        } else if (u.limit) {
            const JointInfo& j = m.joints[u.index];
            phi = u.sign * (limit_coordinate(j, u.dof, pose3, &q.c2[j.dof_offset], nullptr) - u.bound);
        } else {
            Vec3 n;
            phi = contact_gap(m.contacts[u.index], pose3, n, nullptr);
        }
        if (phi < 0) {
            q.in_set[i] = 1;
            q.set.push_back(i);
            added = true;
        }
    }
    if (added) {
        std::sort(q.set.begin(), q.set.end());
        layout(q);
    }
    return added;
}

void prepare_units(const Model& m, const Data& d, Inequalities& q, bool first_substep) {
    if (first_substep) {
        for (const JointInfo& j : m.joints)
            if (j.limited)
                for (int k = 0; k < j.dofs; ++k) q.c2[j.dof_offset + k] = d.coord[j.dof_offset + k];
        for (const CouplingInfo& c : m.couplings)
            for (const CouplingInfo::Term& t : c.terms) {
                const JointInfo& j = m.joints[t.joint];
                for (int k = 0; k < j.dofs; ++k) q.c2[j.dof_offset + k] = d.coord[j.dof_offset + k];
            }
    }
    for (Unit& u : q.units) {
        if (u.coupling) {
            u.phi2 = coupling_residual(m, m.couplings[u.index], d.pose.data(), q.c2.data(), u.G2);
            if (!u.equality) range_side(u, u.phi2, u.G2);
        } else if (u.limit) {
            const JointInfo& j = m.joints[u.index];
            double C[2][6] = {};
            const double c = limit_coordinate(j, u.dof, d.pose.data(), &q.c2[j.dof_offset], C);
            u.phi2 = u.sign * (c - u.bound);
            for (int side = 0; side < 2; ++side)
                for (int k = 0; k < 6; ++k) u.G2[side][k] = u.sign * C[side][k];
        } else {
            u.phi2 = contact_gap(m.contacts[u.index], d.pose.data(), u.normal, u.G2);
        }
        // The gap's rate at the last velocities: which units the step may reach (select_units).
        u.rate1 = 0;
        for (int side = 0; side < u.sides; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            const Twist& t = d.twist[b];
            const double v[6] = {t.v.x, t.v.y, t.v.z, t.w.x, t.w.y, t.w.z};
            u.rate1 += dot6(u.G2[side], v);
        }
        if (!u.friction) continue;
        const ContactInfo& ci = m.contacts[u.index];
        orthonormal_basis(u.normal, u.t1, u.t2);
        // Slip velocity of the contact point: the body's surface point minus the other's.
        for (int side = 0; side < 2; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            const Pose& P = d.pose[b];
            const double sg = side == 0 ? 1.0 : -1.0;
            const Vec3 centre = P.x + rotate(P.q, side == 0 ? ci.point : ci.other_point);
            const Vec3 surface = side == 0 ? centre - ci.radius * u.normal : centre + ci.other_radius * u.normal;
            const Vec3 lever = surface - P.x;
            put6(u.Jt[side][0], sg * u.t1, sg * rotate_inv(P.q, cross(lever, u.t1)));
            put6(u.Jt[side][1], sg * u.t2, sg * rotate_inv(P.q, cross(lever, u.t2)));
        }
    }
}

void unit_gaps(const Model& m, const Data& d, const Pose* pose3, Inequalities& q, bool jacobians) {
    (void)d;
    for (int i : q.set) {
        Unit& u = q.units[i];
        if (u.coupling) {
            u.phi3 = coupling_residual(m, m.couplings[u.index], pose3, q.c2.data(), jacobians ? u.G3 : nullptr);
            if (!u.equality) range_side(u, u.phi3, jacobians ? u.G3 : nullptr);
            continue;
        }
        if (u.limit) {
            const JointInfo& j = m.joints[u.index];
            double C[2][6] = {};
            u.c3 = limit_coordinate(j, u.dof, pose3, &q.c2[j.dof_offset], jacobians ? C : nullptr);
            u.phi3 = u.sign * (u.c3 - u.bound);
            if (jacobians)
                for (int side = 0; side < 2; ++side)
                    for (int k = 0; k < 6; ++k) u.G3[side][k] = u.sign * C[side][k];
            continue;
        }
        Vec3 n;
        u.phi3 = contact_gap(m.contacts[u.index], pose3, n, jacobians ? u.G3 : nullptr);
    }
}

void add_unit_forces(const BlockGraph& g, const Inequalities& q, const double* y, double* fT) {
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const double* yu = y + u.off;
        for (int side = 0; side < u.sides; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            double w[6];
            for (int k = 0; k < 6; ++k) {
                w[k] = u.G2[side][k] * yu[0];
                if (u.friction) w[k] += u.Jt[side][0][k] * yu[2] + u.Jt[side][1][k] * yu[3];
            }
            double* f = fT + g.node_offset[b];
            for (int k = 0; k < 3; ++k) f[k] -= q.ft * u.F * w[k];
            for (int k = 3; k < 6; ++k) f[k] -= q.fr * u.F * w[k];
        }
    }
}

void unit_rows(const BlockGraph& g, const Inequalities& q, const double* s, const double* y, double* fy) {
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const double* yu = y + u.off;
        double* f = fy + u.off;
        if (u.equality) {
            f[0] = -u.phi3 / u.L;
            continue;
        }
        if (!u.friction) {
            f[0] = yu[1] - u.phi3 / u.L;
            f[1] = yu[1] * yu[0];
            continue;
        }
        double vt[2] = {0, 0};
        for (int side = 0; side < 2; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            const double* sb = s + g.node_offset[b];
            vt[0] += dot6(u.Jt[side][0], sb);
            vt[1] += dot6(u.Jt[side][1], sb);
        }
        // y = [γ, ψ, β1, β2 | s, η, σ1, σ2]
        f[0] = yu[4] - u.phi3 / u.L;
        f[1] = yu[1] - u.mu * yu[0];
        f[2] = yu[6] - vt[0] / u.V;
        f[3] = yu[7] - vt[1] / u.V;
        f[4] = yu[4] * yu[0];
        f[5] = yu[5] * yu[1] + yu[6] * yu[2] + yu[7] * yu[3];
        f[6] = yu[5] * yu[2] + yu[1] * yu[6];
        f[7] = yu[5] * yu[3] + yu[1] * yu[7];
    }
}

void violations(const Model& m, const BlockGraph& g, const Inequalities& q, const double* fT, const double* y,
                const double* fy, double& rvio, double& bvio, double& ovio) {
    double tree = 0;
    const int nb = m.nbodies();
    for (int b = 0; b < nb; ++b) {
        const double* f = fT + g.node_offset[b];
        for (int k = 0; k < 3; ++k) tree = std::max(tree, std::fabs(f[k]) * q.wT[b] * q.inv_rhoT);
        for (int k = 3; k < 6; ++k) tree = std::max(tree, std::fabs(f[k]) * q.wR[b] * q.inv_rhoT);
    }
    for (int n = nb; n < g.nnodes(); ++n) {  // joint rows [m or rad] and implicit force rows, as they are
        const int rows = m.joints[n - nb].rows;
        for (int i = 0; i < g.node_size[n]; ++i)
            tree = std::max(tree, std::fabs(fT[g.node_offset[n] + i]) * (i < rows ? q.inv_rhoJ : q.inv_rhoZ));
    }
    if (!(tree == tree)) tree = HUGE_VAL;
    double req = 0, bil = 0, pair = 0;
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const double* f = fy + u.off;
        const double* yu = y + u.off;
        if (u.equality) {
            req = std::max(req, std::fabs(f[0]));
            continue;
        }
        if (!u.friction) {
            req = std::max(req, std::fabs(f[0]));
            bil = std::max(bil, std::fabs(f[1]));
            pair = std::max(pair, std::min(yu[0], yu[1]));
            continue;
        }
        for (int k = 0; k < 4; ++k) req = std::max(req, std::fabs(f[k]));
        for (int k = 4; k < 8; ++k) bil = std::max(bil, std::fabs(f[k]));
        pair = std::max(pair, std::min(yu[0], yu[4]));
    }
    rvio = std::max(tree * q.tree_weight, req);
    bvio = bil;
    ovio = pair;
    if (!(ovio == ovio)) ovio = HUGE_VAL;
    if (!(rvio == rvio)) rvio = HUGE_VAL;
    if (!(bvio == bvio)) bvio = HUGE_VAL;
}

void neutral_start(Inequalities& q) {
    for (int i : q.set) {
        const Unit& u = q.units[i];
        double* y = &q.y[u.off];
        if (u.equality) {
            y[0] = 0;
            continue;
        }
        if (!u.friction) {
            y[0] = y[1] = 1;
            continue;
        }
        y[0] = y[1] = y[4] = y[5] = 1;  // γ, ψ, s, η
        y[2] = y[3] = y[6] = y[7] = 0;  // β, σ
    }
}

void gap_jacobians(const BlockGraph& g, Inequalities& q, const double* s, double h) {
    for (int i : q.set)
        for (int side = 0; side < q.units[i].sides; ++side) {
            Unit& u = q.units[i];
            const int b = u.body[side];
            if (b < 0) continue;
            const double* sb = s + g.node_offset[b];
            const Vec3 w{sb[3], sb[4], sb[5]};
            const double v = 4.0 / (h * h) - dot(w, w);
            const double s2 = v > 0 ? std::sqrt(v) : 0.0;
            const Mat3 K = (0.5 * h * h) * (s2 * Mat3::identity() - skew(w) + (1.0 / s2) * outer(w, w));
            const double* G = u.G3[side];
            double* R = u.Rphi[side];
            for (int k = 0; k < 3; ++k) {
                R[k] = -h * G[k] / u.L;
                R[3 + k] = -(G[3] * K.m[0][k] + G[4] * K.m[1][k] + G[5] * K.m[2][k]) / u.L;
            }
        }
}

void unit_block(const Unit& u, const double* y, double* D, int ld, bool nt) {
    auto S = [&](int r, int c) -> double& { return D[static_cast<std::size_t>(r) * ld + c]; };
    if (u.equality) return;  // r_φ does not depend on λ
    if (!u.friction) {
        S(0, 1) = 1;
        S(1, 0) = y[1], S(1, 1) = y[0];
        return;
    }
    S(0, 4) = 1;
    S(1, 0) = -u.mu, S(1, 1) = 1;
    S(2, 6) = 1, S(3, 7) = 1;
    S(4, 0) = y[4], S(4, 4) = y[0];
    if (!nt) {  // the cone rows as they are: ∂/∂(ψ, β) = Arw(η, σ), ∂/∂(η, σ) = Arw(ψ, β)
        S(5, 1) = y[5], S(5, 2) = y[6], S(5, 3) = y[7];
        S(5, 5) = y[1], S(5, 6) = y[2], S(5, 7) = y[3];
        S(6, 1) = y[6], S(6, 2) = y[5], S(6, 5) = y[2], S(6, 6) = y[1];
        S(7, 1) = y[7], S(7, 3) = y[5], S(7, 5) = y[3], S(7, 7) = y[1];
        return;
    }
    // NT-scaled (nt_scaling): ∂/∂(ψ, β) = Arw(λ) W⁻¹, ∂/∂(η, σ) = Arw(λ) W.
    const double* l = u.lam;
    const double arw[9] = {l[0], l[1], l[2], l[1], l[0], 0, l[2], 0, l[0]};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            double a = 0, b = 0;
            for (int k = 0; k < 3; ++k) a += arw[3 * r + k] * u.Wi[3 * k + c], b += arw[3 * r + k] * u.W[3 * k + c];
            S(5 + r, 1 + c) = a;
            S(5 + r, 5 + c) = b;
        }
}

void schur_columns(const Model& m, const BlockGraph& g, SolverWorkspace& ws, Inequalities& q, const double* s, double h) {
    const std::size_t nt = static_cast<std::size_t>(g.total_size);
    gap_jacobians(g, q, s, h);
    // Z = F⁻¹ C, one tree solve per force column, kept on the column's group.
    double* t = q.t2.data();
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const int cols = u.friction ? 3 : 1;
        const int* idx = &q.g_idx[q.g_off[u.comp]];
        const int len = q.g_off[u.comp + 1] - q.g_off[u.comp];
        for (int c = 0; c < cols; ++c) {
            std::fill(t, t + nt, 0.0);
            for (int side = 0; side < u.sides; ++side) {
                const int b = u.body[side];
                if (b < 0) continue;
                const double* src = c == 0 ? u.G2[side] : u.Jt[side][c - 1];
                double* zb = t + g.node_offset[b];
                for (int k = 0; k < 3; ++k) zb[k] -= q.ft * u.F * src[k];  // sides may share a body: summed
                for (int k = 3; k < 6; ++k) zb[k] -= q.fr * u.F * src[k];
            }
            m.solver->solve(g, ws, t);
            double* z = &q.Z[q.z_off[u.col + c]];
            for (int e = 0; e < len; ++e) z[e] = t[idx[e]];
        }
    }
    schur_products(q);
}

void schur_products(Inequalities& q) {
    // R Z, block by block: the rows r_φ (and r_σ with friction) of each unit by the block's columns.
    std::size_t next = 0;  // position in the set
    for (const Inequalities::Block& blk : q.blocks) {
        const int nb = blk.col_end - blk.col_begin;
        for (; next < q.set.size() && q.units[q.set[next]].off < blk.off + blk.n; ++next) {
            const Unit& u = q.units[q.set[next]];
            for (int r = 0; r < (u.friction ? 3 : 1); ++r) {
                double* rz = &q.RZ[blk.rz_off + static_cast<std::size_t>(u.col + r - blk.col_begin) * nb];
                for (int c = blk.col_begin; c < blk.col_end; ++c) {
                    const double* z = &q.Z[q.z_off[c]];
                    double acc = 0;
                    for (int side = 0; side < u.sides; ++side) {
                        const int b = u.body[side];
                        if (b < 0) continue;
                        const double* zb = z + q.b_pos[b];
                        if (r == 0) acc += dot6(u.Rphi[side], zb);
                        else acc -= dot6(u.Jt[side][r - 1], zb) / u.V;
                    }
                    rz[c - blk.col_begin] = acc;
                }
            }
        }
    }
}

namespace {

// The slip cone is eliminated with the unit when the friction pair is this far inside its cone:
// ψ − ‖β‖ >= kConeInside ψ (Arw(ψ, β) conditioned within 2 / kConeInside).
constexpr double kConeInside = 1e-2;

// The unit's block (unit_block, y its unknowns) with its local rows eliminated (contact.hpp, Unit),
// added into the complement at Sk (row stride ld): for a friction point over (γ, β1, β2, η, σ1, σ2)
// with rows (r_φ, r_σ1, r_σ2, cone rows), or (γ, β1, β2) and (r_φ, r_σ1, r_σ2) with the slip cone
// eliminated; without friction γ and r_φ. False if what is eliminated is singular.
bool eliminate_local(Unit& u, const double* y, bool nt_rows, double* Sk, int ld) {
    if (u.equality) return true;  // r_φ does not depend on λ
    if (!(std::fabs(y[0]) > 0) || !std::isfinite(y[0])) return false;
    const int o4 = u.friction ? 4 : 1;  // s
    u.gamma = y[0];
    u.sg = y[o4] / y[0];  // s by r_sγ = s γ − κ: ∂/∂γ = s, ∂/∂s = γ; r_φ's ∂/∂s = 1
    auto S = [&](int r, int c) -> double& { return Sk[static_cast<std::size_t>(r) * ld + c]; };
    S(0, 0) += 0.0 - u.sg;
    if (!u.friction) return true;
    double D[64] = {};
    unit_block(u, y, D, 8, nt_rows);
    // ψ by r_ψ = ψ − μ γ (∂/∂ψ = 1, ∂/∂γ = −μ): the cone rows' γ column gains μ times their ψ column.
    for (int r = 0; r < 3; ++r) u.cpsi[r] = D[8 * (5 + r) + 1];
    // The kept rows: r_σ over σ (1), the cone rows over γ, β (1, 2 of the kept) and η, σ (3 .. 5).
    double Pab[9] = {}, Pba[9] = {};  // (r_φ, r_σ) × (η, σ); cone rows × (γ, β)
    Pab[4] = D[8 * 2 + 6], Pab[8] = D[8 * 3 + 7];
    for (int r = 0; r < 3; ++r) {
        Pba[3 * r] = D[8 * (5 + r)] + u.mu * u.cpsi[r];
        Pba[3 * r + 1] = D[8 * (5 + r) + 2], Pba[3 * r + 2] = D[8 * (5 + r) + 3];
        for (int c = 0; c < 3; ++c) u.Ab[3 * r + c] = D[8 * (5 + r) + 5 + c];
    }
    if (!u.cone_local()) {
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) {
                S(r, 3 + c) += Pab[3 * r + c];
                S(3 + r, c) += Pba[3 * r + c];
                S(3 + r, 3 + c) += u.Ab[3 * r + c];
            }
        return true;
    }
    // (η, σ) by the cone rows: Y = A⁻¹ Pba, and (γ, β) − Pab Y.
    if (!dense::lu_factor(3, u.Ab, u.Ap)) return false;
    std::copy(Pba, Pba + 9, u.Y);
    dense::lu_solve_matrix(3, 3, u.Ab, u.Ap, u.Y);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            double a = 0;
            for (int k = 0; k < 3; ++k) a += Pab[3 * r + k] * u.Y[3 * k + c];
            S(r, c) -= a;
        }
    return true;
}

// The complement's layout at the current unknowns: which friction units keep their slip cone, each
// unit's kept unknowns (roff, nk), each block's (roff, rn, s_off), the force columns' (col_red).
void reduced_layout(Inequalities& q, bool nt_rows) {
    q.mr = 0;
    std::size_t next = 0, s_off = 0;
    for (Inequalities::Block& blk : q.blocks) {
        blk.roff = q.mr;
        blk.s_off = s_off;
        for (; next < q.set.size() && q.units[q.set[next]].off < blk.off + blk.n; ++next) {
            Unit& u = q.units[q.set[next]];
            if (u.friction) {
                const double* y = &q.y[u.off];
                u.nk = !nt_rows && y[1] - std::hypot(y[2], y[3]) >= kConeInside * y[1] ? 3 : 6;
            } else {
                u.nk = 1;
            }
            u.roff = q.mr;
            for (int c = 0; c < (u.friction ? 3 : 1); ++c) q.col_red[u.col + c] = u.roff + c;
            q.mr += u.nk;
        }
        blk.rn = q.mr - blk.roff;
        s_off += static_cast<std::size_t>(blk.rn) * blk.rn;
    }
}

}  // namespace

bool schur_complement(const BlockGraph& g, Inequalities& q, bool nt_rows) {
    (void)g;
    // S = D_KK − D_KL D_LL⁻¹ D_LK − R Z over the units' kept unknowns, block by block (units of
    // different groups do not couple).
    reduced_layout(q, nt_rows);
    std::size_t next = 0;  // position in the set
    for (const Inequalities::Block& blk : q.blocks) {
        const int M = blk.rn;
        double* Sb = &q.S[blk.s_off];
        std::fill(Sb, Sb + static_cast<std::size_t>(M) * M, 0.0);
        auto S = [&](int r, int c) -> double& { return Sb[static_cast<std::size_t>(r - blk.roff) * M + (c - blk.roff)]; };
        for (; next < q.set.size() && q.units[q.set[next]].off < blk.off + blk.n; ++next) {
            Unit& u = q.units[q.set[next]];
            if (!eliminate_local(u, &q.y[u.off], nt_rows, &S(u.roff, u.roff), M)) return false;
            // −R Z (schur_columns) on the rows coupled to the bodies: r_φ, and r_σ with friction
            // (the first kept rows).
            const int nb = blk.col_end - blk.col_begin;
            for (int r = 0; r < (u.friction ? 3 : 1); ++r) {
                const double* rz = &q.RZ[blk.rz_off + static_cast<std::size_t>(u.col + r - blk.col_begin) * nb];
                for (int c = blk.col_begin; c < blk.col_end; ++c) S(u.roff + r, q.col_red[c]) -= rz[c - blk.col_begin];
            }
        }
        if (!dense::lu_factor(M, Sb, &q.piv[blk.roff])) return false;
    }
    return true;
}

void schur_tree_rhs(const Model& m, const BlockGraph& g, SolverWorkspace& ws, Inequalities& q, const double* fT) {
    const std::size_t nt = static_cast<std::size_t>(g.total_size);
    std::copy(fT, fT + nt, q.t1.begin());
    m.solver->solve(g, ws, q.t1.data());  // y1 = F⁻¹ fT
    for (int i : q.set) {
        const Unit& u = q.units[i];  // R y1
        const int rows = u.friction ? 3 : 1;
        for (int r = 0; r < rows; ++r) {
            const int row = r == 0 ? u.off : u.off + 1 + r;
            double acc = 0;
            for (int side = 0; side < u.sides; ++side) {
                const int b = u.body[side];
                if (b < 0) continue;
                const double* yb = &q.t1[g.node_offset[b]];
                if (r == 0) acc += dot6(u.Rphi[side], yb);
                else acc -= dot6(u.Jt[side][r - 1], yb) / u.V;
            }
            q.ry1[row] = acc;
        }
    }
}

void schur_solve(Inequalities& q, const double* fY, double* dT, double* dY) {
    // Each unit's local rows first (schur_complement, eliminate_local): the local unknowns without
    // the kept ones' part into dY, the complement's right-hand side f_K − R y1 with their part taken
    // out; then the kept unknowns from the complement, and their part taken from the local ones.
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const double* f = fY + u.off;
        double* w = dY + u.off;
        double* b = &q.rr[u.roff];
        b[0] = f[0] - q.ry1[u.off];
        if (u.equality) continue;
        if (!u.friction) {
            w[1] = f[1] / u.gamma;  // s = f_sγ / γ, less s/γ times γ's correction
            b[0] -= w[1];
            continue;
        }
        w[1] = f[1];  // ψ = f_ψ + μ γ's correction
        w[4] = f[4] / u.gamma;
        b[0] -= w[4];
        b[1] = f[2] - q.ry1[u.off + 2];
        b[2] = f[3] - q.ry1[u.off + 3];
        double c[3];
        for (int r = 0; r < 3; ++r) c[r] = f[5 + r] - u.cpsi[r] * w[1];
        if (!u.cone_local()) {
            for (int r = 0; r < 3; ++r) b[3 + r] = c[r];
            continue;
        }
        dense::lu_solve(3, u.Ab, u.Ap, c);  // (η, σ) without (γ, β)'s part
        b[1] -= c[1], b[2] -= c[2];         // r_σ over σ: coefficient 1 (unit_block)
        for (int r = 0; r < 3; ++r) w[5 + r] = c[r];
    }
    for (const Inequalities::Block& blk : q.blocks) dense::lu_solve(blk.rn, &q.S[blk.s_off], &q.piv[blk.roff], &q.rr[blk.roff]);
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const double* x = &q.rr[u.roff];
        double* d = dY + u.off;
        d[0] = x[0];
        if (u.equality) continue;
        if (!u.friction) {
            d[1] -= u.sg * x[0];
            continue;
        }
        d[2] = x[1], d[3] = x[2];
        if (u.cone_local()) {
            for (int r = 0; r < 3; ++r) d[5 + r] -= u.Y[3 * r] * x[0] + u.Y[3 * r + 1] * x[1] + u.Y[3 * r + 2] * x[2];
        } else {
            for (int r = 0; r < 3; ++r) d[5 + r] = x[3 + r];
        }
        d[1] += u.mu * x[0];
        d[4] -= u.sg * x[0];
    }
    if (!dT) return;
    std::copy(q.t1.begin(), q.t1.end(), dT);  // y1 − Z dY
    // Group by group: its entries of dT gathered, less each of its columns' part in column order,
    // scattered back (the same operations as entry by entry in dT, on contiguous memory).
    double* t = q.t3.data();
    std::size_t next = 0;  // position in the set
    for (const Inequalities::Block& blk : q.blocks) {
        if (next >= q.set.size()) break;
        const int comp = q.units[q.set[next]].comp;
        for (; next < q.set.size() && q.units[q.set[next]].off < blk.off + blk.n; ++next) {}
        const int* idx = &q.g_idx[q.g_off[comp]];
        const int len = q.g_off[comp + 1] - q.g_off[comp];
        for (int e = 0; e < len; ++e) t[e] = dT[idx[e]];
        for (int c = blk.col_begin; c < blk.col_end; ++c) {
            const double a = dY[q.col_var[c]];
            if (a == 0) continue;
            const double* z = &q.Z[q.z_off[c]];
            for (int e = 0; e < len; ++e) t[e] -= a * z[e];
        }
        for (int e = 0; e < len; ++e) dT[idx[e]] = t[e];
    }
}

namespace {

// Largest α with u + α d in the cone u0 >= ‖u1‖ (u strictly inside); +inf if it never leaves.
double cone_step(const double* u, const double* d) {
    double amax = HUGE_VAL;
    if (d[0] < 0) amax = -u[0] / d[0];
    const double a = d[0] * d[0] - d[1] * d[1] - d[2] * d[2];
    const double b = u[0] * d[0] - u[1] * d[1] - u[2] * d[2];
    const double c = u[0] * u[0] - u[1] * u[1] - u[2] * u[2];
    // (u0 + α d0)² − ‖u1 + α d1‖² = a α² + 2 b α + c, c > 0.
    const double disc = b * b - a * c;
    if (std::fabs(a) < 1e-300) {
        if (b < 0) amax = std::min(amax, -c / (2 * b));
    } else if (disc >= 0) {
        const double sq = std::sqrt(disc);
        const double qv = -(b + (b >= 0 ? sq : -sq));
        const double r1 = qv / a, r2 = qv != 0 ? c / qv : HUGE_VAL;
        for (double r : {r1, r2})
            if (r > 0) amax = std::min(amax, r);
    }
    return amax;
}

}  // namespace

double step_to_boundary(const Inequalities& q, const double* y, const double* delta, double tau) {
    double alpha = 1;
    auto orthant = [&](int i) {
        if (delta[i] > 0) alpha = std::min(alpha, tau * y[i] / delta[i]);  // direction −Δ
    };
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const int o = u.off;
        if (u.equality) continue;              // λ is free
        orthant(o);                            // γ
        orthant(u.friction ? o + 4 : o + 1);  // s
        if (!u.friction) continue;
        for (int first : {o + 1, o + 5}) {  // (ψ, β), (η, σ)
            const double d[3] = {-delta[first], -delta[first + 1], -delta[first + 2]};
            alpha = std::min(alpha, std::min(tau, kMaxConeTau) * cone_step(y + first, d));
        }
    }
    return alpha;
}

double mean_complementarity(const Inequalities& q, const double* y, const double* delta, double alpha) {
    if (q.pairs == 0) return 0;
    double sum = 0;
    auto v = [&](int i) { return delta ? y[i] - alpha * delta[i] : y[i]; };
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const int o = u.off;
        if (u.equality) continue;
        if (!u.friction) {
            sum += v(o) * v(o + 1);
            continue;
        }
        sum += v(o) * v(o + 4);
        sum += v(o + 5) * v(o + 1) + v(o + 6) * v(o + 2) + v(o + 7) * v(o + 3);
    }
    return sum / q.pairs;
}

namespace {

// x ∘ y for cone vectors (x0, x1), (y0, y1): (xᵀy, x0 y1 + y0 x1).
void jordan(const double* x, const double* y, double* out) {
    out[0] = x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    out[1] = x[0] * y[1] + y[0] * x[1];
    out[2] = x[0] * y[2] + y[0] * x[2];
}

void mat3_vec(const double* M, const double* x, double* out) {
    for (int r = 0; r < 3; ++r) out[r] = M[3 * r] * x[0] + M[3 * r + 1] * x[1] + M[3 * r + 2] * x[2];
}

}  // namespace

void nt_scaling(Inequalities& q) {
    for (int i : q.set) {
        Unit& u = q.units[i];
        if (!u.friction) continue;
        const double* x = &q.y[u.off + 1];  // (ψ, β)
        const double* z = &q.y[u.off + 5];  // (η, σ)
        // x0² − ‖x1‖² as (x0 − ‖x1‖)(x0 + ‖x1‖): near the cone's boundary the difference of squares
        // loses every digit.
        const double x1 = std::hypot(x[1], x[2]), z1 = std::hypot(z[1], z[2]);
        const double xJx = (x[0] - x1) * (x[0] + x1), zJz = (z[0] - z1) * (z[0] + z1);
        const double nx = std::sqrt(std::max(xJx, 1e-300)), nz = std::sqrt(std::max(zJz, 1e-300));
        const double xb[3] = {x[0] / nx, x[1] / nx, x[2] / nx}, zb[3] = {z[0] / nz, z[1] / nz, z[2] / nz};
        const double g = std::sqrt(0.5 * (1 + xb[0] * zb[0] + xb[1] * zb[1] + xb[2] * zb[2]));
        // w̄ = (x̄ + J z̄) / (2γ) = (a, b) with w̄ᵀJw̄ = 1; W = η [a, bᵀ; b, I + b bᵀ/(1 + a)] (a Lorentz
        // boost), W⁻¹ = [a, −bᵀ; −b, I + b bᵀ/(1 + a)] / η, η = (xᵀJx / zᵀJz)^¼: then W z = W⁻¹ x.
        const double a = (xb[0] + zb[0]) / (2 * g), bv[2] = {(xb[1] - zb[1]) / (2 * g), (xb[2] - zb[2]) / (2 * g)};
        const double eta = std::sqrt(nx / nz);
        const double M[9] = {a,     bv[0], bv[1], bv[0], 1 + bv[0] * bv[0] / (1 + a), bv[0] * bv[1] / (1 + a),
                             bv[1], bv[1] * bv[0] / (1 + a), 1 + bv[1] * bv[1] / (1 + a)};
        for (int k = 0; k < 9; ++k) {
            u.W[k] = eta * M[k];
            const bool flip = (k == 1 || k == 2 || k == 3 || k == 6);  // the first row and column off the diagonal
            u.Wi[k] = (flip ? -M[k] : M[k]) / eta;
        }
        mat3_vec(u.W, z, u.lam);
    }
}

void newton_rows(const Inequalities& q, const double* fy, const double* dya, double kappa, double* fc, bool nt) {
    std::copy(fy, fy + q.m, fc);
    for (int i : q.set) {
        const Unit& u = q.units[i];
        const int o = u.off;
        if (u.equality) continue;
        if (!u.friction) {
            fc[o + 1] += (dya ? dya[o + 1] * dya[o] : 0.0) - kappa;
            continue;
        }
        fc[o + 4] += (dya ? dya[o + 4] * dya[o] : 0.0) - kappa;
        if (!nt) {  // (η, σ)∘(ψ, β) − κ e [+ (Δη, Δσ)∘(Δψ, Δβ)]
            double t[3] = {0, 0, 0};
            if (dya) jordan(dya + o + 5, dya + o + 1, t);
            fc[o + 5] += t[0] - kappa;
            fc[o + 6] += t[1];
            fc[o + 7] += t[2];
            continue;
        }
        // The cone pair in the NT-scaled form: λ∘λ − κ e [+ (W⁻¹Δx_a)∘(W Δz_a)].
        double r[3];
        jordan(u.lam, u.lam, r);
        r[0] -= kappa;
        if (dya) {
            double a[3], c[3], t[3];
            mat3_vec(u.Wi, dya + o + 1, a);
            mat3_vec(u.W, dya + o + 5, c);
            jordan(a, c, t);
            for (int k = 0; k < 3; ++k) r[k] += t[k];
        }
        for (int k = 0; k < 3; ++k) fc[o + 5 + k] = r[k];
    }
}

void commit_units(const Model& m, Data& d, Inequalities& q, const Pose* pose3) {
    for (const JointInfo& j : m.joints)
        if (j.limited)
            for (int k = 0; k < j.dofs; ++k) d.limit_force[j.dof_offset + k] = 0;
    std::fill(d.coupling_force.begin(), d.coupling_force.end(), 0.0);
    for (int i = 0; i < static_cast<int>(q.units.size()); ++i) {
        const Unit& u = q.units[i];
        const bool in = q.in_set[i] != 0;
        const double* y = in ? &q.y[u.off] : nullptr;
        const double gamma = in ? u.F * y[0] : 0.0;
        if (u.coupling) {
            d.coupling_force[u.index] += (u.equality ? gamma : u.sign * gamma) * q.lam;
            const CouplingInfo& c = m.couplings[u.index];
            for (int t : {c.joint, c.leader}) carry_coordinates(m.joints[t], pose3, q.c2);  // to the next substep
            continue;
        }
        if (u.limit) {
            const JointInfo& j = m.joints[u.index];
            d.limit_force[j.dof_offset + u.dof] += u.sign * gamma;
            if (j.dofs == 1) q.c2[j.dof_offset] = in ? u.c3 : limit_coordinate(j, 0, pose3, &q.c2[j.dof_offset], nullptr);
            else carry_coordinates(j, pose3, q.c2);  // every coordinate, unwrapped together
            continue;
        }
        const ContactInfo& ci = m.contacts[u.index];
        ContactResult& r = d.contact[u.index];
        Vec3 n;
        r.gap = contact_gap(ci, pose3, n, nullptr);
        r.normal = n;
        const Pose& P = pose3[ci.body];
        r.point = P.x + rotate(P.q, ci.point) - ci.radius * n;
        r.normal_force = gamma;
        r.friction = in && u.friction ? u.F * (y[2] * u.t1 + y[3] * u.t2) : Vec3{};
        r.active = in && y[0] > (u.friction ? y[4] : y[1]);
    }
}

}  // namespace vi_max
}  // namespace noether
