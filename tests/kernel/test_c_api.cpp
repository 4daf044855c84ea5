// The C API of the kernel (kernel/src/c_api.cpp): handles, status codes, messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "noether.h"

using Catch::Matchers::Contains;

TEST_CASE("C API: build, compile, step and read a pendulum", "[c-api]") {
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1};
    const double pos[3] = {1, 0, 0};
    REQUIRE(noether_spec_add_body(s, "bob", 1.0, I, pos, nullptr) == NOETHER_OK);
    const double anchor[3] = {0, 0, 0}, axis[3] = {0, 1, 0};
    REQUIRE(noether_spec_add_joint(s, "hinge", "revolute", "world", "bob", anchor, axis) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    CHECK(noether_body_index(m, "bob") == 0);
    noether_data* d = noether_data_new(m);
    for (int i = 0; i < 100; ++i) REQUIRE(noether_step(d) == NOETHER_OK);
    double p[3], q[4], E[3], P[3], L[3], viol;
    REQUIRE(noether_body_pose(d, 0, p, q) == NOETHER_OK);
    CHECK(noether_time(d) == Approx(1.0));
    CHECK(std::hypot(p[0], p[2]) == Approx(1.0).epsilon(1e-12));  // on the circle
    REQUIRE(noether_monitors(d, E, P, L, &viol) == NOETHER_OK);
    CHECK(viol < 1e-12);
    CHECK(noether_body_pose(d, 7, p, q) == NOETHER_BAD_INPUT);
    noether_data_free(d);
    noether_model_free(m);
    // Invalid input: NULL model and the message names the element.
    noether_spec_add_body(s, "bob", -1.0, I, pos, nullptr);
    CHECK(noether_compile(s) == nullptr);
    CHECK_THAT(std::string(noether_last_error()), Contains("body 'bob': duplicate name"));
    noether_spec_free(s);
}

TEST_CASE("C API: NULL handles and out-of-range indices are refused with a message, never a crash", "[c-api]") {
    CHECK(noether_step(nullptr) == NOETHER_USAGE);
    CHECK_THAT(std::string(noether_last_error()), Contains("noether_step: data is NULL"));
    CHECK(noether_data_new(nullptr) == nullptr);
    CHECK(noether_run_new(nullptr) == nullptr);
    CHECK(noether_run_steps(nullptr, 1) == NOETHER_USAGE);
    CHECK(noether_run_summary_json(nullptr) == nullptr);
    CHECK(noether_spec_set_gravity(nullptr, 0, 0, 0) == NOETHER_USAGE);
    CHECK(noether_body_index(nullptr, "x") == -1);
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1}, pos[3] = {1, 0, 0}, o[3] = {0, 0, 0}, y[3] = {0, 1, 0};
    noether_spec_add_body(s, "bob", 1.0, I, pos, nullptr);
    noether_spec_add_joint(s, "hinge", "revolute", "world", "bob", o, y);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_run* r = noether_run_new(m);
    REQUIRE(r);
    CHECK(noether_run_steps(r, -1) == NOETHER_BAD_INPUT);
    CHECK(noether_run_duration(r, NAN) == NOETHER_BAD_INPUT);
    const double u[2] = {1, 2};
    CHECK(noether_set_actuation(noether_run_data(r), 0, u, 2) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("joint 'hinge' has 1 DOFs, got 2 values"));
    CHECK(noether_set_actuation(noether_run_data(r), 5, u, 1) == NOETHER_BAD_INPUT);
    // Issue 31 item 6: a NULL array segfaulted; a non-finite value was taken into the step.
    CHECK(noether_set_actuation(noether_run_data(r), 0, nullptr, 1) == NOETHER_USAGE);
    CHECK_THAT(std::string(noether_last_error()), Contains("noether_set_actuation: u is NULL (joint 'hinge')"));
    const double bad[1] = {NAN};
    CHECK(noether_set_actuation(noether_run_data(r), 0, bad, 1) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("is not finite"));
    // Issue 31 item 8: a success clears the message of the failure before it (docs/c_api.md).
    CHECK(noether_time(noether_run_data(r)) == 0.0);
    CHECK(std::string(noether_last_error()).empty());
    CHECK(noether_set_actuation(noether_run_data(r), 0, bad, 1) == NOETHER_BAD_INPUT);
    CHECK(noether_set_actuation(noether_run_data(r), 0, u, 1) == NOETHER_OK);
    CHECK(std::string(noether_last_error()).empty());
    // The run's data is a view: stepping the run moves it.
    CHECK(noether_set_actuation(noether_run_data(r), 0, u, 1) == NOETHER_OK);
    CHECK(noether_run_steps(r, 10) == NOETHER_OK);
    CHECK(noether_time(noether_run_data(r)) == Approx(0.1));
    CHECK(noether_run_finish(r) == NOETHER_OK);
    noether_run_free(r);
    noether_model_free(m);
    noether_spec_free(s);
}

