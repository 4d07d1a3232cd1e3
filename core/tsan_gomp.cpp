// ThreadSanitizer builds only (the tsan preset): makes the synchronisation of OpenMP teams
// visible to TSan. libgomp is not built with -fsanitize=thread, so TSan cannot see that the
// start of a parallel region orders the starting thread's earlier work (and the block of
// shared variables the compiler hands to the team) before every member's work, that the end
// of the region orders the members' work before what follows, or what a barrier orders;
// it would report every hand-over of data between a team and its starting thread as a race.
// These wrappers of libgomp's entry points for `#pragma omp parallel` (with or without a
// static `for`) and `#pragma omp barrier`, the only constructs tapegrad uses, tell it, and
// then call libgomp's own. Every race TSan reports in a team is then real. Elsewhere this
// file is empty.
#if defined(__SANITIZE_THREAD__)
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

namespace {

using ParallelFn = void (*)(void (*)(void*), void*, unsigned, unsigned);
using BarrierFn = void (*)();

template <class F>
F next_symbol(const char* name) {
    void* p = dlsym(RTLD_NEXT, name);
    if (!p) {
        std::fprintf(stderr, "tsan_gomp: %s not found\n", name);
        std::abort();
    }
    return reinterpret_cast<F>(p);
}

// One per region, on the starting thread's stack; its address is the region's sync object.
struct Region {
    void (*fn)(void*);
    void* data;
    char join = 0, barrier = 0;  // the addresses of the join's and the barriers' sync objects
};

thread_local Region* t_region = nullptr;  // the region this thread is a member of

void member(void* p) {
    Region* r = static_cast<Region*>(p);
    __tsan_acquire(r);  // the fork
    Region* outer = t_region;
    t_region = r;
    r->fn(r->data);
    t_region = outer;
    __tsan_release(&r->join);
}

}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
    static const ParallelFn real = next_symbol<ParallelFn>("GOMP_parallel");
    Region r{fn, data};
    __tsan_release(&r);
    real(member, &r, num_threads, flags);
    __tsan_acquire(&r.join);
}

extern "C" void GOMP_barrier() {
    static const BarrierFn real = next_symbol<BarrierFn>("GOMP_barrier");
    Region* r = t_region;
    if (r) __tsan_release(&r->barrier);
    real();
    if (r) __tsan_acquire(&r->barrier);
}
#endif
