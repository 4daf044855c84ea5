/* noether.h — the C API, for hosts that cannot use C++.
 *
 * Opaque handles and status codes; the library never exits the process. A call that fails
 * returns a non-zero status (or NULL) and leaves a message for noether_last_error() (per
 * thread). Bodies and joints are addressed by index (noether_body_index / noether_joint_index).
 */
#ifndef NOETHER_H
#define NOETHER_H

#include <stddef.h>

#include "noether/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct noether_spec noether_spec;
typedef struct noether_model noether_model;
typedef struct noether_data noether_data;

enum noether_status {
  NOETHER_OK = 0,
  NOETHER_STEP_FAILED = 1, /* the step did not converge; the data is at the last good step */
  NOETHER_BAD_INPUT = 2,   /* invalid spec, unknown name, bad argument */
  NOETHER_USAGE = 3        /* wrong handle or call order */
};

NOETHER_API const char* noether_version(void);
/* Message of the last failed call on this thread ("" if none). */
NOETHER_API const char* noether_last_error(void);

/* ---- spec ---- */
NOETHER_API noether_spec* noether_spec_new(void);
NOETHER_API void noether_spec_free(noether_spec* s);
NOETHER_API int noether_spec_set_gravity(noether_spec* s, double gx, double gy, double gz);
/* integrator/solver may be NULL (keep the default); dt > 0. */
NOETHER_API int noether_spec_set_options(noether_spec* s, const char* integrator, const char* solver, double dt);
/* One integrator option by name (e.g. "max_turn" of vi-maximal, "atol" of dp45-projection); the
   integrator checks names and values when the spec is compiled. */
NOETHER_API int noether_spec_set_option(noether_spec* s, const char* name, double value);
/* inertia: 9 values, row-major, about the CoM in body axes; quat: w, x, y, z (NULL = identity). */
NOETHER_API int noether_spec_add_body(noether_spec* s, const char* name, double mass, const double inertia[9],
                          const double position[3], const double quat[4]);
NOETHER_API int noether_spec_set_body_velocity(noether_spec* s, const char* name, const double v[3],
                                   const double w_world[3]);
/* parent: body name or "world"; anchor/axis: world point and direction at the initial
 * configuration (either may be NULL). */
NOETHER_API int noether_spec_add_joint(noether_spec* s, const char* name, const char* type, const char* parent,
                           const char* child, const double anchor[3], const double axis[3]);
/* Enforced limits of a joint of one degree of freedom added before (docs/contact.md); -INFINITY or
 * INFINITY leaves that side free. Checked when the spec is compiled (lower <= upper, start inside). */
NOETHER_API int noether_spec_set_joint_limits(noether_spec* s, const char* joint, double lower, double upper);
/* Armature of a joint added before: an inertia on each of its coordinates (kinetic energy a q'^2 / 2;
 * a geared rotor's reflected inertia; not on spherical joints). Checked when the spec is compiled
 * (a >= 0, finite; integrators vi-maximal and vi-midpoint). */
NOETHER_API int noether_spec_set_joint_armature(noether_spec* s, const char* joint, double armature);
/* A servo actuator (docs/servos.md) on a joint of one degree of freedom added before: kind
 * "position" (kp > 0, kv >= 0, target: the target position, NAN for the joint's initial
 * coordinate) or "velocity" (kv > 0, kp 0, target: the target velocity); effort_limit > 0
 * (INFINITY: none). Checked when the spec is compiled. */
NOETHER_API int noether_spec_add_servo(noether_spec* s, const char* joint, const char* kind, double kp, double kv,
                                       double target, double effort_limit);
/* A contact (docs/contact.md) on `body`: shape "point", "sphere" (size[0] radius), "capsule"
 * (size[0] radius, size[1] length along the shape's z) or "box" (size: edge lengths); position and
 * quat: the shape's frame in the body frame (NULL: origin, identity); mu: friction (0: none). It
 * touches the half-space normal . y >= offset (normal NULL: the ground z >= 0), or with `other` a
 * body, that body's sphere of radius other_radius at other_position (its frame). name may be NULL. */
NOETHER_API int noether_spec_add_contact(noether_spec* s, const char* name, const char* body, const char* shape,
                                         const double size[3], const double position[3], const double quat[4], double mu,
                                         const double normal[3], double offset, const char* other, double other_radius,
                                         const double other_position[3]);
/* A coupling between joint coordinates added before (docs/couplings.md): joint = ratio * leader
 * + offset, coordinates dof and leader_dof of each (0-based; 0 for a 1-DOF joint); name may be NULL
 * ("<joint>/coupling"). Checked when the spec is compiled; taken by every integrator but riqn. */
