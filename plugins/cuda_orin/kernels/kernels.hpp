// cuda_orin kernel library: the decode hot path of a Llama/Qwen layer on one CUDA stream.
//
// STATUS: compiled for sm_87/sm_90 and for compute_87 PTX; run on an H200 (2026-11-24:
// tests/cuda/gpu/ and the backend's conformance pass with both builds), not yet tuned.
// Since that run (commit a42a643), dequantize_rows (the GEMM path's), the embedding from
// the packed layout (embed_packed_kernel, any number of rows) and the float-activation
// GEMV's 16-byte loads of x have run only on the emulation. The math the kernels
// are made of is tested on the CPU (tests/cuda/test_kernel_math.cpp); the kernels
// themselves also run on the CPU emulation in CI (tests/cuda/test_kernels_emulated.cpp,
// and the whole backend under edgerun-conformance as cuda_orin_emu).
//
// Rules every launch here follows, so a whole decode step can be captured in a CUDA
// graph once and replayed: values that change per step (position, KV length, token id)
// are read from device memory; grid shapes depend only on model and context sizes; no
// launch allocates, copies from the host or synchronizes.
#pragma once

#include "graph_op_params.hpp"
#include "kernel_params.hpp"

#include <cuda_runtime_api.h>

namespace edgerun::cuda_orin {

// What each launch computes is documented at its parameter struct (kernel_params.hpp).
// Each returns cudaErrorInvalidValue for parameters it cannot run, else the launch error.
cudaError_t launch_prepare(const PrepareParams& p, cudaStream_t stream);

// n_sms: the device's multiprocessor count (device_sm_count()).
cudaError_t launch_gemv(GemvLaunch launch, int n_sms, cudaStream_t stream);

cudaError_t launch_rope_append(const RopeAppendParams& p, cudaStream_t stream);

cudaError_t launch_attention(const AttentionParams& p, cudaStream_t stream);

cudaError_t launch_embed(const EmbedParams& p, cudaStream_t stream);

cudaError_t launch_advance_step(StepCounters* counters, cudaStream_t stream);

// The general graph ops (graph_op_params.hpp, graph_ops.cu).
cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t stream);
cudaError_t launch_rope_rows(const RopeRowsParams& p, cudaStream_t stream);
cudaError_t launch_elementwise(const ElementwiseParams& p, cudaStream_t stream);
cudaError_t launch_kv_append(const KvAppendParams& p, cudaStream_t stream);
cudaError_t launch_attention_rows(const AttentionRowsParams& p, cudaStream_t stream);
cudaError_t launch_dequantize_rows(const DequantizeRowsParams& p, cudaStream_t stream);
cudaError_t launch_half_rows(const HalfRowsParams& p, cudaStream_t stream);

int device_sm_count(int device);

}  // namespace edgerun::cuda_orin