TEST_CASE("C API: integrator options by name, checked when the spec is compiled", "[c-api]") {
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1}, pos[3] = {1, 0, 0}, o[3] = {0, 0, 0}, y[3] = {0, 1, 0};
    noether_spec_add_body(s, "bob", 1.0, I, pos, nullptr);
    noether_spec_add_joint(s, "hinge", "revolute", "world", "bob", o, y);
    CHECK(noether_spec_set_option(nullptr, "max_turn", 0.1) == NOETHER_USAGE);
    CHECK(noether_spec_set_option(s, "", 0.1) == NOETHER_USAGE);
    REQUIRE(noether_spec_set_option(s, "max_turn", -1) == NOETHER_OK);
    CHECK(noether_compile(s) == nullptr);
    CHECK_THAT(std::string(noether_last_error()), Contains("option 'max_turn'") && Contains("got -1"));
    REQUIRE(noether_spec_set_option(s, "max_turn", 0.1) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_model_free(m);
    REQUIRE(noether_spec_set_option(s, "nosuch", 1) == NOETHER_OK);
    CHECK(noether_compile(s) == nullptr);
    CHECK_THAT(std::string(noether_last_error()), Contains("'nosuch' is not an option of integrator 'vi-maximal'"));
    noether_spec_free(s);
}

