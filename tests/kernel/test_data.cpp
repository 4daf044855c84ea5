// Data: reset, save/restore bit for bit, structure checks.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "noether/registry.hpp"
#include "noether/sdk/integrator.hpp"
#include "util.hpp"

using namespace noether;

namespace {

void scramble(Data& d, unsigned seed) {
    testutil::Rng r(seed);
    d.time = r.uniform(0, 10);
    d.step = 1234;
    for (auto& p : d.pose) p = r.pose();
    for (auto& t : d.twist) t = {r.vec(), r.vec()};
    for (auto& t : d.twist_guess) t = {r.vec(), r.vec()};
    for (auto& l : d.lambda) l = r.uniform() * 1e3;
    for (auto& c : d.coord) c = r.uniform();
    for (auto& c : d.rate) c = r.uniform();
    for (auto& u : d.actuation) u = r.uniform();
    for (auto& f : d.applied_force) f = r.vec();
    d.stats.steps = 77;
    d.stats.newton_max = 4;
    d.last.residual = 1e-13;
    d.warn("a warning at some step");
    d.warn_once("key", "once");
}

bool same_bits(const Data& a, const Data& b) { return a.save() == b.save(); }

}  // namespace

TEST_CASE("Data starts at the Model's initial state", "[data]") {
    auto m = compile(testutil::chain_spec(3));
    Data d(m);
    REQUIRE(d.pose.size() == 3);
    REQUIRE(d.pose[2].x.x == 2.5);
    REQUIRE(d.lambda.size() == 15);
    REQUIRE(d.coord.size() == 3);
    REQUIRE(d.coord[0] == 0.0);
}

TEST_CASE("save/restore round-trips bit for bit", "[data]") {
    auto m = compile(testutil::chain_spec(4, "spherical"));
    Data a(m), b(m);
    scramble(a, 7);
    const std::string bytes = a.save();
    b.restore(bytes);
    REQUIRE(same_bits(a, b));
    REQUIRE(std::memcmp(a.pose.data(), b.pose.data(), sizeof(Pose) * a.pose.size()) == 0);
    REQUIRE(std::memcmp(a.lambda.data(), b.lambda.data(), sizeof(double) * a.lambda.size()) == 0);
    REQUIRE(b.warnings.size() == 2);
    REQUIRE(b.warnings[0].message == "a warning at some step");
    // warn_once keys survive too
    REQUIRE_FALSE(b.warn_once("key", "again"));
}

TEST_CASE("the integrator SDK's short copies copy exactly n bytes, every size", "[data]") {
    // detail::copy_bytes (StateWriter::values, restore_values, the kernel's per-step snapshot):
    // fixed-size moves for multiples of 8 up to 64, memcpy otherwise. Each size against memcpy,
    // with guard bytes on both sides that must stay as they were.
    testutil::Rng r(11);
    unsigned char src[96], dst[96 + 32], want[96 + 32];
    for (int n = 0; n <= 96; ++n) {
        for (unsigned char& c : src) c = static_cast<unsigned char>(r.uniform(0, 255.99));
        for (int k = 0; k < 96 + 32; ++k) dst[k] = want[k] = static_cast<unsigned char>(0xA5 ^ k);
        std::memcpy(want + 16, src, static_cast<std::size_t>(n));
        detail::copy_bytes(dst + 16, src, static_cast<std::size_t>(n));
        INFO("n = " << n);
        REQUIRE(std::memcmp(dst, want, sizeof dst) == 0);
    }
    // And through a writer and back: vectors of 0 to 9 doubles and of Twists between values.
    for (int n = 0; n <= 9; ++n) {
        std::vector<double> a(static_cast<std::size_t>(n)), b(a.size());
        std::vector<Twist> ta(static_cast<std::size_t>(n % 3 + 1)), tb(ta.size());
        for (double& x : a) x = r.uniform();
        for (Twist& t : ta) t = {r.vec(), r.vec()};
        const char flag = 7;
        std::string out = "prefix";
        {
            StateWriter w(out, sizeof flag + sizeof(double) * a.size() + sizeof(Twist) * ta.size());
            w.value(flag);
            w.values(a);
            w.values(ta);
        }
        REQUIRE(out.size() == 6 + sizeof flag + sizeof(double) * a.size() + sizeof(Twist) * ta.size());
        const char* p = out.data() + 6;
        char got = 0;
        restore_value(p, got);
        restore_values(p, b);
        restore_values(p, tb);
        REQUIRE(p == out.data() + out.size());
        REQUIRE(got == flag);
        REQUIRE(a == b);  // (memcmp of an empty vector's null data is undefined)
        REQUIRE(std::memcmp(ta.data(), tb.data(), sizeof(Twist) * ta.size()) == 0);
    }
}

