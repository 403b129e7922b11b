// cuda_orin kernel library: the decode hot path of a Llama/Qwen layer on one CUDA stream.
//
// STATUS: compiled for sm_87/sm_90 and for compute_87 PTX; run on an H200 (2026-11-25,
// commit 65f53bc: tests/cuda/gpu/ and the backend's conformance pass with both builds,
// bench/results/h200-2026-11-25-cuda-orin-acceptance), every kernel here included, the
// tensor-core attention kernels and programmatic dependent launch too; decode of
// Llama-3.2-1B and Qwen3-4B at 0.67-0.94x llama.cpp's CUDA build there (bench/results).
// Later runs: an H100 (2026-11-27, 79562e5: every option of bench/device/candidates.txt
// timed, the chosen set through conformance; bench/results/h100-2026-11-27-tune) and an
// H200 (2026-11-27, 927f131: the defaults against llama.cpp; bench/results). On an H100
// (2026-11-28, 847a064 and 9badf87; bench/results/h100-2026-11-28-*) the backend's
// conformance passed at every level with the defaults (the loads of the tiled attention,
// prepare, rope_append and the flash-decode query issued together since 927f131), with
// tiled_attention_stages=2 and with gemv_kernels=typed_4_blocks; the GEMV making the next
// GEMV's 8-bit x (GemvLaunch::q8_out, option prepare=gemv) and gemv_kernels=typed ran
// there in decode benchmarks only, not through conformance. On an H200 (2026-11-28,
// e392d98; bench/results/h200-2026-11-28-e392d98): prepared 8-bit x carrying each
// segment's sum (q8_segment_words) and rows walked in pairs (GemvLaunch::swiglu_pairs,
// row_pairs; option gemv_pairs, `all` by default since) passed the kernel tests (both
// builds), the CUDA Graph test, compute-sanitizer and conformance at every level. Since
// (run on the CPU emulation only): the attention's merge may make the output projection's
// 8-bit x (AttentionParams::out_q; option merge_q8, off), and GEMV pairs may walk a ring
// of tasks copied into shared memory ahead of their dots (task_ring.cuh; option
// gemv_ring, off), and a step of one sequence's rows may have its INT8 cache widened to
// halves before the tiled attention reads it (WidenKvParams; option widen_kv, off).
// The math the kernels are made of is tested on the CPU (tests/cuda/test_kernel_math.cpp);
// the kernels themselves also run on the CPU emulation in CI
// (tests/cuda/test_kernels_emulated.cpp, and the whole backend under edgerun-conformance
// as cuda_orin_emu).
//
// Rules every launch here follows, so a whole decode step can be captured in a CUDA
// graph once and replayed: values that change per step (position, KV length, token id)
// are read from device memory; grid shapes depend only on model and context sizes; no
// launch allocates, copies from the host or synchronizes.
#pragma once

#include "attention_params.hpp"
#include "graph_op_params.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace edgerun::cuda_orin {

// Where a launch goes: the stream, and whether it may start before the launch ahead of it
// on that stream has finished (programmatic dependent launch, compute capability 9.0 and
// later; grid_dependency.cuh). The device sets pdl only on a GPU whose kernels carry
// griddepcontrol (kernels_wait_for_prior_grids). A plain stream converts to one without.
struct LaunchStream {
    cudaStream_t stream = nullptr;
    bool pdl = false;
    LaunchStream(cudaStream_t s = nullptr, bool programmatic = false) : stream(s), pdl(programmatic) {}
};

// What each launch computes is documented at its parameter struct (kernel_params.hpp, attention_params.hpp).
// Each returns cudaErrorInvalidValue for parameters it cannot run, else the launch error.
cudaError_t launch_prepare(const PrepareParams& p, LaunchStream stream);

// n_sms: the device's multiprocessor count (device_sm_count()).
cudaError_t launch_gemv(GemvLaunch launch, int n_sms, LaunchStream stream);

cudaError_t launch_rope_append(const RopeAppendParams& p, LaunchStream stream);

// The split kernel (on tensor cores with p.mma) and its merge, or with p.tiles the tiled
// kernel (and the merge when p.n_splits > 1).
cudaError_t launch_attention(const AttentionParams& p, LaunchStream stream);
// The tiled kernel alone, on the grid plan_attention gives (attention_tiles.cu).
cudaError_t launch_attention_tiles(const AttentionParams& p, dim3 grid, LaunchStream stream);
// One sequence's INT8 cache widened to halves for the tiled kernel (attention_tiles.cu).
cudaError_t launch_widen_kv(const WidenKvParams& p, LaunchStream stream);
// The split kernel on tensor cores alone, on the split kernel's grid (attention_mma.cu).
cudaError_t launch_attention_mma(const AttentionParams& p, dim3 grid, LaunchStream stream);

cudaError_t launch_embed(const EmbedParams& p, LaunchStream stream);

cudaError_t launch_advance_step(StepCounters* counters, LaunchStream stream);

// The general graph ops (graph_op_params.hpp, graph_ops.cu).
cudaError_t launch_rms_norm(const RmsNormParams& p, LaunchStream stream);
cudaError_t launch_rope_rows(const RopeRowsParams& p, LaunchStream stream);
cudaError_t launch_elementwise(const ElementwiseParams& p, LaunchStream stream);
cudaError_t launch_kv_append(const KvAppendParams& p, LaunchStream stream);
cudaError_t launch_attention_rows(const AttentionRowsParams& p, LaunchStream stream);
cudaError_t launch_dequantize_rows(const DequantizeRowsParams& p, LaunchStream stream);
cudaError_t launch_half_rows(const HalfRowsParams& p, LaunchStream stream);

int device_sm_count(int device);

// Whether the kernels that run on the current device wait for the prior grid when launched
// with PDL: true when their code was built for compute capability 9.0 or later (the sm_90
// SASS); false when it comes from older PTX (compute_87, JIT-compiled on a newer GPU),
// whose kernels have no griddepcontrol.wait. *why: the reason when false.
bool kernels_wait_for_prior_grids(std::string* why);

}  // namespace edgerun::cuda_orin
