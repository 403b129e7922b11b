// The host implementation of cuda_orin's Device interface: the kernel library's own
// sources, compiled as C++, run on the CPU emulation of CUDA (cuda_emulation.hpp), with
// "device memory" in host memory. Linked with the plugin's host code (plugin.cpp,
// plan.cpp) it makes the test plugin cuda_orin_emu, which CI runs under
// edgerun-conformance: every launch the backend makes runs the kernels' real indexing,
// shuffles, barriers and arithmetic. What it cannot show: races, the GPU memory model,
// speed (see cuda_emulation.hpp).
//
// Capture records each launch (its parameters by value) instead of running it; replay
// runs the recording, so a per-step value baked into a captured launch gives wrong
// results here as it would in a CUDA Graph.
#include "cuda_emulation.hpp"

// The kernel sources (their nvcc-only launchers drop out).
#include "attention.cu"
#include "attention_mma.cu"
#include "attention_tiles.cu"
#include "gemv.cu"
#include "graph_ops.cu"
#include "prepare.cu"
#include "rope_append.cu"
#include "small_kernels.cu"

#include "emulated_launches.hpp"

#include "device.hpp"
#include "device_selection.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

namespace edgerun::cuda_orin {

PlantedFault g_planted_fault = PlantedFault::None;

namespace {

using sdk::Failure;

// A small SM count, so the launch planners choose split-K and several KV splits even for
// the small shapes the emulated runs use.
constexpr int kEmulatedSms = 4;

// The device memory figure the emulated device reports: EDGERUN_EMU_DEVICE_MIB (tests of
// the up-front memory check set it small), else 16 GiB.
uint64_t emulated_memory_total() {
    const char* mib = std::getenv("EDGERUN_EMU_DEVICE_MIB");
    return mib ? uint64_t(std::strtoull(mib, nullptr, 10)) << 20 : uint64_t(16) << 30;
}

// The CUDA context's share the emulated device reports: EDGERUN_EMU_CONTEXT_MIB (taken
// from its memory at open, as a context is), else none.
uint64_t emulated_context_bytes() {
    const char* mib = std::getenv("EDGERUN_EMU_CONTEXT_MIB");
    return mib ? uint64_t(std::strtoull(mib, nullptr, 10)) << 20 : 0;
}

// The stand-in for cuBLAS's workspace when the emulated GEMM is present: OpenBLAS needs
// none, but the backend counts it as on a GPU. Small, so the memory-check tests' devices
// of a few MiB keep room for their models.
constexpr uint64_t kEmulatedGemmWorkspaceBytes = uint64_t(1) << 20;

// EDGERUN_EMU_NO_GEMM=1: the emulated device has no GEMM (as a GPU without cuBLAS), so
// long steps keep the multi-row GEMV and no workspace is taken.
bool emulated_gemm_absent() {
    const char* absent = std::getenv("EDGERUN_EMU_NO_GEMM");
    return absent && *absent && std::string(absent) != "0";
}

// EDGERUN_CUDA_ORIN_FAULT names one of the faults planted in cuda_orin's own code
// (planted_faults.hpp); unset or empty: none. CI's emulated runs must fail under each.
PlantedFault planted_fault_from_environment() {
    const char* name = std::getenv("EDGERUN_CUDA_ORIN_FAULT");
    if (!name || !*name) return PlantedFault::None;
    const std::string s = name;
    if (s == "gemv_row_tail") return PlantedFault::GemvRowTail;
    if (s == "split_merge") return PlantedFault::SplitMerge;
    if (s == "kv_scale_stride") return PlantedFault::KvScaleStride;
    throw Failure(ER_E_INVALID_ARGUMENT,
                  "EDGERUN_CUDA_ORIN_FAULT=" + s + ": one of gemv_row_tail, split_merge, kv_scale_stride");
}

// The paths a process's launches took: GEMV launches by rows of x, GEMMs, and attention
// launches by kernel. With EDGERUN_EMU_LAUNCH_COUNTS set, one line on stderr at
// exit, so a test can see which path a run's steps took.
class LaunchCounts {
public:
    ~LaunchCounts() {
        const char* report = std::getenv("EDGERUN_EMU_LAUNCH_COUNTS");
        if (!report || !*report) return;
        std::fprintf(stderr,
                     "cuda_orin_emu: GEMV launches: %lld of one row, %lld of 2-%d rows (%lld rows); GEMMs: %lld; "
                     "attention launches: %lld split, %lld split on mma, %lld tiled, %lld merged in their last blocks, "
                     "%lld prefetching next tiles, %lld pipelining their tiles, %lld tiled with two tiles in flight (%lld of %lld over INT8), "
                     "%lld merges making 8-bit x, %lld INT8 caches widened first; "
                     "one-row GEMV launches with several tasks in flight: %lld, doing rope_append: %lld, "
                     "loading one task ahead: %lld, making the next 8-bit x: %lld, applying x's norm scale: %lld, "
                     "by a kernel of one weight type: %lld, walking rows in pairs: %lld SwiGLU, %lld two rows a warp, "
                     "%lld through a ring of tasks\n",
                     one_row_, multi_row_, kGemvMaxRows, multi_rows_total_, gemms_, split_attention_, mma_attention_,
                     tiled_attention_, merged_in_last_blocks_, prefetching_, pipelining_, two_tiles_in_flight_, two_tiles_int8_,
                     tiled_int8_, merges_making_q8_, widened_, several_in_flight_, rope_appending_,
                     one_ahead_, making_q8_, norm_scaled_, typed_, swiglu_pairs_, row_pairs_, ringed_);
    }
    void add_widen_kv() { ++widened_; }
    void add_gemm() { ++gemms_; }
    // `l` as plan_gemv left it.
    void add_gemv(const GemvLaunch& l) {
        if (l.n_x_rows > 1) {
            ++multi_row_;
            multi_rows_total_ += l.n_x_rows;
        } else {
            ++one_row_;
            several_in_flight_ += l.tasks_in_flight > 1;
            rope_appending_ += l.rope_append_tickets != nullptr;
            one_ahead_ += l.tasks_in_flight == 1 && l.load_ahead;
            making_q8_ += l.q8_out.q != nullptr;
            norm_scaled_ += l.x.norm_scale != nullptr;
            typed_ += gemv_built_type(l) != kAnyWeightType;
            swiglu_pairs_ += l.swiglu_pairs;
            row_pairs_ += l.row_pairs;
            ringed_ += l.ring_depth > 0;
        }
    }
    void add_attention(const AttentionParams& p) {
        ++(p.tiles ? tiled_attention_ : p.mma ? mma_attention_ : split_attention_);
        merged_in_last_blocks_ += p.merge_tickets != nullptr;
        prefetching_ += !p.tiles && p.mma && !p.pipeline_tiles && p.prefetch_next_tile &&
                        attention_prefetches(p.cache.head_dim, p.cache.type);
        pipelining_ += !p.tiles && p.mma && p.pipeline_tiles;
        two_tiles_in_flight_ += p.tiles && p.tile_stages == 2;
        tiled_int8_ += p.tiles && p.cache.type == kKvQ8;
        two_tiles_int8_ += p.tiles && p.tile_stages == 2 && p.cache.type == kKvQ8;
        merges_making_q8_ += p.out_q != nullptr;
    }

private:
    long long one_row_ = 0, multi_row_ = 0, multi_rows_total_ = 0, gemms_ = 0, several_in_flight_ = 0, rope_appending_ = 0,
              one_ahead_ = 0, making_q8_ = 0, norm_scaled_ = 0, typed_ = 0, swiglu_pairs_ = 0,
              row_pairs_ = 0, ringed_ = 0;
    long long split_attention_ = 0, mma_attention_ = 0, tiled_attention_ = 0, merged_in_last_blocks_ = 0, prefetching_ = 0, pipelining_ = 0,
              two_tiles_in_flight_ = 0, two_tiles_int8_ = 0, tiled_int8_ = 0, merges_making_q8_ = 0, widened_ = 0;
};

LaunchCounts& launch_counts() {
    static LaunchCounts counts;
    return counts;
}

// LaunchTimer's clock here: a launch runs when it is made, so the host's clock times it.
struct HostClock {
    using Mark = std::chrono::steady_clock::time_point;
    Mark mark() { return std::chrono::steady_clock::now(); }
    double elapsed_ms(Mark start, Mark end) { return std::chrono::duration<double, std::milli>(end - start).count(); }
    void reuse() {}
};

// A recorded step: the launches with their parameters as they were made.
class RecordedStep final : public CapturedStep {
public:
    explicit RecordedStep(std::vector<std::function<void()>> launches) : launches_(std::move(launches)) {}
    void replay() override {
        for (const auto& launch : launches_) launch();
    }

private:
    std::vector<std::function<void()>> launches_;
};

class EmulatedDevice final : public Device {
public:
    EmulatedDevice() {
        description_.name = "CUDA emulation on the host CPU (tests/cuda/emu)";
        description_.memory_total = emulated_memory_total();
        description_.integrated = true;
        description_.host_filled_memory = true;
        description_.sm_count = kEmulatedSms;
        description_.context_bytes = emulated_context_bytes();
        if (description_.context_bytes > description_.memory_total)
            throw Failure(ER_E_OUT_OF_MEMORY, "emulated CUDA context larger than the emulated device");
        used_ = description_.context_bytes;
        description_.free_after_context = memory().free;
        if (emulated_gemm_absent()) {
            description_.gemm_unavailable = "no GEMM on this emulated device (EDGERUN_EMU_NO_GEMM)";
        } else {
            allocate(kEmulatedGemmWorkspaceBytes);  // held until the device closes, as cuBLAS's
            description_.gemm_bytes = kEmulatedGemmWorkspaceBytes;
        }
    }
    ~EmulatedDevice() override {
        for (auto& [p, bytes] : allocations_) std::free(p);
    }

