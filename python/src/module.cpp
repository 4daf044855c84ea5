// The Python module `noether` (its compiled part, noether._noether): scenes from Lua scripts, URDF
// files or built body by body; runs stepped with the GIL released; state as numpy arrays that
// view the kernel's own memory where its layout allows (docs/python.md).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "noether/ensemble.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/lua.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"
#include "noether/mjcf.hpp"
#include "noether/urdf.hpp"

namespace py = pybind11;
using namespace noether;

namespace {

// The exceptions: noether.Error and its kinds (the messages are the kernel's, with file:line).
PyObject* g_error = nullptr;
PyObject* g_model_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_script_error = nullptr;
PyObject* g_step_error = nullptr;

[[noreturn]] void raise(PyObject* kind, const std::string& msg) {
    PyErr_SetString(kind, msg.c_str());
    throw py::error_already_set();
}

Vec3 vec3(const std::vector<double>& v, const char* what) {
    if (v.size() != 3) raise(g_usage_error, std::string(what) + ": expected 3 numbers, got " + std::to_string(v.size()));
    return {v[0], v[1], v[2]};
}
Quat quat(const std::vector<double>& v, const char* what) {
    if (v.size() != 4) raise(g_usage_error, std::string(what) + ": expected a quaternion (w, x, y, z), got " +
                                                std::to_string(v.size()) + " numbers");
    return {v[0], v[1], v[2], v[3]};
}

// Lua scripts' shared helpers (scripts/lib): NOETHER_SCRIPTS_DIR, the installed share/noether,
// else the source tree this module was built from.
std::string scripts_dir() {
    if (const char* e = std::getenv("NOETHER_SCRIPTS_DIR"); e && *e) return e;
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&scripts_dir), &info) && info.dli_fname) {
        std::string dir = info.dli_fname;
        dir = dir.substr(0, dir.rfind('/')) + "/../../../../share/noether/scripts";  // lib/python3/dist-packages/noether
        if (access((dir + "/lib/chains.lua").c_str(), R_OK) == 0) return dir;
    }
#ifdef NOETHER_SCRIPTS_DIR_DEFAULT
    return NOETHER_SCRIPTS_DIR_DEFAULT;
#else
    return "";
#endif
}

// One thread at a time (docs/python.md, "Threads"): the Worlds and Ensembles a thread is using
// with the GIL released. Read and written only with the GIL held.
std::set<const void*> g_busy;

// The World whose Python on_step callback this thread is running (inside its step): the
// callback may read and write that world (it is this thread's own step), not step it.
thread_local const void* t_in_callback = nullptr;

// Raise noether.UsageError if another thread is using `object` (a "World" or an "Ensemble").
void check_idle(const void* object, const char* kind) {
    if (g_busy.count(object) && t_in_callback != object)
        raise(g_usage_error, std::string("this ") + kind + " is being stepped by another thread: a " + kind +
                                 " is used by one thread at a time (step in parallel with one World per thread, or an "
                                 "Ensemble)");
}

// f() with the GIL released and `object` marked busy; marked and unmarked with the GIL held, so
// that every check_idle sees it.
template <class F>
auto released(const void* object, const char* kind, F&& f) {
    check_idle(object, kind);
    struct Busy {
        const void* o;
        explicit Busy(const void* x) : o(x) { g_busy.insert(o); }
        ~Busy() { g_busy.erase(o); }
    } busy(object);
    py::gil_scoped_release release;  // destroyed first: the GIL is back when the mark goes
    return f();
}

// A simulation: one compiled Model and its Run (state, outputs, summary).
class World;
// The Worlds alive (GIL held), finished at the interpreter's exit by finish_live_worlds.
std::set<World*> g_live;

// Report notes about a world's outputs as RuntimeWarnings; never raises (a destructor, atexit).
void warn_notes(const std::vector<std::string>& notes) {
    for (const std::string& n : notes)
        if (PyErr_WarnEx(PyExc_RuntimeWarning, ("noether: " + n).c_str(), 1) < 0) PyErr_WriteUnraisable(nullptr);
}

class World {
public:
    World(std::shared_ptr<const Model> model, double duration = -1) : run_(std::make_shared<Run>(std::move(model))), duration_(duration) {
        g_live.insert(this);
    }
    // A world of a loaded scene: its run belongs to the scene (kept alive by `run`), whose Lua
    // callbacks `lua_hooks` runs at each step (nullptr: none, or turned off by the host).
    World(std::shared_ptr<Run> run, RunHooks* lua_hooks, double duration)
        : run_(std::move(run)), duration_(duration), hooks_(this, lua_hooks) {
        g_live.insert(this);
    }
    World(const World&) = delete;
    World& operator=(const World&) = delete;
    // Garbage-collected or deleted: the outputs are finished like close() (a file is never left
    // as .part without a warning that says so).
    ~World() {
        g_live.erase(this);
        warn_notes(finish_outputs(std::string()));
    }

    // Finish the outputs (complete files get their names; idempotent). With a reason, the run is
    // stopped first: its outputs stay <file>.part and the notes say so.
    std::vector<std::string> close(const std::string& abort_why = std::string()) {
        check_idle();
        return finish_outputs(abort_why);
    }

    std::string host_note;  // what the script would do while stepping that this world does not (load)

    // The state and the run, for a binding that holds the GIL. A World is used by one thread at a
    // time: while a thread steps it (GIL released), any other use from another thread raises
    // noether.UsageError instead of racing the step (docs/python.md, "Threads").
    Run& run() {
        check_idle();
        return *run_;
    }
    const Model& model() const { return run_->model(); }  // immutable: safe from any thread
    Data& data() {
        check_idle();
        return run_->data();
    }
    double duration() const { return duration_; }

    template <class F>
    auto released(F&& f) {
        return ::released(this, "World", std::forward<F>(f));
    }
    // n steps with the GIL released; raises noether.StepError if a step fails.
    void steps(long long n) {
        check_open();
        if (t_in_callback == this)
            raise(g_usage_error, "a world cannot be stepped from its own on_step callback (it runs inside the step)");
        // a UsageError (too many steps) becomes noether.UsageError (translate); an exception of a
        // callback propagates (the step it came from is not taken)
        RunHooks* hooks = hooks_.lua || !hooks_.python.is_none() ? &hooks_ : nullptr;
        const bool ok = released([&] { return run_->steps(n, hooks); });
        if (!ok) raise(g_step_error, "the simulation failed at t = " + std::to_string(data().time) + " s: " + run_->failure());
    }
    void check_idle() const { ::check_idle(this, "World"); }
    void check_open() const {
        if (run_->finished()) raise(g_usage_error, "the world is finished (outputs closed); make a new one");
    }
    // The kinematics and dynamics queries (docs/queries.md), made at the first one.
    Kinematics& kinematics() {
        check_idle();
        if (!kin_) kin_ = std::make_unique<Kinematics>(run_->model_ptr());
        return *kin_;
    }

    // The Python controller called before every step with this world (None: none).
    void set_on_step(py::object fn) {
        check_idle();
        if (!fn.is_none() && !PyCallable_Check(fn.ptr()))
            raise(g_usage_error, "on_step: expected a function(world) called before every step, or None");
        hooks_.python = std::move(fn);
    }
    bool lua_callbacks() const { return hooks_.lua != nullptr; }

private:
    std::vector<std::string> finish_outputs(const std::string& abort_why) {
        std::vector<std::string> notes;
        if (!abort_why.empty()) run_->abort(abort_why);
        run_->finish(&notes);
        return notes;
    }

