// Many Data step in parallel on one Model, and agree bit for bit with a serial run.
#include <catch2/catch.hpp>
#include <thread>

#include "util.hpp"

using namespace noether;

TEST_CASE("four Data stepping in parallel threads on one Model match the serial run", "[parallel]") {
    Spec tree = testutil::chain_spec(16, "revolute", "riqn");
    for (const Spec& spec : {testutil::closed_loop_spec("revolute"), tree}) {
    INFO(spec.options.integrator);
    auto m = compile(spec);
    Data serial(m);
    for (int i = 0; i < 300; ++i) REQUIRE(step(*m, serial) == StepStatus::ok);
    const std::string expected = serial.save();
    std::vector<std::unique_ptr<Data>> runs;
    for (int k = 0; k < 4; ++k) runs.push_back(std::make_unique<Data>(m));
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 1);
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int i = 0; i < 300; ++i)
                if (step(*m, *runs[k]) != StepStatus::ok) ok[k] = 0;
        });
    for (auto& t : threads) t.join();
    for (int k = 0; k < 4; ++k) {
        CHECK(ok[k] == 1);
        CHECK(runs[k]->save() == expected);
    }
    }
}
