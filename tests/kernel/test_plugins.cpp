// The plugin loader: each kind of bad plugin gives its own error, and nothing crashes.
#include <catch2/catch.hpp>

#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

const std::string bad = NOETHER_BAD_PLUGIN_DIR;

PluginError load_error(const std::string& file) {
    try {
        Registry::global().load_file(bad + "/" + file);
    } catch (const PluginError& e) {
        return e;
    }
    FAIL("loading " << file << " did not fail");
    return PluginError(PluginError::Kind::cannot_open, "", "");
}

}  // namespace

TEST_CASE("built-in plugins are found next to the library", "[plugins]") {
    Registry& reg = Registry::global();
    REQUIRE(reg.errors().empty());
    const std::vector<std::string> joints = reg.names(PluginKind::joint);
    for (const char* name :
         {"fixed", "revolute", "prismatic", "spherical", "universal", "cylindrical", "planar", "point-on-line"})
        CHECK(std::find(joints.begin(), joints.end(), name) != joints.end());
    const PluginInfo* rev = reg.find(PluginKind::joint, "revolute");
    REQUIRE(rev);
    CHECK_THAT(rev->path, Contains("/noether/plugins/noether_joint_revolute.so"));
    CHECK(!rev->description.empty());
    CHECK(reg.joint("revolute") != nullptr);
    CHECK(reg.joint("no-such-joint") == nullptr);
}

TEST_CASE("library without the entry symbol", "[plugins]") {
    const PluginError e = load_error("test_no_entry.so");
    CHECK(e.kind() == PluginError::Kind::no_entry_point);
    CHECK_THAT(e.what(), Contains("test_no_entry.so: no entry point") && Contains("noether_plugin"));
}

TEST_CASE("plugin built for another ABI version", "[plugins]") {
    const PluginError e = load_error("test_wrong_abi.so");
    CHECK(e.kind() == PluginError::Kind::abi_mismatch);
    CHECK_THAT(e.what(), Contains("ABI version " + std::to_string(NOETHER_PLUGIN_ABI + 41)) &&
                             Contains("this kernel has ABI version " + std::to_string(NOETHER_PLUGIN_ABI)));
    CHECK(Registry::global().find(PluginKind::joint, "from-the-future") == nullptr);
}

TEST_CASE("duplicate plugin name names both paths", "[plugins]") {
    const PluginError e = load_error("test_dup_revolute.so");
    CHECK(e.kind() == PluginError::Kind::duplicate_name);
    CHECK_THAT(e.what(), Contains("test_dup_revolute.so") && Contains("duplicate joint name 'revolute'") &&
                             Contains("noether_joint_revolute.so"));
    // The built-in stays registered.
    CHECK_THAT(Registry::global().find(PluginKind::joint, "revolute")->path, Contains("noether_joint_revolute.so"));
}

TEST_CASE("a file that is not a library", "[plugins]") {
    const PluginError e = load_error("not_a_library.so");
    CHECK(e.kind() == PluginError::Kind::not_a_library);
    CHECK_THAT(e.what(), Contains("not a shared library"));
}

TEST_CASE("a missing file", "[plugins]") {
    const PluginError e = load_error("nothing_here.so");
    CHECK(e.kind() == PluginError::Kind::cannot_open);
}

TEST_CASE("loading a directory reports every bad plugin and goes on", "[plugins]") {
    const auto errs = Registry::global().load_directory(bad);
    REQUIRE(errs.size() == 4);  // no entry, wrong ABI, duplicate, not a library; README.txt skipped
    std::vector<PluginError::Kind> kinds;
    for (const auto& e : errs) kinds.push_back(e.kind());
    CHECK(std::count(kinds.begin(), kinds.end(), PluginError::Kind::no_entry_point) == 1);
    CHECK(std::count(kinds.begin(), kinds.end(), PluginError::Kind::abi_mismatch) == 1);
    CHECK(std::count(kinds.begin(), kinds.end(), PluginError::Kind::duplicate_name) == 1);
    CHECK(std::count(kinds.begin(), kinds.end(), PluginError::Kind::not_a_library) == 1);
    // A second load of the same directory is a no-op.
    CHECK(Registry::global().load_directory(bad).empty());
    // A directory that does not exist is an error, not a crash.
    const auto none = Registry::global().load_directory(bad + "/no/such/dir");
    REQUIRE(none.size() == 1);
    CHECK(none[0].kind() == PluginError::Kind::cannot_open);
}

TEST_CASE("exceptions from a plugin's entry point or factory become plugin errors, and a list loads every entry",
          "[plugins]") {
    const std::string dir = NOETHER_THROWING_PLUGIN_DIR;
    const auto errs = Registry::global().load_directory(dir);
    REQUIRE(errs.size() == 2);
    std::string all;
    for (const auto& e : errs) all += std::string(e.what()) + "\n";
    CHECK_THAT(all, Contains("test_throws_entry.so: its entry point threw: the entry point of this plugin is broken"));
    CHECK_THAT(all, Contains("test_throws_create.so: create() of 'throws-in-create' threw: out of coffee"));
    CHECK(Registry::global().solver("throws-in-create") == nullptr);
    // Both plugins of the list library are registered, with the library's path.
    const PluginInfo* a = Registry::global().find(PluginKind::solver, "test-list-a");
    const PluginInfo* b = Registry::global().find(PluginKind::solver, "test-list-b");
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->path == b->path);
    CHECK_THAT(a->path, Contains("test_plugin_list.so"));
    // 'auto' skips solvers that do not support the model, whatever their preference.
    auto m = compile(testutil::chain_spec(3, "revolute", "vi-maximal"));
    CHECK(m->solver_name == "sparse-ldu");
}
