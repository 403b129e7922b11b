// STATUS: run on an H200 (2026-11-25, conformance and pp512); the same GEMM path runs in
// CI with OpenBLAS behind the emulated device.
#include "cublas_gemm.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cublas_v2.h>
#include <dlfcn.h>

namespace edgerun::cuda_orin {
namespace {

using sdk::Failure;

// The cuBLAS major versions this build can use, newest first (JetPack 6 ships 12).
constexpr const char* kLibraries[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};

class LoadedCublas final : public CublasGemm {
public:
    ~LoadedCublas() override {
        if (handle_) destroy_(handle_);
        if (library_) dlclose(library_);
    }

    // Null with *why on any failure (the object then cleans up what it got).
    static std::unique_ptr<LoadedCublas> open(cudaStream_t stream, std::string* why) {
        auto self = std::unique_ptr<LoadedCublas>(new LoadedCublas());
        std::string tried;
        for (const char* name : kLibraries) {
            self->library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (self->library_) break;
            tried += std::string(tried.empty() ? "" : "; ") + dlerror();
        }
        if (!self->library_) {
            *why = "no cuBLAS library (" + tried + ")";
            return nullptr;
        }
        if (!self->bind(self->create_, "cublasCreate_v2", why) || !self->bind(self->destroy_, "cublasDestroy_v2", why) ||
            !self->bind(self->set_stream_, "cublasSetStream_v2", why) ||
            !self->bind(self->set_math_mode_, "cublasSetMathMode", why) ||
            !self->bind(self->sgemm_, "cublasSgemm_v2", why) || !self->bind(self->gemm_ex_, "cublasGemmEx", why) ||
            !self->bind(self->set_workspace_, "cublasSetWorkspace_v2", why))
            return nullptr;
        if (const cublasStatus_t s = self->create_(&self->handle_); s != CUBLAS_STATUS_SUCCESS) {
            self->handle_ = nullptr;
            *why = "cublasCreate failed (status " + std::to_string(int(s)) + ")";
            return nullptr;
        }
        // FP32 math (the default mode: no TF32 tensor-core rounding unless asked), results
        // within float rounding of the reference, as the suite's thresholds expect.
        if (self->set_stream_(self->handle_, stream) != CUBLAS_STATUS_SUCCESS ||
            self->set_math_mode_(self->handle_, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
            *why = "cublasSetStream / cublasSetMathMode failed";
            return nullptr;
        }
        return self;
    }

    // After cublasSetStream, which puts the handle back on cuBLAS's own workspace pool.
    bool use_workspace(void* workspace, uint64_t bytes, std::string* why) override {
        if (const cublasStatus_t s = set_workspace_(handle_, workspace, size_t(bytes)); s != CUBLAS_STATUS_SUCCESS) {
            *why = "cublasSetWorkspace failed (status " + std::to_string(int(s)) + ")";
            return false;
        }
        return true;
    }

    // Row-major C = A B^T is column-major C^T = B A^T: B (n x k, ldb) transposed times A.
    void gemm(const GemmParams& p) override {
        const float one = 1.0f, zero = 0.0f;
        if (!p.inputs_f16) {
            const cublasStatus_t s = sgemm_(handle_, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &one,
                                            static_cast<const float*>(p.b), int(p.ldb), static_cast<const float*>(p.a),
                                            int(p.lda), &zero, p.c, int(p.ldc));
            if (s != CUBLAS_STATUS_SUCCESS)
                throw Failure(ER_E_INTERNAL, "cuda_orin: cublasSgemm failed (status " + std::to_string(int(s)) + ")");
            return;
        }
        // Halves in, F32 accumulation and output: tensor cores where the GPU has them.
        const cublasStatus_t s = gemm_ex_(handle_, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &one, p.b, CUDA_R_16F,
                                          int(p.ldb), p.a, CUDA_R_16F, int(p.lda), &zero, p.c, CUDA_R_32F, int(p.ldc),
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (s != CUBLAS_STATUS_SUCCESS)
            throw Failure(ER_E_INTERNAL, "cuda_orin: cublasGemmEx (F16 inputs) failed (status " + std::to_string(int(s)) + ")");
    }

private:
    LoadedCublas() = default;
    template <class Fn>
    bool bind(Fn& fn, const char* symbol, std::string* why) {
        fn = reinterpret_cast<Fn>(dlsym(library_, symbol));
        if (!fn) *why = std::string("cuBLAS lacks ") + symbol;
        return fn != nullptr;
    }

    void* library_ = nullptr;
    cublasHandle_t handle_ = nullptr;
    decltype(&cublasCreate_v2) create_ = nullptr;
    decltype(&cublasDestroy_v2) destroy_ = nullptr;
    decltype(&cublasSetStream_v2) set_stream_ = nullptr;
    decltype(&cublasSetMathMode) set_math_mode_ = nullptr;
    decltype(&cublasSgemm_v2) sgemm_ = nullptr;
    // Spelled out: the C++ header overloads cublasGemmEx (a cudaDataType compute type for
    // old callers); the library exports the cublasComputeType_t one under this name.
    using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                      const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    GemmEx gemm_ex_ = nullptr;
    decltype(&cublasSetWorkspace_v2) set_workspace_ = nullptr;
};

}  // namespace

uint64_t CublasGemm::recommended_workspace_bytes(int compute_major) {
    return (compute_major >= 9 ? uint64_t(32) : uint64_t(4)) << 20;
}

std::unique_ptr<CublasGemm> CublasGemm::load(cudaStream_t stream, std::string* why) {
    return LoadedCublas::open(stream, why);
}

}  // namespace edgerun::cuda_orin
