// Benchmark of the cuda_orin kernels at the real decode shapes (a program, not a test).
//
//   cuda_orin_bench [--out DIR] [--commit SHA] [--quick]
//
// For every kernel: time per launch, the bytes it must move, achieved GB/s, and the
// fraction of the peak measured in the same run by a plain device-to-device copy
// (counted as bytes read + written). GEMVs are timed with each input form the backend can
// give them (ActivationForm: float rows staged in shared memory; 8-bit rows for dp4a,
// quantized by the GEMV as it stages them or prepared by a launch of their own, its
// default), over the same weights, with rows walked in pairs where the plan keeps them (its
// default gemv_pairs=all); the layer sequence also a row at a time (gemv_pairs=none), with two and four
// tasks of weights in flight a lane (its gemv_tasks_in_flight=N) and with four warps a row
// (its gemv_warps_per_row=4), with the pairs through a ring of tasks 2 and 3 deep (its
// gemv_ring=2|3), and its fused Q/K/V launch followed by rope_append against
// the same launch doing rope_append's work (its rope_append=gemv). Weights and KV caches rotate
// through distinct buffers totalling at least 4x the L2 (the H100's 50 MB L2 holds a
// whole layer); the layer benchmarks run all 36 layers of Qwen3-4B Q4_K_M in order. So
// the figures are DRAM figures, never one buffer re-timed from L2. Writes
// DIR/<device>-<UTC time>.json (DIR defaults to bench/results) with device name, commit
// and command, and prints a table.
#include "bench_common.hpp"

#include <ctime>
#include <filesystem>
#include <fstream>

#ifndef EDGERUN_GIT_COMMIT
#define EDGERUN_GIT_COMMIT "unknown"
#endif

using namespace edgerun::cuda_orin;
using namespace edgerun::cuda_orin::bench;

namespace {

// The copy peak as bench/compare_llamacpp_gpu.py measures it: a 1 GiB device-to-device
// cudaMemcpyAsync ten times, plain calls timed by events, bytes read plus written. Not
// through Bench::time_us: captured into a CUDA Graph the same copies ran at 2758 GB/s on
// an H200 where plain ones reached 4218 the same day (2026-11-25), and at 2707 against
// 4193-4269 on the next H200 machine (2026-11-28), so every kernel's fraction of the peak
// was about 1.5 times too high.
double measure_peak(Bench& b) {
    const size_t bytes = size_t(1) << 30;
    constexpr int kRounds = 10;
    void* src = device_alloc(bytes);
    void* dst = device_alloc(bytes);
    cudaEvent_t start{}, stop{};
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, b.stream), "copy");  // warm-up
    check(cudaEventRecord(start, b.stream), "event");
    for (int r = 0; r < kRounds; ++r) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, b.stream), "copy");
    check(cudaEventRecord(stop, b.stream), "event");
    check(cudaEventSynchronize(stop), "event");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start, stop), "event");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(src);
    cudaFree(dst);
    return 2.0 * double(bytes) * kRounds / (double(ms) * 1e-3) / 1e9;
}

void launch_single(Bench& b, const Activation& x, ActivationForm form, const PackedMatrix& w, float* y,
                   const GemvVariant& variant = {}) {
    GemvLaunch l = gemv_launch(x, form, variant);
    l.n_outputs = 1;
    l.out[0].w = w;
    l.out[0].y = y;
    check(launch_gemv(l, b.n_sms, b.stream), "gemv");
}

// One type at one shape, rotated through distinct copies, with each input form.
void bench_gemv(Bench& b, int32_t type, const std::string& shape, int rows, int cols) {
    const Activation x = make_activation(b, cols);
    float* y = static_cast<float*>(device_alloc(size_t(rows) * 4));
    const PackedLayout layout = packed_layout(type, rows, cols);
    const int n = b.copies_for(double(layout.total_bytes));
    std::vector<PackedMatrix> copies = random_matrices(type, rows, cols, n, b.rng);
    for (const ActivationForm form : activation_forms(type)) {
        const double us = b.time_us(n, b.reps(), [&](int i) { launch_single(b, x, form, copies[i], y); });
        b.add("gemv", shape + " " + std::to_string(rows) + "x" + std::to_string(cols), weight_type_name(type), us,
              matrix_bytes(copies[0]) + activation_bytes(x, form), "", activation_form_name(form));
    }
    free_matrix(copies[0]);
    cudaFree(y);
}

