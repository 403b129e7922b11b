// The CUDA implementation of cuda_orin's Device interface: the CUDA runtime (memory,
// one stream, stream capture into a CUDA Graph) and the kernel library's launchers.
//
// STATUS: run on an H200 (2026-11-25, bench/results/h200-2026-11-25-cuda-orin-acceptance),
// every entry included; CI runs the same backend code on the emulated device
// (tests/cuda/emu/emulated_device.cpp).
#include "context_memory.hpp"
#include "cublas_gemm.hpp"
#include "cuda_check.hpp"
#include "device.hpp"
#include "device_selection.hpp"
#include "kernels.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace edgerun::cuda_orin {
namespace {

using sdk::Failure;

// An instantiated CUDA Graph, replayed on the device's stream.
class CudaGraphStep final : public CapturedStep {
public:
    CudaGraphStep(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
    ~CudaGraphStep() override { cudaGraphExecDestroy(exec_); }
    CudaGraphStep(const CudaGraphStep&) = delete;
    CudaGraphStep& operator=(const CudaGraphStep&) = delete;
    void replay() override { check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }

private:
    cudaGraphExec_t exec_;
    cudaStream_t stream_;
};

// LaunchTimer's clock on a GPU: events recorded on the stream, taken from a pool that grows
// to the launches of the longest step and is reused by every step after it.
class EventClock {
public:
    using Mark = cudaEvent_t;
    explicit EventClock(const cudaStream_t* stream) : stream_(stream) {}
    ~EventClock() {
        for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    }
    EventClock(const EventClock&) = delete;
    EventClock& operator=(const EventClock&) = delete;

    Mark mark() {
        if (next_ == pool_.size()) {
            cudaEvent_t e = nullptr;
            check(cudaEventCreate(&e), "cudaEventCreate");
            pool_.push_back(e);
        }
        const cudaEvent_t e = pool_[next_++];
        check(cudaEventRecord(e, *stream_), "cudaEventRecord");
        return e;
    }
    double elapsed_ms(Mark start, Mark end) {
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
        return ms;
    }
    void reuse() { next_ = 0; }

private:
    const cudaStream_t* stream_;
    std::vector<cudaEvent_t> pool_;
    size_t next_ = 0;
};

class CudaDevice final : public Device {
public:
    explicit CudaDevice(int32_t index) : index_(index), timer_(&stream_) {
        // Properties and attributes are read without a context: the context is made, and
        // what it takes measured, only then.
        char name[256] = {};
        cudaDeviceProp prop{};
        check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
        std::snprintf(name, sizeof name, "%s", prop.name);
        description_.name = name;
        description_.memory_total = prop.totalGlobalMem;
        int integrated = 0;
        check(cudaDeviceGetAttribute(&integrated, cudaDevAttrIntegrated, index), "cudaDeviceGetAttribute(Integrated)");
        description_.integrated = integrated != 0;
        int managed = 0;
        check(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, index), "cudaDeviceGetAttribute(ManagedMemory)");
        description_.host_filled_memory = managed != 0;
        check(cudaDeviceGetAttribute(&concurrent_managed_, cudaDevAttrConcurrentManagedAccess, index),
              "cudaDeviceGetAttribute(ConcurrentManagedAccess)");
        compute_major_ = prop.major;
        compute_minor_ = prop.minor;
        const ContextMemory context = make_context_measured(index, description_.integrated);
        description_.context_bytes = context.bytes;
        description_.context_unmeasured = context.unmeasured;
        description_.free_after_context = memory().free;
        description_.sm_count = device_sm_count(index);
        description_.score = 100;  // a usable GPU: chosen over cpu_ref (score 1) when it runs the model
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        cublas_ = CublasGemm::load(stream_, &description_.gemm_unavailable);
        if (cublas_) give_cublas_a_workspace(CublasGemm::recommended_workspace_bytes(prop.major));
        // cuBLAS's handle allocates for itself, beyond the workspace: counted as measured.
        const uint64_t free_now = memory().free;
        if (cublas_ && description_.free_after_context > free_now)
            description_.gemm_bytes = std::max(description_.gemm_bytes, description_.free_after_context - free_now);
    }
    ~CudaDevice() override {
        cublas_.reset();
        if (gemm_workspace_) release(gemm_workspace_);
        if (stream_) cudaStreamDestroy(stream_);
    }

    const DeviceDescription& description() const override { return description_; }
    DeviceMemory memory() override {
        size_t free = 0, total = 0;
        check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        if (description_.integrated) {
            const uint64_t available = host_mem_available();
            if (available > 0) return {available, total};
        }
        return {free, total};
    }