TEST_CASE("C API: joint state and the linearisation of a vi-galerkin step against finite differences", "[c-api]") {
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.00167, 0, 0, 0, 0.08417, 0, 0, 0, 0.08417}, y[3] = {0, 1, 0};
    const double p1[3] = {0.5, 0, 0}, p2[3] = {1.5, 0, 0}, a1[3] = {0, 0, 0}, a2[3] = {1, 0, 0};
    noether_spec_add_body(s, "l1", 1.0, I, p1, nullptr);
    noether_spec_add_body(s, "l2", 1.0, I, p2, nullptr);
    noether_spec_add_joint(s, "j1", "revolute", "world", "l1", a1, y);
    noether_spec_add_joint(s, "j2", "revolute", "l1", "l2", a2, y);
    REQUIRE(noether_spec_set_options(s, "vi-galerkin", "auto", 0.01) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    REQUIRE(noether_ndofs(m) == 2);
    noether_data* d = noether_data_new(m);
    const double q[2] = {0.3, -0.5}, qd[2] = {1.2, -0.7}, u[2] = {0.4, -0.2};
    REQUIRE(noether_set_joint_state(d, q, qd) == NOETHER_OK);
    double qr[2], qdr[2];
    REQUIRE(noether_joint_state(d, qr, qdr) == NOETHER_OK);
    CHECK(qr[1] == -0.5);
    CHECK(qdr[0] == 1.2);
    noether_set_actuation(d, 0, &u[0], 1);
    noether_set_actuation(d, 1, &u[1], 1);
    double A[16], B[8], x[4], xn[4];
    REQUIRE(noether_linearize(d, A, B, x, xn) == NOETHER_OK);
    CHECK(noether_time(d) == 0.0);  // nothing moved
    // Central differences of noether_step from perturbed states and inputs.
    auto next = [&](const double* x0, const double* u0, double* out) {
        REQUIRE(noether_set_joint_state(d, x0, x0 + 2) == NOETHER_OK);
        noether_set_actuation(d, 0, &u0[0], 1);
        noether_set_actuation(d, 1, &u0[1], 1);
        REQUIRE(noether_step(d) == NOETHER_OK);
        noether_joint_state(d, out, out + 2);
    };
    const double x0[4] = {q[0], q[1], qd[0], qd[1]}, e = 1e-4;
    double worst = 0, scale = 0;
    for (int c = 0; c < 6; ++c) {
        double xp[4], xm[4], up[2] = {u[0], u[1]}, um[2] = {u[0], u[1]}, fp[4], fm[4];
        std::copy(x0, x0 + 4, xp);
        std::copy(x0, x0 + 4, xm);
        if (c < 4) xp[c] += e, xm[c] -= e;
        else up[c - 4] += e, um[c - 4] -= e;
        next(xp, up, fp);
        next(xm, um, fm);
        for (int r = 0; r < 4; ++r) {
            const double an = c < 4 ? A[r * 4 + c] : B[r * 2 + c - 4];
            worst = std::max(worst, std::fabs((fp[r] - fm[r]) / (2 * e) - an));
            scale = std::max(scale, std::fabs(an));
        }
    }
    INFO("max |[A B]| = " << scale << ", max |analytic − central differences| = " << worst);
    CHECK(scale > 0.5);
    CHECK(worst < 1e-6 * scale);
    double xs[4];
    next(x0, u, xs);
    for (int k = 0; k < 4; ++k) CHECK(xn[k] == Approx(xs[k]).margin(1e-12));
    // Refusals name the reason.
    CHECK(noether_linearize(nullptr, A, B, x, xn) == NOETHER_USAGE);
    CHECK(noether_set_joint_state(d, nullptr, qd) == NOETHER_BAD_INPUT);
    noether_data_free(d);
    noether_model_free(m);
    REQUIRE(noether_spec_set_options(s, "vi-maximal", "auto", 0.01) == NOETHER_OK);
    m = noether_compile(s);
    d = noether_data_new(m);
    CHECK(noether_linearize(d, A, B, x, xn) == NOETHER_USAGE);
    CHECK_THAT(std::string(noether_last_error()), Contains("integrator 'vi-maximal' has no linearisation"));
    // The kernel names what is loaded, not a plugin it knows of, and the option in its own words.
    CHECK_THAT(std::string(noether_last_error()), Contains("integrators with one: vi-galerkin (noether_spec_set_options(spec, \"<integrator>\", NULL, dt))"));
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);
}

