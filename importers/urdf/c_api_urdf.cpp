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
        return set_error(NOETHER_BAD_INPUT, e.what());
    } catch (const std::exception& e) {
        return set_error(NOETHER_BAD_INPUT, std::string("noether_spec_import_urdf: ") + e.what());
    }
    *s = std::move(work);
    return set_error(NOETHER_OK, "");
}

}  // extern "C"
