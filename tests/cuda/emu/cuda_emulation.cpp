// Fiber scheduler of the CUDA emulation (see cuda_emulation.hpp).
#include "cuda_emulation.hpp"

#include <edgerun/quant/blocks.hpp>

// Boost.Context's fibers switch stacks without a system call; ucontext's swapcontext
// saves and restores the signal mask with one each switch, and those calls were four
// fifths of an emulated model run's time.
#include <boost/context/fiber.hpp>

// AddressSanitizer builds (EDGERUN_SANITIZE): every stack switch is announced, so ASan
// knows which stack it is on and checks the fibers' stack accesses.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN_FIBERS 1
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace emu {
namespace {

enum class State { Ready, WarpWait, BlockWait, Done };

constexpr size_t kStackBytes = 256 * 1024;

// A cp.async copy issued and not yet waited for (copy_async).
struct PendingCopy {
    void* dst;
    const void* src;
    int bytes;
    bool valid;
    int group;  // -1 until committed
};

namespace context = boost::context;

struct Fiber {
    context::fiber continuation;  // where the thread goes on from; empty once it ended
    char* stack = nullptr;
    dim3 index;
    int linear = 0;
    State state = State::Ready;
    bool waited = false;         // called wait_for_prior_grids()
    bool allowed_early = false;  // called allow_next_grid() before that
    std::vector<PendingCopy> copies;
    int committed_groups = 0;
};

// One lane's operands of a warp's mma (warp_mma_m16n8k16).
struct MmaFragments {
    uint32_t a[4], b[2];
};

struct Block {
    std::vector<Fiber> fibers;
    context::fiber scheduler;  // where the scheduler goes on from, while a thread runs
    Fiber* current = nullptr;
    dim3 index, dim, grid;
    const std::function<void()>* body = nullptr;
    std::vector<uint64_t> exchange;  // one slot per thread
    std::vector<MmaFragments> mma;   // one per thread
    void* dynamic_shared = nullptr;  // dynamic_bytes, 16-byte aligned
    size_t dynamic_bytes = 0;
};

Block* g_block = nullptr;
bool g_require_prior_grid_waits = false;

// Fiber stacks, kept across launches (allocating and zeroing them per launch dominated
// the run time); never freed.
char* fiber_stack(int i) {
    static std::vector<std::unique_ptr<char[]>> stacks;
    while (int(stacks.size()) <= i) stacks.emplace_back(new char[kStackBytes]);
    return stacks[i].get();
}

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "cuda emulation: %s (block %u,%u,%u)\n", what, g_block->index.x, g_block->index.y,
                 g_block->index.z);
    std::abort();
}

struct SharedArray {
    void* data;
    size_t bytes;
};

std::vector<SharedArray>& shared_arrays() {
    static std::vector<SharedArray> arrays;
    return arrays;
}

// Blocks run one after another: this is each block's fresh shared memory.
void poison_shared_memory() {
    for (const SharedArray& a : shared_arrays()) std::memset(a.data, 0xFF, a.bytes);
}

// The order the scheduler runs a block's threads in is shuffled per block by one seeded
// generator (EDGERUN_EMU_SEED), so a run reproduces.
std::mt19937& schedule_rng() {
    static std::mt19937 rng([] {
        const char* seed = std::getenv("EDGERUN_EMU_SEED");
        return seed ? uint32_t(std::strtoul(seed, nullptr, 10)) : 20261124u;
    }());
    return rng;
}

#if EMU_ASAN_FIBERS
const void* g_scheduler_stack = nullptr;  // the scheduler's stack, learnt on the first switch
size_t g_scheduler_stack_size = 0;
void* g_scheduler_fake_stack = nullptr;
#endif

// A thread's switch back to the scheduler, which resumes it later.
void switch_to_scheduler() {
#if EMU_ASAN_FIBERS
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, g_scheduler_stack, g_scheduler_stack_size);
#endif
    g_block->scheduler = std::move(g_block->scheduler).resume();
#if EMU_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

void switch_to_fiber(Fiber& f) {
#if EMU_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&g_scheduler_fake_stack, f.stack, kStackBytes);
#endif
    f.continuation = std::move(f.continuation).resume();
#if EMU_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(g_scheduler_fake_stack, nullptr, nullptr);
#endif
}

// A thread from start to end; what it returns is where the scheduler goes on.
context::fiber fiber_main(context::fiber&& scheduler) {
#if EMU_ASAN_FIBERS
    __sanitizer_finish_switch_fiber(nullptr, &g_scheduler_stack, &g_scheduler_stack_size);
#endif
    g_block->scheduler = std::move(scheduler);
    (*g_block->body)();
    if (!g_block->current->copies.empty()) die("cp.async: a thread ended with copies it never waited for");
    g_block->current->state = State::Done;
#if EMU_ASAN_FIBERS
    __sanitizer_start_switch_fiber(nullptr, g_scheduler_stack, g_scheduler_stack_size);  // this stack is done with
#endif
    return std::move(g_block->scheduler);
}