    // The callbacks of a step: the scene's Lua ones first (as `noether run` runs them), then the
    // Python on_step with the GIL taken (the step itself runs without it).
    struct Hooks final : RunHooks {
        World* self = nullptr;
        RunHooks* lua = nullptr;
        py::object python = py::none();
        Hooks() = default;
        Hooks(World* w, RunHooks* l) : self(w), lua(l) {}
        void before_step(Run& run) override {
            if (lua) lua->before_step(run);
            if (python.is_none()) return;
            py::gil_scoped_acquire gil;
            const void* outer = t_in_callback;
            t_in_callback = self;
            struct Restore {
                const void* o;
                ~Restore() { t_in_callback = o; }
            } restore{outer};
            python(py::cast(self, py::return_value_policy::reference));
        }
        void on_sample(Run& run, int output) override {
            if (lua) lua->on_sample(run, output);
        }
    };

    std::shared_ptr<Run> run_;
    double duration_;
    Hooks hooks_{this, nullptr};
    std::unique_ptr<Kinematics> kin_;
};

// Queries at a world's current state (docs/queries.md): n-vectors and row-major matrices as numpy.
py::array_t<double> dof_array(Kinematics& k, py::array_t<double, py::array::c_style | py::array::forcecast> v,
                              const char* what) {
    if (v.ndim() != 1 || v.shape(0) != k.n())
        raise(g_usage_error, std::string(what) + " must have " + std::to_string(k.n()) +
                                 " numbers (one per joint coordinate), got shape (" +
                                 (v.ndim() ? std::to_string(v.shape(0)) : std::string()) + (v.ndim() > 1 ? ", ..." : "") + ")");
    for (py::ssize_t i = 0; i < v.shape(0); ++i)
        if (!std::isfinite(v.at(i))) raise(g_usage_error, std::string(what) + "[" + std::to_string(i) + "] is not finite");
    return v;
}

// An Ensemble for Python: the kernel's members plus a K x n block of joint inputs (row i: member
// i's actuation, applied before each of its steps once the block has been asked for).
struct PyEnsemble {
    std::shared_ptr<const Model> base;  // the world's Model (the variations' base)
    std::shared_ptr<Ensemble> e;
    // Per-member input blocks, K × ndofs row-major each: actuation, servo target positions and
    // velocities, servo gains. A block is off until first asked for; then it is what its members
    // get before each step.
    static constexpr int kBlocks = 5;
    static constexpr std::vector<double> Data::*kFields[kBlocks] = {
        &Data::actuation, &Data::target_position, &Data::target_velocity, &Data::servo_kp, &Data::servo_kv};
    std::vector<double> blocks[kBlocks];
    bool on[kBlocks] = {false, false, false, false, false};
    bool controller_set = false;
    PyEnsemble(std::shared_ptr<const Model> model, int members, int threads)
        : base(model), e(std::make_shared<Ensemble>(std::move(model), members)) {
        e->set_threads(threads);
    }
    int ndofs() const { return e->model().total_dofs; }
    // Turn block b on: it starts as the members' current values; from now on it is what they get.
    std::vector<double>& use_block(int b) {
        if (on[b]) return blocks[b];
        const int n = ndofs();
        blocks[b].assign(static_cast<std::size_t>(e->size()) * n, 0.0);
        for (int i = 0; i < e->size(); ++i) {
            const std::vector<double>& v = e->data(i).*kFields[b];
            std::copy(v.begin(), v.end(), blocks[b].begin() + static_cast<std::ptrdiff_t>(i) * n);
        }
        on[b] = true;
        if (!controller_set) {
            // On the worker stepping member i: copy its rows (no allocation, no GIL).
            e->set_controller([this, n](int i, Data& d) {
                for (int k = 0; k < kBlocks; ++k) {
                    if (!on[k]) continue;
                    const double* row = blocks[k].data() + static_cast<std::size_t>(i) * n;
                    std::copy(row, row + n, (d.*kFields[k]).begin());
                }
            });
            controller_set = true;
        }
        return blocks[b];
    }
    void check_member(int i) const {
        if (i < 0 || i >= e->size())
            raise(g_usage_error, "member " + std::to_string(i) + " out of range (the ensemble has " +
                                     std::to_string(e->size()) + " members)");
    }
};

void ensemble_idle(const PyEnsemble& e) { check_idle(&e, "Ensemble"); }

// atexit: every World still alive finishes its outputs, as if closed (a module-level World is
// never garbage-collected before the interpreter ends).
void finish_live_worlds() {
    const std::vector<World*> live(g_live.begin(), g_live.end());
    for (World* w : live) warn_notes(w->close());
}

// A numpy array over `count` records of `stride` bytes starting at `data`, `cols` doubles each,
// kept alive by `owner`; read-only unless writable.
py::array view(py::handle owner, const void* data, py::ssize_t count, py::ssize_t cols, py::ssize_t stride, bool writable) {
    py::array a(py::dtype::of<double>(), {count, cols}, {stride, static_cast<py::ssize_t>(sizeof(double))},
                static_cast<const double*>(data), owner);
    if (!writable) a.attr("setflags")(py::arg("write") = false);
    return a;
}
py::array view1(py::handle owner, const double* data, py::ssize_t count, bool writable) {
    py::array a(py::dtype::of<double>(), {count}, {static_cast<py::ssize_t>(sizeof(double))}, data, owner);
    if (!writable) a.attr("setflags")(py::arg("write") = false);
    return a;
}

// Properties of a World that view one of its Data's arrays: per body (the first `cols` doubles
// of each element) or per DOF.
template <class T>
auto body_view(std::vector<T> Data::*field, py::ssize_t cols, bool writable) {
    return [field, cols, writable](py::object self) {
        World& w = self.cast<World&>();
        return view(self, (w.data().*field).data(), w.model().nbodies(), cols, sizeof(T), writable);
    };
}
std::string g_num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

void finite_or_raise(double v, const char* fn, const std::string& joint, const char* what) {
    if (!std::isfinite(v)) raise(g_usage_error, std::string(fn) + ": joint '" + joint + "': " + what + " must be finite, got " + g_num(v));
}

auto ensemble_block(int b) {
    return [b](py::object self) {
        PyEnsemble& e = self.cast<PyEnsemble&>();
        ensemble_idle(e);
        std::vector<double>& v = e.use_block(b);
        return view(self, v.data(), e.e->size(), e.ndofs(), e.ndofs() * static_cast<py::ssize_t>(sizeof(double)), true);
    };
}
auto dof_view(std::vector<double> Data::*field, bool writable) {
    return [field, writable](py::object self) {
        World& w = self.cast<World&>();
        return view1(self, (w.data().*field).data(), w.model().total_dofs, writable);
    };
}

// The kernel names options in its suggestions as "option 'NAME' = VALUE" or "(option 'NAME')";
// in Python they are keyword arguments: options={'NAME': VALUE} for integrator options (load,
// Spec.option), NAME=VALUE for integrator and dt (Spec, import_urdf).
std::string py_wording(const std::string& msg_in) {
    // The URDF importer's settings are import_urdf's keyword arguments.
    const std::string msg = reword_import_settings(msg_in, [](const std::string& name, const std::string& value) {
        auto py = [](const std::string& v) { return v == "true" ? std::string("True") : v == "false" ? std::string("False") : v; };
        if (name == "base") return std::string("fixed_base=") + (value == "fixed" ? "True" : "False");
        if (name == "positions") return "positions={'" + value + "': ...}";
        return name + "=" + py(value);
    });
    return reword_options(msg, [](const std::string& name, const std::string& value) {
        return name == "integrator" || name == "dt" || name == "solver" ? name + "=" + value
                                                                        : "options={'" + name + "': " + value + "}";
    });
}

