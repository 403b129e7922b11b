// The one narrow interface through which cuda_orin's host code reaches a device:
// memory (allocate, copy), kernel launches (the kernel library's entries), synchronize,
// and capture/replay of a step. Two implementations:
//   - cuda_device.cpp: the CUDA runtime and the kernels compiled by nvcc (the plugin);
//   - tests/cuda/emu/emulated_device.cpp: the same kernel sources compiled as C++ and run
//     on the CPU emulation of CUDA (a test plugin that CI runs under edgerun-conformance).
// No CUDA header here, so the backend (backend.cpp) is plain C++ and compiles once for
// both. Every call that fails throws sdk::Failure naming the device call and its error;
// launches are asynchronous on a device, and synchronize() reports a fault a kernel hit.
#pragma once

#include "attention_params.hpp"
#include "graph_op_params.hpp"
#include "launch_profile.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edgerun::cuda_orin {

struct DeviceMemory {
    uint64_t free = 0;
    uint64_t total = 0;
};

struct DeviceDescription {
    std::string name;
    uint64_t memory_total = 0;
    bool integrated = false;  // shares DRAM with the host (Jetson)
    bool host_filled_memory = false;  // allocate_host_filled works (CUDA managed memory)
    int sm_count = 0;
    int score = 0;  // er_device_info's: the backend chosen by default is the highest-scoring
    // Why Device::gemm cannot run here ("" when it can): steps then keep the multi-row GEMV.
    std::string gemm_unavailable;

    // What the device itself took when it was opened, before the backend allocated
    // anything: part of every prediction of the backend's device memory (Plan's report).
    // The CUDA context: free memory before it was made minus after (context_memory.hpp);
    // 0 with context_unmeasured saying why when that could not be read.
    uint64_t context_bytes = 0;
    std::string context_unmeasured;
    // The GEMM's memory, taken at open: the workspace handed to it and what its library
    // took for itself (cuBLAS's handle: 68 MiB on an H200, measured as the drop in free
    // memory, like the context); 0 without a GEMM.
    uint64_t gemm_bytes = 0;
    // memory().free right after the context was made, before the GEMM: what the device
    // and the backend take from then on is measured against it.
    uint64_t free_after_context = 0;
};

// C = A B^T, row-major: A is m x k (row stride lda), B is n x k (ldb), C is m x n floats
// (ldc). A and B are floats (plain F32 arithmetic, no TF32: the reference's results to
// float rounding) or, with inputs_f16, halves multiplied with F32 accumulation (tensor
// cores on the GPU; the inputs' rounding to F16 is the only difference).
struct GemmParams {
    const void* a = nullptr;
    const void* b = nullptr;
    float* c = nullptr;
    int32_t m = 0, n = 0, k = 0;
    int64_t lda = 0, ldb = 0, ldc = 0;
    int32_t inputs_f16 = 0;
};

// A step recorded by Device::begin_capture/end_capture; destroying it frees the recording.
class CapturedStep {
public:
    virtual ~CapturedStep() = default;
    virtual void replay() = 0;
};

class Device {
public:
    virtual ~Device() = default;

    virtual const DeviceDescription& description() const = 0;
    // Free and total device memory now (the figure allocations are checked against).
    virtual DeviceMemory memory() = 0;

    virtual void* allocate(uint64_t bytes) = 0;  // zero-filled
    // Memory the host fills in place and the device then reads, with no device copy of its
    // own: the weights of an integrated GPU (Jetson), whose DRAM the host shares, so they
    // are never held twice. The host may write it until hand_over_to_device(p); from then
    // on only launches touch it. Contents undefined until written; freed by release().
    virtual void* allocate_host_filled(uint64_t bytes) = 0;
    virtual void hand_over_to_device(void* p, uint64_t bytes) = 0;
    virtual void release(void* p) noexcept = 0;
    virtual void copy_to_device(void* dst, const void* src, uint64_t bytes) = 0;
    virtual void copy_to_host(void* dst, const void* src, uint64_t bytes) = 0;

    // Launches (asynchronous, in order on the device's one stream).
    virtual void prepare(const PrepareParams& p) = 0;
    virtual void gemv(const GemvLaunch& launch) = 0;  // planned by the device (its SM count)
    virtual void attention(const AttentionParams& p) = 0;
    virtual void widen_kv(const WidenKvParams& p) = 0;  // before a tiled attention over it
    virtual void embed(const EmbedParams& p) = 0;
    virtual void rms_norm(const RmsNormParams& p) = 0;
    virtual void rope_rows(const RopeRowsParams& p) = 0;
    virtual void elementwise(const ElementwiseParams& p) = 0;
    virtual void kv_append(const KvAppendParams& p) = 0;
    virtual void rope_append(const RopeAppendParams& p) = 0;  // one token: per-head norm, RoPE, KV append
    virtual void attention_rows(const AttentionRowsParams& p) = 0;
    // The matrix-matrix path of long steps: weight rows dequantized to floats, then a GEMM
    // (cuBLAS on the GPU, OpenBLAS on the emulation). Only when gemm_unavailable is "".
    virtual void dequantize_rows(const DequantizeRowsParams& p) = 0;
    virtual void half_rows(const HalfRowsParams& p) = 0;  // an F16 GEMM's activations
    virtual void gemm(const GemmParams& p) = 0;

    // Waits for every launch; throws with the first asynchronous fault.
    virtual void synchronize() = 0;

    // Launch accounting (launch_profile.hpp). Kernels launched since the device was opened,
    // a capture's included (a replay launches none one by one).
    virtual int64_t kernels_launched() const = 0;
    // Option profile=1: each launch is timed on the device; synchronize() reads the times
    // and take_launch_times() hands them over. Nothing is captured while on (the timing
    // marks would become part of the recording): begin_capture refuses.
    virtual void set_launch_timing(bool on) = 0;
    virtual std::vector<TimedLaunch> take_launch_times() = 0;
    // Option profile_skip: launches of these entries are not made (LaunchTimer::set_skipped).
    virtual void set_skipped_launches(KernelSet skipped) = 0;

    // Option pdl: later launches may start before the one ahead of them has finished
    // (programmatic dependent launch, kernels/grid_dependency.cuh), where the device can
    // (compute capability 9.0 and kernels built for it). Where it cannot, one info line
    // says why if the user asked for it (`asked`), a debug line if it is the default.
    // Called once, right after the device is opened.
    virtual void set_programmatic_launch(bool on, bool asked) = 0;

    // Capture of a step's launches for replay (CUDA Graphs). Between begin_capture and
    // end_capture launches are recorded, not run; replaying the returned step runs the
    // recording again with the parameters as they were recorded, so anything that changes
    // per step must be read from device memory. end_capture returns null (with *why) when
    // the device cannot capture; the caller then launches plainly. Each captured step
    // belongs to its caller (one per plan), so plans of several contexts keep their own.
    virtual void begin_capture() = 0;
    virtual std::unique_ptr<CapturedStep> end_capture(std::string* why) = 0;
};

// Device count and opening, defined by the implementation the plugin is linked with.
int32_t device_count();
// Throws sdk::Failure (ER_E_UNSUPPORTED) naming why the device cannot be used.
std::unique_ptr<Device> open_device(int32_t index);
// The plugin's name and one-line description (the emulated build has its own).
extern const char* const kPluginName;
extern const char* const kPluginDescription;

}  // namespace edgerun::cuda_orin