void wait_at(State barrier) {
    g_block->current->state = barrier;
    switch_to_scheduler();
}

// Releases the warp-level barrier of the warp from thread w0 if all its lanes reached it;
// false if they did not.
bool release_warp_barrier(Block& b, int w0) {
    const int w1 = std::min(int(b.fibers.size()), w0 + 32);
    int waiting = 0, done = 0;
    for (int i = w0; i < w1; ++i) {
        waiting += b.fibers[i].state == State::WarpWait;
        done += b.fibers[i].state == State::Done;
    }
    if (waiting == 0 || waiting + done != w1 - w0) return false;
    if (done) die("warp-level sync or shuffle with lanes that have exited");
    for (int i = w0; i < w1; ++i) b.fibers[i].state = State::Ready;
    return true;
}

// Releases the barriers every fiber concerned has reached; false if none was.
bool release_barriers(Block& b) {
    bool released = false;
    const int n = int(b.fibers.size());
    for (int w0 = 0; w0 < n; w0 += 32) released = release_warp_barrier(b, w0) || released;
    int block_waiting = 0, live = 0;
    for (const Fiber& f : b.fibers) {
        block_waiting += f.state == State::BlockWait;
        live += f.state != State::Done;
    }
    if (block_waiting > 0 && block_waiting == live) {
        for (Fiber& f : b.fibers)
            if (f.state == State::BlockWait) f.state = State::Ready;
        released = true;
    }
    return released;
}

// The fibers run on our kept stacks (fiber_stack): nothing for Boost to allocate or free.
struct KeptStack {
    context::stack_context allocate() { std::abort(); }
    void deallocate(context::stack_context&) noexcept {}
};

void init_fiber(Fiber& f, int linear, const dim3& block) {
    f.linear = linear;
    f.index = dim3(linear % block.x, (linear / block.x) % block.y, linear / (block.x * block.y));
    f.state = State::Ready;
    f.waited = f.allowed_early = false;
    f.copies.clear();
    f.committed_groups = 0;
    context::stack_context stack;
    stack.size = kStackBytes;
    stack.sp = f.stack + kStackBytes;  // stacks grow down
    f.continuation = context::fiber(std::allocator_arg, context::preallocated(stack.sp, stack.size, stack),
                                    KeptStack{}, fiber_main);
}

}  // namespace

const dim3& thread_idx() { return g_block->current->index; }
const dim3& block_idx() { return g_block->index; }
const dim3& block_dim() { return g_block->dim; }
const dim3& grid_dim() { return g_block->grid; }
void syncthreads() { wait_at(State::BlockWait); }
void syncwarp() { wait_at(State::WarpWait); }

uint64_t warp_exchange(uint64_t value, int src_lane) {
    const int me = g_block->current->linear, warp0 = me / 32 * 32;
    g_block->exchange[me] = value;
    syncwarp();
    const uint64_t out = g_block->exchange[warp0 + src_lane];
    syncwarp();  // nobody overwrites its slot before everyone has read
    return out;
}

bool warp_any(bool predicate) {
    const int me = g_block->current->linear, warp0 = me / 32 * 32;
    g_block->exchange[me] = predicate;
    syncwarp();
    bool any = false;
    for (int lane = 0; lane < 32; ++lane) any = any || g_block->exchange[warp0 + lane] != 0;
    syncwarp();  // nobody overwrites its slot before everyone has read
    return any;
}

void warp_mma_m16n8k16(float* d, const uint32_t* a, const uint32_t* b) {
    const int me = g_block->current->linear, warp0 = me / 32 * 32, lane = me % 32;
    MmaFragments& mine = g_block->mma[size_t(me)];
    std::copy(a, a + 4, mine.a);
    std::copy(b, b + 2, mine.b);
    syncwarp();
    // Where element (row, k) of A and (k, col) of B are held (mma.cuh's layout, inverted).
    auto half_at = [](uint32_t word, int i) { return edgerun::quant::fp16_to_fp32(uint16_t(word >> (16 * (i % 2)))); };
    auto a_at = [&](int row, int k) {
        const int i = (k % 2) + 2 * (row / 8) + 4 * (k / 8);
        return half_at(g_block->mma[size_t(warp0 + (row % 8) * 4 + (k % 8) / 2)].a[i / 2], i);
    };
    auto b_at = [&](int k, int col) {
        const int i = (k % 2) + 2 * (k / 8);
        return half_at(g_block->mma[size_t(warp0 + col * 4 + (k % 8) / 2)].b[i / 2], i);
    };
    float out[4];
    for (int i = 0; i < 4; ++i) {
        const int row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
        float acc = d[i];
        for (int k = 0; k < 16; ++k) acc += a_at(row, k) * b_at(k, col);
        out[i] = acc;
    }
    syncwarp();  // every lane has read the others' fragments before any lane's next mma
    std::copy(out, out + 4, d);
}

