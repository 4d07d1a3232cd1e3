#include "tapegrad/core/workspace.hpp"
#include "tapegrad/core/env.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "tapegrad/core/error.hpp"

namespace tg {

namespace {

std::atomic<std::int64_t> g_in_use{0}, g_peak{0};

void count(std::int64_t delta) {
    const std::int64_t now = g_in_use.fetch_add(delta, std::memory_order_relaxed) + delta;
    std::int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

// Under AddressSanitizer nothing is cached, so that it still sees every use after free.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

// Blocks from this size up are cached per thread and rounded up to whole 64 KiB; below it
// malloc's own free lists already avoid fresh pages.
constexpr std::size_t kCacheMin = std::size_t{64} << 10;
constexpr std::size_t kHuge = std::size_t{2} << 20;  // transparent huge pages from here up
constexpr std::size_t kMaxCached = std::size_t{512} << 20;  // bytes, per cache

std::size_t block_size(std::size_t bytes) {
    if (bytes < kCacheMin) return (bytes + 63) & ~std::size_t{63};
    const std::size_t unit = bytes >= kHuge ? kHuge : kCacheMin;
    return (bytes + unit - 1) / unit * unit;
}

void* system_alloc(std::size_t cap, bool counted = true) {
    const std::size_t align = cap >= kHuge ? kHuge : 64;
    void* p = std::aligned_alloc(align, cap);
    if (!p) fail("memory", "cannot allocate a workspace of ", cap, " bytes");
#ifdef MADV_HUGEPAGE
    if (cap >= kHuge) madvise(p, cap, MADV_HUGEPAGE);
#endif
    if (counted) count(static_cast<std::int64_t>(cap));
    return p;
}

void system_free(void* p, std::size_t cap, bool counted = true) {
    std::free(p);
    if (counted) count(-static_cast<std::int64_t>(cap));
}

struct Block {
    void* p;
    std::size_t cap;
};

// The cached blocks, shared by all threads (a few allocations per kernel call, so one
// lock costs nothing), freed by release_workspace_cache().
struct Cache {
    Cache(bool counted_, std::size_t min_, std::size_t max_blocks_) : counted(counted_), min(min_), max_blocks(max_blocks_) {}
    bool counted;            // the workspace cache counts its blocks; the tensor-storage cache does not
    std::size_t min;         // blocks from this size up are cached
    std::size_t max_blocks;  // at most this many
    std::mutex m;
    std::vector<Block> blocks;
    std::size_t bytes = 0;
    void clear() {
        for (const Block& b : blocks) system_free(b.p, b.cap, counted);
        blocks.clear();
        bytes = 0;
    }
    void* take(std::size_t want, std::size_t& cap) {  // the smallest cached block that fits
        auto best = blocks.end();
        for (auto it = blocks.begin(); it != blocks.end(); ++it)
            if (it->cap >= want && it->cap <= 2 * want && (best == blocks.end() || it->cap < best->cap)) best = it;
        if (best == blocks.end()) return nullptr;
        void* p = best->p;
        cap = best->cap;
        bytes -= best->cap;
        blocks.erase(best);
        return p;
    }
    void give(void* p, std::size_t cap) {
        blocks.push_back({p, cap});
        bytes += cap;
        while (blocks.size() > max_blocks || bytes > kMaxCached) {  // drop the smallest
            auto smallest = std::min_element(blocks.begin(), blocks.end(),
                                             [](const Block& a, const Block& b) { return a.cap < b.cap; });
            bytes -= smallest->cap;
            system_free(smallest->p, smallest->cap, counted);
            blocks.erase(smallest);
        }
    }
};

// The caches are never destroyed (the system takes their blocks back at exit): a thread's
// thread_local buffers (the GEMM's packed panels) are freed when it ends, and a worker of
// a team started on another std::thread may end after exit() has begun destroying statics
// (ThreadSanitizer saw such a free race ~Cache in test_threads.cpp).
Cache& cache() {
    static Cache* const c = new Cache(true, kCacheMin, 8);
    return *c;
}

// Freed tensor storage of 64 KiB and more (as the workspace's), kept for the next tensor of
// about that size: an op called in a loop then reuses its last result's pages instead of
// faulting in fresh ones (measured: a 128 MiB result cost more in page faults than the
// depthwise kernel itself). From 1 MiB up until 2026-11-28: glibc maps blocks between
// 128 KiB and 1 MiB afresh, or trims them off the heap's top, by the history of the
// process, and a 3-D forward layer of 221 KiB results took 0.22 or 0.48-0.78 ms by whether
// stdout was a file or a pipe (12 015 page faults in a benchmark run against 748).
// Up to 64 blocks: a training step frees its activations and gradients together at the end,
// and they are all asked for again in the next step.
constexpr std::size_t kStorageCacheMin = std::size_t{64} << 10;
Cache& storage_cache() {
    static Cache* const c = new Cache(false, kStorageCacheMin, 64);
    return *c;
}

// The memory limit: bytes of tensor storage and workspace handed out at once.
std::atomic<std::int64_t> g_live{0};

// "123", "64K", "512M", "8G" (powers of 1024); -1 when malformed.
std::int64_t parse_bytes(const std::string& v) {
    std::size_t used = 0;
    long double n = 0;
    try {
        n = std::stold(v, &used);
    } catch (...) {
        return -1;
    }
    std::string unit = v.substr(used);
    long double mul = 1;
    if (unit == "K" || unit == "k" || unit == "KiB") mul = 1024.0L;
    else if (unit == "M" || unit == "m" || unit == "MiB") mul = 1024.0L * 1024;
    else if (unit == "G" || unit == "g" || unit == "GiB") mul = 1024.0L * 1024 * 1024;
    else if (unit == "T" || unit == "t" || unit == "TiB") mul = 1024.0L * 1024 * 1024 * 1024;
    else if (!unit.empty() && unit != "B") return -1;
    const long double b = n * mul;
    if (!(b >= 1) || b > 9.0e18L) return -1;
    return static_cast<std::int64_t>(b);
}

std::int64_t default_memory_limit() {
    if (const std::optional<std::int64_t> b = env::bytes("TAPEGRAD_MEMORY_LIMIT")) return *b;
    // Three quarters of the physical memory.
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return std::int64_t{1} << 62;
    return static_cast<std::int64_t>(static_cast<long double>(pages) * page * 3 / 4);
}

std::atomic<std::int64_t>& limit_setting() {
    static std::atomic<std::int64_t> limit{default_memory_limit()};
    return limit;
}

// Takes `cap` bytes from the limit, or fails before anything is allocated.
void reserve(std::size_t cap) {
    const std::int64_t limit = limit_setting().load(std::memory_order_relaxed);
    const std::int64_t now = g_live.fetch_add(static_cast<std::int64_t>(cap), std::memory_order_relaxed) +
                             static_cast<std::int64_t>(cap);
    if (now > limit) {
        g_live.fetch_sub(static_cast<std::int64_t>(cap), std::memory_order_relaxed);
        fail("memory", "allocating ", cap, " bytes would bring the memory tapegrad holds to ", now,
             " bytes, over the memory limit of ", limit, " (set by TAPEGRAD_MEMORY_LIMIT or tg::set_memory_limit)");
    }
}

void unreserve(std::size_t cap) { g_live.fetch_sub(static_cast<std::int64_t>(cap), std::memory_order_relaxed); }

}  // namespace

namespace {
std::atomic<std::int64_t> g_budget{std::int64_t{64} << 20};
}  // namespace

void set_workspace_budget(std::int64_t bytes) {
    if (bytes < 1) fail("workspace", "workspace budget ", bytes, " must be >= 1 byte");
    g_budget = bytes;
}
std::int64_t workspace_budget() { return g_budget.load(std::memory_order_relaxed); }

void set_memory_limit(std::int64_t bytes) {
    if (bytes < 1) fail("memory_limit", "memory limit ", bytes, " must be >= 1 byte");
    limit_setting().store(bytes, std::memory_order_relaxed);
}
std::int64_t memory_limit() { return limit_setting().load(std::memory_order_relaxed); }
std::int64_t memory_in_use() { return g_live.load(std::memory_order_relaxed); }
std::int64_t parse_byte_count(const std::string& text) { return parse_bytes(text); }

std::int64_t workspace_peak_bytes() { return g_peak.load(std::memory_order_relaxed); }
void reset_workspace_peak() { g_peak.store(g_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed); }
void release_workspace_cache() {
    for (Cache* c : {&cache(), &storage_cache()}) {
        std::lock_guard lock(c->m);
        c->clear();
    }
}

namespace {

// A block of at least `bytes` from `c` when it caches blocks that large, else from the system.
void* cached_alloc(Cache& c, std::size_t bytes, std::size_t& cap) {
    if (bytes > (std::size_t{1} << 62)) fail("memory", "cannot allocate ", bytes, " bytes");
    cap = block_size(bytes);
    reserve(cap);
    try {
        if (kCaching && cap >= c.min) {
            std::lock_guard lock(c.m);
            const std::size_t want = cap;
            if (void* p = c.take(want, cap)) {
                // A cached block may be larger than asked for: the limit counts the block.
                if (cap > want) g_live.fetch_add(static_cast<std::int64_t>(cap - want), std::memory_order_relaxed);
                return p;
            }
        }
        return system_alloc(cap, c.counted);
    } catch (...) {
        unreserve(cap);
        throw;
    }
}

void cached_free(Cache& c, void* p, std::size_t cap) noexcept {
    unreserve(cap);
    if (kCaching && cap >= c.min) {
        try {
            std::lock_guard lock(c.m);
            c.give(p, cap);
            return;
        } catch (...) {  // the cache could not grow: free it instead
        }
    }
    system_free(p, cap, c.counted);
}

}  // namespace

namespace detail {

void* workspace_alloc(std::size_t bytes, std::size_t& cap) { return cached_alloc(cache(), bytes, cap); }
void workspace_free(void* p, std::size_t cap) noexcept { cached_free(cache(), p, cap); }

void* storage_alloc(std::size_t bytes, std::size_t& cap) {
    return cached_alloc(storage_cache(), bytes == 0 ? 1 : bytes, cap);
}
void storage_free(void* p, std::size_t cap) noexcept { cached_free(storage_cache(), p, cap); }

}  // namespace detail

}  // namespace tg
