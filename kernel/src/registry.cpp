// The plugin registry and loader.
//
// Search order: the built-in directory (next to libnoether: <libdir>/noether/plugins), then
// each directory of NOETHER_PLUGIN_PATH, then directories a host or scene adds. Only shared
// libraries are opened; each failure has its own error kind and message.
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "noether/registry.hpp"
#include "noether/sdk/integrator.hpp"

namespace noether {

const char* kind_name(PluginKind k) {
    switch (k) {
        case PluginKind::joint: return "joint";
        case PluginKind::integrator: return "integrator";
        case PluginKind::solver: return "solver";
    }
    return "?";
}

namespace {

std::string canonical(const std::string& path) {
    char buf[PATH_MAX];
    if (realpath(path.c_str(), buf)) return buf;
    return path;
}

bool ends_with(const std::string& s, const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// True if the file starts with the ELF magic number.
bool is_elf(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    unsigned char m[4] = {0, 0, 0, 0};
    const std::size_t n = std::fread(m, 1, 4, f);
    std::fclose(f);
    return n == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

}  // namespace

std::string Registry::builtin_dir() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&Registry::builtin_dir), &info) && info.dli_fname) {
        std::string lib = canonical(info.dli_fname);
        const std::size_t slash = lib.rfind('/');
        if (slash != std::string::npos) return lib.substr(0, slash) + "/noether/plugins";
    }
    return "";
}

Registry& Registry::global() {
    static Registry* reg = [] {
        auto* r = new Registry();  // never destroyed: plugin objects outlive static destructors
        auto keep = [r](std::vector<PluginError> errs) {
            for (auto& e : errs) r->errors_.push_back(std::move(e));
        };
        const std::string builtin = builtin_dir();
        if (!builtin.empty()) keep(r->load_directory(builtin));
        if (const char* env = std::getenv("NOETHER_PLUGIN_PATH")) {
            std::string paths = env;
            std::size_t start = 0;
            while (start <= paths.size()) {
                std::size_t colon = paths.find(':', start);
                if (colon == std::string::npos) colon = paths.size();
                const std::string dir = paths.substr(start, colon - start);
                if (!dir.empty()) keep(r->load_directory(dir));
                start = colon + 1;
            }
        }
        return r;
    }();
    return *reg;
}

const PluginInfo& Registry::add(const noether_plugin_descriptor* d, const std::string& path) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    return add_locked(d, path);
}

const PluginInfo& Registry::add_locked(const noether_plugin_descriptor* d, const std::string& path) {
    const std::string where = path.empty() ? std::string("(in-process)") : path;
    if (!d) throw PluginError(PluginError::Kind::bad_descriptor, path, "plugin " + where + ": noether_plugin() returned null");
    if (d->abi_version != NOETHER_PLUGIN_ABI)
        throw PluginError(PluginError::Kind::abi_mismatch, path,
                          "plugin " + where + ": built for plugin ABI version " + std::to_string(d->abi_version) +
                              ", this kernel has ABI version " + std::to_string(NOETHER_PLUGIN_ABI) +
                              " (rebuild the plugin against this kernel's headers)");
    if (d->size < sizeof(noether_plugin_descriptor))
        throw PluginError(PluginError::Kind::bad_descriptor, path,
                          "plugin " + where + ": descriptor size " + std::to_string(d->size) + " is smaller than " +
                              std::to_string(sizeof(noether_plugin_descriptor)));
    if (d->kind < NOETHER_PLUGIN_JOINT || d->kind > NOETHER_PLUGIN_SOLVER)
        throw PluginError(PluginError::Kind::bad_descriptor, path,
                          "plugin " + where + ": unknown plugin kind " + std::to_string(d->kind));
    if (!d->name || !*d->name || !d->create)
        throw PluginError(PluginError::Kind::bad_descriptor, path, "plugin " + where + ": descriptor has no name or no create function");
    const PluginKind kind = static_cast<PluginKind>(d->kind);
    for (const PluginInfo& p : plugins_)
        if (p.kind == kind && p.name == d->name)
            throw PluginError(PluginError::Kind::duplicate_name, path,
                              std::string("plugin ") + where + ": duplicate " + kind_name(kind) + " name '" + d->name +
                                  "', already loaded from " + (p.path.empty() ? "(in-process)" : p.path));
    void* obj = nullptr;
    std::string thrown;
    try {
        obj = d->create();
    } catch (const std::exception& e) {
        thrown = e.what();
    } catch (...) {
        thrown = "an exception of unknown type";
    }
    if (!thrown.empty())
        throw PluginError(PluginError::Kind::bad_descriptor, path, "plugin " + where + ": create() of '" + d->name +
                                                                       "' threw: " + thrown);
    if (!obj) throw PluginError(PluginError::Kind::bad_descriptor, path, "plugin " + where + ": create() returned null");
    plugins_.push_back(PluginInfo{kind, d->name, d->description ? d->description : "", path, obj});
    return plugins_.back();
}