// An imported spec assembled and compiled into a World; the importer's warnings become notes of
// its run (in summary()["warnings"]), in Python's words.
std::shared_ptr<World> assembled_world(Spec& s, const std::string& path, const std::string& file,
                                       const std::vector<std::string>& warnings) {
    const AssemblyReport a = assemble(s);
    if (!a.converged)
        raise(g_model_error, path + ": the joints cannot all be satisfied (assembly stopped at violation " +
                                 std::to_string(a.final_violation) + ")");
    auto w = std::make_shared<World>(compile(s));
    for (const std::string& x : warnings) w->run().add_note(file + ": " + py_wording(x));
    return w;
}

py::dict summary_dict(const RunSummary& s) {
    py::dict d;
#define NOETHER_PY_FIELD(type, name) d[#name] = s.name;
    NOETHER_SUMMARY_FIELDS(NOETHER_PY_FIELD)
#undef NOETHER_PY_FIELD
    std::vector<std::string> warnings;
    for (const std::string& w : s.warnings) warnings.push_back(py_wording(w));
    d["warnings"] = warnings;
    return d;
}

std::vector<double> as_vector(py::array_t<double, py::array::c_style | py::array::forcecast> a, std::size_t n,
                              const char* what) {
    if (static_cast<std::size_t>(a.size()) != n)
        raise(g_usage_error, std::string(what) + ": expected " + std::to_string(n) + " values, got " + std::to_string(a.size()));
    return std::vector<double>(a.data(), a.data() + n);
}

// The body/joint index of a name, or a UsageError naming what exists.
int body_of(const Model& m, const std::string& name) {
    const int b = m.body_index(name);
    if (b < 0) raise(g_usage_error, "no body named '" + name + "'");
    return b;
}
int joint_of(const Model& m, const std::string& name) {
    const int j = m.joint_index(name);
    if (j < 0) raise(g_usage_error, "no joint named '" + name + "'");
    return j;
}

// The joint of a servo setter, by name; it must have a servo.
const JointInfo& servo_joint(World& w, const std::string& joint, const char* fn) {
    const JointInfo& j = w.model().joints[joint_of(w.model(), joint)];
    if (j.servo == ServoSpec::Kind::none)
        raise(g_usage_error, std::string(fn) + ": joint '" + joint + "' has no servo (declare one: Spec.servo or w:servo{} in Lua)");
    return j;
}


void add_output(World& w, const std::string& file, const std::vector<std::string>& channels, int every) {
    OutputSpec o;
    o.file = file;
    o.channels = channels;
    o.every = every;
    o.origin = {"python", 0, ""};
    w.run().add_output(o);
}

std::vector<std::shared_ptr<World>> load_worlds(const std::string& path, const std::map<std::string, std::string>& set,
                                                const std::map<std::string, std::string>& options,
                                                const std::optional<std::string>& sandbox, double time_limit,
                                                double memory_mb, bool lua_callbacks) {
    lua::ScriptOptions opt;
    if (sandbox) {
        // The scene's script runs as `noether run --sandbox DIR` runs it (docs/lua.md, "Sandbox");
        // the steps the host then takes are the host's own.
        if (!(time_limit > 0) || !std::isfinite(time_limit))
            raise(g_usage_error, "load: time_limit must be a positive number of seconds, got " + std::to_string(time_limit));
        if (!(memory_mb >= 1) || !(memory_mb <= 1e6))
            raise(g_usage_error, "load: memory_mb must be from 1 to 1e6 (MiB of Lua heap), got " + std::to_string(memory_mb));
        opt.sandbox = true;
        opt.sandbox_dir = *sandbox;
        opt.sandbox_seconds = time_limit;
        opt.sandbox_memory = static_cast<std::size_t>(memory_mb * 1048576.0);
    }
    opt.params = set;
    opt.integrator_options = options;
    const std::string dir = scripts_dir();
    if (!dir.empty()) opt.lua_path.push_back(dir);
    lua::ScriptResult r;
    std::shared_ptr<lua::Scene> scene;
    {
        py::gil_scoped_release release;
        scene = lua::load_scene(path, opt, &r);
    }
    if (!scene) raise(g_script_error, r.error);
    if (scene->worlds() == 0) raise(g_script_error, path + ": the script made no world (return it, or call w:compile())");
    std::vector<std::shared_ptr<World>> out;
    for (int i = 0; i < scene->worlds(); ++i) {
        // The scene's Lua callbacks run at this world's steps unless the host turned them off.
        auto w = std::make_shared<World>(scene->run(i), lua_callbacks ? scene->hooks(i) : nullptr, scene->duration(i));
        if (!lua_callbacks && scene->hooks(i))
            w->host_note = "the scene's Lua callbacks (w:on_step, output callbacks) are off (lua_callbacks=False)";
        out.push_back(w);
    }
    return out;
}

// Any noether::Error escaping a binding becomes the matching Python exception.
void translate(std::exception_ptr p) {
    try {
        if (p) std::rethrow_exception(p);
    } catch (const lua::ScriptError& e) {
        PyErr_SetString(g_script_error, e.what());
    } catch (const ModelError& e) {
        PyErr_SetString(g_model_error, py_wording(e.what()).c_str());
    } catch (const UsageError& e) {
        PyErr_SetString(g_usage_error, py_wording(e.what()).c_str());
    } catch (const Error& e) {
        PyErr_SetString(g_error, py_wording(e.what()).c_str());
    }
}

// Integrator options from a dict: a number (or bool) as a numeric option, a string as a word
// option (e.g. {'newton': 'exact'}); anything else is a TypeError naming the option.
void set_options(Spec& s, const py::dict& options) {
    for (const auto& kv : options) {
        const std::string name = py::str(kv.first);
        if (py::isinstance<py::str>(kv.second)) s.options.extra_lists[name] = {py::cast<std::string>(kv.second)};
        else if (py::isinstance<py::float_>(kv.second) || py::isinstance<py::int_>(kv.second))
            s.options.extra[name] = py::cast<double>(kv.second);  // (bool is an int) checked by compile
        else
            throw py::type_error("options: '" + name + "' must be a number or a string, got " +
                                 std::string(py::str(py::type::of(kv.second).attr("__name__"))));
    }
}

}  // namespace

