// The CPU emulation of the CUDA execution model catches what a GPU would: shared memory
// left from another block, an order of threads a kernel must not rely on (a warp run far
// ahead of the others included), misaligned vector loads, cp.async copies read too early
// or never waited for, and (under pdl=1) a kernel that reads before the prior grid has
// finished.
// The kernels' own checks (test_kernels_emulated.cpp) rely on each of these.
#include "emu/cuda_emulation.hpp"

#include "async_copy.cuh"
#include "device_math.hpp"
#include "grid_dependency.cuh"

#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

using namespace edgerun::cuda_orin;

namespace {

// Block 0 writes one element of a shared array; every block reads it and one never
// written, before and after its own write.
void shared_probe_kernel(float* seen) {
    __shared__ float s[4];
    ER_SHARED_ARRAY(s);
    if (threadIdx.x == 0) {
        seen[blockIdx.x * 2] = s[0];
        seen[blockIdx.x * 2 + 1] = s[1];
        s[0] = 1.0f;
    }
    __syncthreads();
}

}  // namespace

TEST_CASE("emulation: shared memory is NaN at each block's start, not the last block's values") {
    std::vector<float> seen(6, 0.0f);
    emu::launch(dim3(3), dim3(32), [&] { shared_probe_kernel(seen.data()); });
    for (float v : seen) CHECK(std::isnan(v));
}

TEST_CASE("emulation: threads run in a shuffled order, a different one per launch") {
    auto first_runs = [] {
        std::vector<int> order;
        emu::launch(dim3(1), dim3(64), [&] { order.push_back(int(threadIdx.x)); });
        return order;
    };
    const std::vector<int> a = first_runs(), b = first_runs();
    REQUIRE(a.size() == 64);
    std::vector<int> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 64; ++i) CHECK(sorted[size_t(i)] == i);  // every thread ran once
    CHECK_FALSE(std::is_sorted(a.begin(), a.end()));
    CHECK(a != b);
}

TEST_CASE("emulation: a misaligned vector load aborts, as it faults on a GPU") {
    alignas(16) unsigned char bytes[64] = {};
    auto aborts = [&](auto load) {
        const pid_t child = fork();
        if (child == 0) {
            if (!std::freopen("/dev/null", "w", stderr)) std::_Exit(2);  // not an abort: the check fails
            load();
            std::_Exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    };
    CHECK(aborts([&] { load_16B(bytes + 8); }));
    CHECK(aborts([&] { load_8B(bytes + 4); }));
    CHECK(aborts([&] { load_4B(bytes + 2); }));
    CHECK(aborts([&] { load_2B(bytes + 1); }));
    CHECK_FALSE(aborts([&] { load_16B(bytes + 16); }));
    CHECK_FALSE(aborts([&] { load_8B(bytes + 8); }));
}

namespace {

// Warp 1 reads what warp 0 wrote to shared memory after a shuffle (a warp-level sync) but
// with no __syncthreads between: per block, whether warp 1 saw warp 0's value.
void unsynced_kernel(int* saw) {
    __shared__ float s[1];
    ER_SHARED_ARRAY(s);
    if (threadIdx.x == 0) s[0] = 1.0f;
    const float v = __shfl_sync(0xFFFFFFFFu, float(threadIdx.x), 0);
    if (threadIdx.x == 32) saw[blockIdx.x] = s[0] == 1.0f && v == 32.0f;
}

// Thread t copies src[t] (zeros where t is odd: not valid) into shared memory by
// cp.async; before its wait it records whether the copy was there yet, after the wait
// what it holds.
void copy_kernel(const int32_t* src, int32_t* before, int32_t* after) {
    alignas(16) __shared__ int32_t s[64];
    ER_SHARED_ARRAY(s);
    const int t = int(threadIdx.x);
    copy_async<4>(&s[t], &src[t], t % 2 == 0);
    commit_async_copies();
    before[t] = s[t];
    wait_async_copies<0>();
    after[t] = s[t];
}

}  // namespace

TEST_CASE("emulation: a warp may run ahead of the others up to a barrier, so a missing __syncthreads shows") {
    std::vector<int> saw(16, -1);
    emu::launch(dim3(16), dim3(64), [&] { unsynced_kernel(saw.data()); });
    CHECK(std::count(saw.begin(), saw.end(), 0) > 0);  // warp 1 before warp 0, in some block
    CHECK(std::count(saw.begin(), saw.end(), 1) > 0);  // and after, in another
}

TEST_CASE("emulation: cp.async copies land when issued or at their wait, and only a wait makes them sure") {
    std::vector<int32_t> src(64), before(64, 0), after(64, 0);
    for (int i = 0; i < 64; ++i) src[size_t(i)] = 1000 + i;
    emu::launch(dim3(1), dim3(64), [&] { copy_kernel(src.data(), before.data(), after.data()); });
    for (int t = 0; t < 64; ++t) CHECK(after[size_t(t)] == (t % 2 == 0 ? 1000 + t : 0));
    const auto landed_early = std::count_if(before.begin(), before.end(), [](int32_t v) { return v != -1; });
    CHECK(landed_early > 0);   // some copies were there before the wait
    CHECK(landed_early < 64);  // and some not (shared memory's -1 bytes)
    // A thread that ends with a copy it never waited for aborts the run (a GPU would leave
    // what it reads there undefined).
    const pid_t child = fork();
    if (child == 0) {
        if (!std::freopen("/dev/null", "w", stderr)) std::_Exit(2);
        emu::launch(dim3(1), dim3(64), [&] {
            alignas(16) __shared__ int32_t s[64];
            ER_SHARED_ARRAY(s);
            for (int i = 0; i < 8; ++i) copy_async<4>(&s[threadIdx.x], &src[threadIdx.x], true);  // some deferred
            commit_async_copies();
        });
        std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT));
}

namespace {

// A kernel that forgets to wait for the prior grids in one thread of its last block, and
// one that lets the next grid go before it waits: on a GPU under PDL either could read
// its input before the previous launch wrote it.
void forgetful_kernel(int* out) {
    if (!(blockIdx.x == 1 && threadIdx.x == 37)) wait_for_prior_grids();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
void hasty_kernel(int* out) {
    allow_next_grid();
    wait_for_prior_grids();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
void careful_kernel(int* out) {
    begin_after_prior_grids();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

}  // namespace

TEST_CASE("emulation: under pdl=1 a kernel that does not wait for the prior grids in every thread fails") {
    std::vector<int> out(128, 0);
    auto run = [&](void (*kernel)(int*), const char* name) { emu::launch(dim3(2), dim3(64), [&] { kernel(out.data()); }, 0, name); };
    {
        emu::RequirePriorGridWaits require(true);
        CHECK_THROWS_CONTAINING_AS(run(forgetful_kernel, "forgetful"),
                                   "kernel forgetful ended without calling wait_for_prior_grids()",
                                   std::logic_error);
        CHECK_THROWS_CONTAINING_AS(run(forgetful_kernel, "forgetful"), "thread 37,0,0 of block 1,0,0",
                                   std::logic_error);
        CHECK_THROWS_CONTAINING_AS(run(hasty_kernel, "hasty"),
                                   "kernel hasty called allow_next_grid() before wait_for_prior_grids()",
                                   std::logic_error);
        CHECK_NOTHROW(run(careful_kernel, "careful"));
    }
    CHECK_NOTHROW(run(forgetful_kernel, "forgetful"));  // pdl=0: nothing is required
}