NOETHER_API int noether_spec_add_coupling(noether_spec* s, const char* name, const char* joint, int dof, const char* leader,
                                          int leader_dof, double ratio, double offset);
/* Turn the coupling added last into a range: lower <= joint - ratio * leader - offset <= upper
 * (-INFINITY or INFINITY leaves a side free) instead of the equality. */
NOETHER_API int noether_spec_set_coupling_range(noether_spec* s, double lower, double upper);
/* A further leader of the coupling added last: joint = ratio * leader + ... + ratio * this joint's
 * coordinate dof (0-based) + offset — a coupling relates up to four coordinates (a fixed tendon, a
 * differential; docs/couplings.md). Checked when the spec is compiled. */
NOETHER_API int noether_spec_add_coupling_leader(noether_spec* s, const char* joint, int dof, double ratio);

/* ---- model ---- */
/* NULL on invalid input (noether_last_error() lists every problem). */
NOETHER_API noether_model* noether_compile(const noether_spec* s);
NOETHER_API void noether_model_free(noether_model* m);
NOETHER_API int noether_nbodies(const noether_model* m);
NOETHER_API int noether_njoints(const noether_model* m);
NOETHER_API int noether_body_index(const noether_model* m, const char* name);  /* -1 if absent */
/* Names by index (borrowed, valid while the model lives); NULL if out of range. */
NOETHER_API const char* noether_body_name(const noether_model* m, int body);
NOETHER_API const char* noether_joint_name(const noether_model* m, int joint);
/* The DOFs of a joint (-1 if out of range) and, if offset is not NULL, where its coordinates start
 * in q / qdot / the actuation (noether_joint_state). */
NOETHER_API int noether_joint_dofs(const noether_model* m, int joint, int* offset);
/* The model's step [s]. */
NOETHER_API double noether_dt(const noether_model* m);
NOETHER_API int noether_joint_index(const noether_model* m, const char* name); /* -1 if absent */

/* ---- data ---- */
NOETHER_API noether_data* noether_data_new(const noether_model* m);
NOETHER_API void noether_data_free(noether_data* d);
NOETHER_API int noether_step(noether_data* d);
NOETHER_API double noether_time(const noether_data* d);
NOETHER_API int noether_body_pose(const noether_data* d, int body, double position[3], double quat[4]);
/* Actuation of joint `joint` (n values, one per DOF) for the coming steps. */
NOETHER_API int noether_set_actuation(noether_data* d, int joint, const double* u, int n);
/* The targets of joint `joint`'s servo for the coming steps (a velocity servo reads only the
 * velocity), and its gains (kp, kv >= 0; a velocity servo's kp must be 0). Finite values. */
NOETHER_API int noether_set_servo_target(noether_data* d, int joint, double position, double velocity);
NOETHER_API int noether_set_servo_gains(noether_data* d, int joint, double kp, double kv);
/* energy[3] = kinetic, potential, total; violation = max constraint violation. */
NOETHER_API int noether_monitors(const noether_data* d, double energy[3], double momentum[3], double angular_momentum[3],
                     double* violation);
/* Velocity of a body: its CoM's linear velocity and its angular velocity, both in the world frame
 * (either may be NULL). */
NOETHER_API int noether_body_velocity(const noether_data* d, int body, double v[3], double w[3]);
/* Contact points (a box is 8, a capsule 2) and what the last step found at point k (any output may
 * be NULL): the point and unit normal (world), the gap [m], the normal force [N], the friction force
 * on the body (world) and 1 if it carries load. */
NOETHER_API int noether_ncontacts(const noether_model* m);
NOETHER_API const char* noether_contact_name(const noether_model* m, int k);
NOETHER_API int noether_contact(const noether_data* d, int k, double point[3], double normal[3], double* gap,
                                double* normal_force, double friction[3], int* active);
/* The limit force of a joint's degrees of freedom (N m or N; > 0 pushes away from the lower limit). */
NOETHER_API int noether_limit_force(const noether_data* d, int joint, double* force, int n);
/* Couplings in Model order: their number, names, and the generalized force each applied to its
 * follower's coordinate in the last step (N m or N; the leader's is -ratio times it). */
NOETHER_API int noether_ncouplings(const noether_model* m);
NOETHER_API const char* noether_coupling_name(const noether_model* m, int k);
NOETHER_API int noether_coupling_force(const noether_data* d, int k, double* force);

/* ---- kinematics and dynamics queries (docs/queries.md) ----
 * At joint coordinates q (noether_ndofs of them, the layout of noether_joint_state); matrices
 * row-major, world frame. Trees of 1-DOF joints on a fixed base (else NULL, noether_last_error
 * names the element). The queries object owns workspaces: one thread at a time. */