PYBIND11_MODULE(_noether, mod) {
    mod.doc() = "noether: articulated rigid-body mechanisms with variational integrators (docs/python.md)";
    mod.attr("__version__") = noether::version();
    py::module_::import("atexit").attr("register")(py::cpp_function(&finish_live_worlds));

    static py::exception<Error> error(mod, "Error");
    g_error = error.ptr();
    g_model_error = py::exception<ModelError>(mod, "ModelError", error.ptr()).ptr();
    g_usage_error = py::exception<UsageError>(mod, "UsageError", error.ptr()).ptr();
    static py::exception<std::runtime_error> script_error(mod, "ScriptError", error.ptr());
    g_script_error = script_error.ptr();
    static py::exception<std::logic_error> step_error(mod, "StepError", error.ptr());
    g_step_error = step_error.ptr();
    py::register_exception_translator(&translate);

    // ---- building a scene body by body ------------------------------------------------------
    py::class_<Spec>(mod, "Spec", "A mechanism being described (Spec → compile() → World).")
        .def(py::init([](std::vector<double> gravity, double dt, const std::string& integrator, const std::string& solver) {
                 Spec s;
                 s.gravity = vec3(gravity, "gravity");
                 s.options.dt = dt;
                 s.options.integrator = integrator;
                 s.options.solver = solver;
                 s.origin = {"python", 0, ""};
                 return s;
             }),
             py::arg("gravity") = std::vector<double>{0, 0, -9.81}, py::arg("dt") = 0.01,
             py::arg("integrator") = "vi-maximal", py::arg("solver") = "auto")
        .def("body",
             [](Spec& s, const std::string& name, double mass, std::vector<double> inertia, std::vector<double> position,
                std::vector<double> orientation, std::vector<double> velocity, std::vector<double> angular_velocity) {
                 BodySpec& b = s.add_body(name);
                 b.mass = mass;
                 if (inertia.size() == 3) b.inertia = Mat3::diag(inertia[0], inertia[1], inertia[2]);
                 else if (inertia.size() == 9)
                     for (int i = 0; i < 9; ++i) b.inertia.m[i / 3][i % 3] = inertia[i];
                 else
                     raise(g_usage_error, "body '" + name + "': inertia: 3 principal moments or 9 components, got " +
                                              std::to_string(inertia.size()) + " numbers");
                 b.position = vec3(position, "position");
                 b.orientation = quat(orientation, "orientation");
                 b.velocity = vec3(velocity, "velocity");
                 b.angular_velocity = vec3(angular_velocity, "angular_velocity");
                 b.origin = {"python", 0, ""};
             },
             py::arg("name"), py::arg("mass"), py::arg("inertia"), py::arg("position") = std::vector<double>{0, 0, 0},
             py::arg("orientation") = std::vector<double>{1, 0, 0, 0}, py::arg("velocity") = std::vector<double>{0, 0, 0},
             py::arg("angular_velocity") = std::vector<double>{0, 0, 0},
             "Add a body: mass [kg], inertia about the CoM in body axes, CoM position (world), orientation (w, x, y, z).")
        .def("joint",
             [](Spec& s, const std::string& name, const std::string& type, const std::string& parent, const std::string& child,
                std::optional<std::vector<double>> anchor, std::optional<std::vector<double>> axis,
                std::optional<std::vector<double>> axis2, std::vector<double> stiffness, std::vector<double> damping,
                std::vector<double> lower, std::vector<double> upper, std::vector<double> armature) {
                 JointSpec& j = s.add_joint(name, type, parent, child);
                 if (anchor) j.anchor = vec3(*anchor, "anchor");
                 if (axis) j.axis = vec3(*axis, "axis");
                 if (axis2) j.axis2 = vec3(*axis2, "axis2");
                 j.stiffness = stiffness;
                 j.damping = damping;
                 j.armature = armature;
                 j.lower = lower;
                 j.upper = upper;
                 j.limited = !lower.empty() || !upper.empty();
                 j.origin = {"python", 0, ""};
             },
             py::arg("name"), py::arg("type"), py::arg("parent"), py::arg("child"), py::arg("anchor") = py::none(),
             py::arg("axis") = py::none(), py::arg("axis2") = py::none(), py::arg("stiffness") = std::vector<double>{},
             py::arg("damping") = std::vector<double>{}, py::arg("lower") = std::vector<double>{},
             py::arg("upper") = std::vector<double>{}, py::arg("armature") = std::vector<double>{},
             "Add a joint (parent: a body name or 'world'); anchor and axis in world coordinates at the initial poses;\n"
             "lower/upper: enforced limits (docs/contact.md); armature: an inertia on the joint coordinate.")
        .def("servo",
             [](Spec& s, const std::string& joint, double kp, double kv, std::optional<double> target, const std::string& type,
                double target_velocity, double effort_limit) {
                 JointSpec* j = nullptr;
                 for (JointSpec& x : s.joints)
                     if (x.name == joint) j = &x;
                 if (!j) raise(g_usage_error, "servo: no joint named '" + joint + "' (add the joint first)");
                 if (j->servo.kind != ServoSpec::Kind::none) raise(g_usage_error, "servo: joint '" + joint + "' has a servo already");
                 ServoSpec sv;
                 if (type == "position") sv.kind = ServoSpec::Kind::position;
                 else if (type == "velocity") sv.kind = ServoSpec::Kind::velocity;
                 else raise(g_usage_error, "servo on joint '" + joint + "': type must be 'position' or 'velocity', got '" + type + "'");
                 sv.kp = kp, sv.kv = kv, sv.target = target, sv.target_velocity = target_velocity;
                 sv.effort_limit = effort_limit;
                 sv.origin = {"python", 0, ""};
                 j->servo = sv;
             },
             py::arg("joint"), py::arg("kp") = 0.0, py::arg("kv") = 0.0, py::arg("target") = py::none(),
             py::arg("type") = "position", py::arg("target_velocity") = 0.0, py::arg("effort_limit") = INFINITY,
             "A servo actuator on a 1-DOF joint (docs/servos.md): type 'position' (kp > 0, kv >= 0, target: default\n"
             "the initial coordinate) or 'velocity' (kv > 0); effort_limit > 0. Integrated inside the step.")
        .def("contact",
             [](Spec& s, const std::string& body, const std::string& shape, double radius, double length,
                std::optional<std::vector<double>> size, std::vector<double> position, std::vector<double> orientation,
                double mu, std::vector<double> normal, double offset, const std::string& other, double other_radius,
                std::vector<double> other_position, const std::string& name) {
                 ContactSpec c;
                 if (shape == "point") c.type = ContactSpec::Type::point;
                 else if (shape == "sphere") c.type = ContactSpec::Type::sphere, c.size.x = radius;
                 else if (shape == "capsule") c.type = ContactSpec::Type::capsule, c.size = {radius, length, 0};
                 else if (shape == "box") {
                     if (!size) raise(g_usage_error, "contact on body '" + body + "': a box needs size (edge lengths)");
                     c.type = ContactSpec::Type::box;
                     c.size = vec3(*size, "size");
                 } else {
                     raise(g_usage_error, "contact on body '" + body + "': shape must be 'point', 'sphere', 'capsule' or "
                                          "'box', got '" + shape + "'");
                 }
                 c.name = name;
                 c.body = body;
                 c.pose.x = vec3(position, "position");
                 c.pose.q = quat(orientation, "orientation");
                 c.mu = mu;
                 c.normal = vec3(normal, "normal");
                 c.offset = offset;
                 c.other = other;
                 c.other_radius = other_radius;
                 c.other_position = vec3(other_position, "other_position");
                 c.origin = {"python", 0, ""};
                 s.contacts.push_back(c);
             },
             py::arg("body"), py::arg("shape") = "point", py::arg("radius") = 0.0, py::arg("length") = 0.0,
             py::arg("size") = py::none(), py::arg("position") = std::vector<double>{0, 0, 0},
             py::arg("orientation") = std::vector<double>{1, 0, 0, 0}, py::arg("mu") = 0.0,
             py::arg("normal") = std::vector<double>{0, 0, 1}, py::arg("offset") = 0.0, py::arg("other") = "",
             py::arg("other_radius") = 0.0, py::arg("other_position") = std::vector<double>{0, 0, 0}, py::arg("name") = "",
             "Add a contact (docs/contact.md): a point, sphere, capsule or box on a body against the half-space\n"
             "normal . y >= offset (the ground by default), or a sphere against the sphere of body `other`.")
        .def("coupling",
             [](Spec& s, const std::string& joint, const std::string& leader, double ratio, double offset, const std::string& name,
                int dof, int leader_dof, std::optional<double> lower, std::optional<double> upper, const py::list& more) {
                 CouplingSpec c;
                 for (const py::handle item : more) {  // (joint, ratio) or (joint, ratio, dof)
                     const py::tuple t = py::cast<py::tuple>(item);
                     if (t.size() != 2 && t.size() != 3)
                         throw py::value_error("Spec.coupling: each of 'more' is (joint, ratio) or (joint, ratio, dof), got a tuple of " +
                                               std::to_string(t.size()));
                     c.more.push_back({py::cast<std::string>(t[0]), t.size() == 3 ? py::cast<int>(t[2]) : 0, py::cast<double>(t[1])});
                 }
                 if (lower || upper) {
                     c.range = true;
                     c.lower = lower ? *lower : -INFINITY;
                     c.upper = upper ? *upper : INFINITY;
                 }
                 c.name = name;
                 c.joint = joint;
                 c.leader = leader;
                 c.ratio = ratio;
                 c.offset = offset;
                 c.dof = dof;
                 c.leader_dof = leader_dof;
                 c.origin = {"python", 0, ""};
                 s.couplings.push_back(c);
             },
             py::arg("joint"), py::arg("leader"), py::arg("ratio") = 1.0, py::arg("offset") = 0.0, py::arg("name") = "",
             py::arg("dof") = 0, py::arg("leader_dof") = 0, py::arg("lower") = py::none(), py::arg("upper") = py::none(),
             py::arg("more") = py::list(),
             "Couple joint coordinates (docs/couplings.md): joint = ratio * leader + offset (a gear pair, a mimic\n"
             "joint); dof / leader_dof pick a coordinate of a joint with several (0-based); lower / upper: a range on\n"
             "joint - ratio * leader - offset instead of the equality; more: further leaders [(joint, ratio[, dof]), ...]\n"
             "adding ratio * joint each (up to four coordinates in all). Taken by every integrator but riqn (ranges: vi-maximal).")
        .def("option", [](Spec& s, const std::string& name, double value) { s.options.extra[name] = value; },
             "Set an integrator option (e.g. points for vi-galerkin).")
        .def("option", [](Spec& s, const std::string& name, const std::string& value) { s.options.extra_lists[name] = {value}; },
             "Set an integrator option that is a word (e.g. newton = 'exact').")
        .def("compile", [](const Spec& s) { return std::make_shared<World>(compile(s)); },
             "Compile into a World (raises noether.ModelError listing every problem).");

    // ---- a simulation ------------------------------------------------------------------------
    py::class_<World, std::shared_ptr<World>>(mod, "World", "A compiled mechanism and its state.")
        .def_property_readonly("time", [](World& w) { return w.data().time; })
        .def_property_readonly("dt", [](World& w) { return w.model().options.dt; })
        .def_property_readonly("integrator", [](World& w) { return w.model().options.integrator; })
        .def_property_readonly("duration", &World::duration, "the scene's default duration (-1: none)")
        .def_property_readonly("host_note", [](World& w) { return w.host_note; },
                               "for a scene loaded with lua_callbacks=False that has some: says they are off; else ''")
        .def_property_readonly("lua_callbacks", &World::lua_callbacks,
                               "True when the scene's Lua callbacks (w:on_step, output callbacks) run at this world's steps")
        .def("on_step", &World::set_on_step, py::arg("fn"),
             "Call fn(world) before every step (after the scene's own Lua on_step, if any); None removes it.\n"
             "It may read and write the world's state and inputs; an exception stops the step call.")
        .def_property_readonly("body_names",
                               [](World& w) {
                                   std::vector<std::string> n;
                                   for (const BodyInfo& b : w.model().bodies) n.push_back(b.name);
                                   return n;
                               })
        .def_property_readonly("joint_names",
                               [](World& w) {
                                   std::vector<std::string> n;
                                   for (const JointInfo& j : w.model().joints) n.push_back(j.name);
                                   return n;
                               })
        .def_property_readonly("ndofs", [](World& w) { return w.model().total_dofs; })
        .def("joint_dofs",
             [](World& w, const std::string& name) {
                 const JointInfo& j = w.model().joints[joint_of(w.model(), name)];
                 return py::make_tuple(j.dof_offset, j.dofs);
             },
             "(offset, count) of a joint's coordinates in q, qdot and actuation")
        .def("step", [](World& w, long long n) { w.steps(n); }, py::arg("n") = 1, "Advance n steps (GIL released).")
        .def("run",
             [](World& w, std::optional<double> duration, std::optional<long long> steps) {
                 if (duration && steps) raise(g_usage_error, "run: give duration or steps, not both");
                 w.steps(steps ? *steps : w.run().steps_for(duration ? *duration : (w.duration() >= 0 ? w.duration() : 1.0)));
                 return summary_dict(w.run().summary());
             },
             py::arg("duration") = py::none(), py::arg("steps") = py::none(),
             "Advance for a duration [s] (default: the scene's) or a number of steps; returns the summary.")
        // State: views of the kernel's arrays (no copies). Poses and twists are read-only: set
        // the state through set_joint_state or restore, which keep it consistent.
        .def_property_readonly("poses", body_view(&Data::pose, 7, false),
                               "(nbodies, 7) read-only view: CoM position x y z, orientation w x y z (world)")
        .def_property_readonly("positions", body_view(&Data::pose, 3, false),
                               "(nbodies, 3) read-only view of the CoM positions (world)")
        .def_property_readonly("twists", body_view(&Data::twist, 6, false),
                               "(nbodies, 6) read-only view: CoM velocity (world), angular velocity (body frame)")
        .def_property_readonly("q", dof_view(&Data::coord, false), "joint coordinates, read-only view (ndofs)")
        .def_property_readonly("qdot", dof_view(&Data::rate, false), "joint rates, read-only view (ndofs)")
        .def_property_readonly("actuation", dof_view(&Data::actuation, true),
                               "joint inputs (torques or forces per DOF), a writable view: w.actuation[:] = u")
        .def_property_readonly("target_position", dof_view(&Data::target_position, true),
                               "servo target positions per DOF (docs/servos.md), a writable view; the step refuses non-finite values")
        .def_property_readonly("target_velocity", dof_view(&Data::target_velocity, true),
                               "servo target velocities per DOF, a writable view")
        .def_property_readonly("servo_kp", dof_view(&Data::servo_kp, true),
                               "servo stiffness per DOF, a writable view (>= 0; 0 for a velocity servo)")
        .def_property_readonly("servo_kv", dof_view(&Data::servo_kv, true), "servo damping per DOF, a writable view (>= 0)")
        .def("set_target",
             [](World& w, const std::string& joint, std::optional<double> position, double velocity) {
                 const JointInfo& j = servo_joint(w, joint, "set_target");
                 const int i = j.dof_offset;
                 if (j.servo == ServoSpec::Kind::position) {
                     if (!position) raise(g_usage_error, "set_target: joint '" + joint + "' has a position servo: give its position");
                     finite_or_raise(*position, "set_target", joint, "position");
                     w.data().target_position[i] = *position;
                 }
                 finite_or_raise(velocity, "set_target", joint, "velocity");
                 w.data().target_velocity[i] = velocity;
             },
             py::arg("joint"), py::arg("position") = py::none(), py::arg("velocity") = 0.0,
             "The servo targets of a joint for the coming steps (a velocity servo: velocity only).")
        .def("set_servo",
             [](World& w, const std::string& joint, std::optional<double> kp, std::optional<double> kv) {
                 const JointInfo& j = servo_joint(w, joint, "set_servo");
                 const int i = j.dof_offset;
                 for (auto [name, v] : {std::pair<const char*, std::optional<double>>{"kp", kp}, {"kv", kv}})
                     if (v && (!std::isfinite(*v) || *v < 0))
                         raise(g_usage_error, "set_servo: joint '" + joint + "': " + name + " must be non-negative and finite, got " +
                                                  g_num(*v));
                 if (kp && *kp != 0 && j.servo == ServoSpec::Kind::velocity)
                     raise(g_usage_error, "set_servo: joint '" + joint + "': a velocity servo has no kp");
                 if (kp) w.data().servo_kp[i] = *kp;
                 if (kv) w.data().servo_kv[i] = *kv;
             },
             py::arg("joint"), py::arg("kp") = py::none(), py::arg("kv") = py::none(), "Change a servo's gains.")
        .def_property_readonly("applied_force", body_view(&Data::applied_force, 3, true),
                               "(nbodies, 3) writable view: force at each CoM (world) [N], held until changed")
        .def_property_readonly("applied_torque", body_view(&Data::applied_torque, 3, true),
                               "(nbodies, 3) writable view: torque on each body (world) [N m]")
        .def("body_index", [](World& w, const std::string& name) { return body_of(w.model(), name); })
        .def("joint_index", [](World& w, const std::string& name) { return joint_of(w.model(), name); })
        .def("set_joint_state",
             [](World& w, py::array_t<double, py::array::c_style | py::array::forcecast> q,
                py::array_t<double, py::array::c_style | py::array::forcecast> qdot) {
                 const std::size_t n = static_cast<std::size_t>(w.model().total_dofs);
                 const std::vector<double> qv = as_vector(q, n, "set_joint_state: q"), dv = as_vector(qdot, n, "set_joint_state: qdot");
                 set_joint_state(w.model(), w.data(), qv.data(), dv.data());
             },
             "Set every joint coordinate and rate (tree mechanisms; poses and velocities follow).")
        .def("monitors",
             [](World& w) {
                 const Monitors m = monitors(w.model(), w.data());
                 py::dict d;
                 d["energy"] = m.total;
                 d["kinetic"] = m.kinetic;
                 d["potential"] = m.potential;
                 d["momentum"] = std::vector<double>{m.momentum.x, m.momentum.y, m.momentum.z};
                 d["angular_momentum"] = std::vector<double>{m.angular_momentum.x, m.angular_momentum.y, m.angular_momentum.z};
                 d["violation"] = m.max_violation;
                 d["worst_joint"] = m.worst_joint >= 0 ? py::object(py::str(w.model().joints[m.worst_joint].name)) : py::none();
                 return d;
             })
        .def("summary", [](World& w) { return summary_dict(w.run().summary()); })
        .def("contacts",
             [](World& w) {
                 const Model& m = w.model();
                 const Data& d = w.data();
                 py::list out;
                 auto v3 = [](const Vec3& v) { return std::vector<double>{v.x, v.y, v.z}; };
                 for (std::size_t k = 0; k < m.contacts.size(); ++k) {
                     const ContactInfo& ci = m.contacts[k];
                     const ContactResult& r = d.contact[k];
                     py::dict c;
                     c["name"] = ci.name;
                     c["body"] = m.bodies[ci.body].name;
                     c["other"] = ci.other >= 0 ? m.bodies[ci.other].name : std::string("world");
                     c["point"] = v3(r.point);
                     c["normal"] = v3(r.normal);
                     c["gap"] = r.gap;
                     c["normal_force"] = r.normal_force;
                     c["friction"] = v3(r.friction);
                     c["active"] = r.active;
                     out.append(c);
                 }
                 return out;
             },
             "What the last step found at every contact point (docs/contact.md): name, body, other, point, normal, "
             "gap, normal_force, friction, active.")
        .def("jacobian",
             [](World& w, const std::string& body, std::optional<std::vector<double>> point) {
                 Kinematics& k = w.kinematics();
                 const int b = w.model().body_index(body);
                 if (b < 0) raise(g_usage_error, "jacobian: no body named '" + body + "'");
                 const int n = k.n();
                 if (!point) {
                     py::array_t<double> J({6, n});
                     k.body_jacobian(w.data().coord.data(), b, J.mutable_data());
                     return J;
                 }
                 py::array_t<double> J({3, n});
                 k.point_jacobian(w.data().coord.data(), b, vec3(*point, "point"), J.mutable_data());
                 return J;
             },
             py::arg("body"), py::arg("point") = py::none(),
             "The body's 6 x n Jacobian (rows: angular velocity, then its CoM's velocity; world), or with point\n"
             "(body frame) that point's 3 x n Jacobian, at the current state (docs/queries.md).")
        .def("mass_matrix",
             [](World& w) {
                 Kinematics& k = w.kinematics();
                 py::array_t<double> M({k.n(), k.n()});
                 k.mass_matrix(w.data().coord.data(), M.mutable_data());
                 return M;
             },
             "The joint-space mass matrix M(q) at the current state.")
        .def("inverse_dynamics",
             [](World& w, py::array_t<double, py::array::c_style | py::array::forcecast> qdd) {
                 Kinematics& k = w.kinematics();
                 auto a = dof_array(k, qdd, "qdd");
                 py::array_t<double> tau(k.n());
                 k.inverse_dynamics(w.data().coord.data(), w.data().rate.data(), a.data(), tau.mutable_data());
                 return tau;
             },
             py::arg("qdd"), "The joint forces M q̈ + C q̇ + g at the current state (gravity only; no springs, inputs, contacts).")
        .def("bias_forces",
             [](World& w) {
                 Kinematics& k = w.kinematics();
                 py::array_t<double> b(k.n());
                 k.bias_forces(w.data().coord.data(), w.data().rate.data(), b.mutable_data());
                 return b;
             },
             "C(q, q̇) q̇ + g(q) at the current state.")
        .def("gravity_forces",
             [](World& w) {
                 Kinematics& k = w.kinematics();
                 py::array_t<double> g(k.n());
                 k.gravity_forces(w.data().coord.data(), g.mutable_data());
                 return g;
             },
             "g(q) at the current state.")
        .def("forward_dynamics",
             [](World& w, py::array_t<double, py::array::c_style | py::array::forcecast> tau) {
                 Kinematics& k = w.kinematics();
                 auto a = dof_array(k, tau, "tau");
                 py::array_t<double> qdd(k.n());
                 k.forward_dynamics(w.data().coord.data(), w.data().rate.data(), a.data(), qdd.mutable_data());
                 return qdd;
             },
             py::arg("tau"), "q̈ = M⁻¹ (τ − C q̇ − g) at the current state.")
        .def("center_of_mass",
             [](World& w) {
                 const Vec3 c = w.kinematics().center_of_mass(w.data().coord.data());
                 return std::vector<double>{c.x, c.y, c.z};
             },
             "The centre of mass of all bodies (world).")
        .def("com_jacobian",
             [](World& w) {
                 Kinematics& k = w.kinematics();
                 py::array_t<double> J({3, k.n()});
                 k.com_jacobian(w.data().coord.data(), J.mutable_data());
                 return J;
             },
             "The centre of mass's 3 x n Jacobian at the current state.")
        .def("momentum",
             [](World& w) {
                 Vec3 p, l;
                 w.kinematics().momentum(w.data().coord.data(), w.data().rate.data(), &p, &l);
                 return py::make_tuple(std::vector<double>{p.x, p.y, p.z}, std::vector<double>{l.x, l.y, l.z});
             },
             "(linear, angular): total momentum and angular momentum about the world origin at the current state.")
        .def_property_readonly("limit_force", dof_view(&Data::limit_force, false),
                               "joint limit forces per DOF, read-only view (ndofs; > 0 pushes away from the lower limit)")
        .def(
            "coupling_force",
            [](World& w, const std::string& name) {
                const Model& m = w.model();
                std::string names;
                for (std::size_t k = 0; k < m.couplings.size(); ++k) {
                    if (m.couplings[k].name == name) return w.data().coupling_force[k];
                    names += (names.empty() ? "" : ", ") + m.couplings[k].name;
                }
                raise(g_usage_error, "coupling_force: no coupling named '" + name + "' (couplings: " +
                                         (names.empty() ? std::string("none") : names) + ")");
            },
            py::arg("name"), "The generalized force the coupling applied to its follower's coordinate in the last step.")
        .def("save", [](World& w) { return py::bytes(w.data().save()); }, "The whole state as bytes (bit-identical restore).")
        .def("restore",
             [](World& w, const py::bytes& b) { w.data().restore(std::string(b)); },
             "Restore a state saved from a world of the same structure (else noether.UsageError, the state unchanged).")
        .def("output", &add_output, py::arg("file"), py::arg("channels"), py::arg("every") = 1,
             "Write channels to a CSV file as the run goes (before the first step).")
        .def("record",
             [](World& w, const std::string& file, double fps) {
                 // fps = 0 reached the kernel as "every step" and NaN was reported as "null".
                 if (!(fps > 0) || !std::isfinite(fps))
                     raise(g_usage_error, "record: fps must be a positive number of frames per simulated second, got " +
                                              py::repr(py::float_(fps)).cast<std::string>());
                 OutputSpec o;
                 o.format = OutputSpec::Format::recording;
                 o.file = file;
                 o.fps = fps;
                 o.origin = {"python", 0, ""};
                 w.run().add_output(o);
             },
             py::arg("file"), py::arg("fps") = 60.0, "Record body poses for `noether view` (before the first step).")
        .def("finish", [](World& w) { return w.close(); },
             "Close the outputs (complete files get their names); returns notes about partial files.")
        .def("close", [](World& w) { return w.close(); },
             "The same as finish(): close the outputs; returns notes about partial files. A World also\n"
             "closes when used as a context manager, when garbage-collected and at interpreter exit.")
        .def("__enter__", [](std::shared_ptr<World> w) { return w; })
        .def("__exit__",
             [](World& w, py::object type, py::object, py::object) {
                 // An exception in the with-block stops the run: its outputs stay .part, and say so.
                 std::string why;
                 if (!type.is_none()) why = "the with-block raised " + py::str(type.attr("__name__")).cast<std::string>();
                 warn_notes(w.close(why));
                 return false;
             })
        .def("linearize",
             [](World& w) {
                 Linearization lin;
                 StepStatus st;
                 Data& d = w.data();
                 st = w.released([&] { return linearize(w.model(), d, lin); });
                 if (st != StepStatus::ok) raise(g_step_error, std::string("linearize: the step failed: ") + status_name(st));
                 const py::ssize_t n = lin.n;
                 py::array_t<double> A({2 * n, 2 * n}), B({2 * n, n});
                 std::copy(lin.A.begin(), lin.A.end(), A.mutable_data());
                 std::copy(lin.B.begin(), lin.B.end(), B.mutable_data());
                 py::array_t<double> x(2 * n), xn(2 * n);
                 std::copy(lin.x.begin(), lin.x.end(), x.mutable_data());
                 std::copy(lin.x_next.begin(), lin.x_next.end(), xn.mutable_data());
                 return py::make_tuple(A, B, x, xn);
             },
             "(A, B, x, x_next) of one step, x = (q, qdot), u = actuation (vi-galerkin): x_next ≈ x_next0 + A dx + B du.")
        .def("ensemble",
             [](World& w, int members, int threads) {
                 return std::make_shared<PyEnsemble>(w.run().model_ptr(), members, threads);
             },
             py::arg("members"), py::arg("threads") = 0, "K copies of this world's Model stepped in parallel.");

    py::class_<PyEnsemble, std::shared_ptr<PyEnsemble>>(mod, "Ensemble", "K runs of one Model on a thread pool.")
        .def_property_readonly("size", [](const PyEnsemble& e) { return e.e->size(); })
        .def("step",
             [](PyEnsemble& e, long long n) {
                 return released(&e, "Ensemble", [&] { return e.e->steps(n); });
             },
             py::arg("n") = 1, "Advance every member n steps in parallel (GIL released); returns the members still running.")
        .def_property_readonly("actuation", ensemble_block(0),
                               "(members, ndofs) writable view: row i is member i's joint inputs, applied before each of its steps\n"
                               "(e.actuation[i, :] = u). It starts as the members' inputs when first asked for.")
        .def_property_readonly("target_position", ensemble_block(1),
                               "(members, ndofs) writable view of the servo target positions (docs/servos.md), like actuation")
        .def_property_readonly("target_velocity", ensemble_block(2),
                               "(members, ndofs) writable view of the servo target velocities, like actuation")
        .def_property_readonly("servo_kp", ensemble_block(3),
                               "(members, ndofs) writable view of the servo stiffnesses (>= 0; the step refuses others)")
        .def_property_readonly("servo_kv", ensemble_block(4), "(members, ndofs) writable view of the servo dampings (>= 0)")
        .def(
            "vary",
            [](PyEnsemble& e, int i, const std::map<std::string, py::object>& numbers) {
                ensemble_idle(e);
                e.check_member(i);
                if (e.e->data(i).stats.steps > 0)
                    raise(g_usage_error, "vary: member " + std::to_string(i) + " has already stepped; vary a member before its first step");
                ModelVariation v(e.base);
                for (const auto& [key, value] : numbers) {
                    std::vector<double> values;
                    if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)) values.push_back(value.cast<double>());
                    else values = value.cast<std::vector<double>>();
                    v.set(key, values);
                }
                e.e->set_model(i, v.build());  // (with the inputs block on, its row reaches the fresh run at each step)
            },
            py::arg("member"), py::arg("numbers"),
            "Member i gets its own numbers before its first step, e.g. vary(3, {'link1.mass': 2.0,\n"
            "'j1.damping': 0.1, 'gravity': [0, 0, -1.62]}) (the keys of ModelVariation, docs/ensembles.md);\n"
            "it restarts at its Model's initial state.")
        .def("poses",
             [](py::object self, int i) {
                 PyEnsemble& e = self.cast<PyEnsemble&>();
                 ensemble_idle(e);
                 e.check_member(i);
                 return view(self, e.e->data(i).pose.data(), e.e->model().nbodies(), 7, sizeof(Pose), false);
             })
        .def("q",
             [](py::object self, int i) {
                 PyEnsemble& e = self.cast<PyEnsemble&>();
                 ensemble_idle(e);
                 e.check_member(i);
                 return view1(self, e.e->data(i).coord.data(), e.ndofs(), false);
             })
        .def("qdot",
             [](py::object self, int i) {
                 PyEnsemble& e = self.cast<PyEnsemble&>();
                 ensemble_idle(e);
                 e.check_member(i);
                 return view1(self, e.e->data(i).rate.data(), e.ndofs(), false);
             })
        .def("set_joint_state",
             [](PyEnsemble& e, int i, py::array_t<double, py::array::c_style | py::array::forcecast> q,
                py::array_t<double, py::array::c_style | py::array::forcecast> qdot) {
                 ensemble_idle(e);
                 e.check_member(i);
                 const std::size_t n = static_cast<std::size_t>(e.ndofs());
                 const std::vector<double> qv = as_vector(q, n, "q"), dv = as_vector(qdot, n, "qdot");
                 set_joint_state(e.e->model(i), e.e->data(i), qv.data(), dv.data());
             })
        .def("summary",
             [](PyEnsemble& e, int i) {
                 ensemble_idle(e);
                 e.check_member(i);
                 return summary_dict(e.e->run(i).summary());
             })
        .def("failed", [](PyEnsemble& e, int i) {
            ensemble_idle(e);
            e.check_member(i);
            return e.e->failed(i);
        })
        .def("failure", [](PyEnsemble& e, int i) {
            ensemble_idle(e);
            e.check_member(i);
            return e.e->failure(i);
        }, "Why member i stopped (\"\" while it runs): the failed step, or the input its step refused.");

    // ---- loading ----------------------------------------------------------------------------
    mod.def(
        "load_all",
        [](const std::string& path, std::map<std::string, std::string> set, std::map<std::string, std::string> options,
           std::optional<std::string> sandbox, double time_limit, double memory_mb, bool lua_callbacks) {
            return load_worlds(path, set, options, sandbox, time_limit, memory_mb, lua_callbacks);
        },
        py::arg("path"), py::arg("set") = std::map<std::string, std::string>{},
        py::arg("options") = std::map<std::string, std::string>{}, py::arg("sandbox") = py::none(),
        py::arg("time_limit") = 60.0, py::arg("memory_mb") = 256.0, py::arg("lua_callbacks") = true,
        "Every world a Lua scene script makes, compiled, not stepped.");
    mod.def(
        "import_urdf",
        [](const std::string& path, bool fixed_base, double dt, const std::string& integrator, std::vector<double> position,
           std::map<std::string, double> positions, double damping, std::vector<double> gravity, bool limits,
           py::object contacts, double mu, bool on_ground, py::dict options, const std::string& prefix,
           std::vector<double> orientation, std::vector<double> velocity, std::vector<double> angular_velocity,
           bool lump_fixed, std::map<std::string, double> servos, bool couplings) {
            Spec s;
            s.options.dt = dt;
            s.options.integrator = integrator;
            set_options(s, options);
            s.gravity = vec3(gravity, "gravity");
            urdf::Options o;
            o.fixed_base = fixed_base;
            o.position = vec3(position, "position");
            o.positions = positions;
            o.damping = damping;
            o.limits = limits;
            o.mu = mu;
            o.on_ground = on_ground;
            o.prefix = prefix;
            o.orientation = quat(orientation, "orientation");
            o.velocity = vec3(velocity, "velocity");
            o.angular_velocity = vec3(angular_velocity, "angular_velocity");
            o.lump_fixed = lump_fixed;
            o.couplings = couplings;
            for (const auto& [k, v] : servos) {
                if (k == "kp") o.servo_kp = v;
                else if (k == "kv") o.servo_kv = v;
                else raise(g_usage_error, "import_urdf: servos: unknown key '" + k + "' (keys: kp, kv)");
            }
            if (!servos.empty() && (!(o.servo_kp > 0) || !std::isfinite(o.servo_kp) || !(o.servo_kv >= 0) || !std::isfinite(o.servo_kv)))
                raise(g_usage_error, "import_urdf: servos: kp must be positive and kv non-negative (finite), got kp=" +
                                         g_num(o.servo_kp) + ", kv=" + g_num(o.servo_kv));
            if (py::isinstance<py::bool_>(contacts)) o.contacts_all = contacts.cast<bool>();
            else if (!contacts.is_none()) o.contact_links = contacts.cast<std::vector<std::string>>();
            if (!(mu >= 0) || !std::isfinite(mu)) raise(g_model_error, path + ": mu must be non-negative and finite, got " + std::to_string(mu));
            const urdf::Report rep = urdf::import(s, path, o);
            return assembled_world(s, path, rep.file, rep.warnings);
        },
        py::arg("path"), py::arg("fixed_base") = false, py::arg("dt") = 0.005, py::arg("integrator") = "vi-maximal",
        py::arg("position") = std::vector<double>{0, 0, 0}, py::arg("positions") = std::map<std::string, double>{},
        py::arg("damping") = 0.0, py::arg("gravity") = std::vector<double>{0, 0, -9.81}, py::arg("limits") = true,
        py::arg("contacts") = py::none(), py::arg("mu") = 1.0, py::arg("on_ground") = false,
        py::arg("options") = py::dict(), py::arg("prefix") = "",
        py::arg("orientation") = std::vector<double>{1, 0, 0, 0}, py::arg("velocity") = std::vector<double>{0, 0, 0},
        py::arg("angular_velocity") = std::vector<double>{0, 0, 0}, py::arg("lump_fixed") = true,
        py::arg("servos") = std::map<std::string, double>{}, py::arg("couplings") = true,
        "Import a URDF robot (errors name the file and line), assemble it and compile it. Joint limits are\n"
        "enforced unless limits=False; contacts=True (every link) or a list of links puts their sphere, box\n"
        "and capsule <collision> shapes on the ground z = 0 (friction mu; on_ground lowers the robot onto it).\n"
        "options: the integrator's options by name, numbers or words, e.g. {'max_turn': 0.1, 'newton': 'exact'}\n"
        "(docs/integrators.md). prefix, orientation\n"
        "(w, x, y, z), velocity, angular_velocity (world frame) and lump_fixed as w:urdf{} in Lua (docs/urdf.md).\n"
        "servos={'kp': .., 'kv': ..}: a position servo on every moving joint holding the imported pose (docs/servos.md).\n"
        "couplings=False leaves <mimic> and <coupling> out (taken by every integrator but riqn; docs/couplings.md).");
    mod.def(
        "import_mjcf",
        [](const std::string& path, std::optional<double> dt, const std::string& integrator, const std::string& keyframe, bool limits,
           bool contacts, bool actuators, bool drop_armature, py::dict options, const std::string& prefix,
           bool couplings) {
            Spec s;
            s.options.integrator = integrator;
            set_options(s, options);
            mjcf::Options o;
            o.keyframe = keyframe;
            o.limits = limits;
            o.contacts = contacts;
            o.actuators = actuators;
            o.drop_armature = drop_armature;
            o.prefix = prefix;
            o.couplings = couplings;
            const mjcf::Report rep = mjcf::import(s, path, o);
            s.options.dt = dt ? *dt : rep.timestep > 0 ? rep.timestep : 0.005;
            return assembled_world(s, path, rep.file, rep.warnings);
        },
        py::arg("path"), py::arg("dt") = py::none(), py::arg("integrator") = "vi-maximal", py::arg("keyframe") = "",
        py::arg("limits") = true, py::arg("contacts") = true, py::arg("actuators") = true, py::arg("drop_armature") = false,
        py::arg("options") = py::dict(), py::arg("prefix") = "", py::arg("couplings") = true,
        "Import an MJCF (MuJoCo XML) model (errors name the file and line), assemble it and compile it\n"
        "(docs/mjcf.md). dt: the file's <option timestep> unless given (else 0.005); keyframe: start from that\n"
        "<key> (name, or '#k'); limits, contacts (geoms against the world's planes), actuators (position and\n"
        "velocity actuators as servos), couplings (joint equalities) and drop_armature as w:mjcf{} in Lua;\n"
        "gravity is the file's.");
}
