// Shared parts of the cuda_orin benchmark (see cuda_orin_bench.cu).
#pragma once

#include "kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace edgerun::cuda_orin::bench {

inline void check(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return;
    std::fprintf(stderr, "cuda_orin_bench: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
}

// How a GEMV launch is shaped besides its input form: tasks of weights each lane loads
// before it dots the first (GemvLaunch::tasks_in_flight, the backend's option
// gemv_tasks_in_flight) and warps sharing each row (GemvLaunch::asked_warps_per_row, its
// option gemv_warps_per_row; 0: the plan's choice).
struct GemvVariant {
    int tasks_in_flight = 1;
    int warps_per_row = 0;
    // Rows walked in pairs where the plan keeps them (GemvLaunch::swiglu_pairs and
    // row_pairs: the backend's default, gemv_pairs=all); false: a row at a time.
    bool pairs = true;
    // Tasks each lane of a pair has on their way into shared memory (GemvLaunch::
    // ring_depth, the backend's option gemv_ring): 0, the default, none; 2 or 3. Prepared
    // 8-bit x only.
    int ring_depth = 0;
    // "" for the defaults, else e.g. "4 tasks in flight", "4 warps a row".
    std::string text() const {
        std::string s;
        if (tasks_in_flight > 1) s += std::to_string(tasks_in_flight) + " tasks in flight";
        if (warps_per_row > 0) s += (s.empty() ? "" : ", ") + std::to_string(warps_per_row) + " warps a row";
        if (!pairs) s += (s.empty() ? "" : ", ") + std::string("a row at a time");
        if (ring_depth > 0) s += (s.empty() ? "" : ", ") + std::string("a ring ") + std::to_string(ring_depth) + " deep";
        return s;
    }
};

struct Result {
    std::string kernel, shape, type;
    std::string activations;  // GEMVs: the input's form (activation_form_name); else empty
    GemvVariant variant;      // GEMVs' (the defaults for other kernels)
    double time_us, bytes, gbps, fraction;
    std::string note;
};

// How a GEMV reads its input: float rows, staged in each block's shared memory, as the
// backend runs by default; 8-bit rows dotted by dp4a, which the block quantizes from the
// floats as it stages them (GemvLaunch::quantize_x), as the option activations=q8 runs
// wherever x fits the stage; or 8-bit rows prepare made in global memory, that option's
// way for the rest ("q8-prepared"). The bench times each, so the default is measured and
// the option's worth, and the staging's cost, are seen beside it.
enum class ActivationForm { kF32, kQ8, kQ8Prepared };
inline const char* activation_form_name(ActivationForm f) {
    return f == ActivationForm::kF32 ? "f32" : f == ActivationForm::kQ8 ? "q8" : "q8-prepared";
}

struct Bench {
    cudaStream_t stream{};
    int n_sms = 0;
    size_t l2_bytes = 0;
    double peak_gbps = 0;
    bool quick = false;
    std::vector<Result> results;
    std::mt19937 rng{1};

    int reps() const { return quick ? 3 : 10; }

    // Average time of one call of launch(i) over `rounds` rounds of n distinct inputs, after
    // one untimed round (JIT, first touch). The timed rounds are captured into one CUDA
    // Graph and replayed, as a decode step is: kernels of a few microseconds are then timed
    // as kernels, not as the host's launch rate. A stream that cannot be captured (noted
    // once on stderr) is timed with plain launches.
    template <class F>
    double time_us(int n, int rounds, F launch) {
        for (int i = 0; i < n; ++i) launch(i);
        check(cudaStreamSynchronize(stream), "warm-up round");
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        bool captured = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
        if (captured) {
            for (int r = 0; r < rounds; ++r)
                for (int i = 0; i < n; ++i) launch(i);
            captured = cudaStreamEndCapture(stream, &graph) == cudaSuccess &&
                       cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
        }
        if (!captured) {
            (void)cudaGetLastError();
            static bool noted = false;
            if (!noted) std::fprintf(stderr, "bench: stream capture failed; timing plain launches\n");
            noted = true;
        }
        cudaEvent_t a, b;
        check(cudaEventCreate(&a), "event");
        check(cudaEventCreate(&b), "event");
        check(cudaEventRecord(a, stream), "event");
        if (captured) {
            check(cudaGraphLaunch(exec, stream), "graph launch");
        } else {
            for (int r = 0; r < rounds; ++r)
                for (int i = 0; i < n; ++i) launch(i);
        }
        check(cudaEventRecord(b, stream), "event");
        check(cudaEventSynchronize(b), "kernels");
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        cudaEventDestroy(a);
        cudaEventDestroy(b);
        if (exec) cudaGraphExecDestroy(exec);
        if (graph) cudaGraphDestroy(graph);
        return 1000.0 * ms / (double(n) * rounds);
    }

    // Distinct copies of `bytes` that together fill at least 4x the L2 (at least 2).
    int copies_for(double bytes) const { return int(std::max(2.0, std::ceil(4.0 * double(l2_bytes) / bytes))); }

    // activations: a GEMV's input form (activation_form_name), "" for other kernels;
    // variant: a GEMV's shape (the defaults for other kernels).
    void add(const std::string& kernel, const std::string& shape, const std::string& type, double us, double bytes,
             const std::string& note = "", const std::string& activations = "", const GemvVariant& variant = {}) {
        const double gbps = bytes / (us * 1e-6) / 1e9;
        results.push_back({kernel, shape, type, activations, variant, us, bytes, gbps, gbps / peak_gbps, note});
        const std::string shaped = variant.text().empty() ? "" : variant.text() + " ";
        std::printf("%-18s %-34s %-16s %-11s %10.2f us %12.0f B %9.1f GB/s %6.1f%%  %s%s\n", kernel.c_str(),
                    shape.c_str(), type.c_str(), activations.c_str(), us, bytes, gbps, 100.0 * gbps / peak_gbps,
                    shaped.c_str(), note.c_str());
    }
};

inline void* device_alloc(size_t bytes) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return p;
}