    const DeviceDescription& description() const override { return description_; }
    DeviceMemory memory() override { return {description_.memory_total - used_, description_.memory_total}; }

    void* allocate(uint64_t bytes) override {
        const uint64_t rounded = (bytes + 255) / 256 * 256;
        if (used_ + rounded > description_.memory_total)
            throw Failure(ER_E_OUT_OF_MEMORY, "emulated cudaMalloc of " + std::to_string(bytes) + " bytes: out of memory");
        void* p = std::aligned_alloc(256, rounded);
        if (!p) throw Failure(ER_E_OUT_OF_MEMORY, "emulated cudaMalloc: host allocation failed");
        std::memset(p, 0, rounded);
        allocations_[p] = rounded;
        used_ += rounded;
        return p;
    }
    // Filled with 0xFF bytes, not zeros (managed memory promises no contents), so a layout
    // that relied on bytes the host never wrote reads NaNs and garbage here.
    void* allocate_host_filled(uint64_t bytes) override {
        void* p = allocate(bytes);
        std::memset(p, 0xFF, allocations_[p]);
        not_handed_over_.insert(p);
        return p;
    }
    void hand_over_to_device(void* p, uint64_t) override {
        check_not_capturing("hand_over_to_device");
        if (not_handed_over_.erase(p) != 1)
            throw Failure(ER_E_INTERNAL, "emulated hand_over_to_device of memory allocate_host_filled did not give, or given twice");
    }
    void release(void* p) noexcept override {
        not_handed_over_.erase(p);
        auto it = allocations_.find(p);
        if (it == allocations_.end()) return;
        used_ -= it->second;
        allocations_.erase(it);
        std::free(p);
    }
    void copy_to_device(void* dst, const void* src, uint64_t bytes) override {
        check_not_capturing("copy_to_device");
        std::memcpy(dst, src, bytes);
    }
    void copy_to_host(void* dst, const void* src, uint64_t bytes) override {
        check_not_capturing("copy_to_host");
        std::memcpy(dst, src, bytes);
    }