    void* allocate(uint64_t bytes) override {
        void* p = nullptr;
        check(cudaMalloc(&p, bytes), "cudaMalloc");
        // On the backend's stream, and waited for: cudaMemset would go to the legacy default
        // stream, which a non-blocking stream does not wait for, so the zeros could land
        // after the first kernels wrote the buffer (seen on the H200 as random wrong logits).
        cudaError_t zero = cudaMemsetAsync(p, 0, bytes, stream_);
        if (zero == cudaSuccess) zero = cudaStreamSynchronize(stream_);
        if (zero != cudaSuccess) {
            cudaFree(p);
            check(zero, "cudaMemsetAsync");
        }
        return p;
    }
    // Managed memory attached to the host: the CPU may write it whatever the GPU runs
    // meanwhile (without concurrent managed access, as on Jetson, a CPU access to managed
    // memory the GPU may use faults while any kernel runs).
    void* allocate_host_filled(uint64_t bytes) override {
        void* p = nullptr;
        check(cudaMallocManaged(&p, bytes, cudaMemAttachHost), "cudaMallocManaged");
        return p;
    }
    // Attached globally, not to the stream: a captured step's kernels belong to no stream.
    // On a discrete GPU the pages are moved to it now, not at the first step's faults.
    void hand_over_to_device(void* p, uint64_t bytes) override {
        check(cudaStreamAttachMemAsync(stream_, p, 0, cudaMemAttachGlobal), "cudaStreamAttachMemAsync");
        if (!description_.integrated && concurrent_managed_) {
#if CUDART_VERSION >= 13000
            cudaMemLocation device{};
            device.type = cudaMemLocationTypeDevice;
            device.id = index_;
            check(cudaMemPrefetchAsync(p, bytes, device, 0, stream_), "cudaMemPrefetchAsync");
#else
            check(cudaMemPrefetchAsync(p, bytes, index_, stream_), "cudaMemPrefetchAsync");
#endif
        }
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (after handing memory to the device)");
    }
    void release(void* p) noexcept override { cudaFree(p); }
    void copy_to_device(void* dst, const void* src, uint64_t bytes) override {
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (to device)");
        // The host buffer may be reused at once (a step's row table): wait for the copy.
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (after a copy to the device)");
    }
    void copy_to_host(void* dst, const void* src, uint64_t bytes) override {
        check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (to host)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (after a copy to the host)");
    }

    void prepare(const PrepareParams& p) override {
        timer_.run(LaunchKind(Kernel::prepare), [&] { check(launch_prepare(p, launch_stream()), "launch of prepare"); });
    }
    void gemv(const GemvLaunch& launch) override {
        timer_.run(gemv_kind(launch), [&] { check(launch_gemv(launch, description_.sm_count, launch_stream()), "launch of gemv"); });
    }
    void attention(const AttentionParams& p) override {
        timer_.run(attention_kind(p), [&] { check(launch_attention(p, launch_stream()), "launch of attention"); });
    }
    void widen_kv(const WidenKvParams& p) override {
        timer_.run(LaunchKind(Kernel::widen_kv),
                   [&] { check(launch_widen_kv(p, launch_stream()), "launch of widen_kv"); });
    }
    void embed(const EmbedParams& p) override {
        timer_.run(LaunchKind(Kernel::embed), [&] { check(launch_embed(p, launch_stream()), "launch of embed"); });
    }
    void rms_norm(const RmsNormParams& p) override {
        timer_.run(LaunchKind(Kernel::rms_norm), [&] { check(launch_rms_norm(p, launch_stream()), "launch of rms_norm"); });
    }
    void rope_rows(const RopeRowsParams& p) override {
        timer_.run(LaunchKind(Kernel::rope_rows), [&] { check(launch_rope_rows(p, launch_stream()), "launch of rope_rows"); });
    }
    void elementwise(const ElementwiseParams& p) override {
        timer_.run(LaunchKind(Kernel::elementwise), [&] { check(launch_elementwise(p, launch_stream()), "launch of elementwise"); });
    }
    void rope_append(const RopeAppendParams& p) override {
        timer_.run(LaunchKind(Kernel::rope_append), [&] { check(launch_rope_append(p, launch_stream()), "launch of rope_append"); });
    }
    void kv_append(const KvAppendParams& p) override {
        timer_.run(LaunchKind(Kernel::kv_append), [&] { check(launch_kv_append(p, launch_stream()), "launch of kv_append"); });
    }
    void attention_rows(const AttentionRowsParams& p) override {
        timer_.run(LaunchKind(Kernel::attention_rows),
                   [&] { check(launch_attention_rows(p, launch_stream()), "launch of attention_rows"); });
    }
    void dequantize_rows(const DequantizeRowsParams& p) override {
        timer_.run(LaunchKind(Kernel::dequantize_rows),
                   [&] { check(launch_dequantize_rows(p, launch_stream()), "launch of dequantize_rows"); });
    }
    void half_rows(const HalfRowsParams& p) override {
        timer_.run(LaunchKind(Kernel::half_rows), [&] { check(launch_half_rows(p, launch_stream()), "launch of half_rows"); });
    }
    void gemm(const GemmParams& p) override {
        if (!cublas_) throw Failure(ER_E_INTERNAL, "cuda_orin: gemm without cuBLAS: " + description_.gemm_unavailable);
        timer_.run(LaunchKind(Kernel::gemm), [&] { cublas_->gemm(p); });
    }