struct Model {
    const char* name;
    int n_embd, n_q, n_kv, n_ff;
};

void bench_types(Bench& b) {
    const Model models[] = {{"Qwen3-4B", 2560, 4096, 1024, 9728},
                            {"Llama-3.2-1B", 2048, 2048, 512, 8192},
                            {"SmolLM2", 576, 576, 192, 1536}};
    const int32_t types[] = {kQ4_0, kQ4_1, kQ5_0, kQ8_0, kQ4_K, kQ5_K, kQ6_K, kF16};
    for (const Model& m : models) {
        if (b.quick && m.n_embd != 2560) continue;
        for (int32_t t : types) {
            const bool k_quant = t == kQ4_K || t == kQ5_K || t == kQ6_K;
            if (k_quant && m.n_embd % 256) continue;  // such rows cannot hold K-quants
            const std::string s = m.name;
            bench_gemv(b, t, s + " attn_q", m.n_q, m.n_embd);
            bench_gemv(b, t, s + " attn_k", m.n_kv, m.n_embd);
            bench_gemv(b, t, s + " ffn_up", m.n_ff, m.n_embd);
            bench_gemv(b, t, s + " ffn_down", m.n_embd, m.n_ff);
        }
    }
}

// Qwen3-4B Q4_K_M as llama.cpp makes it: attn_v and ffn_down are Q6_K in the "more bits"
// layers, everything else Q4_K.
struct QwenLayer {
    PackedMatrix q, k, v, o, gate, up, down;
};

bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Inputs of one layer's GEMVs, in one form, and where the outputs go.
struct LayerInputs {
    Activation x, x_q, x_ff;  // widths n_embd, n_q (attn_output), n_ff (ffn_down)
    ActivationForm form;
    GemvVariant variant;
    float *y, *y2;
    // The token's q, k, v (at y) made into its RoPE'd q and cache entry: rope_append's
    // params and the GEMV's tickets for rope_append=gemv.
    RopeAppendParams rope;
    int32_t* rope_tickets;
};