    void prepare(const PrepareParams& p) override {
        require(p.x && p.n > 0 && p.out_f && p.out_q && p.out_segments, "prepare");
        run(LaunchKind(Kernel::prepare), [p] { emulated::prepare(p); });
    }
    void gemv(const GemvLaunch& launch) override {
        GemvLaunch l = launch;
        const int blocks = plan_gemv(l, kEmulatedSms);
        require(blocks > 0, "gemv");
        launch_counts().add_gemv(l);
        run(gemv_kind(l), [l, blocks] { emulated::gemv(l, blocks); });
    }
    void attention(const AttentionParams& p) override {
        const AttentionGrid g = plan_attention(p);
        require(g.splits > 0, "attention");
        launch_counts().add_attention(p);
        run(attention_kind(p), [p, g] { emulated::attention(p, g); });
    }
    void widen_kv(const WidenKvParams& p) override {
        require(valid(p), "widen_kv");
        launch_counts().add_widen_kv();
        run(LaunchKind(Kernel::widen_kv), [p] { emulated::widen_kv(p); });
    }
    void embed(const EmbedParams& p) override {
        require(valid(p), "embed");
        run(LaunchKind(Kernel::embed), [p] { emulated::embed(p); });
    }
    void rms_norm(const RmsNormParams& p) override {
        run_op(Kernel::rms_norm, p, rms_norm_shape(p), rms_norm_kernel, "rms_norm");
    }
    void rope_rows(const RopeRowsParams& p) override {
        run_op(Kernel::rope_rows, p, rope_rows_shape(p), rope_rows_kernel, "rope_rows");
    }
    void elementwise(const ElementwiseParams& p) override {
        run_op(Kernel::elementwise, p, elementwise_shape(p), elementwise_kernel, "elementwise");
    }
    void kv_append(const KvAppendParams& p) override {
        run_op(Kernel::kv_append, p, kv_append_shape(p), kv_append_kernel, "kv_append");
    }
    void rope_append(const RopeAppendParams& p) override {
        require(valid_rope_append(p), "rope_append");
        run(LaunchKind(Kernel::rope_append), [p] { emulated::rope_append(p); });
    }
    void attention_rows(const AttentionRowsParams& p) override {
        run_op(Kernel::attention_rows, p, attention_rows_shape(p), attention_rows_kernel, "attention_rows");
    }
    void dequantize_rows(const DequantizeRowsParams& p) override {
        run_op(Kernel::dequantize_rows, p, dequantize_rows_shape(p), dequantize_rows_kernel, "dequantize_rows");
    }
    void half_rows(const HalfRowsParams& p) override {
        run_op(Kernel::half_rows, p, half_rows_shape(p), half_rows_kernel, "half_rows");
    }
    // OpenBLAS stands in for cuBLAS: the same operation, on the host's "device memory".
    // Halves are widened to floats first (exact), so the product is an F32-accumulated
    // product of the F16 inputs, as cublasGemmEx's (up to the order of the sums).
    void gemm(const GemmParams& p) override {
        require(description_.gemm_unavailable.empty(), "gemm (the device has none)");
        require(p.a && p.b && p.c && p.m > 0 && p.n > 0 && p.k > 0 && p.lda >= p.k && p.ldb >= p.k && p.ldc >= p.n,
                "gemm");
        launch_counts().add_gemm();
        run(LaunchKind(Kernel::gemm), [p] {
            std::vector<float> a16, b16;
            auto widen = [&](const void* halves, int32_t rows, int64_t ld, std::vector<float>& out) {
                out.resize(size_t(rows) * size_t(p.k));
                for (int32_t r = 0; r < rows; ++r)
                    for (int32_t i = 0; i < p.k; ++i)
                        out[size_t(r) * p.k + i] = quant::fp16_to_fp32(static_cast<const uint16_t*>(halves)[r * ld + i]);
                return out.data();
            };
            const float* a = p.inputs_f16 ? widen(p.a, p.m, p.lda, a16) : static_cast<const float*>(p.a);
            const float* b = p.inputs_f16 ? widen(p.b, p.n, p.ldb, b16) : static_cast<const float*>(p.b);
            const int lda = p.inputs_f16 ? p.k : int(p.lda), ldb = p.inputs_f16 ? p.k : int(p.ldb);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p.m, p.n, p.k, 1.0f, a, lda, b, ldb, 0.0f, p.c,
                        int(p.ldc));
        });
    }

