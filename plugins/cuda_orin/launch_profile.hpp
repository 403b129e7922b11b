// Kernel launches counted, and timed on option profile=1: one home for both Device
// implementations (cuda_device.cpp, tests/cuda/emu/emulated_device.cpp) and the plan's
// report at its end. No CUDA header: the emulated build compiles it.
//   - LaunchTimer<Clock>: a device runs each launch through it. Every launch's kernels are
//     counted; while timing is on, the launch is bracketed by two marks of the device's
//     clock (CUDA events from a pool reused every step; std::chrono on the emulation), and
//     the marks are read once the step has finished (synchronize()), never per launch.
//   - LaunchProfile: one plan's steps, by kind of step (one row: decode; several: prefill
//     and batched steps) and, when timed, by kind of launch; logged when the plan ends.
#pragma once

#include "attention_params.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace edgerun::cuda_orin {

// The Device interface's launch entries.
// gemm counts as one kernel (cuBLAS may launch more than one for it).
enum class Kernel : uint8_t {
    prepare, gemv, attention, attention_mma, attention_tiles, widen_kv, embed, rms_norm, rope_rows, elementwise, kv_append,
    rope_append, attention_rows, dequantize_rows, half_rows, gemm
};

// A set of Kernel entries, a bit each.
using KernelSet = uint32_t;
constexpr KernelSet kernel_bit(Kernel k) { return KernelSet(1) << unsigned(k); }
static_assert(unsigned(Kernel::gemm) < 32, "a KernelSet holds every entry");
// Option profile_skip's name of a set of entries: an entry's own name, "attention" for the
// split kernel in both forms (CUDA cores and tensor cores, attention_kind's two); 0 for a
// name that is none. kernel_names(): every name, commas between them.
KernelSet kernels_named(std::string_view name);
std::string kernel_names();

// What a launch was: its entry and, for a GEMV, its shape (so the table tells the logits
// GEMV from the layers' projections). A key of the profile's table.
struct LaunchKind {
    Kernel kernel = Kernel::prepare;
    int32_t x_rows = 0, outputs = 0, width = 0;  // GEMV only: rows of x, outputs, row length
    int64_t out_rows = 0;                        // GEMV only: rows of all outputs together
    bool merged = false;                         // attention only: its splits merged by a second kernel
    bool rope_appended = false;                  // GEMV only: it does rope_append's work too
    // The bytes this launch must move at least (GEMV: weights, x and y; attention: the
    // keys and values it reads, q and out), from which the table's GB/s; 0 for the small
    // kernels not counted. Not part of the key: an attention launch's grows with the cache.
    uint64_t bytes = 0;

    explicit LaunchKind(Kernel k = Kernel::prepare) : kernel(k) {}
    // Kernels one launch makes: an attention launch's merge is a second (attention_merges).
    int32_t kernels() const { return merged ? 2 : 1; }
    std::string label() const;
    bool operator<(const LaunchKind& o) const {
        return std::tie(kernel, x_rows, outputs, width, out_rows, merged, rope_appended) <
               std::tie(o.kernel, o.x_rows, o.outputs, o.width, o.out_rows, o.merged, o.rope_appended);
    }
};

LaunchKind gemv_kind(const GemvLaunch& launch);
LaunchKind attention_kind(const AttentionParams& p);

struct TimedLaunch {
    LaunchKind kind;
    double ms = 0;
};

// Clock: `using Mark = ...; Mark mark();` (a point on the device's timeline, after the
// launches made so far), `double elapsed_ms(Mark, Mark)` (once both have passed) and
// `void reuse()` (the marks handed out so far are read and may be handed out again).
template <class Clock>
class LaunchTimer {
public:
    template <class... ClockArgs>
    explicit LaunchTimer(ClockArgs&&... args) : clock_(std::forward<ClockArgs>(args)...) {}

    void set_timing(bool on) { timing_ = on; }
    bool timing() const { return timing_; }
    // Option profile_skip: launches of these entries are not made, nor counted, so that a
    // replayed step's time without them says what they cost in it (option profile=1 times
    // each launch alone, its launch cost included). Every output is wrong then.
    void set_skipped(KernelSet skipped) { skipped_ = skipped; }
    int64_t kernels_launched() const { return kernels_; }

    template <class Launch>
    void run(const LaunchKind& kind, Launch&& launch) {
        if (skipped_ & kernel_bit(kind.kernel)) return;
        if (!timing_) {
            launch();
        } else {
            const typename Clock::Mark start = clock_.mark();
            launch();
            pending_.push_back({kind, start, clock_.mark()});
        }
        kernels_ += kind.kernels();
    }

    // Once the launches have finished (the end of synchronize()): their times, kept until taken.
    void read_marks() {
        const std::vector<Pending> pending = std::exchange(pending_, {});
        clock_.reuse();
        for (const Pending& p : pending) times_.push_back({p.kind, clock_.elapsed_ms(p.start, p.end)});
    }
    std::vector<TimedLaunch> take_times() { return std::exchange(times_, {}); }

private:
    struct Pending {
        LaunchKind kind;
        typename Clock::Mark start, end;
    };
    Clock clock_;
    bool timing_ = false;
    KernelSet skipped_ = 0;
    int64_t kernels_ = 0;
    std::vector<Pending> pending_;
    std::vector<TimedLaunch> times_;
};

// One plan's steps: kernels launched per step always; per launch kind times when the steps
// were timed. Steps of one row (decode) and of several rows are kept apart.
class LaunchProfile {
public:
    // A step of `rows` rows that launched `kernels` kernels (a replayed step: as many as its
    // capture), with its launches' times and its wall time (launch to synchronized) when timed.
    void add_step(int32_t rows, int64_t kernels, const std::vector<TimedLaunch>& times, double wall_ms);
    // "46 launches per step", or per kind of step when the plan ran both; "" before any step.
    std::string launches_per_step() const;
    // The per-launch-kind table of each kind of step that was timed, at ER_LOG_INFO.
    void log_tables() const;

private:
    struct Totals {
        int64_t kernels = 0;
        double ms = 0;
        double bytes = 0;
    };
    struct Steps {
        int64_t steps = 0, kernels = 0, timed = 0;
        double kernel_ms = 0, wall_ms = 0, bytes = 0;
        std::map<LaunchKind, Totals> by_kind;
    };
    Steps decode_, other_;  // one row; several rows
};

}  // namespace edgerun::cuda_orin
