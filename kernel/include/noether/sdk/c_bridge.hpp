// noether/sdk/c_bridge.hpp — for libraries that extend the C API (noether_lua.h, noether_urdf.h, the
// ensembles of libnoether_parallel):
// turning C++ objects into the C API's handles and back, and its per-thread error message.
// Hosts use noether.h, not this.
#pragma once

#include "noether/export.h"

#include <exception>
#include <memory>
#include <string>

#include "noether.h"
#include "noether/error.hpp"
#include "noether/model.hpp"
#include "noether/run.hpp"
#include "noether/spec.hpp"

namespace noether {
namespace c_bridge {

NOETHER_API noether_model* wrap_model(std::shared_ptr<const Model> model);
NOETHER_API noether_run* wrap_run(std::unique_ptr<Run> run);
// A run owned elsewhere (kept alive by `run`, e.g. an aliasing pointer into a loaded Lua scene)
// whose noether_run_steps pass `hooks` (may be null; must live as long as `run`).
NOETHER_API noether_run* wrap_hosted_run(std::shared_ptr<Run> run, RunHooks* hooks);
NOETHER_API Spec* spec_of(noether_spec* spec);
// Leave `message` for noether_last_error() on this thread; returns `status` (NOETHER_OK and ""
// clear it, as every call of the C API does on entry).
NOETHER_API int set_error(int status, const std::string& message);
NOETHER_API std::shared_ptr<const Model> model_of(const noether_model* m);
// A C handle that views a Data it does not own (noether_ensemble_data's members): made, pointed
// elsewhere and freed by the extending library.
NOETHER_API noether_data* data_view(Data* d);
NOETHER_API void retarget_data_view(noether_data* view, Data* d);
NOETHER_API void release_data_view(noether_data* view);

// Run f() (returning a status) and turn an exception into a status and the message on this
// thread: ModelError -> NOETHER_BAD_INPUT, UsageError -> NOETHER_USAGE, any other -> BAD_INPUT.
template <class F>
int guarded(F&& f) {
    try {
        return f();
    } catch (const ModelError& e) {
        return set_error(NOETHER_BAD_INPUT, e.what());
    } catch (const UsageError& e) {
        return set_error(NOETHER_USAGE, e.what());
    } catch (const std::exception& e) {
        return set_error(NOETHER_BAD_INPUT, e.what());
    }
}

// An importer's C entry point (noether_spec_import_urdf, _mjcf): import(work) into a copy of the
// spec, assemble it, and only then replace the caller's spec. Errors leave it unchanged and come
// back as NOETHER_BAD_INPUT, the importer's suggestions worded by word(NAME, VALUE) (see
// reword_import_settings); `fn` names the call for other exceptions.
template <class Import, class Word>
int import_spec(noether_spec* spec, const char* path, const char* fn, Import&& import, Word&& word) {
    Spec* s = spec_of(spec);
    if (!s || !path) return set_error(NOETHER_USAGE, std::string(fn) + ": spec and path are required");
    Spec work = *s;
    try {
        import(work);
        const AssemblyReport a = assemble(work);
        if (!a.converged)
            return set_error(NOETHER_BAD_INPUT, std::string(path) + ": the joints cannot all be satisfied (the assembly "
                                                                    "stopped at violation " + std::to_string(a.final_violation) + ")");
    } catch (const Error& e) {
        return set_error(NOETHER_BAD_INPUT, reword_import_settings(e.what(), word));
    } catch (const std::exception& e) {
        return set_error(NOETHER_BAD_INPUT, std::string(fn) + ": " + e.what());
    }
    *s = std::move(work);
    return set_error(NOETHER_OK, "");
}

}  // namespace c_bridge
}  // namespace noether
