// Per-member parameters (ModelVariation) and ensembles on the TBB pool: bit-identical to lone
// runs and to a fresh compile, independent of the thread count, failures isolated.
#include <catch2/catch.hpp>

#include <cmath>
#include <atomic>
#include <stdexcept>
#include <thread>

#include "noether/ensemble.hpp"
#include "util.hpp"

using namespace noether;
using testutil::error_of;

namespace {

std::string state_after(const std::shared_ptr<const Model>& m, int steps) {
    Data d(m);
    for (int i = 0; i < steps; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    return d.save();
}

// A damped, sprung 6-link chain for the variation tests.
Spec sprung_chain(const std::string& integrator) {
    Spec s = testutil::chain_spec(6, "revolute", integrator);
    for (auto& j : s.joints) {
        j.damping = {0.05};
        j.stiffness = {0.5};
    }
    return s;
}

// The controller of the determinism tests: a PD law on every joint with member-dependent gains.
void pd(int member, Data& d) {
    for (std::size_t k = 0; k < d.actuation.size(); ++k)
        d.actuation[k] = -(0.1 + 0.05 * member) * d.coord[k] - 0.02 * d.rate[k] + 0.01 * std::sin(d.time * (k + 1));
}

}  // namespace

TEST_CASE("a varied Model steps bit for bit like a fresh compile of the changed spec", "[ensemble][variation]") {
    for (const std::string integrator : {"vi-maximal", "vi-midpoint", "riqn", "rk4"}) {
        INFO(integrator);
        const Spec base = sprung_chain(integrator);
        Spec changed = base;
        changed.bodies[2].mass = 1.7;
        changed.bodies[3].inertia = Mat3::diag(0.02, 0.1, 0.09);
        changed.joints[1].damping = {0.3};
        changed.joints[4].stiffness = {2.5};
        changed.joints[4].rest = {0.2};
        changed.gravity = {0.5, 0, -3.7};
        changed.options.dt = 0.004;
        changed.bodies[5].velocity = {0, 0, 0.4};  // world style: the VI starts from the joints' projection
        changed.bodies[5].angular_velocity = {0, -0.3, 0};

        ModelVariation v(compile(base));
        v.set("link3.mass", {1.7});
        v.set("link4.inertia", {0.02, 0.1, 0.09});
        v.set("j2.damping", {0.3});
        v.set("j5.stiffness", {2.5});
        v.set("j5.rest", {0.2});
        v.set("gravity", {0.5, 0, -3.7});
        v.set("dt", {0.004});
        v.set("link6.velocity", {0, 0, 0.4});
        v.set("link6.angular_velocity", {0, -0.3, 0});
        const auto varied = v.build();
        const auto fresh = compile(changed);
        CHECK(varied->fingerprint == fresh->fingerprint);
        // The joints' compiled objects are shared with the base, not rebuilt.
        CHECK(varied->joints[0].impl.get() == v.build()->joints[0].impl.get());
        CHECK(state_after(varied, 150) == state_after(fresh, 150));
        // and differs from the base (the test can fail)
        CHECK(state_after(varied, 150) != state_after(compile(base), 150));
    }
}

TEST_CASE("variation keys, counts and values are checked with the element, the rule and the value", "[ensemble][variation]") {
    const auto m = compile(sprung_chain("vi-maximal"));
    ModelVariation v(m);
    CHECK(error_of([&] { v.set("link9.mass", {1}); }) == "variation 'link9.mass': no body named 'link9'");
    CHECK(error_of([&] { v.set("j1.friction", {1}); }).find("not a parameter that can vary without recompiling") !=
          std::string::npos);
    CHECK(error_of([&] { v.set("gravity", {1, 2}); }) == "variation 'gravity': expects 3 values, got 2 value(s)");
    CHECK(error_of([&] { v.set("link1.inertia", {1, 2, 3, 4}); }).find("3 (diagonal), 6") != std::string::npos);
    CHECK(error_of([&] { v.set("j1.damping", {1, 2}); }).find("1 or 1 values") != std::string::npos);
    CHECK(v.empty());
    CHECK(v.build() == m);  // nothing changed: the base itself

    ModelVariation bad(m);
    bad.set("link2.mass", {-1});
    bad.set("j3.damping", {-0.5});
    bad.set("link4.inertia", {1, 1, -1});
    bad.set("dt", {0});
    const std::string e = error_of([&] { bad.build(); });
    CHECK(e.find("body 'link2': mass must be positive and finite, got -1") != std::string::npos);
    CHECK(e.find("joint 'j3': variation 'j3.damping' must be non-negative and finite, got -0.5") != std::string::npos);
    CHECK(e.find("body 'link4': inertia must be positive definite") != std::string::npos);
    CHECK(e.find("variation 'dt': dt must be positive and finite, got 0") != std::string::npos);

    // The integrator's own checks run again: riqn refuses a damped ball joint.
    Spec balls = testutil::chain_spec(2, "spherical", "riqn");
    const auto mb = compile(balls);
    ModelVariation damp(mb);
    damp.set("j2.damping", {0.1});
    CHECK(error_of([&] { damp.build(); }).find("j2") != std::string::npos);
}

TEST_CASE("a variation of a servo joint's damping keeps the servo, and one of armature-free damping keeps the armature", "[ensemble]") {
    // Before: ModelVariation recomputed JointInfo::has_force_element from stiffness and damping only,
    // so a servo joint varied to damping 0 lost its servo under vi-maximal (the joint swung freely).
    Spec s = testutil::hinged_rod_spec("vi-maximal", 0.01, 9.81);
    s.joints[0].damping = {0.5};
    s.joints[0].servo.kind = ServoSpec::Kind::position;
    s.joints[0].servo.kp = 200;
    s.joints[0].servo.kv = 5;
    const auto m = compile(s);
    ModelVariation v(m);
    v.set("hinge.damping", {0.0});
    const auto mv = v.build();
    CHECK(mv->joints[0].has_force_element);
    Data d(mv);
    double farthest = 0;
    for (int i = 0; i < 200; ++i) {
        REQUIRE(step(*mv, d) == StepStatus::ok);
        farthest = std::max(farthest, std::fabs(d.coord[0]));
    }
    CHECK(farthest < 0.1);  // held near its start (0) against gravity; a free rod swings through −π/2
    // Armature likewise survives a variation of damping.
    Spec a = testutil::hinged_rod_spec("vi-maximal", 0.01, 9.81);
    a.joints[0].armature = {0.2};
    a.joints[0].damping = {0.1};
    ModelVariation va(compile(a));
    va.set("hinge.damping", {0.0});
    CHECK(va.build()->joints[0].has_force_element);
}

TEST_CASE("an ensemble gives the same bits with 1, 2 and 8 threads and equals each member run alone", "[ensemble]") {
    for (const Spec& spec : {testutil::chain_spec(8, "revolute", "vi-maximal"), testutil::closed_loop_spec("revolute")}) {
        const auto m = compile(spec);
        const int K = 12;
        std::vector<std::shared_ptr<const Model>> models;
        for (int i = 0; i < K; ++i) {
            ModelVariation v(m);
            v.set(spec.bodies[i % spec.bodies.size()].name + ".mass", {1.0 + 0.1 * i});
            if (i % 3 == 0) v.set("dt", {0.005});
            models.push_back(v.build());
        }
        std::vector<std::uint64_t> hashes;
        std::vector<std::string> states;
        for (int threads : {1, 2, 8}) {
            Ensemble e(m, K);
            e.set_threads(threads);
            for (int i = 0; i < K; ++i) e.set_model(i, models[i]);
            e.set_controller(pd);
            REQUIRE(e.steps(60) == K);
            REQUIRE(e.steps(40) == K);  // a second call continues where the first stopped
            hashes.push_back(e.hash());
            if (threads == 2)
                for (int i = 0; i < K; ++i) states.push_back(e.data(i).save());
        }
        CHECK(hashes[0] == hashes[1]);
        CHECK(hashes[0] == hashes[2]);
        // On the host's own threads (issue 32 item 5: threads belong to the host): two std::threads
        // taking members from a counter, and the serial executor. Same bits.
        for (int pool = 0; pool < 2; ++pool) {
            Ensemble e(m, K);
            for (int i = 0; i < K; ++i) e.set_model(i, models[i]);
            e.set_controller(pd);
            int calls = 0;
            if (pool == 0) {
                e.set_executor([&calls](int n, const std::function<void(int)>& work) {
                    ++calls;
                    std::atomic<int> next{0};
                    auto take = [&] {
                        for (int i; (i = next.fetch_add(1)) < n;) work(i);
                    };
                    std::thread a(take), b(take);
                    a.join();
                    b.join();
                });
            } else {
                e.set_executor(serial_executor());
            }
            REQUIRE(e.steps(60) == K);
            REQUIRE(e.steps(40) == K);
            CHECK(e.hash() == hashes[0]);
            if (pool == 0) CHECK(calls == 2);
        }
        // Each member alone: the same Run, the same controller, 100 steps in one call.
        for (int i = 0; i < K; ++i) {
            Run lone(models[i]);
            struct Hooks : RunHooks {
                int member;
                void before_step(Run& r) override { pd(member, r.data()); }
            } hooks;
            hooks.member = i;
            REQUIRE(lone.steps(100, &hooks));
            CHECK(lone.data().save() == states[i]);
        }
        // The members differ from each other (the hash would catch a mix-up).
        CHECK(states[1] != states[2]);
    }
}

TEST_CASE("a member that fails stops and says when and why, the others go on", "[ensemble]") {
    const auto m = compile(testutil::chain_spec(4, "revolute", "vi-maximal"));
    const int K = 6;
    Ensemble e(m, K);
    e.set_threads(2);
    e.set_controller([](int member, Data& d) {
        if (member == 1 && d.step == 30) throw std::runtime_error("policy blew up");
        // member 4: a torque no step can follow (the link would turn by more than 180° per step)
        if (member == 4 && d.step >= 20) d.actuation[3] = 1e9;
    });
    CHECK(e.steps(100) == K - 2);
    CHECK(e.failures() == 2);
    CHECK(e.failed(1));
    CHECK(e.failure(1) == "the controller failed: policy blew up");
    CHECK(e.failure_step(1) == 30);
    CHECK(e.failed(4));
    CHECK(e.failure_step(4) == 20);
    CHECK(e.failure(4).find("step 21") != std::string::npos);
    // A failed member stays at its last good state; the others reached step 100 like a lone run.
    CHECK(e.data(4).step == 20);
    Data lone(m);
    for (int i = 0; i < 100; ++i) REQUIRE(step(*m, lone) == StepStatus::ok);
    for (int i : {0, 2, 3, 5}) {
        CHECK_FALSE(e.failed(i));
        CHECK(e.data(i).save() == lone.save());
    }
    // Further steps leave the failed ones alone.
    CHECK(e.steps(5) == K - 2);
    CHECK(e.data(1).step == 30);
    CHECK(e.data(0).step == 105);
    const RunSummary s = e.summary(4);
    CHECK(s.failed);
    CHECK(s.steps == 20);
}

TEST_CASE("ensemble misuse is refused with a clear message", "[ensemble]") {
    const auto m = compile(testutil::chain_spec(3, "revolute", "vi-maximal"));
    CHECK(error_of([&] { Ensemble e(m, 0); }) == "Ensemble: the number of members must be at least 1, got 0");
    Ensemble e(m, 2);
    CHECK(error_of([&] { e.set_threads(-1); }).find("got -1") != std::string::npos);
    CHECK(error_of([&] { e.data(2); }) == "Ensemble::run: member 2 out of range (0 … 1)");
    const auto other = compile(testutil::chain_spec(4, "revolute", "vi-maximal"));
    CHECK(error_of([&] { e.set_model(0, other); }).find("structure differs") != std::string::npos);
    CHECK(error_of([&] { e.steps(-1); }).find("non-negative") != std::string::npos);
    e.steps(1);
    ModelVariation v(m);
    v.set("dt", {0.001});
    CHECK(error_of([&] { e.set_model(0, v.build()); }) == "Ensemble::set_model: member 0 has already stepped");
}

TEST_CASE("the model cache compiles a structure once and serves the rest as bit-identical variations", "[ensemble][cache]") {
    ModelCache cache;
    const Spec base = sprung_chain("vi-maximal");
    for (int k = 0; k < 4; ++k) {
        Spec s = base;
        s.bodies[1].mass = 1 + 0.25 * k;
        s.joints[2].damping = k % 2 ? std::vector<double>{} : std::vector<double>{0.1 * k};
        s.joints[3].rest = k == 3 ? std::vector<double>{} : std::vector<double>{0.1};
        s.options.dt = 0.01 / (k + 1);
        const auto cached = cache.compile(s);
        CHECK(state_after(cached, 80) == state_after(compile(s), 80));
    }
    CHECK(cache.compiles() == 1);
    CHECK(cache.variations() == 3);
    // Another structure (an option, a position) is compiled on its own.
    Spec other = base;
    other.options.integrator = "vi-midpoint";
    cache.compile(other);
    Spec moved = base;
    moved.bodies[0].position.z += 1e-3;
    CHECK(cache.compile(moved)->fingerprint == compile(base)->fingerprint);  // same names, other joints
    CHECK(cache.compiles() == 3);
    CHECK(cache.size() == 3);
    // A number the variation refuses gets compile()'s message.
    Spec bad = base;
    bad.bodies[2].mass = -2;
    std::string e;
    try {
        cache.compile(bad);
    } catch (const ModelError& x) {
        e = x.what();
    }
    CHECK(e.find("body 'link3': mass must be positive and finite, got -2") != std::string::npos);
}

TEST_CASE("specs of one structure arriving at once are compiled once, the rest wait and vary it", "[ensemble][cache]") {
    for (int round = 0; round < 5; ++round) {
        ModelCache cache;
        const Spec base = testutil::chain_spec(40, "revolute", "vi-maximal");
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        std::vector<std::shared_ptr<const Model>> got(8);
        for (int k = 0; k < 8; ++k)
            threads.emplace_back([&, k] {
                Spec s = base;
                s.bodies[0].mass = 1 + 0.1 * k;
                while (!go.load()) std::this_thread::yield();
                got[k] = cache.compile(s);
            });
        go.store(true);
        for (auto& t : threads) t.join();
        CHECK(cache.compiles() == 1);
        CHECK(cache.variations() == 7);
        for (int k = 0; k < 8; ++k) CHECK(got[k]->bodies[0].mass == 1 + 0.1 * k);
    }
}
