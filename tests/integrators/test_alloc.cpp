// No heap allocation inside a step after the first one (sparse-ldu and dense-loop), counted by
// interposing malloc and friends in this executable (not built with sanitizers, which own malloc).
#include <catch2/catch.hpp>
#include <atomic>
#include <malloc.h>

#include "noether/ensemble.hpp"
#include "util.hpp"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

static std::atomic<long> g_allocs{0};

extern "C" void* malloc(size_t n) {
    ++g_allocs;
    return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
    ++g_allocs;
    return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
    ++g_allocs;
    return __libc_realloc(p, n);
}
extern "C" void* memalign(size_t a, size_t n) {
    ++g_allocs;
    return __libc_memalign(a, n);
}
extern "C" int posix_memalign(void** p, size_t a, size_t n) {
    ++g_allocs;
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12;
}
extern "C" void* aligned_alloc(size_t a, size_t n) {
    ++g_allocs;
    return __libc_memalign(a, n);
}

using namespace noether;

namespace {

long allocations_in_steps(const Spec& spec, int steps) {
    auto m = compile(spec);
    Data d(m);
    REQUIRE(step(*m, d) == StepStatus::ok);  // the first step may allocate (one-time warnings)
    const long before = g_allocs.load();
    for (int i = 0; i < steps; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    return g_allocs.load() - before;
}

}  // namespace

TEST_CASE("the counter sees allocations", "[alloc]") {
    const long before = g_allocs.load();
    void* volatile p = std::malloc(64);
    std::free(p);
    std::string* s = new std::string(100, 'x');
    asm volatile("" : : "r"(s) : "memory");  // keep the allocation from being elided
    delete s;
    CHECK(g_allocs.load() - before >= 2);
}

TEST_CASE("no heap allocation while stepping a tree (sparse-ldu)", "[alloc]") {
    CHECK(allocations_in_steps(testutil::double_pendulum_spec(), 200) == 0);
    Spec s = testutil::chain_spec(64, "spherical", "vi-maximal");
    s.joints[3].stiffness = {2.0};
    s.joints[3].damping = {0.1};
    CHECK(allocations_in_steps(s, 100) == 0);
}

TEST_CASE("no heap allocation while stepping closed loops (dense-loop, redundant rows)", "[alloc]") {
    CHECK(allocations_in_steps(testutil::closed_loop_spec("revolute"), 200) == 0);
    CHECK(allocations_in_steps(testutil::every_joint_spec(), 50) == 0);
}

TEST_CASE("no heap allocation while stepping with riqn (every Newton variant, the fallback, subdivision)", "[alloc][riqn]") {
    Spec s = testutil::chain_spec(32, "revolute", "riqn");
    s.joints[3].stiffness = {2.0};
    s.joints[3].damping = {0.1};
    CHECK(allocations_in_steps(s, 200) == 0);
    s.options.extra_lists["newton"] = {"exact"};
    CHECK(allocations_in_steps(s, 50) == 0);
    s.options.extra_lists["newton"] = {"dense"};
    CHECK(allocations_in_steps(s, 50) == 0);
    // A floating base, a ball joint with a spring and actuation, body forces.
    Spec fl = testutil::floating_tree_spec(12, "riqn");
    fl.gravity = {0, 0, -9.81};
    fl.joints[0].stiffness = {1.0, 1.0, 1.0};
    ForceSpec f;
    f.body = "tip";
    f.torque = {0.1, 0.2, 0.3};
    fl.forces.push_back(f);
    CHECK(allocations_in_steps(fl, 100) == 0);
    fl.options.extra_lists["newton"] = {"exact"};
    CHECK(allocations_in_steps(fl, 50) == 0);
    fl.options.extra_lists["newton"] = {"dense"};
    CHECK(allocations_in_steps(fl, 50) == 0);
    // Point masses on ball joints (a spin inertia 1e-6 of the others): the RIQN updates diverge
    // about the rods and the exact-Newton fallback takes the steps (without it a step fails, even
    // with 16 substeps).
    Spec pm = testutil::chain_spec(2, "spherical", "riqn");
    for (BodySpec& b : pm.bodies) b.inertia = Mat3::diag(1e-7, 0.08, 0.08);
    pm.bodies[1].angular_velocity = {0, 1.0, 0.3};
    {
        auto m = compile(pm);
        Data d(m);
        for (int i = 0; i < 50; ++i) REQUIRE(step(*m, d) == StepStatus::ok);  // past one-time warnings
        const long before = g_allocs.load();
        const auto updates = d.stats.newton_total;
        for (int i = 0; i < 100; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        CHECK(g_allocs.load() - before == 0);
        INFO("updates a step " << double(d.stats.newton_total - updates) / 100);
        CHECK(double(d.stats.newton_total - updates) / 100 < 10);
    }
    for (int secants : {0, 2}) {  // the plain RIQN update, and with the secant pairs (the default)
        Spec sub = testutil::chain_spec(10, "revolute", "riqn");
        sub.options.max_iterations = 4;  // many steps are retaken as substeps
        sub.options.extra["secants"] = secants;
        auto m = compile(sub);
        Data d(m);
        while (d.stats.subdivided_steps == 0) REQUIRE(step(*m, d) == StepStatus::ok);  // past the one-time warning
        const long before = g_allocs.load();
        const auto subdivided = d.stats.subdivided_steps;
        for (int i = 0; i < 30; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        CHECK(g_allocs.load() - before == 0);
        INFO("secants " << secants << ": subdivided steps " << d.stats.subdivided_steps - subdivided << " of 30");
        CHECK(d.stats.subdivided_steps - subdivided >= 10);
    }
}

TEST_CASE("no heap allocation while stepping with rk4-joint and dp45-joint (springs, dampers, body forces)", "[alloc]") {
    for (const char* integ : {"rk4-joint", "dp45-joint"}) {
        Spec s = testutil::chain_spec(16, "revolute", integ);
        s.joints[3].stiffness = {2.0};
        s.joints[3].damping = {0.1};
        ForceSpec f;
        f.body = "link16";
        f.force = {0.1, 0.2, 0.3};
        s.forces.push_back(f);
        INFO(integ);
        CHECK(allocations_in_steps(s, 100) == 0);
    }
}

TEST_CASE("no heap allocation while stepping with vi-galerkin (s = 1, 2, 3, forces, subdivision)", "[alloc][galerkin]") {
    for (double points : {1.0, 2.0, 3.0}) {
        Spec s = testutil::chain_spec(16, "revolute", "vi-galerkin");
        s.options.extra["points"] = points;
        s.joints[3].stiffness = {2.0};
        s.joints[3].damping = {0.1};
        ForceSpec f;
        f.body = "link5";
        f.torque = {0.1, 0.2, 0.3};
        f.body_frame = true;
        s.forces.push_back(f);
        CHECK(allocations_in_steps(s, 100) == 0);
    }
    Spec sub = testutil::chain_spec(10, "revolute", "vi-galerkin");
    sub.options.dt = 0.05;
    sub.options.max_iterations = 4;  // most steps are retaken as substeps
    auto m = compile(sub);
    Data d(m);
    while (d.stats.subdivided_steps == 0) REQUIRE(step(*m, d) == StepStatus::ok);
    const long before = g_allocs.load();
    for (int i = 0; i < 20; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(g_allocs.load() - before == 0);
    CHECK(d.stats.subdivided_steps > 5);
}

TEST_CASE("no heap allocation while stepping a closed loop with vi-galerkin (s = 1, 2)", "[alloc][galerkin][loops]") {
    for (double points : {1.0, 2.0}) {
        Spec s = testutil::closed_loop_spec("revolute");
        s.options.integrator = "vi-galerkin";
        s.options.extra["points"] = points;
        CHECK(allocations_in_steps(s, 100) == 0);
    }
}

TEST_CASE("no heap allocation in linearize after the first call (vi-galerkin)", "[alloc][galerkin][linearize]") {
    Spec s = testutil::chain_spec(12, "revolute", "vi-galerkin");
    s.joints[2].stiffness = {2.0};
    s.joints[2].damping = {0.1};
    auto m = compile(s);
    Data d(m);
    Linearization lin;
    REQUIRE(linearize(*m, d, lin) == StepStatus::ok);  // before any step: sizes lin and the workspaces
    const long before = g_allocs.load();
    for (int i = 0; i < 10; ++i) {
        REQUIRE(linearize(*m, d, lin) == StepStatus::ok);
        REQUIRE(step(*m, d) == StepStatus::ok);
    }
    CHECK(g_allocs.load() - before == 0);
    CHECK(lin.A[0] != 0);
}

TEST_CASE("no heap allocation per step or per member in an ensemble on two threads", "[alloc][ensemble]") {
    auto m = compile(testutil::chain_spec(8, "revolute", "vi-maximal"));
    Ensemble e(m, 16);
    e.set_threads(2);
    e.set_controller([](int member, Data& d) { d.actuation[0] = 0.01 * member; });
    REQUIRE(e.steps(3) == 16);  // setup: first steps, the arena, the workers
    // What one steps() call costs (the pool's own task bookkeeping) must not grow with the
    // number of steps: compare 1 and 200 steps per call.
    long few = 0, many = 0;
    for (int rep = 0; rep < 3; ++rep) {
        long before = g_allocs.load();
        REQUIRE(e.steps(1) == 16);
        few = std::max(few, g_allocs.load() - before);
        before = g_allocs.load();
        REQUIRE(e.steps(200) == 16);
        many = std::max(many, g_allocs.load() - before);
    }
    INFO("allocations per steps() call: 1 step " << few << ", 200 steps " << many);
    CHECK(many <= few + 4);
    CHECK(many < 16);  // not one per member either
}

TEST_CASE("no heap allocation while stepping servos, every variational integrator", "[alloc][servos]") {
    for (const char* integrator : {"vi-maximal", "vi-midpoint", "riqn", "vi-galerkin", "rk4"}) {
        INFO(integrator);
        Spec s = testutil::chain_spec(16, "revolute", integrator);
        for (int j : {0, 5, 15}) {
            s.joints[j].servo.kind = ServoSpec::Kind::position;
            s.joints[j].servo.kp = 50;
            s.joints[j].servo.kv = 2;
            s.joints[j].servo.target = 0.3;
        }
        s.joints[5].servo.effort_limit = 0.5;  // saturates at times
        CHECK(allocations_in_steps(s, 100) == 0);
    }
}