// The layer sequence's GEMVs through one input form: each fused launch against the
// separate launches it replaces, then attn_output and ffn_down by type.
void bench_layer_gemvs(Bench& b, const std::vector<QwenLayer>& layers, const LayerInputs& in) {
    const int n_layers = int(layers.size()), reps = b.reps(), nq = layers[0].q.n_rows, nkv = layers[0].k.n_rows;
    const char* form = activation_form_name(in.form);
    auto per_layer = [&](auto bytes_of) {
        double total = 0;
        for (const QwenLayer& L : layers) total += bytes_of(L);
        return total / n_layers;
    };
    const std::string shape = "Qwen3-4B x" + std::to_string(n_layers) + " layers";
    float* y = in.y;

    // Q/K/V: three launches against one fused launch.
    const double qkv_bytes = per_layer([](const QwenLayer& L) { return matrix_bytes(L.q) + matrix_bytes(L.k) + matrix_bytes(L.v); });
    const double separate = b.time_us(n_layers, reps, [&](int i) {
        launch_single(b, in.x, in.form, layers[i].q, y, in.variant);
        launch_single(b, in.x, in.form, layers[i].k, y, in.variant);
        launch_single(b, in.x, in.form, layers[i].v, y, in.variant);
    });
    b.add("qkv 3 launches", shape, "Q4_K/Q4_K/Q6|4_K", separate, qkv_bytes, "", form, in.variant);
    // Layer i's Q, K and V in one launch, into q, k and v.
    auto qkv_launch = [&](int i, float* q, const float* k, const float* v) {
        GemvLaunch l = gemv_launch(in.x, in.form, in.variant);
        l.n_outputs = 3;
        l.out[0] = {layers[i].q, nullptr, nullptr, q, 0};
        l.out[1] = {layers[i].k, nullptr, nullptr, const_cast<float*>(k), 0};
        l.out[2] = {layers[i].v, nullptr, nullptr, const_cast<float*>(v), 0};
        return l;
    };
    const double fused = b.time_us(n_layers, reps, [&](int i) {
        check(launch_gemv(qkv_launch(i, y, y + nq, y + nq + nkv), b.n_sms, b.stream), "gemv");
    });
    char note[96];
    std::snprintf(note, sizeof note, "%.2fx faster than 3 launches", separate / fused);
    b.add("qkv fused", shape, "Q4_K/Q4_K/Q6|4_K", fused, qkv_bytes, note, form, in.variant);

    // The fused Q/K/V and then rope_append (two launches, the backend's default) against
    // the GEMV doing rope_append's work in its last block of each head (rope_append=gemv).
    auto rope_qkv_launch = [&](int i) { return qkv_launch(i, in.rope.q, in.rope.k, in.rope.v); };
    const double then_rope = b.time_us(n_layers, reps, [&](int i) {
        check(launch_gemv(rope_qkv_launch(i), b.n_sms, b.stream), "gemv");
        check(launch_rope_append(in.rope, b.stream), "rope_append");
    });
    b.add("qkv, rope_append", shape, "Q4_K/Q4_K/Q6|4_K", then_rope, qkv_bytes, "two launches", form, in.variant);
    const double rope_in_gemv = b.time_us(n_layers, reps, [&](int i) {
        GemvLaunch l = rope_qkv_launch(i);
        l.rope_append = in.rope;
        l.rope_append_tickets = in.rope_tickets;
        check(launch_gemv(l, b.n_sms, b.stream), "gemv");
    });
    std::snprintf(note, sizeof note, "%.2fx faster than two launches", then_rope / rope_in_gemv);
    b.add("qkv+rope_append", shape, "Q4_K/Q4_K/Q6|4_K", rope_in_gemv, qkv_bytes, note, form, in.variant);

    // attn_output, alone.
    b.add("attn_output", shape, "Q4_K",
          b.time_us(n_layers, reps,
                    [&](int i) { launch_single(b, in.x_q, in.form, layers[i].o, y, in.variant); }),
          per_layer([](const QwenLayer& L) { return matrix_bytes(L.o); }), "", form, in.variant);

    // gate + up: two launches against the fused SwiGLU launch.
    const double gu_bytes = per_layer([](const QwenLayer& L) { return matrix_bytes(L.gate) + matrix_bytes(L.up); });
    const double gu_separate = b.time_us(n_layers, reps, [&](int i) {
        launch_single(b, in.x, in.form, layers[i].gate, y, in.variant);
        launch_single(b, in.x, in.form, layers[i].up, in.y2, in.variant);
    });
    b.add("gate+up 2 launches", shape, "Q4_K", gu_separate, gu_bytes, "", form, in.variant);
    const double gu_fused = b.time_us(n_layers, reps, [&](int i) {
        GemvLaunch l = gemv_launch(in.x, in.form, in.variant);
        l.n_outputs = 2;
        l.epilogue = kEpilogueSwiGLU;
        l.out[0] = {layers[i].gate, nullptr, nullptr, y, 0};
        l.out[1] = {layers[i].up, nullptr, nullptr, y, 0};
        check(launch_gemv(l, b.n_sms, b.stream), "gemv");
    });
    std::snprintf(note, sizeof note, "%.2fx faster than 2 launches", gu_separate / gu_fused);
    b.add("gate+up swiglu", shape, "Q4_K", gu_fused, gu_bytes, note, form, in.variant);

    // ffn_down by type: the FFN-sized Q4_K and Q6_K GEMVs of the goal.
    for (int32_t t : {kQ4_K, kQ6_K}) {
        std::vector<int> idx;
        for (int i = 0; i < n_layers; ++i)
            if (layers[i].down.type == t) idx.push_back(i);
        if (idx.empty()) continue;
        const double us = b.time_us(int(idx.size()), reps, [&](int j) {
            launch_single(b, in.x_ff, in.form, layers[idx[j]].down, y, in.variant);
        });
        b.add("ffn_down", shape + " (" + std::to_string(idx.size()) + " of them)", weight_type_name(t), us,
              matrix_bytes(layers[idx[0]].down) + activation_bytes(in.x_ff, in.form), "", form, in.variant);
    }
}

