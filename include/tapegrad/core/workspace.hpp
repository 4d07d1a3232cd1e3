// The library's own allocator for kernel temporaries, and the accounting behind
// `tapegrad bench`'s extra_bytes.
//
// Every temporary a kernel needs (column buffers, staging, packed GEMM panels, f32 copies
// of 16-bit operands) is a `Buffer<T>`: 64-byte aligned, uninitialised, and counted.
// Large buffers come from a cache that lives across calls, so a kernel called
// in a loop does not map, fault in and zero fresh pages every time; cached bytes stay
// counted while they are held, so a workspace kept across calls counts in every call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace tg {

// The most bytes in use since the last reset_workspace_peak() (or program start).
std::int64_t workspace_peak_bytes();
// Sets the peak to the bytes in use now.
void reset_workspace_peak();
// Frees the cached blocks of the workspace and of tensor storage (live buffers and tensors
// are not touched).
void release_workspace_cache();

// The memory limit: the most bytes of tensor storage and kernel workspace tapegrad holds
// at once. An allocation that would pass it fails before anything is allocated, with a
// tg::Error (key "memory") that gives the sizes. The default is TAPEGRAD_MEMORY_LIMIT when
// set ("8G", "512M", "1000000"; powers of 1024), else three quarters of the physical memory.
void set_memory_limit(std::int64_t bytes);
std::int64_t memory_limit();
std::int64_t memory_in_use();
// The budget of one kernel call's tiled temporaries (the conv kernels' column and staging
// buffers, the f32 pieces of 16-bit operands), in bytes; default 64 MiB. A tile always
// holds at least one position, so a call may pass a budget smaller than one column.
void set_workspace_budget(std::int64_t bytes);
std::int64_t workspace_budget();

// "123", "64K", "512M", "8G", "1T" as bytes; -1 when malformed (for command-line flags).
std::int64_t parse_byte_count(const std::string& text);

namespace detail {
// Returns at least `bytes` bytes and sets `cap` to the block's real size, which
// workspace_free needs back. Fails with a tg::Error naming "memory".
void* workspace_alloc(std::size_t bytes, std::size_t& cap);
void workspace_free(void* p, std::size_t cap) noexcept;
// Tensor storage (tapegrad/core/tensor.hpp): the same blocks, not counted as workspace; freed blocks
// of 64 KiB and more are kept (at most 64 blocks, 512 MiB) for the next tensor of about their size.
void* storage_alloc(std::size_t bytes, std::size_t& cap);
void storage_free(void* p, std::size_t cap) noexcept;
}  // namespace detail

// An uninitialised, counted, 64-byte aligned array of `n` trivially copyable T.
template <class T>
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(std::int64_t n)
        : n_(n > 0 ? static_cast<std::size_t>(n) : 0),
          p_(n_ ? static_cast<T*>(detail::workspace_alloc(n_ * sizeof(T), cap_)) : nullptr) {}
    Buffer(Buffer&& o) noexcept
        : n_(std::exchange(o.n_, 0)), cap_(std::exchange(o.cap_, 0)), p_(std::exchange(o.p_, nullptr)) {}
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) {
            reset();
            n_ = std::exchange(o.n_, 0);
            cap_ = std::exchange(o.cap_, 0);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(); }

    T* data() { return p_; }
    const T* data() const { return p_; }
    std::int64_t size() const { return static_cast<std::int64_t>(n_); }
    bool empty() const { return n_ == 0; }
    T& operator[](std::int64_t i) { return p_[i]; }
    const T& operator[](std::int64_t i) const { return p_[i]; }

private:
    void reset() {
        if (p_) detail::workspace_free(p_, cap_);
        p_ = nullptr;
        n_ = 0;
    }
    std::size_t n_ = 0, cap_ = 0;
    T* p_ = nullptr;
};

}  // namespace tg
