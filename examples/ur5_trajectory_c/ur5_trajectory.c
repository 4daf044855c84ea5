/* The UR5 held by position servos and moved along a circle by resolved-rate control, from C
 * (docs/c_api.md, docs/servos.md): the same controller as scripts/examples/ur5_trajectory.lua and
 * examples/python/ur5_trajectory.py, with the C API's queries (noether_jacobian, gravity forces by
 * noether_inverse_dynamics) and servo inputs (noether_set_servo_target). Prints the tracking error.
 *
 *   ur5_trajectory path/to/ur5_robot.urdf */
#include <math.h>
#include <stdio.h>

#include "noether.h"
#include "noether_urdf.h"

enum { N = 6 };

/* y = A⁻¹ v for a 3 × 3 A (Cramer's rule, as the Lua version). */
static void solve3(const double A[3][3], const double v[3], double y[3]) {
    const double det = A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
                       A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
    for (int k = 0; k < 3; ++k) {
        double B[3][3];
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) B[r][c] = c == k ? v[r] : A[r][c];
        y[k] = (B[0][0] * (B[1][1] * B[2][2] - B[1][2] * B[2][1]) - B[0][1] * (B[1][0] * B[2][2] - B[1][2] * B[2][0]) +
                B[0][2] * (B[1][0] * B[2][1] - B[1][1] * B[2][0])) /
               det;
    }
}

static int fail(const char* what) {
    fprintf(stderr, "ur5_trajectory: %s: %s\n", what, noether_last_error());
    return 1;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ur5_trajectory path/to/ur5_robot.urdf\n");
        return 2;
    }
    const double dt = 0.004, duration = 4, kp = 400, kv = 40, radius = 0.1, period = 4, gain = 5, lambda2 = 1e-4;
    const char* joints[N] = {"shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                             "wrist_1_joint",      "wrist_2_joint",       "wrist_3_joint"};
    noether_spec* s = noether_spec_new();
    noether_spec_set_options(s, "vi-maximal", NULL, dt);
    if (noether_spec_import_urdf(s, argv[1], 1, NULL) != NOETHER_OK) return fail("import");
    for (int k = 0; k < N; ++k)
        if (noether_spec_add_servo(s, joints[k], "position", kp, kv, NAN, INFINITY) != NOETHER_OK) return fail("servo");
    noether_model* m = noether_compile(s);
    if (!m) return fail("compile");
    noether_data* d = noether_data_new(m);
    noether_kinematics* kin = noether_kinematics_new(m);
    if (!kin) return fail("queries");
    const int hand = noether_body_index(m, "wrist_3_link");
    int joint[N];
    for (int k = 0; k < N; ++k) joint[k] = noether_joint_index(m, joints[k]);
    double q[N] = {0, -1.0, 2.0, -2.5, -1.57, 0}, qd[N] = {0}, target[N];
    if (noether_set_joint_state(d, q, qd) != NOETHER_OK) return fail("initial state");
    for (int k = 0; k < N; ++k) target[k] = q[k];
    double x0[3], quat[4];
    noether_body_pose(d, hand, x0, quat);
    const double omega = 2 * M_PI / period, origin[3] = {0, 0, 0};
    double max_error = 0;
    const int steps = (int)lround(duration / dt);
    for (int i = 0; i < steps; ++i) {
        const double t = noether_time(d), sn = sin(omega * t), cs = cos(omega * t);
        const double xd[3] = {x0[0] + radius * sn, x0[1], x0[2] + radius * (1 - cs)};
        const double vd[3] = {radius * omega * cs, 0, radius * omega * sn};
        double x[3], e[3], v[3], J[3 * N], A[3][3], y[3], g[N];
        noether_body_pose(d, hand, x, quat);
        for (int r = 0; r < 3; ++r) e[r] = xd[r] - x[r], v[r] = vd[r] + gain * e[r];
        max_error = fmax(max_error, sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]));
        noether_joint_state(d, q, qd);
        noether_jacobian(kin, q, hand, origin, J); /* 3 × 6, row-major, world frame */
        noether_inverse_dynamics(kin, q, NULL, NULL, g); /* g(q) */
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) {
                double sum = 0;
                for (int k = 0; k < N; ++k) sum += J[r * N + k] * J[c * N + k];
                A[r][c] = sum + (r == c ? lambda2 : 0);
            }
        solve3(A, v, y);
        for (int k = 0; k < N; ++k) {
            const double rate = J[k] * y[0] + J[N + k] * y[1] + J[2 * N + k] * y[2];
            target[k] += dt * rate;
            noether_set_servo_target(d, joint[k], target[k], rate);
            noether_set_actuation(d, joint[k], &g[k], 1);
        }
        if (noether_step(d) != NOETHER_OK) return fail("step");
    }
    printf("tracking error: %.17g m\n", max_error);
    noether_kinematics_free(kin);
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);
    return 0;
}