    // A fault in any kernel of the step surfaces here, at the end of the step that made it.
    // The step's timing events are read here, once it has finished, never per launch.
    void synchronize() override {
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (end of step)");
        timer_.read_marks();
    }

    int64_t kernels_launched() const override { return timer_.kernels_launched(); }
    void set_launch_timing(bool on) override { timer_.set_timing(on); }
    std::vector<TimedLaunch> take_launch_times() override { return timer_.take_times(); }
    void set_skipped_launches(KernelSet skipped) override { timer_.set_skipped(skipped); }

    // PDL only where the launched kernels wait for the prior grid (grid_dependency.cuh):
    // compute capability 9.0 or later, running code built for it (not the compute_87 PTX).
    void set_programmatic_launch(bool on, bool asked) override {
        pdl_ = false;
        if (!on) return;
        std::string why;
        if (compute_major_ < 9)
            why = "compute capability " + std::to_string(compute_major_) + "." + std::to_string(compute_minor_) +
                  " has no programmatic dependent launch (9.0 and later)";
        else if (!kernels_wait_for_prior_grids(&why))
            why = "on this GPU " + why;
        if (!why.empty()) {
            sdk::logf(asked ? ER_LOG_INFO : ER_LOG_DEBUG, "cuda_orin: %s: %s",
                      asked ? "option pdl=1 ignored" : "no programmatic dependent launch", why.c_str());
            return;
        }
        pdl_ = true;
    }

    void begin_capture() override {
        if (timer_.timing()) throw Failure(ER_E_INTERNAL, "cuda_orin: a capture while launches are timed");
        check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    }
    std::unique_ptr<CapturedStep> end_capture(std::string* why) override {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        cudaError_t status = cudaStreamEndCapture(stream_, &graph);
        if (status == cudaSuccess) status = cudaGraphInstantiate(&exec, graph, 0);
        if (graph) cudaGraphDestroy(graph);
        if (status != cudaSuccess) {
            cudaGetLastError();  // a failed capture is not a sticky error: clear it
            if (why) *why = std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
            return nullptr;
        }
        return std::make_unique<CudaGraphStep>(exec, stream_);
    }

private:
    LaunchStream launch_stream() const { return {stream_, pdl_}; }

    // cuBLAS's workspace, allocated here so that it is counted (DeviceDescription) and no
    // GEMM allocates. Without one, the GEMM path is off rather than running uncounted.
    void give_cublas_a_workspace(uint64_t bytes) {
        std::string why;
        try {
            gemm_workspace_ = allocate(bytes);
        } catch (const Failure& e) {
            why = std::string("no memory for cuBLAS's workspace: ") + e.what();
        }
        if (gemm_workspace_ && cublas_->use_workspace(gemm_workspace_, bytes, &why)) {
            description_.gemm_bytes = bytes;
            return;
        }
        cublas_.reset();
        if (gemm_workspace_) release(gemm_workspace_);
        gemm_workspace_ = nullptr;
        description_.gemm_unavailable = why;
    }

    int32_t index_;
    int concurrent_managed_ = 0;  // the GPU may use managed memory while the CPU does
    DeviceDescription description_;
    cudaStream_t stream_ = nullptr;
    bool pdl_ = false;  // set_programmatic_launch
    int compute_major_ = 0, compute_minor_ = 0;
    std::unique_ptr<CublasGemm> cublas_;
    void* gemm_workspace_ = nullptr;
    LaunchTimer<EventClock> timer_;
};

}  // namespace

const char* const kPluginName = "cuda_orin";
const char* const kPluginDescription = "CUDA backend for Jetson Orin (sm_87) and sm_90";

// Every CUDA device counts, usable or not: one this build carries no code for is then
// refused by open_device (so device_info and create) with the reason, which the host
// prints when it falls back to another backend. No driver or no GPU is not an error
// here: there are simply no devices.
int32_t device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

std::unique_ptr<Device> open_device(int32_t index) {
    const int32_t count = device_count();
    if (index < 0 || index >= count)
        throw Failure(ER_E_UNSUPPORTED,
                      "cuda_orin: no CUDA device " + std::to_string(index) + " (" + std::to_string(count) + " found)");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    const std::string why = unusable_reason(prop.major, prop.minor, parse_cuda_architectures(EDGERUN_CUDA_ARCHITECTURES));
    if (!why.empty())
        throw Failure(ER_E_UNSUPPORTED, "CUDA device " + std::to_string(index) + " (" + prop.name + ") is not usable: " + why);
    return std::make_unique<CudaDevice>(index);
}

}  // namespace edgerun::cuda_orin