// `copies` packed matrices of random bytes (bandwidth does not care what the numbers are)
// in one allocation, at distinct addresses; half-precision fields hold a small positive
// value so the arithmetic stays finite. Free with free_matrix(result[0]).
inline std::vector<PackedMatrix> random_matrices(int32_t type, int rows, int cols, int copies, std::mt19937& rng) {
    const PackedLayout layout = packed_layout(type, rows, cols);
    std::vector<uint8_t> host(layout.total_bytes);
    uint64_t state = rng() | 1;  // xorshift: hundreds of MB of random bytes in a blink
    for (size_t i = 0; i + 8 <= host.size(); i += 8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        std::memcpy(&host[i], &state, 8);
    }
    const uint16_t small = 0x2C00;  // 1/16
    auto fill_halves = [&](int plane, int bytes_per_block, int halves_per_block) {
        const uint64_t blocks = uint64_t(rows) * layout.blocks_per_row;
        for (uint64_t blk = 0; blk < blocks; ++blk)
            for (int i = 0; i < halves_per_block; ++i)
                std::memcpy(&host[layout.plane_offset[plane] + blk * bytes_per_block + 2 * i], &small, 2);
    };
    switch (type) {
        case kF16: fill_halves(0, 64, 32); break;
        case kQ4_0: fill_halves(1, 2, 1); break;
        case kQ4_1: fill_halves(1, 4, 2); break;
        case kQ5_0: fill_halves(2, 2, 1); break;
        case kQ8_0: fill_halves(1, 2, 1); break;
        case kQ4_K: fill_halves(1, 16, 2); break;
        case kQ5_K: fill_halves(2, 16, 2); break;
        case kQ6_K: fill_halves(3, 2, 1); break;
    }
    auto* d = static_cast<uint8_t*>(device_alloc(host.size() * copies));
    std::vector<PackedMatrix> out;
    for (int i = 0; i < copies; ++i) {
        check(cudaMemcpy(d + host.size() * i, host.data(), host.size(), cudaMemcpyHostToDevice), "upload");
        out.push_back(packed_view(layout, type, rows, cols, d + host.size() * i));
    }
    return out;
}

inline PackedMatrix random_matrix(int32_t type, int rows, int cols, std::mt19937& rng) {
    return random_matrices(type, rows, cols, 1, rng)[0];
}

inline void free_matrix(PackedMatrix& m) { cudaFree(const_cast<uint8_t*>(m.plane[0])); }

// Bytes a GEMV must read of a matrix: its weights, exactly the file's bytes per weight.
inline double matrix_bytes(const PackedMatrix& m) {
    const PlaneGeometry g = plane_geometry(m.type);
    double per_block = 0;
    for (int p = 0; p < g.n_planes; ++p) per_block += g.plane_bytes[p];
    return per_block * double(m.n_rows) * m.blocks_per_row;
}

// Activations of length n prepared once and reused by every launch, float and 8-bit
// (gemv_launch takes the form's).
inline Activation make_activation(Bench& b, int n) {
    const int n_pad = padded_length(n);
    std::vector<float> x(n);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(b.rng);
    float* xd = static_cast<float*>(device_alloc(size_t(n) * 4));
    check(cudaMemcpy(xd, x.data(), size_t(n) * 4, cudaMemcpyHostToDevice), "upload");
    PrepareParams p;
    p.x = xd;
    p.n = n;
    p.out_f = static_cast<float*>(device_alloc(size_t(n_pad) * 4));
    p.out_q = static_cast<int8_t*>(device_alloc(n_pad));
    p.out_segments = static_cast<Words2*>(device_alloc(size_t(n_pad) / 16 * sizeof(Words2)));
    check(launch_prepare(p, b.stream), "prepare");
    return {{reinterpret_cast<const uint8_t*>(p.out_q), p.out_segments}, p.out_f, n, n_pad};
}

// A GEMV launch reading x in that form: the float rows (q8 null), quantized by the launch
// (quantize_x), or the prepared 8-bit rows (a quantized weight then takes those; a plain
// one, F16, reads floats in any case).
inline GemvLaunch gemv_launch(Activation x, ActivationForm form, const GemvVariant& variant = {}) {
    if (form != ActivationForm::kQ8Prepared) x.q8 = {};
    GemvLaunch l;
    l.x = x;
    l.quantize_x = form == ActivationForm::kQ8;
    l.tasks_in_flight = variant.tasks_in_flight;
    l.asked_warps_per_row = variant.warps_per_row;
    l.swiglu_pairs = l.row_pairs = variant.pairs;
    l.ring_depth = variant.ring_depth;
    return l;
}

// The forms a GEMV of this weight type can take: plain types read float x only.
inline std::vector<ActivationForm> activation_forms(int32_t type) {
    if (plain_value_bytes(type) != 0) return {ActivationForm::kF32};
    return {ActivationForm::kF32, ActivationForm::kQ8, ActivationForm::kQ8Prepared};
}

// Activation bytes a GEMV reads besides the weights: the float row (also when the launch
// quantizes it), or int8 values + a word pair (scale, sum) per 16 (q8_segment_words).
inline double activation_bytes(const Activation& x, ActivationForm form) {
    return form != ActivationForm::kQ8Prepared ? x.n_pad * 4.0 : x.n_pad * (1.0 + double(sizeof(Words2)) / 16);
}

void bench_attention(Bench& b);  // bench_attention.cu

}  // namespace edgerun::cuda_orin::bench