// Whether [p, p + bytes) lies in one of the block's shared arrays or its dynamic shared memory.
bool in_shared(const void* p, size_t bytes) {
    const auto inside = [&](const void* data, size_t size) {
        const char *b = static_cast<const char*>(data), *q = static_cast<const char*>(p);
        return q >= b && q + bytes <= b + size;
    };
    if (g_block->dynamic_shared && inside(g_block->dynamic_shared, g_block->dynamic_bytes)) return true;
    for (const SharedArray& a : shared_arrays())
        if (inside(a.data, a.bytes)) return true;
    return false;
}

void warp_ldmatrix_x4(uint32_t* r, const void* row, bool transposed) {
    if (reinterpret_cast<uintptr_t>(row) % 16 != 0) die("ldmatrix: a row address is not 16-byte aligned");
    if (!in_shared(row, 16)) die("ldmatrix: a row address is not in shared memory");
    const int lane = g_block->current->linear % 32;
    const uint64_t mine = reinterpret_cast<uintptr_t>(row);
    const auto half_at = [](uint64_t row_address, int column) {
        uint16_t h;
        std::memcpy(&h, reinterpret_cast<const char*>(row_address) + 2 * column, 2);
        return uint32_t(h);
    };
    // Matrix i's rows come from lanes 8i..8i+7. Plain: a lane gets row lane/4, columns
    // 2 (lane%4) and + 1; transposed: column lane/4 of rows 2 (lane%4) and + 1.
    for (int i = 0; i < 4; ++i) {
        if (!transposed) {
            const uint64_t source = warp_exchange(mine, 8 * i + lane / 4);
            r[i] = half_at(source, 2 * (lane % 4)) | (half_at(source, 2 * (lane % 4) + 1) << 16);
        } else {
            const uint64_t first = warp_exchange(mine, 8 * i + 2 * (lane % 4));
            const uint64_t second = warp_exchange(mine, 8 * i + 2 * (lane % 4) + 1);
            r[i] = half_at(first, lane / 4) | (half_at(second, lane / 4) << 16);
        }
    }
}

void copy_async(void* dst, const void* src, int bytes, bool valid) {
    if (reinterpret_cast<uintptr_t>(dst) % unsigned(bytes) != 0 || reinterpret_cast<uintptr_t>(src) % unsigned(bytes) != 0)
        die("cp.async: an address not aligned to the copy's size");
    if (!in_shared(dst, size_t(bytes))) die("cp.async: a destination not in shared memory");
    // Each copy lands at one of the two ends of its window, as the seeded generator draws:
    // at once (as early as a GPU may write it: a buffer still read by another warp is
    // overwritten) or at the wait that completes it (as late: a read before the wait, or
    // before the barrier after it, finds shared memory's NaNs or the previous tile).
    if (schedule_rng()() % 2 == 0) {
        if (valid) std::memcpy(dst, src, size_t(bytes));
        else std::memset(dst, 0, size_t(bytes));
        return;
    }
    g_block->current->copies.push_back({dst, src, bytes, valid, -1});
}

void commit_async_copies() {
    Fiber& f = *g_block->current;
    for (PendingCopy& c : f.copies)
        if (c.group < 0) c.group = f.committed_groups;
    ++f.committed_groups;
}

void wait_async_copies(int n) {
    Fiber& f = *g_block->current;
    const int done_below = f.committed_groups - n;
    auto pending = f.copies.begin();
    for (PendingCopy& c : f.copies) {
        if (c.group >= 0 && c.group < done_below) {
            if (c.valid) std::memcpy(c.dst, c.src, size_t(c.bytes));
            else std::memset(c.dst, 0, size_t(c.bytes));
        } else {
            *pending++ = c;
        }
    }
    f.copies.erase(pending, f.copies.end());
}

bool register_shared(void* array, size_t bytes) {
    shared_arrays().push_back({array, bytes});
    std::memset(array, 0xFF, bytes);
    return true;
}

void prior_grids_waited() {
    if (g_block && g_block->current) g_block->current->waited = true;
}

void next_grid_allowed() {
    if (g_block && g_block->current && !g_block->current->waited) g_block->current->allowed_early = true;
}

RequirePriorGridWaits::RequirePriorGridWaits(bool on) : previous_(g_require_prior_grid_waits) {
    g_require_prior_grid_waits = on;
}
RequirePriorGridWaits::~RequirePriorGridWaits() { g_require_prior_grid_waits = previous_; }

