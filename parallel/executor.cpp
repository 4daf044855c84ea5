// The executors of noether/executor.hpp: the one scheduling path of ensembles and sweeps.
#include "noether/executor.hpp"

#include <algorithm>
#include <memory>

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace noether {

int default_concurrency() { return std::max(1, tbb::info::default_concurrency()); }

ParallelFor tbb_executor(int threads) {
    const int t = threads > 0 ? threads : default_concurrency();
    auto arena = std::make_shared<tbb::task_arena>(t);
    return [arena](int n, const std::function<void(int)>& work) {
        arena->execute([&] {
            // Grain 1: members differ in cost (a failed one stops early), so each is its own task.
            tbb::parallel_for(tbb::blocked_range<int>(0, n, 1), [&](const tbb::blocked_range<int>& r) {
                for (int i = r.begin(); i != r.end(); ++i) work(i);
            });
        });
    };
}

ParallelFor serial_executor() {
    return [](int n, const std::function<void(int)>& work) {
        for (int i = 0; i < n; ++i) work(i);
    };
}

}  // namespace noether
