// The cuda_orin kernel checks, written once against a small device interface so the
// same checks run on the CPU emulation (test_kernels_emulated.cpp, small shapes, in CI)
// and on a real GPU (gpu/gpu_kernel_tests.cu, every shape).
//
// Errors are measured over whole output vectors as NMSE = |y - ref|^2 / |ref|^2 against
// double-precision references; each check states its bound and the reason for it.
#pragma once

#include "attention_params.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace edgerun::cuda_orin::testing {

class DeviceApi {
public:
    virtual ~DeviceApi() = default;
    virtual void* alloc(size_t bytes) = 0;  // zero-filled, 256-byte aligned, freed by reset()
    virtual void upload(void* dst, const void* src, size_t bytes) = 0;
    virtual void download(void* dst, const void* src, size_t bytes) = 0;
    virtual void prepare(const PrepareParams& p) = 0;
    virtual void gemv(const GemvLaunch& launch) = 0;  // unplanned: the device plans it
    virtual void rope_append(const RopeAppendParams& p) = 0;
    virtual void attention(const AttentionParams& p) = 0;
    virtual void widen_kv(const WidenKvParams& p) = 0;
    virtual void embed(const EmbedParams& p) = 0;
    virtual void advance(StepCounters* counters) = 0;
    virtual void reset() = 0;  // frees every allocation

    template <class T>
    T* upload_vector(const std::vector<T>& v) {
        T* d = static_cast<T*>(alloc(v.size() * sizeof(T) + 16));
        upload(d, v.data(), v.size() * sizeof(T));
        return d;
    }
    template <class T>
    std::vector<T> download_vector(const T* d, size_t n) {
        std::vector<T> v(n);
        download(v.data(), d, n * sizeof(T));
        return v;
    }
};

struct CheckResult {
    std::string name;
    double error;
    double bound;
    bool pass() const { return error <= bound; }
};

using Report = std::function<void(const CheckResult&)>;

// --- bounds, with their reasons --------------------------------------------------
// F16 weights meet float activations and accumulate in float: rounding only (~1e-12);
// an F16 output adds half-precision rounding of y (~1e-7).
inline constexpr double kBoundF16Gemv = 1e-6;
// Quantized weights meet activations quantized to 8 bits per 32 values: noise of
// (max/127)^2/12 per value, NMSE ~3e-5 for Gaussian x; 6x margin.
inline constexpr double kBoundQ8Gemv = 2e-4;
// Attention over an F16 cache: float arithmetic on the exact cache values.
inline constexpr double kBoundF16Attention = 1e-8;
// INT8 cache, decode steps: the kernel also quantizes q to 8 bits per 32 for dp4a scores;
// score errors of ~|q||k|/254 per term move the softmax weights slightly.
inline constexpr double kBoundQ8Attention = 1e-3;
// INT8 cache, steps of several rows: the exact dequantized values in float arithmetic.
inline constexpr double kBoundQ8RowsAttention = 1e-8;
// The tensor-core attention (tiled, and split on mma): q, the probabilities and INT8 K/V
// rounded to halves (relative error up to 2^-11 each), products summed in float: at most
// 5.1e-7 on the emulation's cases (INT8 at head dim 128, where the rounded query moves
// scores of ~2 by ~5e-4; F16 1.6e-7); 4x margin. An operand in a wrong lane or register
// gives errors of order 1.
inline constexpr double kBoundTensorCoreAttention = 2e-6;
// INT8 cache against an F16 cache of the same K/V: 8-bit K, V and q together.
inline constexpr double kBoundQ8VsF16Attention = 2e-3;

// Room on the device for the word pairs of `rows` rows of n_pad values of 8-bit x
// (ActivationQ8::segments, q8_segment_words).
inline Words2* alloc_q8_segments(DeviceApi& api, int n_pad, int rows = 1) {
    return static_cast<Words2*>(api.alloc(size_t(rows) * size_t(n_pad / 16) * sizeof(Words2)));
}

// The segments of 8-bit x whose word pair (q8_segment_words) is not its group's scale in
// `d` and the sum of its 16 bytes of `q`.
inline int q8_segments_differing(const std::vector<Words2>& words, const std::vector<int8_t>& q,
                                 const std::vector<float>& d) {
    int wrong = 0;
    for (size_t s = 0; s < words.size(); ++s) {
        const Words2 expect = q8_segment_words_of(d[s / 2], &q[16 * s]);
        wrong += words[s].w[0] != expect.w[0] || words[s].w[1] != expect.w[1];
    }
    return wrong;
}

// Activations of x on the device, prepared by the kernel (no norm).
struct DeviceActivation {
    Activation view{};
};

inline DeviceActivation prepare_on_device(DeviceApi& api, const std::vector<float>& x, bool x_f16,
                                          const float* norm_weight = nullptr) {
    const int n = int(x.size()), n_pad = padded_length(n);
    PrepareParams p;
    if (x_f16) {
        std::vector<uint16_t> h(n);
        for (int i = 0; i < n; ++i) h[i] = quant::fp32_to_fp16(x[i]);
        p.x = api.upload_vector(h);
    } else {
        p.x = api.upload_vector(x);
    }
    p.x_is_f16 = x_f16;
    p.n = n;
    p.norm_weight = norm_weight;
    p.out_f = static_cast<float*>(api.alloc(n_pad * 4));
    p.out_q = static_cast<int8_t*>(api.alloc(n_pad));
    p.out_segments = alloc_q8_segments(api, n_pad);
    api.prepare(p);
    DeviceActivation a;
    a.view.q8 = {reinterpret_cast<const uint8_t*>(p.out_q), p.out_segments};
    a.view.f = p.out_f;
    a.view.n = n;
    a.view.n_pad = n_pad;
    return a;
}