void* dynamic_shared() {
    if (!g_block) {
        std::fprintf(stderr, "cuda emulation: dynamic shared memory asked for outside a launch\n");
        std::abort();
    }
    return g_block->dynamic_shared;
}

namespace {

// Under RequirePriorGridWaits: "" when every thread of the block that ran waited for the
// prior grids before allowing the next one, else what went wrong.
std::string grid_wait_fault(const Block& b, const char* kernel) {
    for (const Fiber& f : b.fibers) {
        const char* fault = !f.waited ? "ended without calling wait_for_prior_grids()"
                            : f.allowed_early ? "called allow_next_grid() before wait_for_prior_grids()"
                                              : nullptr;
        if (!fault) continue;
        char where[160];
        std::snprintf(where, sizeof where, " (thread %u,%u,%u of block %u,%u,%u)", f.index.x, f.index.y, f.index.z,
                      b.index.x, b.index.y, b.index.z);
        return std::string("cuda emulation: kernel ") + kernel + " " + fault +
               " under programmatic dependent launch (pdl=1)" + where;
    }
    return "";
}

}  // namespace

void launch(dim3 grid, dim3 block, const std::function<void()>& body, size_t dynamic_shared_bytes,
            const char* kernel) {
    Block b;
    b.dim = block;
    b.grid = grid;
    b.body = &body;
    // Exactly the bytes asked for (AddressSanitizer builds see a read past them).
    struct AlignedFree {
        void operator()(void* p) const { ::operator delete[](p, std::align_val_t(16)); }
    };
    std::unique_ptr<void, AlignedFree> dynamic(
        dynamic_shared_bytes ? ::operator new[](dynamic_shared_bytes, std::align_val_t(16)) : nullptr);
    b.dynamic_shared = dynamic.get();
    b.dynamic_bytes = dynamic_shared_bytes;
    const int n = int(block.x * block.y * block.z);
    b.fibers.resize(n);
    b.exchange.assign(n, 0);
    b.mma.assign(size_t(n), MmaFragments{});
    for (int i = 0; i < n; ++i) b.fibers[i].stack = fiber_stack(i);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    // Blocks run in an order shuffled per launch too: a GPU runs them in any order, and
    // code that needs a particular block to come last (a merge by whichever block of a
    // group finishes last, attention_split.cuh) must not pass by the grid's order.
    std::vector<dim3> blocks;
    blocks.reserve(size_t(grid.x) * grid.y * grid.z);
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) blocks.emplace_back(bx, by, bz);
    std::shuffle(blocks.begin(), blocks.end(), schedule_rng());
    g_block = &b;
    for (const dim3& index : blocks) {
        b.index = index;
        for (int i = 0; i < n; ++i) init_fiber(b.fibers[i], i, block);
        poison_shared_memory();
        if (b.dynamic_shared) std::memset(b.dynamic_shared, 0xFF, b.dynamic_bytes);
        std::shuffle(order.begin(), order.end(), schedule_rng());
        // Half the blocks run a warp at a time: each warp, in the shuffled order, goes on
        // through its own warp-level syncs (shuffles, mma) up to a block barrier before the
        // next warp starts, as a GPU may run one warp far ahead of the others. So a read of
        // what another warp writes without a __syncthreads between finds shared memory's
        // NaNs, even behind a warp-level sync (the other blocks interleave every thread
        // between any two blocking points).
        const bool warp_at_a_time = schedule_rng()() % 2 == 0;
        std::vector<std::vector<int>> warp_lanes((size_t(n) + 31) / 32);  // each warp's threads, in `order`
        for (int i : order) warp_lanes[size_t(i / 32)].push_back(i);
        const auto run_fiber = [&](int i) {
            Fiber& f = b.fibers[i];
            if (f.state != State::Ready) return false;
            b.current = &f;
            switch_to_fiber(f);
            return true;
        };
        for (;;) {
            bool ran = false;
            for (int i : order) {
                if (!warp_at_a_time) {
                    ran = run_fiber(i) || ran;
                    continue;
                }
                const std::vector<int>& lanes = warp_lanes[size_t(i / 32)];
                if (i != lanes.front()) continue;  // each warp once, where its first thread comes in `order`
                do {
                    for (int lane : lanes) ran = run_fiber(lane) || ran;
                } while (release_warp_barrier(b, i / 32 * 32));
            }
            const bool all_done = std::all_of(b.fibers.begin(), b.fibers.end(),
                                              [](const Fiber& f) { return f.state == State::Done; });
            if (all_done) break;
            if (!release_barriers(b) && !ran) die("deadlock: threads wait at barriers that never complete");
        }
        if (g_require_prior_grid_waits) {
            if (std::string fault = grid_wait_fault(b, kernel); !fault.empty()) {
                g_block = nullptr;
                throw std::logic_error(fault);
            }
        }
    }
    g_block = nullptr;
}

}  // namespace emu