TEST_CASE("C API: a box dropped on the ground rests on its corners, a pendulum stops at its limit", "[c-api][contact]") {
    noether_spec* s = noether_spec_new();
    const double I[9] = {1.0 / 6, 0, 0, 0, 1.0 / 6, 0, 0, 0, 1.0 / 6};
    const double pos[3] = {0, 0, 1.5}, size[3] = {1, 1, 1};
    REQUIRE(noether_spec_add_body(s, "box", 1.0, I, pos, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_add_contact(s, "corner", "box", "box", size, nullptr, nullptr, 0.5, nullptr, 0, nullptr, 0,
                                     nullptr) == NOETHER_OK);
    CHECK(noether_spec_add_contact(s, nullptr, "box", "cone", size, nullptr, nullptr, 0.5, nullptr, 0, nullptr, 0,
                                   nullptr) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("shape must be"));
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    REQUIRE(noether_ncontacts(m) == 8);
    CHECK(std::string(noether_contact_name(m, 0)) == "corner/1");
    noether_data* d = noether_data_new(m);
    for (int i = 0; i < 150; ++i) REQUIRE(noether_step(d) == NOETHER_OK);
    double total = 0, point[3], normal[3], gap, fn, fr[3];
    int active = 0, nactive = 0;
    for (int k = 0; k < 8; ++k) {
        REQUIRE(noether_contact(d, k, point, normal, &gap, &fn, fr, &active) == NOETHER_OK);
        total += fn;
        nactive += active;
        CHECK(gap >= -1e-9);
        CHECK(normal[2] == 1.0);
    }
    CHECK(total == Approx(9.81).epsilon(1e-9));
    CHECK(nactive == 4);
    CHECK(noether_contact(d, 8, point, normal, &gap, &fn, fr, &active) == NOETHER_BAD_INPUT);
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);

    // A pendulum into a limit: the hinge stops at 0.5 rad.
    s = noether_spec_new();
    const double Ib[9] = {1.0 / 12, 0, 0, 0, 1.0 / 12, 0, 0, 0, 0.01 / 6};
    const double bob[3] = {0, 0, -0.5}, origin[3] = {0, 0, 0}, axis[3] = {0, 1, 0}, w[3] = {0, 4, 0}, v[3] = {-2, 0, 0};
    REQUIRE(noether_spec_add_body(s, "bob", 1.0, Ib, bob, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_set_body_velocity(s, "bob", v, w) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "hinge", "revolute", "world", "bob", origin, axis) == NOETHER_OK);
    CHECK(noether_spec_set_joint_limits(s, "nope", -1, 1) == NOETHER_BAD_INPUT);
    REQUIRE(noether_spec_set_joint_limits(s, "hinge", -0.5, 0.5) == NOETHER_OK);
    m = noether_compile(s);
    REQUIRE(m);
    d = noether_data_new(m);
    double q, qd, hi = -1, force = 0, fmin = 0;
    for (int i = 0; i < 100; ++i) {
        REQUIRE(noether_step(d) == NOETHER_OK);
        REQUIRE(noether_joint_state(d, &q, &qd) == NOETHER_OK);
        hi = std::max(hi, q);
        REQUIRE(noether_limit_force(d, 0, &force, 1) == NOETHER_OK);
        fmin = std::min(fmin, force);
    }
    CHECK(hi <= 0.5 + 1e-9);
    CHECK(hi > 0.5 - 1e-9);
    CHECK(fmin < -1);  // the upper stop pushed back
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);
}