void bench_layers(Bench& b) {
    const int n_layers = b.quick ? 8 : 36, embd = 2560, nq = 4096, nkv = 1024, ff = 9728;
    std::vector<QwenLayer> layers(n_layers);
    for (int i = 0; i < n_layers; ++i) {
        const int32_t big = more_bits(i, 36) ? kQ6_K : kQ4_K;
        QwenLayer& L = layers[i];
        L.q = random_matrix(kQ4_K, nq, embd, b.rng);
        L.k = random_matrix(kQ4_K, nkv, embd, b.rng);
        L.v = random_matrix(big, nkv, embd, b.rng);
        L.o = random_matrix(kQ4_K, embd, nq, b.rng);
        L.gate = random_matrix(kQ4_K, ff, embd, b.rng);
        L.up = random_matrix(kQ4_K, ff, embd, b.rng);
        L.down = random_matrix(big, embd, ff, b.rng);
    }
    const Activation x = make_activation(b, embd), x_q = make_activation(b, nq), x_ff = make_activation(b, ff);
    float* y = static_cast<float*>(device_alloc(size_t(2 * ff) * 4));
    // Qwen3-4B's heads (32 and 8 of 128, q_norm and k_norm) into an INT8 cache of 64
    // positions, at position 40; q, k, v in a buffer of their own.
    float* qkv = static_cast<float*>(device_alloc(size_t(nq + 2 * nkv) * 4));
    float* head_norm = static_cast<float*>(device_alloc(128 * 4));
    const std::vector<float> ones(128, 1.0f);
    check(cudaMemcpy(head_norm, ones.data(), 128 * 4, cudaMemcpyHostToDevice), "upload");
    RopeAppendParams rope;
    rope.q = qkv;
    rope.n_head = nq / 128;
    rope.k = qkv + nq;
    rope.v = qkv + nq + nkv;
    rope.q_norm = rope.k_norm = head_norm;
    rope.rope = {kRopeNeox, 128, 128, rope_theta_scale(1e6f, 128), 1.0f, nullptr};
    int32_t* pos = static_cast<int32_t*>(device_alloc(4));
    const int32_t at = 40;
    check(cudaMemcpy(pos, &at, 4, cudaMemcpyHostToDevice), "upload");
    rope.pos = pos;
    const int n_head_kv = nkv / 128, n_ctx = 64;
    rope.cache = {kKvQ8, device_alloc(size_t(n_head_kv) * n_ctx * 128), device_alloc(size_t(n_head_kv) * n_ctx * 128),
                  static_cast<uint16_t*>(device_alloc(size_t(n_head_kv) * n_ctx * 4 * 2)),
                  static_cast<uint16_t*>(device_alloc(size_t(n_head_kv) * n_ctx * 4 * 2)), n_ctx, n_head_kv, 128};
    int32_t* tickets = static_cast<int32_t*>(device_alloc(size_t(rope.n_head + n_head_kv) * 4));  // zero-filled
    // Each form with the defaults (one task of weights in flight a lane, the plan's warps
    // a row, rows in pairs), then a row at a time, two and four tasks in flight (which the
    // plan walks a row at a time), four warps a row; and the pairs through a ring of tasks
    // 2 and 3 deep (prepared 8-bit x, the one form that takes it).
    for (const GemvVariant variant : {GemvVariant{1, 0, true}, GemvVariant{1, 0, false}, GemvVariant{2, 0, true},
                                      GemvVariant{4, 0, true}, GemvVariant{1, 4, true}, GemvVariant{1, 0, true, 2},
                                      GemvVariant{1, 0, true, 3}})
        for (const ActivationForm form : activation_forms(kQ4_K))
            if (variant.ring_depth == 0 || form == ActivationForm::kQ8Prepared)
                bench_layer_gemvs(b, layers, {x, x_q, x_ff, form, variant, y, y + ff, rope, tickets});
    for (QwenLayer& L : layers)
        for (PackedMatrix* m : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) free_matrix(*m);
    for (void* p : {static_cast<void*>(y), static_cast<void*>(qkv), static_cast<void*>(head_norm),
                    static_cast<void*>(pos), rope.cache.k, rope.cache.v, static_cast<void*>(rope.cache.k_scales),
                    static_cast<void*>(rope.cache.v_scales), static_cast<void*>(tickets)})
        cudaFree(p);
}

