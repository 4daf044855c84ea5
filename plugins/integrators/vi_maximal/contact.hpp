// vi-maximal: contacts, friction and joint limits as inequality constraints of the step, solved by
// a primal-dual interior-point method (Mehrotra predictor–corrector) around the step's Newton
// system (docs/contact.md; the method: shared/design/contact-ip.md, here "CIP").
//
// Every inequality is a *unit* with a gap φ(configuration 3) >= 0 and a multiplier γ >= 0 that acts
// through the gap's Jacobian at configuration 2 (CIP §0.1, §2.2):
//   * a contact point: φ = distance to the half-space (or between two spheres) minus the radii;
//     with friction (μ > 0) the unit also carries the circular friction cone of CIP §2.3:
//     unknowns [γ, ψ, β1, β2 | s, η, σ1, σ2], rows [r_φ, r_ψ, r_σ (2), r_sγ, r_K (3)] (CIP §3);
//     frictionless: [γ | s], rows [r_φ, r_sγ];
//   * a side of a joint limit: φ = c − lower or upper − c, with c a joint coordinate (unwrapped
//     across steps by the joint plugin; any coordinate that is an angle or a displacement, e.g. a
//     compound joint's k-th motion): [γ | s] like a frictionless contact.
// A coupling between joint coordinates (docs/couplings.md) is an *equality* unit: φ = q_joint −
// ratio · q_leader − … − offset = 0 with a free multiplier λ, unknowns [λ], row [r_φ = −φ/L], no
// pair; it touches the parents and children of its terms' joints (sides 2t, 2t + 1 for term t: 0 the
// follower, 1 the leader, then further leaders; up to kMaxUnitSides) and is always in the working set. A coupling with a range gives a unit per finite side,
// φ = ±(the coupling's residual − bound), [γ | s] like a limit.
// The units' unknowns are scaled (CIP §10.4) so that one dimensionless tolerance serves from grams
// to hundreds of kilograms: γ, ψ, β by a force F (the weight the unit's mechanism puts on each of
// its contacts; for a limit that weight times a length), s by a length L (the body's radius of
// gyration; 1 rad for a revolute limit), η, σ by a speed V = g dt. The neutral start is then all
// ones (β = σ = 0).
//
// Linear algebra (CIP §4.4, "variant B"): the tree of bodies and joints is factored by the Model's
// solver as without inequalities; the unit rows form one dense block Λ eliminated by its Schur
// complement, S = D − R F⁻¹ C, with one tree solve per force column of C (γ, and β1, β2 with
// friction). Each unit's slack rows are eliminated first (Unit::roff), so S has 3 rows per sticking
// friction point (6 per sliding one) and 1 per limit side or frictionless point. Cost per
// iteration: O(n · columns + mr³).
#pragma once

#include <vector>

#include "noether/data.hpp"
#include "noether/model.hpp"
#include "noether/sdk/solver.hpp"