typedef struct noether_kinematics noether_kinematics;
NOETHER_API noether_kinematics* noether_kinematics_new(const noether_model* m);
NOETHER_API void noether_kinematics_free(noether_kinematics* k);
/* 6 x n: rows angular velocity, then the velocity of the body's CoM; with point (body frame, not
 * NULL) the 3 x n Jacobian of that point instead. */
NOETHER_API int noether_jacobian(noether_kinematics* k, const double* q, int body, const double point[3], double* J);
NOETHER_API int noether_mass_matrix(noether_kinematics* k, const double* q, double* M);
/* tau = M(q) qdd + C(q, qd) qd + g(q); with qd and qdd NULL: g(q); with qdd NULL: the bias forces. */
NOETHER_API int noether_inverse_dynamics(noether_kinematics* k, const double* q, const double* qd, const double* qdd,
                                         double* tau);
NOETHER_API int noether_forward_dynamics(noether_kinematics* k, const double* q, const double* qd, const double* tau,
                                         double* qdd);
/* The centre of mass (com, 3) and its 3 x n Jacobian (J may be NULL). */
NOETHER_API int noether_center_of_mass(noether_kinematics* k, const double* q, double com[3], double* J);
/* Total linear momentum and angular momentum about the world origin at (q, qd) (either output may be NULL). */
NOETHER_API int noether_momentum(noether_kinematics* k, const double* q, const double* qd, double linear[3],
                                 double angular[3]);
/* A force at the body's CoM and a torque, world frame, held for the coming steps until changed
 * (NULL leaves that part as it is). */
NOETHER_API int noether_set_body_force(noether_data* d, int body, const double force[3], const double torque[3]);
/* The whole state as bytes (a bit-identical restore, also in another data of the same model):
 * *bytes is allocated (free with noether_free), *n its length. */
NOETHER_API int noether_save(const noether_data* d, char** bytes, size_t* n);
/* Restore a state saved from a data of a model with the same structure; NOETHER_BAD_INPUT (the
 * data unchanged) if it was not. */
NOETHER_API int noether_restore(noether_data* d, const char* bytes, size_t n);

/* ---- joint space and linearisation (trees of 1-DOF joints) ----
 * n = noether_ndofs(model) joint coordinates, in Data::coord order (joints in declaration order).
 * x = (q, qdot) with 2n values, u = the joint actuation (n values). */
NOETHER_API int noether_ndofs(const noether_model* m);
/* Copy the joint coordinates and rates (n each; either may be NULL). */
NOETHER_API int noether_joint_state(const noether_data* d, double* q, double* qdot);
/* Put the mechanism in the state (q, qdot) (n each): body poses and twists from the joints. */
NOETHER_API int noether_set_joint_state(noether_data* d, const double* q, const double* qdot);
/* The linearisation of the next step (integrator vi-galerkin): A = dx_next/dx (2n x 2n) and
 * B = dx_next/du (2n x n), row-major, x and x_next the state now and after the step (2n each);
 * any pointer may be NULL. The data is not changed. NOETHER_USAGE if the integrator has no
 * linearisation, NOETHER_STEP_FAILED if the step from this state does not converge. */
NOETHER_API int noether_linearize(noether_data* d, double* A, double* B, double* x, double* x_next);

/* ---- runs: many steps with CSV outputs and a summary ---- */
typedef struct noether_run noether_run;
/* A run of the model from its initial state; it owns its data. NULL on error. */
NOETHER_API noether_run* noether_run_new(const noether_model* m);
NOETHER_API void noether_run_free(noether_run* r);
/* The run's data (for noether_step-free access: poses, monitors, actuation); borrowed, valid while
 * the run lives. Do not free it. */
NOETHER_API noether_data* noether_run_data(noether_run* r);
/* Add a CSV output before the first step: channels as in docs/lua.md ("time", "energy",
 * "link1.position", "j1.coord", ...), sampled every `every` steps and at the start. The file is
 * written as <csv_path>.part and renamed by noether_run_finish. csv_path may be NULL (no file).
 * NOETHER_BAD_INPUT names an unknown channel, element or an unwritable file. */
NOETHER_API int noether_run_add_output(noether_run* r, const char* csv_path, int every, int nchannels,
                           const char* const* channels);
/* Add a recording for the viewer (`noether view`, docs/viewer.md) before the first step: body
 * poses, energy and violation at about fps frames per simulated second. */
NOETHER_API int noether_run_add_recording(noether_run* r, const char* path, double fps);
/* The model a run steps (borrowed, valid while the run lives; do not free it). */
NOETHER_API const noether_model* noether_run_model(const noether_run* r);
/* Advance n steps (or a duration: round(seconds / dt) steps). NOETHER_STEP_FAILED if a step failed:
 * the data stays at the last good step and the run does not go on. */