void bench_small(Bench& b) {
    // The activation pass with RMSNorm at the FFN width, and RoPE + INT8 append.
    const int n = 9728;
    float* x = static_cast<float*>(device_alloc(size_t(n) * 4));
    float* w = static_cast<float*>(device_alloc(size_t(n) * 4));
    PrepareParams p;
    p.x = x;
    p.n = n;
    p.norm_weight = w;
    p.out_f = static_cast<float*>(device_alloc(size_t(n) * 4));
    p.out_q = static_cast<int8_t*>(device_alloc(n));
    p.out_segments = static_cast<Words2*>(device_alloc(size_t(n) / 16 * sizeof(Words2)));
    b.add("prepare+rmsnorm", "n 9728", "f32", b.time_us(1, 100, [&](int) { check(launch_prepare(p, b.stream), "prepare"); }),
          n * (4.0 + 4.0 + 4.0 + 1.0) + n / 16.0 * sizeof(Words2));
    RopeAppendParams r;
    r.q = static_cast<float*>(device_alloc(32 * 128 * 4));
    r.n_head = 32;
    r.k = static_cast<float*>(device_alloc(8 * 128 * 4));
    r.v = static_cast<float*>(device_alloc(8 * 128 * 4));
    r.rope = {kRopeNeox, 128, 128, rope_theta_scale(1e6f, 128), 1.0f, nullptr};
    r.pos = static_cast<int32_t*>(device_alloc(4));
    r.cache = {kKvQ8, device_alloc(8 * 64 * 128), device_alloc(8 * 64 * 128), static_cast<uint16_t*>(device_alloc(8 * 64 * 8)),
               static_cast<uint16_t*>(device_alloc(8 * 64 * 8)), 64, 8, 128};
    b.add("rope+append", "Qwen3-4B heads 32/8 dim 128", "int8 cache",
          b.time_us(1, 100, [&](int) { check(launch_rope_append(r, b.stream), "rope"); }), (32 + 16) * 128 * 8.0);
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

void write_json(const Bench& b, const std::string& path, const std::string& device, const std::string& commit,
                const std::string& command, const std::string& when) {
    std::ofstream f(path);
    f << "{\n  \"device\": \"" << json_escape(device) << "\",\n  \"sm_count\": " << b.n_sms
      << ",\n  \"l2_bytes\": " << b.l2_bytes << ",\n  \"commit\": \"" << json_escape(commit) << "\",\n  \"command\": \""
      << json_escape(command) << "\",\n  \"utc\": \"" << when << "\",\n  \"peak_copy_GBps\": " << b.peak_gbps
      << ",\n  \"results\": [\n";
    for (size_t i = 0; i < b.results.size(); ++i) {
        const Result& r = b.results[i];
        f << "    {\"kernel\": \"" << json_escape(r.kernel) << "\", \"shape\": \"" << json_escape(r.shape)
          << "\", \"type\": \"" << json_escape(r.type) << "\", \"activations\": \"" << r.activations
          << "\", \"tasks_in_flight\": " << (r.activations.empty() ? 0 : r.variant.tasks_in_flight)
          << ", \"warps_per_row\": " << r.variant.warps_per_row
          << ", \"rows_in_pairs\": " << (r.activations.empty() ? 0 : int(r.variant.pairs))
          << ", \"ring_depth\": " << (r.activations.empty() ? 0 : r.variant.ring_depth) << ", \"time_us\": " << r.time_us
          << ", \"bytes\": " << r.bytes << ", \"GBps\": " << r.gbps
          << ", \"fraction_of_peak\": " << r.fraction << ", \"note\": \""
          << json_escape(r.note) << "\"}" << (i + 1 < b.results.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::string out_dir = "bench/results", commit = EDGERUN_GIT_COMMIT, command;
    Bench b;
    for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--out" && i + 1 < argc) out_dir = argv[++i];
        else if (a == "--commit" && i + 1 < argc) commit = argv[++i];
        else if (a == "--quick") b.quick = true;
        else {
            std::fprintf(stderr, "usage: %s [--out DIR] [--commit SHA] [--quick]\n", argv[0]);
            return 2;
        }
    }
    int n_devices = 0;
    if (cudaGetDeviceCount(&n_devices) != cudaSuccess || n_devices == 0) {
        std::fprintf(stderr, "cuda_orin_bench: no CUDA device\n");
        return 1;
    }
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    int l2 = 0;
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "L2 size");
    b.l2_bytes = size_t(l2);
    b.n_sms = prop.multiProcessorCount;
    check(cudaStreamCreate(&b.stream), "stream");
    b.peak_gbps = measure_peak(b);
    std::printf("device %s, %d SMs, L2 %zu MB, copy peak %.1f GB/s (read + write)\n", prop.name, b.n_sms,
                b.l2_bytes >> 20, b.peak_gbps);
    bench_types(b);
    bench_layers(b);
    bench_attention(b);
    bench_small(b);

    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    std::string slug;
    for (char c : std::string(prop.name)) slug += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    std::filesystem::create_directories(out_dir);
    const std::string path = out_dir + "/" + slug + "-" + when + ".json";
    write_json(b, path, prop.name, commit, command, when);
    std::printf("wrote %s\n", path.c_str());
    return 0;
}
