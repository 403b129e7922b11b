// Test memory that faults on any access past its ends, and a body run in a child process
// so that such a fault fails a check instead of the test binary: for the kernels' L2
// prefetches, whose addresses nothing else reads back.
#pragma once

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace edgerun::cuda_orin::testing {

// `bytes` of zeros between two pages that fault on any access: placed to end where the
// upper one begins (at_end) or to begin where the lower one ends, so a read past either
// end of the buffer faults.
class GuardedBytes {
public:
    GuardedBytes(size_t bytes, bool at_end) {
        page_ = size_t(sysconf(_SC_PAGESIZE));
        inner_ = (bytes + page_ - 1) / page_ * page_;
        base_ = static_cast<uint8_t*>(mmap(nullptr, inner_ + 2 * page_, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        REQUIRE(base_ != MAP_FAILED);
        mprotect(base_, page_, PROT_NONE);
        mprotect(base_ + page_ + inner_, page_, PROT_NONE);
        data_ = base_ + page_ + (at_end ? inner_ - bytes : 0);
    }
    ~GuardedBytes() { munmap(base_, inner_ + 2 * page_); }
    GuardedBytes(const GuardedBytes&) = delete;
    GuardedBytes& operator=(const GuardedBytes&) = delete;
    const uint8_t* data() const { return data_; }

private:
    size_t page_ = 0, inner_ = 0;
    uint8_t* base_ = nullptr;
    uint8_t* data_ = nullptr;
};

// Runs `body` in a child process; true when it exited normally with 0 (a fault, or
// AddressSanitizer's report of one, ends it otherwise).
template <class Body>
bool runs_cleanly(Body body, bool quiet) {
    const pid_t child = fork();
    if (child == 0) {
        if (quiet && !std::freopen("/dev/null", "w", stderr)) std::_Exit(2);
        body();
        std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace edgerun::cuda_orin::testing
