// The C API of the MJCF importer (noether_mjcf.h).
#include "noether_mjcf.h"

#include "noether/mjcf.hpp"
#include "noether/sdk/c_bridge.hpp"

extern "C" {

int noether_spec_import_mjcf(noether_spec* spec, const char* path, const char* keyframe, int drop_armature, const char* prefix) {
    using noether::c_bridge::set_error;
    noether::Spec* s = noether::c_bridge::spec_of(spec);
    if (!s || !path) return set_error(NOETHER_USAGE, "noether_spec_import_mjcf: spec and path are required");
    noether::Spec work = *s;  // the spec is changed only if everything works
    try {
        noether::mjcf::Options o;
        if (prefix) o.prefix = prefix;
        if (keyframe) o.keyframe = keyframe;
        o.drop_armature = drop_armature != 0;
        noether::mjcf::import(work, path, o);
        const noether::AssemblyReport a = noether::assemble(work);
        if (!a.converged)
            return set_error(NOETHER_BAD_INPUT, std::string(path) + ": the joints cannot all be satisfied (the assembly "
                                                                    "stopped at violation " + std::to_string(a.final_violation) + ")");
    } catch (const noether::Error& e) {
        return set_error(NOETHER_BAD_INPUT,
                         noether::reword_import_settings(e.what(), [](const std::string& name, const std::string& value) {
                             if (name == "drop_armature") return std::string("drop_armature = 1");
                             if (name == "keyframe") return "keyframe = \"" + value + "\"";
                             return "the MJCF importer's setting '" + name + "' = " + value +
                                    " (Lua w:mjcf, Python import_mjcf; not in noether_spec_import_mjcf)";
                         }));
    } catch (const std::exception& e) {
        return set_error(NOETHER_BAD_INPUT, std::string("noether_spec_import_mjcf: ") + e.what());
    }
    *s = std::move(work);
    return set_error(NOETHER_OK, "");
}

}  // extern "C"
