// noether/advice.hpp — how large a step the mechanism can take, estimated from its state.
//
// A fixed-step integrator loses accuracy (and the variational ones eventually their rotation
// update) once a body turns a large angle per step. At rest nothing turns, but the motion to come
// can only be as fast as the energy the mechanism can release allows: with the kinetic energy now
// plus the largest drop of potential energy the joints permit (each centre of mass at most as low
// as the lengths of the links between it and the world allow; spring energy released completely),
// the fastest any body can turn at the current configuration is
//
//     |ω_b|max = sqrt(2 T_max λmax(J_b M⁻¹ J_bᵀ))        (J_b: angular rows of body b's Jacobian)
//
// — the largest of |J_b q̇| over every q̇ with ½ q̇ᵀ M q̇ = T_max. It bounds what the energy can do
// (every body's share taken alone), so steps derived from it are on the safe side; how far is
// measured in docs/integrators.md ("Stable-step advice").
//
// Tree mechanisms only (the joint-space mass matrix comes from the tree view, noether/sdk/tree.hpp);
// loop closures, other joint kinds and a drop gravity does not bound (a prismatic joint, a helical
// one) get no estimate and a reason.
#pragma once

#include "noether/export.h"

#include <string>

#include "noether/math.hpp"

namespace noether {

struct Model;
class Data;

struct NOETHER_API StepAdvice {
    bool available = false;
    std::string reason;           // why there is no estimate (available = false)
    double energy = 0;            // T_max [J]: kinetic now + the largest release of potential energy
    double rate = 0;              // the largest reachable angular rate [rad/s] (0: nothing can turn)
    std::string body;             // the body that reaches it
    std::string joint;            // the joint whose coordinate can turn fastest
    double joint_rate = 0;        // its reachable rate [rad/s]
    double guard_step = 0;        // √2 / rate: the step beyond which vi-maximal's rotation update
                                  // can no longer follow that body (infinite when rate = 0)
    double accurate_step = 0;     // kAdviceTurn / rate: the step for which the fastest body turns at
                                  // most kAdviceTurn per step
};

// Largest turn per step [rad] the advice allows (docs/integrators.md: vi-maximal kept atlas
// without damping within 1% of its energy over 5 s when no body turned more per step).
constexpr double kAdviceTurn = 0.1;
// Trees with more velocity coordinates get no estimate (the estimate inverts the dense M).
constexpr int kAdviceMaxCoordinates = 400;

// How fast a body can swing about its joints under the forces they carry. A joint force f at the
// point r from a body's centre of mass turns with the body (the point moves) while the force keeps
// its direction, so a small turn δθ changes the torque by −((f·r) I − sym(r fᵀ)) δθ: a tension
// holds the body straight like a stretched string, a compression pushes it over, either at the rate
//
//     ω_b = sqrt(|λ|max(I_b⁻¹ K_b)),   K_b = Σ_joints (f·r) I − ½(r fᵀ + f rᵀ)   (world frame)
//
// over the turns the body can make alone: those its own joint and every child's joint free (a
// hinge: its axis; a ball joint: all; none between hinges on different axes, or at a slider).
// Bodies are taken as the tree view's links (welded bodies together).
// A 1 m, 1 kg link pulled at both ends by T swings at sqrt(12 T / (m L)): 245 rad/s at the root of
// a 512-link chain of such links hanging under gravity (5 kN), 2.5 rad per step of 0.01 s — a mode
// no rotation of the bodies shows (they turn at a few rad/s) that Newton cannot follow at that
// step (docs/integrators.md, "Never a silent blow-up"). The joint forces come from the motion
// (trees: each joint carries what its subtree's bodies need beyond gravity and the applied forces
// at their centres), with the bodies' accelerations given (world, per body; null: at rest).
struct NOETHER_API JointForceMode {
    bool available = false;
    std::string reason;  // why there is no estimate (available = false)
    double rate = 0;     // the largest ω_b [rad/s]
    std::string body;    // the body that swings at it
    double force = 0;    // the largest joint force on that body [N]
};
// Trees of the tree view's joints only (noether/sdk/tree.hpp; loop closures and contacts carry
// forces this does not know): otherwise no estimate, and a reason. Never throws for a compiled Model.
NOETHER_API JointForceMode joint_force_mode(const Model& m, const Data& d, const Vec3* acceleration);

// The estimate for the state in d (any integrator; no step taken). Never throws for a compiled
// Model; the reason says why there is none.
NOETHER_API StepAdvice step_advice(const Model& m, const Data& d);
// One paragraph for `noether check` and the import report.
NOETHER_API std::string step_advice_text(const StepAdvice& a, double dt);

}  // namespace noether