NOETHER_API int noether_run_steps(noether_run* r, long long n);
NOETHER_API int noether_run_duration(noether_run* r, double seconds);
/* Close the outputs: complete files get their final names. Non-zero if any output could not be
 * completed (after a failed run it stays as <csv_path>.part; the message says so). */
NOETHER_API int noether_run_finish(noether_run* r);
/* The run summary as JSON (keys as `noether run --summary-json`); free it with noether_free. */
NOETHER_API char* noether_run_summary_json(const noether_run* r);
NOETHER_API void noether_free(void* p);

/* ---- per-member numbers and ensembles (docs/ensembles.md) ----------------------------------- */

/* A new Model: `m` with one number changed and the same structure (no recompiling). key and
 * values as noether::ModelVariation: "dt" (1), "gravity" (3), "<body>.mass" (1),
 * "<body>.inertia" (3, 6 or 9), "<body>.velocity" / "<body>.angular_velocity" (3, world frame),
 * "<joint>.damping" / ".stiffness" / ".rest" (1 or one per DOF). Chain calls for several
 * changes; free each result with noether_model_free. NULL on error (the message names the key,
 * the element, the rule and the value). */
NOETHER_API noether_model* noether_model_vary(const noether_model* m, const char* key, const double* values, int n);

/* The ensemble functions below live in libnoether_parallel (link it: -lnoether_parallel,
 * noether::noether_parallel); the kernel library owns no threads. */
typedef struct noether_ensemble noether_ensemble;
/* Called before every step of every member, on the worker thread stepping that member (calls for
 * different members run concurrently: touch only `d`, or synchronise). Return 0 to go on; any
 * other value fails that member ("the controller returned <value>"); the others go on. */
typedef int (*noether_controller)(void* user, int member, noether_data* d);

/* `members` runs of `m` at its initial state, stepped in parallel on a thread pool. NULL on error. */
NOETHER_API noether_ensemble* noether_ensemble_new(const noether_model* m, int members);
NOETHER_API void noether_ensemble_free(noether_ensemble* e);
NOETHER_API int noether_ensemble_size(const noether_ensemble* e);
/* Worker threads of the default executor (oneTBB): 0 = every core (the default). */
NOETHER_API int noether_ensemble_set_threads(noether_ensemble* e, int threads);
/* A host's own thread pool: noether_ensemble_steps calls f(user, n, work, ctx) once per call, and f
 * must call work(ctx, i) exactly once for every i in [0, n) — on any threads, in any order — and
 * return when every call has returned. NULL restores the default (oneTBB). Results do not depend
 * on the executor (each member is stepped by one thread at a time, as a lone run would be). */
typedef void (*noether_parallel_for)(void* user, int n, void (*work)(void* ctx, int i), void* ctx);
NOETHER_API int noether_ensemble_set_executor(noether_ensemble* e, noether_parallel_for f, void* user);
/* Member `member` runs `m` instead (same structure, e.g. from noether_model_vary), from its
 * initial state; only before the member's first step. The ensemble keeps its own reference. */
NOETHER_API int noether_ensemble_set_model(noether_ensemble* e, int member, const noether_model* m);
NOETHER_API int noether_ensemble_set_controller(noether_ensemble* e, noether_controller f, void* user);
/* The member's data (set its inputs, read poses and monitors); borrowed, valid until the member's
 * model is changed or the ensemble is freed. NULL if out of range. */
NOETHER_API noether_data* noether_ensemble_data(noether_ensemble* e, int member);
/* Advance every member that has not failed by n steps. NOETHER_OK if none has failed, else
 * NOETHER_STEP_FAILED (the message names the first failed member and why). */
NOETHER_API int noether_ensemble_steps(noether_ensemble* e, long long n);
/* 1 if the member has failed (it stays at its last good step), 0 if not, -1 if out of range. */
NOETHER_API int noether_ensemble_failed(const noether_ensemble* e, int member);
/* Why the member failed ("" if it did not); borrowed, valid until the next call on e. */
NOETHER_API const char* noether_ensemble_failure(const noether_ensemble* e, int member);
/* FNV-1a over every member's saved state: equal values mean bit-identical ensembles. */
NOETHER_API unsigned long long noether_ensemble_hash(const noether_ensemble* e);
/* The member's run summary as JSON (as noether_run_summary_json); free with noether_free. */
NOETHER_API char* noether_ensemble_summary_json(noether_ensemble* e, int member);

#ifdef __cplusplus
}
#endif

#endif /* NOETHER_H */
