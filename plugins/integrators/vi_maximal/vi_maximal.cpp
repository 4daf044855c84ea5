// vi-maximal: the first-order variational integrator in maximal coordinates (paper 000,
// restated in docs/design/maximal-vi.md §2–§7), and vi-midpoint, the second-order midpoint
// variational integrator (paper 004, docs/design/midpoint-vi.md): two configured instances of
// one class, exported by this one library.
//
// The two share their step equations: for gravity and joints the midpoint discrete Lagrangian
// gives the same map as the first-order one (midpoint-vi.md, first finding). vi-midpoint differs
// in (a) scaled rows — body rows as impulse balances, constraint rows g/h, multipliers as
// impulses — which keep cond(F) independent of h; (b) its start, the discrete Legendre transform:
// the first step takes the continuous momenta m v0, J ω0 as incoming and half the impulses;
// (c) midpoint force sampling: a node receives h/2 of the impulse of each adjacent interval,
// i.e. the average of the two intervals' input values, mapped at the node; (d) its monitors
// before the first step are the continuous ones. Unknowns, blocks and solvers are the same.
//
// Unknowns per step: v2, ω2 of every body and λ of every joint. Residual: the translational
// and rotational discrete Euler–Lagrange equations per body (multipliers through the joint
// Jacobians at the current configuration x2, q2) and the joint constraints at the next
// configuration x3 = x2 + dt v2, q3 = q2 ⊗ f(ω2). Newton with a backtracking line search on
// ‖f‖, the rotation guard |ω| < 2/dt, warm starts. The Newton matrix has the sparsity of the
// block graph, so a tree costs O(n) per iteration with the sparse-ldu solver.
//
// Joint springs and dampers are implicit (issue 15): a joint with stiffness or damping gets its
// joint-space force u as unknowns of its own, after its constraint rows in the joint's node (the
// graph of the step is the Model's with those nodes enlarged, system_graph()), with the rows
//   z·lam − u(c3) = 0,   u = −(d/2h)(c3 − c1) − k [ (h1/2h)((c1 + c2)/2 − r) + ½((c2 + c3)/2 − r) ]
// (c1, c2, c3 the joint coordinates at the previous, current and next node, h1 the previous
// interval): the spring is the midpoint rule of its potential on both intervals at the node (a
// linear spring keeps the energy with the spring at the interval midpoint exactly, at any h);
// the damper is the discrete Lagrange–d'Alembert force that gives each node half of each
// adjacent interval's impulse −d (Δc/h) h: the rate update (1 − a)/(1 + a), a = d h/2I, and an
// energy change −(h d/4)(v1 + v2)² ≤ 0 per step for a linear joint, at any h (docs/integrators.md).
// The force acts on the bodies through the coordinate Jacobian at the current configuration,
// like an actuation. Joints without springs or dampers are unchanged. A joint's armature (an
// inertia on its coordinate, docs/integrators.md) is a term of the same rows: −(a/h)(Δc3/h − Δc2/h1),
// the discrete Euler–Lagrange force of its kinetic energy ½ a (Δc/h)² h on each interval.
//
// The method undoes its own failed steps (rolls_back_itself(): the kernel takes no snapshot; State::
// keep_entry, in state.hpp, says what is kept). advance() runs [substep × k], where a substep is
//   prepare (forces, config-2 Jacobians) → warm start → Newton (assemble, factor, solve,
//   line search, chord confirmation) → commit.
// A step whose Newton iteration fails is retried from the step's start (noether::subdivide_with) as
// 2, 4, 8, … substeps (maximal-vi.md §7.1); the interval length of the last substep is
// remembered (dt_prev), because the momentum arriving at the current configuration depends on it.
#include "vi_maximal.hpp"

using noether::vi_max::VIMaximal;

NOETHER_PLUGIN_LIST(
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "vi-maximal",
                         "first-order variational integrator in maximal coordinates (paper 000)", VIMaximal, false),
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "vi-midpoint",
                         "second-order midpoint variational integrator in maximal coordinates (paper 004)", VIMaximal,
                         true))