TEST_CASE("C API: a coupling holds a rotor at 3 times its pendulum, reports its force, and is refused by riqn", "[c-api][couplings]") {
    for (const char* integrator : {"vi-maximal", "riqn"}) {
        noether_spec* s = noether_spec_new();
        REQUIRE(noether_spec_set_options(s, integrator, nullptr, 0.01) == NOETHER_OK);
        const double Ib[9] = {1.0 / 12, 0, 0, 0, 1.0 / 12, 0, 0, 0, 0.01 / 6}, Ir[9] = {0.02, 0, 0, 0, 0.02, 0, 0, 0, 0.02};
        const double bob[3] = {0.5, 0, 0}, origin[3] = {0, 0, 0}, axis[3] = {0, 1, 0};
        REQUIRE(noether_spec_add_body(s, "bob", 1.0, Ib, bob, nullptr) == NOETHER_OK);
        REQUIRE(noether_spec_add_body(s, "rotor", 0.1, Ir, origin, nullptr) == NOETHER_OK);
        REQUIRE(noether_spec_add_joint(s, "hinge", "revolute", "world", "bob", origin, axis) == NOETHER_OK);
        REQUIRE(noether_spec_add_joint(s, "motor", "revolute", "world", "rotor", origin, axis) == NOETHER_OK);
        CHECK(noether_spec_add_coupling(s, "gear", nullptr, 0, "hinge", 0, 3, 0) == NOETHER_USAGE);
        CHECK(noether_spec_set_coupling_range(s, -1, 1) == NOETHER_USAGE);  // none added yet
        CHECK_THAT(std::string(noether_last_error()), Contains("no coupling added yet"));
        REQUIRE(noether_spec_add_coupling(s, "gear", "motor", 0, "hinge", 0, 3.0, 0.0) == NOETHER_OK);
        noether_model* m = noether_compile(s);
        if (std::string(integrator) == "riqn") {
            CHECK(m == nullptr);
            CHECK_THAT(std::string(noether_last_error()),
                       Contains("noether_spec_add_coupling") && Contains("coupling 'gear': integrator 'riqn' does not take couplings"));
            noether_spec_free(s);
            continue;
        }
        REQUIRE(m);
        REQUIRE(noether_ncouplings(m) == 1);
        CHECK(std::string(noether_coupling_name(m, 0)) == "gear");
        CHECK(noether_coupling_name(m, 1) == nullptr);
        noether_data* d = noether_data_new(m);
        double q[2], qd[2], worst = 0, force = 0;
        for (int i = 0; i < 100; ++i) {
            REQUIRE(noether_step(d) == NOETHER_OK);
            REQUIRE(noether_joint_state(d, q, qd) == NOETHER_OK);
            worst = std::max(worst, std::fabs(q[1] - 3 * q[0]));
        }
        REQUIRE(noether_coupling_force(d, 0, &force) == NOETHER_OK);
        CHECK(worst <= 1e-12);
        CHECK(q[0] > 0.1);        // it swings down
        CHECK(force != 0);        // the gear drives the rotor
        CHECK(noether_coupling_force(d, 1, &force) == NOETHER_BAD_INPUT);
        CHECK_THAT(std::string(noether_last_error()), Contains("coupling index 1 out of range (1 couplings)"));
        noether_data_free(d);
        noether_model_free(m);
        noether_spec_free(s);
    }
}

TEST_CASE("C API: a coupling range keeps a falling pendulum within 0.2 rad of a hanging one", "[c-api][couplings]") {
    noether_spec* s = noether_spec_new();
    const double Ib[9] = {1.0 / 12, 0, 0, 0, 1.0 / 12, 0, 0, 0, 0.01 / 6};
    const double out[3] = {0.5, 0, 0}, down[3] = {0, 0, -0.5}, origin[3] = {0, 0, 0}, axis[3] = {0, 1, 0};
    const double hang[4] = {0.7071067811865476, 0, 0.7071067811865476, 0};  // the rod's x axis down
    REQUIRE(noether_spec_add_body(s, "falling", 1.0, Ib, out, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_add_body(s, "hanging", 1.0, Ib, down, hang) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "a", "revolute", "world", "falling", origin, axis) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "b", "revolute", "world", "hanging", origin, axis) == NOETHER_OK);
    REQUIRE(noether_spec_add_coupling(s, "band", "a", 0, "b", 0, 1.0, 0.0) == NOETHER_OK);
    REQUIRE(noether_spec_set_coupling_range(s, -0.2, 0.2) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_data* d = noether_data_new(m);
    double q[2], qd[2], lo = 1, hi = -1, force = 0;
    for (int i = 0; i < 100; ++i) {
        REQUIRE(noether_step(d) == NOETHER_OK);
        REQUIRE(noether_joint_state(d, q, qd) == NOETHER_OK);
        lo = std::min(lo, q[0] - q[1]), hi = std::max(hi, q[0] - q[1]);
    }
    REQUIRE(noether_coupling_force(d, 0, &force) == NOETHER_OK);
    CHECK(hi <= 0.2 + 1e-9);
    CHECK(lo >= -0.2 - 1e-9);
    CHECK(hi > 0.2 - 1e-6);  // the falling rod reached the band's side and is held on it
    CHECK(force < 0);        // pushing the follower back from its upper side
    noether_data_free(d);
    noether_model_free(m);
    noether_spec_free(s);
}

