// The C API of ensembles (noether.h, "per-member numbers and ensembles"), in libnoether_parallel:
// the kernel's C API owns no threads. Errors through the kernel's per-thread message
// (noether/sdk/c_bridge.hpp).
#include "noether.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "noether/sdk/c_bridge.hpp"
#include "noether/ensemble.hpp"

struct noether_ensemble {
    std::unique_ptr<noether::Ensemble> ens;
    std::vector<noether_data*> views;           // one per member, for noether_ensemble_data
    std::vector<noether_data*> callback_views;  // one per member, for the controller's calls
    noether_controller controller = nullptr;
    void* user = nullptr;
    noether_ensemble() = default;
    noether_ensemble(const noether_ensemble&) = delete;
    noether_ensemble& operator=(const noether_ensemble&) = delete;
    ~noether_ensemble() {
        for (noether_data* v : views) noether::c_bridge::release_data_view(v);
        for (noether_data* v : callback_views) noether::c_bridge::release_data_view(v);
    }
};

namespace {

using noether::c_bridge::data_view;
using noether::c_bridge::model_of;
using noether::c_bridge::retarget_data_view;

int fail(int status, const std::string& msg) { return noether::c_bridge::set_error(status, msg); }
void clear_error() { noether::c_bridge::set_error(NOETHER_OK, ""); }

using noether::c_bridge::guarded;

}  // namespace

extern "C" {

noether_ensemble* noether_ensemble_new(const noether_model* m, int members) {
    clear_error();
    if (!m) {
        fail(NOETHER_USAGE, "noether_ensemble_new: model is NULL");
        return nullptr;
    }
    noether_ensemble* out = nullptr;
    guarded([&] {
        auto e = std::make_unique<noether_ensemble>();
        e->ens = std::make_unique<noether::Ensemble>(model_of(m), members);
        for (int i = 0; i < members; ++i) {
            e->views.push_back(data_view(&e->ens->data(i)));
            e->callback_views.push_back(data_view(nullptr));
        }
        out = e.release();
        return NOETHER_OK;
    });
    return out;
}

void noether_ensemble_free(noether_ensemble* e) {
    clear_error();
    delete e;
}

int noether_ensemble_size(const noether_ensemble* e) {
    clear_error();
    return e ? e->ens->size() : 0;
}

int noether_ensemble_set_threads(noether_ensemble* e, int threads) {
    clear_error();
    if (!e) return fail(NOETHER_USAGE, "noether_ensemble_set_threads: ensemble is NULL");
    return guarded([&] {
        e->ens->set_threads(threads);
        return NOETHER_OK;
    });
}

int noether_ensemble_set_model(noether_ensemble* e, int member, const noether_model* m) {
    clear_error();
    if (!e || !m) return fail(NOETHER_USAGE, "noether_ensemble_set_model: ensemble and model are required");
    return guarded([&] {
        e->ens->set_model(member, model_of(m));
        return NOETHER_OK;
    });
}

int noether_ensemble_set_controller(noether_ensemble* e, noether_controller f, void* user) {
    clear_error();
    if (!e) return fail(NOETHER_USAGE, "noether_ensemble_set_controller: ensemble is NULL");
    e->controller = f;
    e->user = user;
    if (!f) {
        e->ens->set_controller(nullptr);
        return NOETHER_OK;
    }
    e->ens->set_controller([e](int member, noether::Data& d) {
        // The member's own callback view (a member is stepped by one thread at a time; the host may
        // read its noether_ensemble_data view meanwhile): no allocation per step.
        noether_data* view = e->callback_views[member];
        retarget_data_view(view, &d);
        const int r = e->controller(e->user, member, view);
        if (r != 0) throw std::runtime_error("the controller returned " + std::to_string(r));
    });
    return NOETHER_OK;
}

noether_data* noether_ensemble_data(noether_ensemble* e, int member) {
    clear_error();
    if (!e || member < 0 || member >= e->ens->size()) {
        fail(NOETHER_USAGE, "noether_ensemble_data: no such member");
        return nullptr;
    }
    retarget_data_view(e->views[member], &e->ens->data(member));
    return e->views[member];
}

int noether_ensemble_steps(noether_ensemble* e, long long n) {
    clear_error();
    if (!e) return fail(NOETHER_USAGE, "noether_ensemble_steps: ensemble is NULL");
    return guarded([&] {
        e->ens->steps(n);
        for (int i = 0; i < e->ens->size(); ++i)
            if (e->ens->failed(i))
                return fail(NOETHER_STEP_FAILED, std::to_string(e->ens->failures()) + " member(s) failed; first: member " +
                                                     std::to_string(i) + ": " + e->ens->failure(i));
        return static_cast<int>(NOETHER_OK);
    });
}

int noether_ensemble_failed(const noether_ensemble* e, int member) {
    clear_error();
    if (!e || member < 0 || member >= e->ens->size()) return -1;
    return e->ens->failed(member) ? 1 : 0;
}

const char* noether_ensemble_failure(const noether_ensemble* e, int member) {
    clear_error();
    if (!e || member < 0 || member >= e->ens->size()) return "";
    return e->ens->failure(member).c_str();
}

unsigned long long noether_ensemble_hash(const noether_ensemble* e) {
    clear_error();
    return e ? e->ens->hash() : 0;
}

char* noether_ensemble_summary_json(noether_ensemble* e, int member) {
    clear_error();
    if (!e) {
        fail(NOETHER_USAGE, "noether_ensemble_summary_json: ensemble is NULL");
        return nullptr;
    }
    char* out = nullptr;
    guarded([&] {
        const std::string json = e->ens->summary(member).to_json();
        out = static_cast<char*>(std::malloc(json.size() + 1));
        if (!out) return fail(NOETHER_BAD_INPUT, "out of memory");
        std::memcpy(out, json.c_str(), json.size() + 1);
        return static_cast<int>(NOETHER_OK);
    });
    return out;
}

int noether_ensemble_set_executor(noether_ensemble* e, noether_parallel_for f, void* user) {
    clear_error();
    if (!e) return fail(NOETHER_USAGE, "noether_ensemble_set_executor: ensemble is NULL");
    if (!f) {
        e->ens->set_executor(nullptr);
        return NOETHER_OK;
    }
    e->ens->set_executor([f, user](int n, const std::function<void(int)>& work) {
        f(user, n, [](void* ctx, int i) { (*static_cast<const std::function<void(int)>*>(ctx))(i); },
          const_cast<std::function<void(int)>*>(&work));
    });
    return NOETHER_OK;
}

}  // extern "C"
