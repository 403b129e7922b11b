// The checks' device interface on a real GPU, through the library's launchers.
#pragma once

#include "kernel_checks.hpp"
#include "kernels.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace edgerun::cuda_orin::testing {

inline void cuda_check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "FATAL: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(2);
}

// True when a CUDA device can be used; prints why not otherwise.
inline bool cuda_device_present() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return false;
    }
    return true;
}

class CudaDevice final : public DeviceApi {
public:
    CudaDevice() {
        cuda_check(cudaStreamCreate(&stream_), "cudaStreamCreate");
        n_sms_ = device_sm_count(0);
    }
    ~CudaDevice() override {
        reset();
        cudaStreamDestroy(stream_);
    }
    void* alloc(size_t bytes) override {
        void* p = nullptr;
        cuda_check(cudaMalloc(&p, bytes), "cudaMalloc");
        cuda_check(cudaMemset(p, 0, bytes), "cudaMemset");
        blocks_.push_back(p);
        return p;
    }
    void upload(void* dst, const void* src, size_t bytes) override {
        cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
    }
    void download(void* dst, const void* src, size_t bytes) override {
        cuda_check(cudaStreamSynchronize(stream_), "kernel execution");
        cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download");
    }
    void prepare(const PrepareParams& p) override { cuda_check(launch_prepare(p, stream_), "launch_prepare"); }
    void gemv(const GemvLaunch& l) override { cuda_check(launch_gemv(l, n_sms_, stream_), "launch_gemv"); }
    void rope_append(const RopeAppendParams& p) override {
        cuda_check(launch_rope_append(p, stream_), "launch_rope_append");
    }
    void attention(const AttentionParams& p) override { cuda_check(launch_attention(p, stream_), "launch_attention"); }
    void widen_kv(const WidenKvParams& p) override { cuda_check(launch_widen_kv(p, stream_), "launch_widen_kv"); }
    void embed(const EmbedParams& p) override { cuda_check(launch_embed(p, stream_), "launch_embed"); }
    void advance(StepCounters* c) override { cuda_check(launch_advance_step(c, stream_), "launch_advance_step"); }
    void reset() override {
        cuda_check(cudaStreamSynchronize(stream_), "kernel execution");
        for (void* p : blocks_) cudaFree(p);
        blocks_.clear();
    }
    cudaStream_t stream() const { return stream_; }
    int n_sms() const { return n_sms_; }

private:
    cudaStream_t stream_ = nullptr;
    int n_sms_ = 0;
    std::vector<void*> blocks_;
};

}  // namespace edgerun::cuda_orin::testing