TEST_CASE("C API: a coupling over three rotors (noether_spec_add_coupling_leader)", "[c-api][couplings]") {
    // r3 = 0.5 r1 − 0.25 r2 about z; r1 driven by a torque; a leader before any coupling is a usage error.
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.02, 0, 0, 0, 0.02, 0, 0, 0, 0.03}, axis[3] = {0, 0, 1};
    for (int k = 0; k < 3; ++k) {
        const std::string n = "r" + std::to_string(k + 1);
        const double at[3] = {0.3 * k, 0, 0};
        REQUIRE(noether_spec_add_body(s, n.c_str(), 0.5, I, at, nullptr) == NOETHER_OK);
        REQUIRE(noether_spec_add_joint(s, n.c_str(), "revolute", "world", n.c_str(), at, axis) == NOETHER_OK);
    }
    CHECK(noether_spec_add_coupling_leader(s, "r2", 0, -0.25) == NOETHER_USAGE);
    CHECK_THAT(std::string(noether_last_error()), Contains("no coupling added yet"));
    REQUIRE(noether_spec_add_coupling(s, "diff", "r3", 0, "r1", 0, 0.5, 0.0) == NOETHER_OK);
    REQUIRE(noether_spec_add_coupling_leader(s, "r2", 0, -0.25) == NOETHER_OK);
    CHECK(noether_spec_add_coupling_leader(s, nullptr, 0, 1) == NOETHER_USAGE);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_data* d = noether_data_new(m);
    const double u[3] = {0.2, 0, 0};
    double q[3], qd[3], worst = 0;
    for (int i = 0; i < 100; ++i) {
        REQUIRE(noether_set_actuation(d, 0, u, 1) == NOETHER_OK);
        REQUIRE(noether_step(d) == NOETHER_OK);
        REQUIRE(noether_joint_state(d, q, qd) == NOETHER_OK);
        worst = std::max(worst, std::fabs(q[2] - 0.5 * q[0] + 0.25 * q[1]));
    }
    CHECK(worst <= 1e-9);
    CHECK(q[0] > 1e-3);
    CHECK(q[1] != 0);  // dragged through the differential
    noether_data_free(d);
    noether_model_free(m);
    // A wrong leader is reported at compile, naming the call.
    REQUIRE(noether_spec_add_coupling_leader(s, "nope", 0, 1) == NOETHER_OK);
    CHECK(noether_compile(s) == nullptr);
    CHECK_THAT(std::string(noether_last_error()), Contains("coupling 'diff': field 'more[2]': joint 'nope' not found"));
    noether_spec_free(s);
}

TEST_CASE("C API: the kernel's suggestions are worded as C calls", "[c-api]") {
    // Before: a C host read "noether.world{ options = { max_turn = 0.1 } }" nowhere (the kernel's
    // neutral "option 'max_turn' = 0.1"); now the call that sets it.
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.01, 0, 0, 0, 1.0 / 12, 0, 0, 0, 1.0 / 12};
    const double p[3] = {0.5, 0, 0}, a[3] = {0, 0, 0}, axis[3] = {0, 1, 0};
    REQUIRE(noether_spec_add_body(s, "rod", 1, I, p, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "hinge", "revolute", "world", "rod", a, axis) == NOETHER_OK);
    REQUIRE(noether_spec_set_options(s, "vi-maximal", nullptr, 0.01) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_run* r = noether_run_new(m);
    REQUIRE(r);
    const double q[1] = {0}, qd[1] = {80};  // 0.8 rad per step
    REQUIRE(noether_set_joint_state(noether_run_data(r), q, qd) == NOETHER_OK);
    noether_run_steps(r, 20);
    char* json = noether_run_summary_json(r);
    REQUIRE(json);
    const std::string text = json;
    noether_free(json);
    CHECK_THAT(text, Contains("noether_spec_set_option(spec, \\\"max_turn\\\", 0.1)"));  // (JSON-escaped)
    CHECK_THAT(text, !Contains("noether.world") && !Contains("option 'max_turn'"));
    // The state set before the first step is the run's start (energy_initial was the Model's, 0 J).
    CHECK_THAT(text, Contains("\"energy_initial\": 106") && !Contains("\"energy_initial\": 0,"));
    noether_run_free(r);
    noether_model_free(m);
    noether_spec_free(s);
}