const PluginInfo& Registry::load_file(const std::string& path_in) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    const std::string path = canonical(path_in);
    for (const PluginInfo& p : plugins_)
        if (p.path == path) return p;  // already loaded
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw PluginError(PluginError::Kind::cannot_open, path, "plugin " + path + ": cannot open: no such file");
    if (!is_elf(path))
        throw PluginError(PluginError::Kind::not_a_library, path,
                          "plugin " + path + ": not a shared library (no ELF header)");
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* e = dlerror();
        throw PluginError(PluginError::Kind::cannot_open, path,
                          "plugin " + path + ": cannot open: " + (e ? e : "unknown dlopen error"));
    }
    dlerror();
    const noether_plugin_descriptor* list = nullptr;
    int count = 0;
    std::string thrown;  // message of an exception escaping the plugin (copied before dlclose)
    try {
        if (void* sym = dlsym(h, "noether_plugin_list")) {
            list = reinterpret_cast<noether_plugin_list_entry>(sym)(&count);
        } else if (void* one = dlsym(h, "noether_plugin")) {
            list = reinterpret_cast<noether_plugin_entry>(one)();
            count = 1;
        } else {
            dlclose(h);
            throw PluginError(PluginError::Kind::no_entry_point, path,
                              "plugin " + path + ": no entry point: the library exports neither 'noether_plugin' "
                              "nor 'noether_plugin_list'");
        }
    } catch (const PluginError&) {
        throw;
    } catch (const std::exception& e) {
        thrown = e.what();
    } catch (...) {
        thrown = "an exception of unknown type";
    }
    if (!thrown.empty()) {
        // The library stays loaded: nothing of it may be alive after dlclose, and the
        // exception object was already destroyed above.
        throw PluginError(PluginError::Kind::bad_descriptor, path, "plugin " + path + ": its entry point threw: " + thrown);
    }
    if (!list || count < 1 || count > 1024) {
        dlclose(h);
        throw PluginError(PluginError::Kind::bad_descriptor, path,
                          "plugin " + path + ": the entry point returned no descriptor (count " + std::to_string(count) + ")");
    }
    const PluginInfo* first = nullptr;
    std::string errors;
    PluginError::Kind kind = PluginError::Kind::bad_descriptor;
    for (int i = 0; i < count; ++i) {
        try {
            const PluginInfo& p = add_locked(&list[i], path);
            if (!first) first = &p;
        } catch (const PluginError& e) {
            if (errors.empty()) kind = e.kind();
            errors += (errors.empty() ? "" : "; ") + std::string(e.what());
        }
    }
    if (!errors.empty()) {
        if (!first) dlclose(h);
        throw PluginError(kind, path, errors);
    }
    return *first;
}

std::vector<PluginError> Registry::load_directory(const std::string& dir_in) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::vector<PluginError> errs;
    const std::string dir = canonical(dir_in);
    if (std::find(loaded_dirs_.begin(), loaded_dirs_.end(), dir) != loaded_dirs_.end()) return errs;
    DIR* d = opendir(dir.c_str());
    if (!d) {
        errs.emplace_back(PluginError::Kind::cannot_open, dir, "plugin directory " + dir + ": cannot open");
        return errs;
    }
    loaded_dirs_.push_back(dir);
    std::vector<std::string> files;
    while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (ends_with(name, ".so")) files.push_back(dir + "/" + name);
    }
    closedir(d);
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
        try {
            load_file(f);
        } catch (const PluginError& e) {
            errs.push_back(e);
        }
    }
    return errs;
}

const PluginInfo* Registry::find(PluginKind kind, const std::string& name) const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    for (const PluginInfo& p : plugins_)
        if (p.kind == kind && p.name == name) return &p;
    return nullptr;
}

const JointType* Registry::joint(const std::string& name) const {
    const PluginInfo* p = find(PluginKind::joint, name);
    return p ? static_cast<const JointType*>(p->object) : nullptr;
}
const Integrator* Registry::integrator(const std::string& name) const {
    const PluginInfo* p = find(PluginKind::integrator, name);
    return p ? static_cast<const Integrator*>(p->object) : nullptr;
}
const Solver* Registry::solver(const std::string& name) const {
    const PluginInfo* p = find(PluginKind::solver, name);
    return p ? static_cast<const Solver*>(p->object) : nullptr;
}

std::vector<std::string> Registry::names(PluginKind kind) const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::vector<std::string> out;
    for (const PluginInfo& p : plugins_)
        if (p.kind == kind) out.push_back(p.name);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<PluginInfo> Registry::list() const {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::vector<PluginInfo> out(plugins_.begin(), plugins_.end());
    std::sort(out.begin(), out.end(), [](const PluginInfo& a, const PluginInfo& b) {
        return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
    });
    return out;
}

std::string Registry::integrators_where(const std::function<bool(const Integrator&)>& pred) const {
    std::string out;
    for (const std::string& n : names(PluginKind::integrator)) {
        const Integrator* i = integrator(n);
        if (i && pred(*i)) out += (out.empty() ? "" : ", ") + n;
    }
    return out;
}

}  // namespace noether