// A packed matrix on the device plus its dequantized values for the reference.
struct TestMatrix {
    PackedMatrix view;
    std::vector<float> values;
};

inline TestMatrix make_device_matrix(DeviceApi& api, int32_t type, int n_rows, int n_cols, std::mt19937& rng) {
    const std::vector<uint8_t> gguf = make_weights(type, n_rows, n_cols, rng);
    const PackedLayout layout = packed_layout(type, n_rows, n_cols);
    std::vector<uint8_t> packed(layout.total_bytes);
    repack_matrix(type, gguf.data(), n_rows, n_cols, packed.data());
    void* d = api.alloc(packed.size());
    api.upload(d, packed.data(), packed.size());
    return {packed_view(layout, type, n_rows, n_cols, d), dequantize_weights(type, gguf, n_rows, n_cols)};
}

inline std::vector<float> read_output(DeviceApi& api, const void* y, int n, bool f16) {
    if (!f16) return api.download_vector(static_cast<const float*>(y), n);
    const std::vector<uint16_t> h = api.download_vector(static_cast<const uint16_t*>(y), n);
    std::vector<float> out(n);
    for (int i = 0; i < n; ++i) out[i] = quant::fp16_to_fp32(h[i]);
    return out;
}

// The largest |a - b| where the bit patterns differ (1e30 for a NaN in a), 0 when a and b
// are equal bit for bit.
inline double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = a.size() == b.size() ? 0.0 : 1e30;
    for (size_t k = 0; k < a.size() && k < b.size(); ++k)
        if (std::memcmp(&a[k], &b[k], 4) != 0)
            worst = std::max(worst, std::isnan(a[k]) ? 1e30 : std::fabs(double(a[k]) - b[k]) + 1e-300);
    return worst;
}

// (Residual add +) RMSNorm + quantization: float output against the formula, q8 output
// exactly the q8 rule applied to the float output. Without the residual add the row's
// groups are spread over several blocks (prepare_blocks), each of which sums the whole
// row for the norm itself.
enum class PrepareResidual { kNone, kInPlace };
inline void check_prepare(DeviceApi& api, const Report& report, int n, bool x_f16, PrepareResidual residual_add,
                          uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> x = random_vector(n, rng, 2.0f), residual = random_vector(n, rng), w = random_vector(n, rng);
    if (x_f16)
        for (float& e : x) e = quant::fp16_to_fp32(quant::fp32_to_fp16(e));
    const bool add = residual_add == PrepareResidual::kInPlace;
    const int n_pad = padded_length(n);
    PrepareParams p;
    std::vector<uint16_t> xh(n);
    for (int i = 0; i < n; ++i) xh[i] = quant::fp32_to_fp16(x[i]);
    p.x = x_f16 ? static_cast<const void*>(api.upload_vector(xh)) : api.upload_vector(x);
    p.x_is_f16 = x_f16;
    if (add) {
        p.residual = api.upload_vector(residual);
        p.residual_out = const_cast<float*>(p.residual);  // in place, as a decoder updates its hidden state
    }
    p.norm_weight = api.upload_vector(w);
    p.norm_eps = 1e-5f;
    p.n = n;
    p.out_f = static_cast<float*>(api.alloc(n_pad * 4));
    p.out_q = static_cast<int8_t*>(api.alloc(n_pad));
    p.out_segments = alloc_q8_segments(api, n_pad);
    api.prepare(p);
    std::vector<double> h(n);
    std::vector<float> h_float(n);  // the new hidden state is a float sum, exactly
    for (int i = 0; i < n; ++i) {
        h[i] = add ? double(x[i]) + residual[i] : double(x[i]);
        h_float[i] = add ? x[i] + residual[i] : x[i];
    }
    const std::vector<double> ref = ref_rms_norm(h, w, 1e-5);
    const std::vector<float> f = api.download_vector(p.out_f, n_pad);
    const std::vector<int8_t> q = api.download_vector(p.out_q, n_pad);
    const std::vector<Words2> segments = api.download_vector(p.out_segments, n_pad / 16);
    char name[160];
    std::snprintf(name, sizeof name, "prepare %srmsnorm n=%d x:%s", add ? "residual+" : "", n, x_f16 ? "f16" : "f32");
    // rsqrtf is within 2 ulp; the rest is float rounding.
    report({std::string(name) + " float", nmse(std::vector<float>(f.begin(), f.begin() + n), ref), 1e-10});
    if (add) report({std::string(name) + " hidden", nmse(api.download_vector(p.residual_out, n), h_float), 0.0});
    int wrong = 0;
    std::vector<float> d(n_pad / 32);
    for (int g = 0; g < n_pad / 32; ++g) {
        int8_t expect[32];
        d[g] = activation_q8_quantize_group(&f[32 * g], expect);
        wrong += std::memcmp(expect, &q[32 * g], 32) != 0;
        for (int i = n; i < n_pad && g == n_pad / 32 - 1; ++i) wrong += f[i] != 0.0f;
    }
    report({std::string(name) + " q8 groups differing from the q8 rule", double(wrong), 0.0});
    report({std::string(name) + " q8 segments whose scale or sum differs", double(q8_segments_differing(segments, q, d)),
            0.0});
    api.reset();
}

}  // namespace edgerun::cuda_orin::testing