TEST_CASE("C API: kinematics and dynamics queries (docs/queries.md)", "[c-api][queries]") {
    noether_spec* s = noether_spec_new();
    const double I[9] = {0.01 / 6, 0, 0, 0, 1.01 / 12, 0, 0, 0, 1.01 / 12};
    const double p1[3] = {0.5, 0, 0}, p2[3] = {1.5, 0, 0}, a1[3] = {0, 0, 0}, a2[3] = {1, 0, 0}, axis[3] = {0, 1, 0};
    REQUIRE(noether_spec_add_body(s, "l1", 1, I, p1, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_add_body(s, "l2", 1, I, p2, nullptr) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "j1", "revolute", "world", "l1", a1, axis) == NOETHER_OK);
    REQUIRE(noether_spec_add_joint(s, "j2", "revolute", "l1", "l2", a2, axis) == NOETHER_OK);
    noether_model* m = noether_compile(s);
    REQUIRE(m);
    noether_kinematics* k = noether_kinematics_new(m);
    REQUIRE(k);
    const double q[2] = {0.4, -0.3}, qd[2] = {0.2, 0.1}, tau[2] = {0.5, -0.25};
    double M[4], qdd[2], back[2], J[12], Jp[6], com[3], Jc[6];
    REQUIRE(noether_mass_matrix(k, q, M) == NOETHER_OK);
    CHECK(M[1] == Approx(M[2]).margin(1e-14));
    CHECK(M[0] > M[3]);  // the first joint carries both links
    REQUIRE(noether_forward_dynamics(k, q, qd, tau, qdd) == NOETHER_OK);
    REQUIRE(noether_inverse_dynamics(k, q, qd, qdd, back) == NOETHER_OK);
    CHECK(back[0] == Approx(tau[0]).margin(1e-12));
    CHECK(back[1] == Approx(tau[1]).margin(1e-12));
    REQUIRE(noether_jacobian(k, q, 1, nullptr, J) == NOETHER_OK);
    CHECK(J[2] == Approx(1).margin(1e-14));  // row ω_y: both hinges turn link 2 about y
    CHECK(J[3] == Approx(1).margin(1e-14));
    const double tip[3] = {0.5, 0, 0};
    REQUIRE(noether_jacobian(k, q, 1, tip, Jp) == NOETHER_OK);
    CHECK(Jp[2] == 0.0);  // no velocity along y
    REQUIRE(noether_center_of_mass(k, q, com, Jc) == NOETHER_OK);
    CHECK(com[1] == Approx(0).margin(1e-14));
    double lin[3], ang[3];
    REQUIRE(noether_momentum(k, q, qd, lin, ang) == NOETHER_OK);
    for (int a = 0; a < 3; ++a) {  // p = (total mass, 2 kg) J_com q̇
        double v = 0;
        for (int c = 0; c < 2; ++c) v += Jc[a * 2 + c] * qd[c];
        CHECK(lin[a] == Approx(2.0 * v).margin(1e-12));
    }
    CHECK(std::fabs(ang[1]) > 0.01);
    CHECK(noether_jacobian(k, q, 5, nullptr, J) != NOETHER_OK);
    CHECK_THAT(std::string(noether_last_error()), Contains("body index 5 out of range"));
    noether_kinematics_free(k);
    noether_model_free(m);
    noether_spec_free(s);
    // A free body: refused, named.
    s = noether_spec_new();
    REQUIRE(noether_spec_add_body(s, "free", 1, I, p1, nullptr) == NOETHER_OK);
    m = noether_compile(s);
    REQUIRE(m);
    CHECK(noether_kinematics_new(m) == nullptr);
    CHECK_THAT(std::string(noether_last_error()), Contains("body 'free' floats free"));
    noether_model_free(m);
    noether_spec_free(s);
}