    void synchronize() override { timer_.read_marks(); }  // launches ran when made (or replayed)

    int64_t kernels_launched() const override { return timer_.kernels_launched(); }
    void set_launch_timing(bool on) override { timer_.set_timing(on); }
    // The emulation runs launches one after another, so PDL changes no result here; what
    // it checks is the kernels' side: with pdl=1 every thread of every launch must wait for
    // the prior grids (cuda_emulation.hpp's RequirePriorGridWaits), replays included.
    void set_programmatic_launch(bool on, bool) override { pdl_ = on; }
    std::vector<TimedLaunch> take_launch_times() override { return timer_.take_times(); }
    void set_skipped_launches(KernelSet skipped) override { timer_.set_skipped(skipped); }

    void begin_capture() override {
        if (timer_.timing()) throw Failure(ER_E_INTERNAL, "emulated capture while launches are timed");
        recording_.clear();
        capturing_ = true;
    }
    std::unique_ptr<CapturedStep> end_capture(std::string*) override {
        capturing_ = false;
        auto step = std::make_unique<RecordedStep>(std::move(recording_));
        recording_.clear();
        return step;
    }

private:
    // A launch the backend should never make is a bug in cuda_orin: an error, as
    // cudaErrorInvalidValue from a launcher would be.
    static void require(bool ok, const char* kernel) {
        if (!ok) throw Failure(ER_E_INTERNAL, std::string("emulated launch of ") + kernel + ": invalid parameters");
    }
    void check_not_capturing(const char* what) const {
        if (capturing_) throw Failure(ER_E_INTERNAL, std::string("emulated ") + what + " during a capture");
    }
    template <class Params, class KernelFunction>
    void run_op(Kernel entry, const Params& p, GraphOpShape shape, KernelFunction kernel, const char* name) {
        require(valid(p), name);
        run(LaunchKind(entry),
            [p, shape, kernel, name] { emu::launch(shape.grid, shape.block, [&] { kernel(p); }, 0, name); });
    }
    void run(const LaunchKind& kind, std::function<void()> body) {
        // On a Jetson the host's writes to managed memory are not ordered with a kernel's
        // reads until the memory is handed over (attached to the device).
        if (!not_handed_over_.empty())
            throw Failure(ER_E_INTERNAL, "emulated launch while memory filled by the host was not handed over to the device");
        std::function<void()> launch = [pdl = pdl_, body = std::move(body)] {
            emu::RequirePriorGridWaits require(pdl);
            body();
        };
        timer_.run(kind, [&] {
            if (capturing_)
                recording_.push_back(std::move(launch));
            else
                launch();
        });
    }

