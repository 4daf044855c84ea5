// The C API of the URDF importer (noether_urdf.h).
#include "noether_urdf.h"

#include "noether/sdk/c_bridge.hpp"
#include "noether/urdf.hpp"

extern "C" {

int noether_spec_import_urdf(noether_spec* spec, const char* path, int fixed_base, const char* prefix) {
    return noether::c_bridge::import_spec(
        spec, path, "noether_spec_import_urdf",
        [&](noether::Spec& work) {
            noether::urdf::Options o;
            o.fixed_base = fixed_base != 0;
            if (prefix) o.prefix = prefix;
            noether::urdf::import(work, path, o);
        },
        // The importer's suggestions in this call's terms (fixed_base); the settings it lacks are named.
        [](const std::string& name, const std::string& value) {
            if (name == "base") return std::string("fixed_base = ") + (value == "fixed" ? "1" : "0");
            return "the URDF importer's setting '" + name + "' = " + value +
                   " (Lua w:urdf, Python import_urdf; not in noether_spec_import_urdf)";
        });
}

}  // extern "C"