namespace noether {
namespace vi_max {

constexpr int kMaxUnitSides = 2 * kMaxCouplingTerms;

struct Unit {
    bool limit = false;     // a side of a joint limit (else a contact point or a coupling)
    bool coupling = false;  // a coupling: an equality, or a side of its range
    bool equality = false;  // an equality (a coupling without a range): free multiplier, no pair
    int index = -1;         // Model::contacts index, the joint's, or Model::couplings index
    int dof = 0;            // limit: the joint's coordinate (0 for a joint of one degree of freedom)
    double sign = 1;        // limit: +1 lower side (c − lower), −1 upper side (upper − c)
    double bound = 0;       // limit: the bound
    bool friction = false;  // contact with μ > 0: 8 unknowns, else 2
    int comp = 0;           // the group of bodies it couples (joints and body-body contacts join them), 0 ..
    int off = 0, n = 2;     // offset of the unit's unknowns in the unit vector, their count
    int col = 0;            // first force column of Z (γ; with friction β1, β2 follow)
    // side 0: the contact's body / the joint's parent; side 1: other / child; a coupling: its terms'
    // joints' parents and children (coupling_bodies: 2t, 2t + 1). −1: the world.
    int sides = 2;
    int body[kMaxUnitSides] = {-1, -1, -1, -1, -1, -1, -1, -1};
    double F = 1, L = 1, V = 1, mu = 0;  // scales, friction coefficient
    double G2[kMaxUnitSides][6] = {};     // gap Jacobian per side at configuration 2: [∂φ/∂x, ∂φ/∂θ (body frame)]
    double G3[kMaxUnitSides][6] = {};     // the same at configuration 3 (of the current iterate)
    double Jt[2][2][6] = {};  // friction: slip-velocity rows per side and tangent, configuration 2
    double Rphi[kMaxUnitSides][6] = {};   // ∂r_φ/∂(v2, ω2) per side at the current iterate
    Vec3 normal, t1, t2;      // contact frame at configuration 2 (world)
    double phi2 = 0;          // gap at configuration 2 [m or rad]
    double rate1 = 0;         // its rate at the last velocities (choosing the working set)
    double phi3 = 0;          // gap at configuration 3 [m or rad]
    double c3 = 0;            // limit: joint coordinate at configuration 3 (with offset)
    // Friction: the Nesterov–Todd scaling of the cone pair at the current iterate (nt_scaling):
    // W (η, σ) = W⁻¹ (ψ, β) = λ, 3×3 row-major.
    double W[9] = {}, Wi[9] = {}, lam[3] = {};
    // Its local rows eliminated first (schur_complement): the slack s by r_sγ (∂/∂s = γ) and with
    // friction the cone radius ψ by r_ψ (∂/∂ψ = 1): what stays of a friction point is γ, β, η, σ
    // and the rows r_φ, r_σ and the cone rows. When the cone rows are plain and the friction pair
    // (ψ, β) is well inside its cone, the slip cone (η, σ) is eliminated too, by the cone rows
    // (∂/∂(η, σ) = Arw(ψ, β), conditioned as (ψ + ‖β‖) / (ψ − ‖β‖): a sliding contact's pair nears
    // the boundary, where that would not be stable). The unit's kept unknowns (γ, β first) are the
    // complement's from roff, nk of them. Kept for the solves: γ, s / γ, the cone rows' ψ column cpsi,
    // and for the slip cone the LU of Arw(ψ, β) and Y = Arw(ψ, β)⁻¹ (its rows' γ, β columns).
    int roff = 0, nk = 1;
    bool cone_local() const { return friction && nk == 3; }  // its slip cone eliminated too
    double gamma = 1, sg = 0, cpsi[3] = {}, Ab[9] = {}, Y[9] = {};
    int Ap[3] = {};
};

// The working set: a step solves for the units it may reach — those whose gap is within kNear of
// their length scale now or after two steps at the last rate — and checks the others at its end;
// a unit found closed there joins the set and the step is solved again. A step far from every
// contact and limit is the plain Newton step, bit for bit.
constexpr double kNear = 1e-3;

struct Inequalities {
    std::vector<Unit> units;
    std::vector<int> set;        // the units solved for in this step (indices into units, ascending)
    std::vector<char> in_set;    // per unit
    // Of the working set: (layout() assigns each unit's offset and columns)
    int m = 0;       // unit unknowns
    int ncols = 0;   // force columns (tree solves per iteration)
    int pairs = 0;   // complementarity pairs (orthant and cone)
    int mr = 0;      // the complement's unknowns (the units' kept parts; layout(): the most)
    std::vector<int> col_var;  // per force column: its unknown in the unit vector
    std::vector<int> col_red;  // per force column: its unknown in the complement
    // The Schur complement is block-diagonal: units on bodies no joint or contact connects do not
    // couple. One block per group, its units contiguous (layout() orders the set by group), its
    // unknowns [off, off + n), its force columns [col_begin, col_end); the complement is formed
    // over the units' kept unknowns only (Unit::roff; each unit's local part eliminated first),
    // [roff, roff + rn), its factors at s_off in S (row-major rn × rn).
    struct Block {
        int off = 0, n = 0, col_begin = 0, col_end = 0, roff = 0, rn = 0;
        std::size_t s_off = 0, rz_off = 0;
    };
    std::vector<Block> blocks;
    std::vector<double> y, y_try, fy, fy_try, dy, dya, fc;  // unknowns, rows, directions (m)
    std::vector<double> ry1;  // (m) R F⁻¹ f_T of the iteration, at the rows R touches (schur_tree_rhs)
    // Z = F⁻¹ C, column by column, each column only on the tree entries of its group (the bodies and
    // joints that the column's unit can move: the tree solve is zero elsewhere): column c at z_off[c],
    // group g's entries listed in g_idx[g_off[g] .. g_off[g + 1]) (a body's six first, in order),
    // body b's first entry at b_pos[b] within its group's list.
    std::vector<double> Z;
    std::vector<std::size_t> z_off;
    std::vector<int> g_idx, g_off, b_pos;
    // R Z of the linearisation (schur_columns): per block, its rows that bodies act on (one per force
    // column, in the columns' order) by its force columns, at rz_off (row-major).
    std::vector<double> RZ;
    std::vector<double> S;                // the Schur complement over the kept unknowns, LU in place
    std::vector<int> piv;                 // its pivots (mr)
    std::vector<double> rr;               // (mr) the complement's right-hand side and solution
    std::vector<double> t1, t2, t3;       // tree-size scratch
    std::vector<double> wT, wR;           // per body: 1/(m g), 1/(m g L) (violation scaling)
    std::vector<double> c2;               // per DOF: limit or coupling coordinate at configuration 2 (with offset)
    double tree_weight = 1;               // ctol / ttol: tree rows against unit rows
    // The step's row scaling (vi-maximal: all 1; vi-midpoint: its ρ's, which only couplings meet
    // here): a unit force acts on a body's translation rows times ft = ρ_T λ and on its rotation rows
    // times fr = 2 ρ_R λ, like a joint's multiplier; violations() reads body rows divided by ρ_T,
    // joint rows by ρ_J and implicit force rows by ρ_Z (force units, as vi-maximal's); the unit's
    // force is F y λ.
    double ft = 1, fr = 2, lam = 1, inv_rhoT = 1, inv_rhoJ = 1, inv_rhoZ = 1;
    bool any = false;
};

// The largest group's unit unknowns (all its contact points and limit sides): the size of the
// dense system its steps may factor. vi-maximal refuses a Model above kMaxGroupUnknowns (the
// factors alone would take 512 MB), naming the group's first body.
constexpr long long kMaxGroupUnknowns = 8192;
long long largest_group_unknowns(const Model& m, int* body);
// Units and workspaces for the Model (graph: the step's block graph).
void setup_inequalities(const Model& m, const BlockGraph& g, Inequalities& q);
// Offsets, columns and blocks of the working set (ordered by group, then by unit).
void layout(Inequalities& q);
// The working set of a step of length h (needs prepare_units).
void select_units(Inequalities& q, double h);
// Units outside the working set whose gap at pose3 is negative join it; true if any did.
bool admit_violated(const Model& m, const Pose* pose3, Inequalities& q);
// Configuration-2 quantities of every unit (force maps, friction rows, contact frames); on the
// first substep of a step the limits' previous coordinates are read from Data::coord.
void prepare_units(const Model& m, const Data& d, Inequalities& q, bool first_substep);
// Gaps at configuration 3 (pose3), with their Jacobians if `jacobians`.
void unit_gaps(const Model& m, const Data& d, const Pose* pose3, Inequalities& q, bool jacobians);
// fT += the units' generalized forces (y: unit unknowns).
void add_unit_forces(const BlockGraph& g, const Inequalities& q, const double* y, double* fT);
// The unit rows at κ = 0 (s: tree unknowns; gaps from the last unit_gaps()).
void unit_rows(const BlockGraph& g, const Inequalities& q, const double* s, const double* y, double* fy);
// Violations, ∞-norms: rvio (equality rows, tree rows weighted), bvio (bilinear rows) and ovio, the
// largest min(s, γ) of the orthant pairs. A product at the tolerance may leave both of a pair at
// its square root: a touching, unloaded contact (Newton's cradle) would push at ~1e-5 of its
// force scale. ovio <= tolerance asks one of each pair to be below the tolerance itself.
void violations(const Model& m, const BlockGraph& g, const Inequalities& q, const double* fT, const double* y,
                const double* fy, double& rvio, double& bvio, double& ovio);
// The neutral start of the unit unknowns.
void neutral_start(Inequalities& q);
// ∂r_φ/∂(v2, ω2) of every unit at the tree unknowns s (Unit::Rphi; needs G3 from unit_gaps).
void gap_jacobians(const BlockGraph& g, Inequalities& q, const double* s, double h);
// The unit's rows differentiated by its own unknowns y (u.n × u.n, row stride ld, into D; only the
// nonzero entries are written); with nt, the cone rows in their NT-scaled form (nt_scaling).
void unit_block(const Unit& u, const double* y, double* D, int ld, bool nt);
// The full system at the current iterate, the tree already factored: the gap rows' Jacobians, the
// force columns through the tree (Z) and their product R Z.
void schur_columns(const Model& m, const BlockGraph& g, SolverWorkspace& ws, Inequalities& q, const double* s, double h);
// R Z from the units' Rphi and Jt and the columns Z (Inequalities::RZ; the last step of schur_columns).
void schur_products(Inequalities& q);
// Its Schur complement over the kept unknowns, S = D_KK − D_KL D_LL⁻¹ D_LK − R Z, factored (the cone
// rows plain or NT-scaled); false if singular.
bool schur_complement(const BlockGraph& g, Inequalities& q, bool nt);
// The tree part of the right-hand side, y1 = F⁻¹ fT into q.t1 (one tree solve) and R y1 into
// q.ry1: the same for every direction of an iteration (predictor, corrector, and again with the
// NT-scaled rows).
void schur_tree_rhs(const Model& m, const BlockGraph& g, SolverWorkspace& ws, Inequalities& q, const double* fT);
// Solve F [dT; dY] = [fT; fY] with the tree's factors and schur_complement's, fT given by
// schur_tree_rhs (q.t1, q.ry1, only read). dT null: dY only (the predictor's affine direction,
// whose dT is never read).
void schur_solve(Inequalities& q, const double* fY, double* dT, double* dY);
// Largest α <= 1 with y − α Δ strictly inside the orthants and cones, times τ.
double step_to_boundary(const Inequalities& q, const double* y, const double* delta, double tau);
// Mean complementarity of y − α Δ (Δ may be null: of y).
double mean_complementarity(const Inequalities& q, const double* y, const double* delta, double alpha);
// The Nesterov–Todd scaling of every friction cone pair at the current unknowns (Unit::W, Wi,
// lam). Newton on the plain cone complementarity (ψ, β)∘(η, σ) = κ e can jam when both pairs
// reach their cones' boundaries out of alignment (measured: a quadruped's sliding feet); the
// scaled form (W⁻¹(ψ, β))∘(W(η, σ)) = κ e has the same solutions and gives a direction that leaves
// room to move. The step uses it when the plain direction's step to the boundary is short.
void nt_scaling(Inequalities& q);
// The right-hand side of a Newton solve from the rows fy at κ = 0: the bilinear rows less κ, plus
// Mehrotra's second-order term of the direction dya (null: none); with nt the cone rows in their
// NT-scaled form.
void newton_rows(const Inequalities& q, const double* fy, const double* dya, double kappa, double* fc, bool nt);
// After a committed substep: Data::contact and Data::limit_force from the solution, the limits'
// coordinates carried to the next substep.
void commit_units(const Model& m, Data& d, Inequalities& q, const Pose* pose3);

}  // namespace vi_max
}  // namespace noether