    DeviceDescription description_;
    std::map<void*, uint64_t> allocations_;
    std::set<void*> not_handed_over_;  // allocate_host_filled's, still the host's to write
    uint64_t used_ = 0;  // the context's share included
    bool capturing_ = false;
    bool pdl_ = false;
    std::vector<std::function<void()>> recording_;
    LaunchTimer<HostClock> timer_;
};

}  // namespace

const char* const kPluginName = "cuda_orin_emu";
const char* const kPluginDescription =
    "cuda_orin's host code and kernels on the CPU emulation of CUDA (a test build; slow)";

int32_t device_count() { return 1; }

std::unique_ptr<Device> open_device(int32_t index) {
    if (index != 0) throw Failure(ER_E_INVALID_ARGUMENT, "cuda_orin_emu has one device (0), not " + std::to_string(index));
    // EDGERUN_EMU_COMPUTE_CAPABILITY (e.g. 8.6) makes the emulated device a GPU of that
    // capability, judged as the CUDA plugin judges one against its default build (sm_87
    // and sm_90, with their PTX): tests of the fallback to another backend.
    if (const char* cc = std::getenv("EDGERUN_EMU_COMPUTE_CAPABILITY"); cc && *cc) {
        const int major = std::atoi(cc), minor = std::strchr(cc, '.') ? std::atoi(std::strchr(cc, '.') + 1) : 0;
        const std::string why = unusable_reason(major, minor, parse_cuda_architectures("87,90"));
        if (!why.empty()) throw Failure(ER_E_UNSUPPORTED, "emulated CUDA device 0 is not usable: " + why);
    }
    g_planted_fault = planted_fault_from_environment();
    return std::make_unique<EmulatedDevice>();
}

}  // namespace edgerun::cuda_orin
