// The C API of the URDF importer (noether_urdf.h).
#include "noether_urdf.h"

#include "noether/sdk/c_bridge.hpp"
#include "noether/urdf.hpp"

extern "C" {

int noether_spec_import_urdf(noether_spec* spec, const char* path, int fixed_base, const char* prefix) {
    using noether::c_bridge::set_error;
    noether::Spec* s = noether::c_bridge::spec_of(spec);
    if (!s || !path) return set_error(NOETHER_USAGE, "noether_spec_import_urdf: spec and path are required");
    noether::Spec work = *s;  // the spec is changed only if everything works
    try {
        noether::urdf::Options o;
        o.fixed_base = fixed_base != 0;
        if (prefix) o.prefix = prefix;
        noether::urdf::import(work, path, o);
        const noether::AssemblyReport a = noether::assemble(work);
        if (!a.converged)
            return set_error(NOETHER_BAD_INPUT, std::string(path) + ": the joints cannot all be satisfied (the assembly "
                                                                    "stopped at violation " + std::to_string(a.final_violation) + ")");
    } catch (const noether::Error& e) {
        // The importer's suggestions in this call's terms (fixed_base); the settings it lacks are named.
        return set_error(NOETHER_BAD_INPUT,
                         noether::reword_import_settings(e.what(), [](const std::string& name, const std::string& value) {
                             if (name == "base") return std::string("fixed_base = ") + (value == "fixed" ? "1" : "0");
                             return "the URDF importer's setting '" + name + "' = " + value +
                                    " (Lua w:urdf, Python import_urdf; not in noether_spec_import_urdf)";
                         }));
    } catch (const std::exception& e) {
        return set_error(NOETHER_BAD_INPUT, std::string("noether_spec_import_urdf: ") + e.what());
    }
    *s = std::move(work);
    return set_error(NOETHER_OK, "");
}

}  // extern "C"