TEST_CASE("save_file/restore_file round trip, no temporary left behind", "[data]") {
    auto m = compile(testutil::chain_spec(2));
    Data a(m), b(m);
    scramble(a, 3);
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/state_roundtrip.bin";
    a.save_file(path);
    FILE* tmp = std::fopen((path + ".tmp").c_str(), "rb");
    REQUIRE(tmp == nullptr);
    b.restore_file(path);
    REQUIRE(same_bits(a, b));
    std::remove(path.c_str());
}

TEST_CASE("restore refuses another structure and leaves the Data unchanged", "[data]") {
    auto m3 = compile(testutil::chain_spec(3));
    auto m4 = compile(testutil::chain_spec(4));
    Data a(m3), b(m4);
    scramble(b, 11);
    const std::string before = b.save();
    REQUIRE_THROWS_AS(b.restore(a.save()), UsageError);
    REQUIRE(b.save() == before);
    // Truncated buffer.
    std::string cut = a.save();
    cut.resize(cut.size() / 2);
    Data c(m3);
    scramble(c, 5);
    const std::string cbefore = c.save();
    REQUIRE_THROWS_AS(c.restore(cut), UsageError);
    REQUIRE(c.save() == cbefore);
    REQUIRE_THROWS_AS(c.restore("garbage"), UsageError);
}

TEST_CASE("reset returns to the initial state", "[data]") {
    auto m = compile(testutil::chain_spec(2));
    Data a(m), b(m);
    scramble(a, 1);
    a.reset();
    REQUIRE(same_bits(a, b));
}

// A saved state is input a script can hand to restore_file (from its sandbox) and a host to
// Data::restore: every byte of one, changed, is either refused with the Data left as it was or
// restored into a Data that then steps (or fails a step the kernel's way) without reading or
// writing out of bounds (the ASan build runs this too). Each integrator's own state is in the
// bytes after some steps: warm starts, guess misses, secant pairs, holds, step sizes.
TEST_CASE("restore of a saved state with any byte changed is refused or steps", "[data][hardening]") {
    // (Every integrator shipped: the list is the registry's, below the loop.)
    for (const char* name : testutil::kShippedIntegrators) {
        Spec s = testutil::chain_spec(3, "revolute", name);
        s.options.dt = 0.01;
        auto m = compile(s);
        Data d(m);
        for (int k = 0; k < 40; ++k) REQUIRE(step(*m, d) == StepStatus::ok);
        const std::string bytes = d.save();
        Data fresh(m);
        const std::string pristine = fresh.save();
        int refused = 0, restored = 0;
        // The sanitizer build (about 20x slower) changes every 5th byte: 83 s there for all of them.
        const std::size_t stride = NOETHER_TEST_SANITIZED ? 5 : 1;
        for (std::size_t i = 0; i < bytes.size(); i += stride)
            for (unsigned char v : {0x00, 0xff, 0x80, 0x01}) {
                std::string bad = bytes;
                bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) == v ? v ^ 0x3c : v);
                if (bad == bytes) continue;
                Data e(m);
                bool ok = true;
                try {
                    e.restore(bad);
                } catch (const UsageError&) {
                    ok = false;
                }
                if (!ok) {
                    ++refused;
                    REQUIRE(e.save() == pristine);
                    continue;
                }
                ++restored;
                for (int k = 0; k < 3; ++k) {
                    const std::int64_t before = e.step;
                    const StepStatus st = step(*m, e);
                    REQUIRE((st == StepStatus::ok ? e.step == before + 1 : e.step == before));
                }
            }
        INFO(name << ": " << bytes.size() << " bytes, " << refused << " refused, " << restored << " restored");
        CHECK(refused > 0);
        CHECK(restored > 0);
    }
    // The list is every integrator the registry has loaded from the project's plugins.
    std::vector<std::string> shipped(std::begin(testutil::kShippedIntegrators), std::end(testutil::kShippedIntegrators));
    std::sort(shipped.begin(), shipped.end());
    CHECK(shipped == Registry::global().names(PluginKind::integrator));
}
