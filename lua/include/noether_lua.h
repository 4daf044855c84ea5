/* noether_lua.h — the C API for Lua scenes (library libnoether_lua; the kernel API is noether.h). */
#ifndef NOETHER_LUA_H
#define NOETHER_LUA_H

#include "noether.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run a scene script as `noether run` does. `set` holds nset "name=value" strings (the --set
 * parameters). Returns 0 (ok), 1 (a step failed) or 2 (bad input); noether_script_error() has the
 * message. If summary_json is not NULL it receives the run summary as JSON (free it with
 * noether_free). */
NOETHER_API int noether_run_script(const char* path, int nset, const char* const* set, char** summary_json);
/* The same in the sandbox for untrusted scenes (docs/lua.md, "Sandbox"): safe Lua libraries
 * only, files written only below sandbox_dir, no plugin directories, heap and time limits. */
NOETHER_API int noether_run_script_sandboxed(const char* path, int nset, const char* const* set, const char* sandbox_dir,
                                             char** summary_json);
/* The message of the last failed noether_run_script on this thread. */
NOETHER_API const char* noether_script_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NOETHER_LUA_H */
