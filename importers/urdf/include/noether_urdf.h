/* noether_urdf.h — the C API of the URDF importer (library libnoether_urdf; the kernel API is
 * noether.h). docs/c_api.md. */
#ifndef NOETHER_URDF_H
#define NOETHER_URDF_H

#include "noether.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Import a URDF robot into the spec (its bodies, joints and loop closures, named with `prefix`
 * prepended, which may be NULL) and move it to a configuration that satisfies every joint, as
 * `noether import` does. fixed_base: 1 welds the root link to the world, 0 lets it float.
 * NOETHER_BAD_INPUT with a message naming the file, the line and the element if the file cannot
 * be used; the spec is then unchanged. Then noether_compile(spec) as usual. */
NOETHER_API int noether_spec_import_urdf(noether_spec* spec, const char* path, int fixed_base, const char* prefix);

#ifdef __cplusplus
}
#endif

#endif /* NOETHER_URDF_H */
