// noether/executor.hpp — who runs parallel work: an Ensemble's members, a sweep's members.
//
// The kernel (libnoether) owns no threads. Parallel work is handed to a ParallelFor: this library
// (libnoether_parallel) provides one on oneTBB, and a host supplies its own thread pool instead
// (Ensemble::set_executor; noether_ensemble_set_executor from C), as Box2D's enqueueTask or
// MuJoCo's thread pool let a host do. Nothing here changes a process-wide setting.
#pragma once

#include "noether/export.h"

#include <functional>

namespace noether {

// Calls work(i) once for every i in [0, n), in any order and on any threads, and returns when
// every call has returned. work does not throw (callers catch inside it).
using ParallelFor = std::function<void(int n, const std::function<void(int)>& work)>;

// oneTBB in an arena of `threads` threads (0: every core TBB sees; more than that is capped at
// TBB's own limit instead of raising it process-wide). The arena is made once per executor.
NOETHER_API ParallelFor tbb_executor(int threads);
// Every call in order on the calling thread.
NOETHER_API ParallelFor serial_executor();
// The number of cores oneTBB sees (the meaning of 0 threads).
NOETHER_API int default_concurrency();

}  // namespace noether
