/* A C host drives a servo (docs/servos.md): a rod on a hinge without gravity, a position servo
 * declared in the spec, its target stepped to 0.5 rad and then moved by the host, against the
 * analytic response; bad declarations and inputs refused with the joint named. Prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "noether.h"

static const double kI = 1.0 / 3.0 + 0.05 * 0.05 / 12.0; /* the rod about its hinge */

/* θ(t) of I θ̈ = −kp (θ − θ*) − kv θ̇ from rest at 0 (underdamped). */
static double response(double kp, double kv, double target, double t) {
    const double w0 = sqrt(kp / kI), zeta = kv / (2 * sqrt(kp * kI));
    const double wd = w0 * sqrt(1 - zeta * zeta), a = zeta * w0;
    return target * (1 - exp(-a * t) * (cos(wd * t) + a / wd * sin(wd * t)));
}

static noether_spec* rod(const char* integrator) {
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.05 * 0.05 * 2 / 12.0, 0, 0, 0, (1 + 0.05 * 0.05) / 12.0, 0, 0, 0, (1 + 0.05 * 0.05) / 12.0};
    const double p[3] = {0.5, 0, 0}, o[3] = {0, 0, 0}, y[3] = {0, 1, 0};
    noether_spec_set_gravity(s, 0, 0, 0);
    noether_spec_set_options(s, integrator, NULL, 0.005);
    noether_spec_add_body(s, "rod", 1, I, p, NULL);
    noether_spec_add_joint(s, "hinge", "revolute", "world", "rod", o, y);
    return s;
}

int main(void) {
    /* the setpoint step under vi-midpoint: the analytic response to 1e-4 rad over 3 s */
    noether_spec* s = rod("vi-midpoint");
    CHECK(noether_spec_add_servo(s, "hinge", "position", 10, 1, 0.5, INFINITY) == NOETHER_OK);
    CHECK(noether_spec_add_servo(s, "hinge", "position", 10, 1, 0.5, INFINITY) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "joint 'hinge' has a servo already") != NULL);
    CHECK(noether_spec_add_servo(s, "knee", "position", 10, 1, 0.5, INFINITY) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "no joint named 'knee'") != NULL);
    noether_model* m = noether_compile(s);
    CHECK(m != NULL);
    if (!m) return 1;
    noether_data* d = noether_data_new(m);
    double worst = 0, q, qd;
    for (int i = 0; i < 600; ++i) {
        CHECK(noether_step(d) == NOETHER_OK);
        noether_joint_state(d, &q, &qd);
        worst = fmax(worst, fabs(q - response(10, 1, 0.5, noether_time(d))));
    }
    printf("setpoint step: largest error %.3g rad\n", worst);
    CHECK(worst < 1e-4 && worst > 1e-7);
    /* the host moves the target and stiffens the servo: it settles on the new target */
    CHECK(noether_set_servo_target(d, 0, -0.2, 0) == NOETHER_OK);
    CHECK(noether_set_servo_gains(d, 0, 400, 40) == NOETHER_OK);
    for (int i = 0; i < 400; ++i) CHECK(noether_step(d) == NOETHER_OK);
    noether_joint_state(d, &q, &qd);
    CHECK(fabs(q + 0.2) < 1e-6);
    /* bad inputs: refused, nothing changed */
    CHECK(noether_set_servo_gains(d, 0, -1, 0) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "joint 'hinge': gains must be non-negative") != NULL);
    CHECK(noether_set_servo_target(d, 0, NAN, 0) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "joint 'hinge': position must be finite") != NULL);
    CHECK(noether_set_servo_target(d, 3, 0, 0) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "joint index 3 out of range") != NULL);
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);

    /* a joint without a servo, and declarations the compiler refuses */
    s = rod("vi-maximal");
    m = noether_compile(s);
    d = noether_data_new(m);
    CHECK(noether_set_servo_target(d, 0, 0.1, 0) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "joint 'hinge' has no servo") != NULL);
    noether_data_free(d);
    noether_model_free(m);
    CHECK(noether_spec_add_servo(s, "hinge", "velocity", 3, 1, 0, INFINITY) == NOETHER_OK);
    CHECK(noether_compile(s) == NULL);
    CHECK(strstr(noether_last_error(), "joint 'hinge': velocity servo: has no kp") != NULL);
    noether_spec_free(s);
    s = rod("vi-maximal");
    CHECK(noether_spec_add_servo(s, "hinge", "torque", 3, 1, 0, INFINITY) == NOETHER_BAD_INPUT);
    CHECK(strstr(noether_last_error(), "kind must be \"position\" or \"velocity\", got \"torque\"") != NULL);
    noether_spec_free(s);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
