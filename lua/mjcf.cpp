// The Lua module: w:mjcf{} (MJCF import through libnoether_mjcf).
#include <algorithm>

#include "noether/mjcf.hpp"
#include "world.hpp"

namespace noether {
namespace lua {


namespace {

// The MJCF importer's settings are fields of w:mjcf{}; the rest as everywhere in Lua.
std::string mjcf_wording(const std::string& msg) {
    return lua_wording(reword_import_settings(msg, [](const std::string& name, const std::string& value) {
        return name == "keyframe" ? "w:mjcf{ keyframe = \"" + value + "\" }" : "w:mjcf{ " + name + " = " + value + " }";
    }));
}

}  // namespace

// w:mjcf{ file, prefix, keyframe, limits, couplings, contacts, actuators, drop_armature, visual_meshes, assemble }
int l_mjcf(lua_State* L, World& w) {
    check_table(L, 2, "mjcf");
    require_building(L, w, "mjcf");
    Fields f{L, 2, "mjcf"};
    f.only({"file", "prefix", "keyframe", "limits", "couplings", "contacts", "actuators", "drop_armature", "visual_meshes", "assemble"});
    std::string file = f.string("file", "", true);
    f.who = "mjcf '" + file + "'";
    file = import_file(L, file, f.who, "MJCF file");
    mjcf::Options opt;
    opt.prefix = f.string("prefix", "");
    opt.keyframe = f.string("keyframe", "");
    opt.limits = f.boolean("limits", true);
    opt.couplings = f.boolean("couplings", true);
    opt.contacts = f.boolean("contacts", true);
    opt.actuators = f.boolean("actuators", true);
    opt.drop_armature = f.boolean("drop_armature", false);
    opt.visual_meshes = f.boolean("visual_meshes", true);
    const bool do_assemble = f.boolean("assemble", true);
    if (context(L)->options.sandbox)  // included files obey the sandbox's read rule too
        opt.include_problem = [L](const std::string& path) -> std::string {
            try {
                sandbox_path(L, path, false, "included MJCF file");
            } catch (const LuaFail& e) {
                const std::string m = e.what();  // without the script's position (the importer adds the file's)
                const std::size_t at = m.find("sandbox: ");
                return at == std::string::npos ? m : m.substr(at);
            }
            return "";
        };
    Spec trial = w.spec;  // a failed import leaves the world unchanged
    mjcf::Report rep;
    try {
        rep = mjcf::import(trial, file, opt);
    } catch (const ModelError& e) {
        fail(L, "mjcf: %s", mjcf_wording(e.what()));
    }
    adopt_import(L, w, trial, f.who);
    AssemblyReport asm_rep;
    if (do_assemble) asm_rep = assemble_world(L, w, "mjcf");
    if (context(L)->options.print_reports) std::printf("%s", mjcf_wording(rep.to_text()).c_str());
    for (const std::string& warn : rep.warnings) w.import_warnings.push_back(rep.file + ": " + mjcf_wording(warn));
    // The result: bodies and joints by MJCF name, frames of every MJCF body and site, the report.
    lua_createtable(L, 0, 16);
    lua_newtable(L);
    for (const std::string& b : rep.bodies) {
        push_handle(L, "body", b);
        lua_setfield(L, -2, b.substr(opt.prefix.size()).c_str());
    }
    lua_setfield(L, -2, "bodies");
    push_joint_handles(L, rep.joint_names, opt.prefix);
    lua_setfield(L, -2, "joints");
    push_frames(L, rep.frames, opt.prefix);
    lua_setfield(L, -2, "frames");
    for (std::string& x : rep.warnings) x = mjcf_wording(x);
    for (std::string& x : rep.ignored) x = mjcf_wording(x);
    lua_pushstring(L, mjcf_wording(rep.to_text()).c_str());
    lua_setfield(L, -2, "report");
    push_strings(L, rep.warnings);
    lua_setfield(L, -2, "warnings");
    push_strings(L, rep.ignored);
    lua_setfield(L, -2, "ignored");
    push_strings(L, rep.keyframes);
    lua_setfield(L, -2, "keyframes");
    lua_pushnumber(L, rep.imported_mass);
    lua_setfield(L, -2, "mass");
    lua_pushnumber(L, rep.file_mass);
    lua_setfield(L, -2, "file_mass");
    lua_pushnumber(L, rep.world_mass);
    lua_setfield(L, -2, "world_mass");
    lua_pushnumber(L, rep.timestep);
    lua_setfield(L, -2, "timestep");
    const std::pair<const char*, int> counts[] = {{"nbodies", static_cast<int>(rep.bodies.size())},
                                                  {"njoints", static_cast<int>(rep.joint_names.size())},
                                                  {"nq", rep.nq},
                                                  {"nv", rep.nv},
                                                  {"loop_closures", rep.loop_joints},
                                                  {"limits", rep.limits_enforced},
                                                  {"couplings", rep.couplings},
                                                  {"contacts", rep.contacts},
                                                  {"servos", rep.servos},
                                                  {"motors", rep.motors}};
    for (const auto& [k, v] : counts) {
        lua_pushinteger(L, v);
        lua_setfield(L, -2, k);
    }
    push_assembly(L, asm_rep);
    lua_setfield(L, -2, "assembly");
    return 1;
}

}  // namespace lua
}  // namespace noether
