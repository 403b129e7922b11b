// Checks of the GEMV kernels: one matrix, fused Q/K/V with a folded norm, several rows of x,
// SwiGLU, the next GEMV's 8-bit x (see kernel_checks.hpp for the device interface); the
// forms of x each block stages are in kernel_checks_gemv_x.hpp.
#pragma once

#include "kernel_checks.hpp"

namespace edgerun::cuda_orin::testing {

inline double gemv_bound(int32_t type) { return plain_value_bytes(type) ? kBoundF16Gemv : kBoundQ8Gemv; }

// `launch` (one output row range; SwiGLU's two outputs share it) run again as `vary`
// changes it, into a fresh output: the same products summed in the same order, so its n
// values must equal `got` bit for bit.
template <class Vary>
inline void check_same_sums(DeviceApi& api, const Report& report, const GemvLaunch& launch, Vary vary, int n,
                            bool y_f16, const std::vector<float>& got, const std::string& what) {
    GemvLaunch other = launch;
    vary(other);
    void* y = api.alloc(size_t(n) * 4);
    for (int i = 0; i < other.n_outputs; ++i)
        if (other.out[i].y == launch.out[0].y) other.out[i].y = y;
    api.gemv(other);
    report({what, largest_difference(read_output(api, y, n, y_f16), got), 0.0});
}

// Pairs walked through a ring of tasks in shared memory (GemvLaunch::ring_depth, 2 and 3
// deep) against rows one at a time. The plan must keep a ring exactly where the pairs are
// kept with prepared x (`applies`), at most as deep as asked and within a block's 48 KB:
// two deep always fits (every type's slot is at most 1536 bytes). pair_up: check_pairs'.
template <class PairUp>
inline void check_ring(DeviceApi& api, const Report& report, const GemvLaunch& launch, PairUp pair_up, bool applies,
                       int n, bool y_f16, const std::vector<float>& got, const std::string& name) {
    for (int depth : {2, 3}) {
        auto ringed = [&](GemvLaunch& l) {
            pair_up(l);
            l.ring_depth = depth;
        };
        GemvLaunch planned = launch;
        ringed(planned);
        plan_gemv(planned, 132);
        const bool planned_well =
            applies ? planned.ring_depth >= 2 && planned.ring_depth <= depth &&
                          planned.shared_bytes >= ring_bytes(planned.ring_depth, planned.ring_slot_bytes) &&
                          ring_bytes(planned.ring_depth, planned.ring_slot_bytes) <= kGemvMaxRingBytes
                    : planned.ring_depth == 0;
        const std::string deep = std::to_string(depth) + " deep";
        report({name + ": a ring " + deep + (applies ? " dropped or oversized by the plan" : " kept where it cannot be"),
                planned_well ? 0.0 : 1.0, 0.0});
        check_same_sums(api, report, launch, ringed, n, y_f16, got,
                        name + ": largest difference, rows in pairs through a ring " + deep + " against one at a time");
    }
}

// Rows walked in pairs (GemvLaunch::swiglu_pairs for SwiGLU, row_pairs otherwise) against
// one at a time, by the kernel of every type and by the kernel of the launch's type (the
// one at four blocks an SM asked for: pairs run at three). The plan must keep them where
// x is 8-bit, every matrix quantized (SwiGLU's two of one type) and a warp takes one row,
// and drop them elsewhere, where the sums are then the same trivially. (x quantized in
// the stage may take several rows a warp, choose_rows_per_warp: at the models' shapes on
// a GPU's 132 SMs it does.)
inline void check_pairs(DeviceApi& api, const Report& report, const GemvLaunch& launch, int n, bool y_f16,
                        const std::vector<float>& got, const std::string& name) {
    const bool swiglu = launch.epilogue == kEpilogueSwiGLU;
    auto pair_up = [swiglu](GemvLaunch& l) { (swiglu ? l.swiglu_pairs : l.row_pairs) = 1; };
    bool applies = launch.x.q8.q || launch.quantize_x;
    for (int i = 0; i < launch.n_outputs; ++i)
        applies = applies && plain_value_bytes(launch.out[i].w.type) == 0 && (!swiglu || launch.out[i].w.type == launch.out[0].w.type);
    GemvLaunch planned = launch;
    pair_up(planned);
    const bool kept = plan_gemv(planned, 132) > 0 && (swiglu ? planned.swiglu_pairs : planned.row_pairs);
    applies = applies && planned.rows_per_warp == 1;
    report({name + (applies ? ": rows in pairs dropped by the plan" : ": rows in pairs kept by the plan where they cannot be"),
            kept == applies ? 0.0 : 1.0, 0.0});
    check_same_sums(api, report, launch, pair_up, n, y_f16, got,
                    name + ": largest difference, rows in pairs against one at a time");
    check_same_sums(api, report, launch,
                    [&](GemvLaunch& l) {
                        pair_up(l);
                        l.typed_kernel = 1;
                        l.typed_blocks_per_sm = 4;
                    },
                    n, y_f16, got, name + ": largest difference, rows in pairs in the kernel of its type");
    check_ring(api, report, launch, pair_up, applies && launch.x.q8.q, n, y_f16, got, name);
}

// What check_same_sums compares a launch with: each warp taking `rows` rows one after
// another (which share a block's stage of x: prepared 8-bit x is quantized as staged
// instead, the same bytes without a norm, and plain weights read the floats they read
// anyway), each lane loading 2 and 4 tasks before dotting them, and its first task before
// the staging of x; the kernel built for the launch's weight type instead of the one of
// every type, at three and at four blocks an SM (gemv_kernel_for; other types keep the
// latter); rows in pairs (check_pairs).
inline void check_regrouped_sums(DeviceApi& api, const Report& report, const GemvLaunch& launch, int rows, int n,
                                 bool y_f16, const std::vector<float>& got, const std::string& name) {
    const char* count[] = {"", "", "two", "three"};
    bool all_quantized = true;
    for (int i = 0; i < launch.n_outputs; ++i) all_quantized = all_quantized && plain_value_bytes(launch.out[i].w.type) == 0;
    auto several_rows = [&](GemvLaunch& l) {
        l.rows_per_warp = rows;
        if (!l.x.q8.q) return;
        l.x.q8 = {nullptr, nullptr};
        l.quantize_x = all_quantized;
    };
    check_same_sums(api, report, launch, several_rows, n, y_f16, got,
                    name + ": largest difference, " + count[rows] + " rows a warp against one");
    for (int tasks : {2, 4})
        check_same_sums(api, report, launch, [&](GemvLaunch& l) { l.tasks_in_flight = tasks; }, n, y_f16, got,
                        name + ": largest difference, " + std::to_string(tasks) + " tasks in flight against one");
    check_same_sums(api, report, launch, [&](GemvLaunch& l) { l.load_ahead = 1; }, n, y_f16, got,
                    name + ": largest difference, the first task loaded ahead against not");
    for (int blocks : {3, 4})
        check_same_sums(api, report, launch,
                        [&](GemvLaunch& l) {
                            l.typed_kernel = 1;
                            l.typed_blocks_per_sm = blocks;
                        },
                        n, y_f16, got,
                        name + ": largest difference, the kernel of its type at " + std::to_string(blocks) +
                            " blocks an SM against the kernel of every type");
    check_pairs(api, report, launch, n, y_f16, got, name);
}

// y = W x (+ bias + residual) for one matrix; x and y in F32 or F16.
inline void check_gemv(DeviceApi& api, const Report& report, int32_t type, int n_rows, int n_cols, bool x_f16,
                       bool y_f16, bool bias_and_residual, uint32_t seed) {
    std::mt19937 rng(seed);
    const TestMatrix m = make_device_matrix(api, type, n_rows, n_cols, rng);
    std::vector<float> x = random_vector(n_cols, rng);
    if (x_f16)
        for (float& e : x) e = quant::fp16_to_fp32(quant::fp32_to_fp16(e));
    const std::vector<float> bias = random_vector(n_rows, rng), residual = random_vector(n_rows, rng);
    const DeviceActivation a = prepare_on_device(api, x, x_f16);
    GemvLaunch launch;
    launch.x = a.view;
    launch.n_outputs = 1;
    launch.out[0].w = m.view;
    launch.out[0].y = api.alloc(size_t(n_rows) * 4);
    launch.out[0].y_is_f16 = y_f16;
    if (bias_and_residual) {
        launch.out[0].bias = api.upload_vector(bias);
        launch.out[0].residual = api.upload_vector(residual);
    }
    api.gemv(launch);
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<double> ref = ref_gemv(m.values, n_rows, n_cols, xd);
    if (bias_and_residual)
        for (int r = 0; r < n_rows; ++r) ref[r] += double(bias[r]) + residual[r];
    const std::vector<float> y = read_output(api, launch.out[0].y, n_rows, y_f16);
    char name[160];
    std::snprintf(name, sizeof name, "gemv %s %dx%d x:%s y:%s%s", weight_type_name(type), n_rows, n_cols,
                  x_f16 ? "f16" : "f32", y_f16 ? "f16" : "f32", bias_and_residual ? " +bias+residual" : "");
    // Against the products' energy where the sums cancel (a single short row can sum to
    // almost nothing, and then the plain NMSE measures the cancellation).
    report({name, nmse(y, ref, gemv_term_energy(m.values, n_rows, n_cols, xd)), gemv_bound(type)});
    check_regrouped_sums(api, report, launch, 3, n_rows, y_f16, y, name);
    api.reset();
}

// Several matrices of different types sharing x in one launch (Q/K/V), with the RMSNorm
// of x folded into the activation pass.
inline void check_gemv_fused(DeviceApi& api, const Report& report, const std::vector<int32_t>& types,
                             const std::vector<int>& rows, int n_cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<float> x = random_vector(n_cols, rng, 3.0f);
    std::vector<float> norm_w = random_vector(n_cols, rng, 0.3f);
    for (float& w : norm_w) w += 1.0f;
    const DeviceActivation a = prepare_on_device(api, x, false, api.upload_vector(norm_w));
    const std::vector<double> xn = ref_rms_norm(std::vector<double>(x.begin(), x.end()), norm_w, 1e-6);
    GemvLaunch launch;
    launch.x = a.view;
    launch.n_outputs = int(types.size());
    std::vector<TestMatrix> ms;
    for (size_t i = 0; i < types.size(); ++i) {
        ms.push_back(make_device_matrix(api, types[i], rows[i], n_cols, rng));
        launch.out[i].w = ms[i].view;
        launch.out[i].y = api.alloc(size_t(rows[i]) * 4);
    }
    api.gemv(launch);
    for (size_t i = 0; i < types.size(); ++i) {
        const std::vector<float> y = read_output(api, launch.out[i].y, rows[i], false);
        char name[160];
        std::snprintf(name, sizeof name, "fused gemv+rmsnorm output %zu/%zu %s %dx%d", i + 1, types.size(),
                      weight_type_name(types[i]), rows[i], n_cols);
        report({name, nmse(y, ref_gemv(ms[i].values, rows[i], n_cols, xn)), gemv_bound(types[i])});
    }
    api.reset();
}

// Several rows of x against the same matrices (a step of n_x rows), in launches of up to
// kGemvMaxRows rows as the backend makes them: every row against the reference, and
// against the one-row kernel on the same row, which it must equal bit for bit (the same
// products summed in the same order). q8: 8-bit activations (dp4a), else float ones.
inline void check_gemv_rows(DeviceApi& api, const Report& report, const std::vector<int32_t>& types,
                            const std::vector<int>& rows, int n_cols, int n_x, bool q8, bool bias_and_residual,
                            uint32_t seed) {
    std::mt19937 rng(seed);
    const int n_pad = padded_length(n_cols);
    // Every row of x prepared into its slot, n_pad apart, as the backend lays them out.
    std::vector<std::vector<float>> x(n_x);
    float* xf = static_cast<float*>(api.alloc(size_t(n_x) * n_pad * 4));
    int8_t* xq = static_cast<int8_t*>(api.alloc(size_t(n_x) * n_pad));
    Words2* x_segments = alloc_q8_segments(api, n_pad, n_x);
    for (int r = 0; r < n_x; ++r) {
        x[r] = random_vector(n_cols, rng);
        PrepareParams p;
        p.x = api.upload_vector(x[r]);
        p.n = n_cols;
        p.out_f = xf + size_t(r) * n_pad;
        p.out_q = xq + size_t(r) * n_pad;
        p.out_segments = x_segments + size_t(r) * (n_pad / 16);
        api.prepare(p);
    }
    auto rows_from = [&](int first) {
        Activation a;
        a.q8 = q8 ? ActivationQ8{reinterpret_cast<const uint8_t*>(xq + size_t(first) * n_pad),
                                 x_segments + size_t(first) * (n_pad / 16)}
                  : ActivationQ8{nullptr, nullptr};
        a.f = xf + size_t(first) * n_pad;
        a.n = n_cols;
        a.n_pad = n_pad;
        return a;
    };
    const size_t n_out = types.size();
    std::vector<TestMatrix> ms;
    std::vector<std::vector<float>> bias(n_out), residual(n_out);
    std::vector<float*> y_rows(n_out), y_one(n_out);
    std::vector<const float*> d_bias(n_out, nullptr), d_residual(n_out, nullptr);
    for (size_t i = 0; i < n_out; ++i) {
        ms.push_back(make_device_matrix(api, types[i], rows[i], n_cols, rng));
        bias[i] = random_vector(rows[i], rng);
        residual[i] = random_vector(size_t(rows[i]) * n_x, rng);
        if (bias_and_residual) {
            d_bias[i] = api.upload_vector(bias[i]);
            d_residual[i] = api.upload_vector(residual[i]);
        }
        y_rows[i] = static_cast<float*>(api.alloc(size_t(rows[i]) * n_x * 4));
        y_one[i] = static_cast<float*>(api.alloc(size_t(rows[i]) * n_x * 4));
    }
    // Rows [first, first + count) of x in one launch, into y at those rows.
    auto launch_rows = [&](int first, int count, const std::vector<float*>& y) {
        GemvLaunch launch;
        launch.x = rows_from(first);
        launch.n_x_rows = count;
        launch.n_outputs = int(n_out);
        for (size_t i = 0; i < n_out; ++i) {
            launch.out[i].w = ms[i].view;
            launch.out[i].bias = d_bias[i];
            launch.out[i].residual = d_residual[i] ? d_residual[i] + size_t(first) * rows[i] : nullptr;
            launch.out[i].y = y[i] + size_t(first) * rows[i];
            launch.out[i].y_row_stride = rows[i];
        }
        api.gemv(launch);
    };
    for (int first = 0; first < n_x; first += kGemvMaxRows) launch_rows(first, std::min(kGemvMaxRows, n_x - first), y_rows);
    for (int r = 0; r < n_x; ++r) launch_rows(r, 1, y_one);
    for (size_t i = 0; i < n_out; ++i) {
        const std::vector<float> got = read_output(api, y_rows[i], rows[i] * n_x, false);
        const std::vector<float> one = read_output(api, y_one[i], rows[i] * n_x, false);
        std::vector<double> ref;
        for (int r = 0; r < n_x; ++r) {
            std::vector<double> ref_r = ref_gemv(ms[i].values, rows[i], n_cols, std::vector<double>(x[r].begin(), x[r].end()));
            for (int k = 0; k < rows[i]; ++k)
                if (bias_and_residual) ref_r[k] += double(bias[i][k]) + residual[i][size_t(r) * rows[i] + k];
            ref.insert(ref.end(), ref_r.begin(), ref_r.end());
        }
        char name[200];
        std::snprintf(name, sizeof name, "gemv of %d rows of x, output %zu/%zu %s %dx%d x:%s%s", n_x, i + 1, n_out,
                      weight_type_name(types[i]), rows[i], n_cols, q8 ? "q8" : "f32",
                      bias_and_residual ? " +bias+residual" : "");
        report({name, nmse(got, ref), q8 && !plain_value_bytes(types[i]) ? kBoundQ8Gemv : kBoundF16Gemv});
        report({std::string(name) + ": largest difference from the one-row kernel", largest_difference(got, one), 0.0});
    }
    api.reset();
}

// y = silu(W_gate x) * (W_up x) in one launch; x prepared, or with `quantize_x` quantized
// by the GEMV as it stages it.
inline void check_swiglu(DeviceApi& api, const Report& report, int32_t gate_type, int32_t up_type, int n_ff,
                         int n_embd, uint32_t seed, bool quantize_x = false) {
    std::mt19937 rng(seed);
    const std::vector<float> x = random_vector(n_embd, rng);
    const DeviceActivation a = prepare_on_device(api, x, false);
    const TestMatrix gate = make_device_matrix(api, gate_type, n_ff, n_embd, rng);
    const TestMatrix up = make_device_matrix(api, up_type, n_ff, n_embd, rng);
    GemvLaunch launch;
    launch.x = a.view;
    if (quantize_x) launch.x.q8 = {nullptr, nullptr};
    launch.quantize_x = quantize_x;
    launch.n_outputs = 2;
    launch.epilogue = kEpilogueSwiGLU;
    launch.out[0].w = gate.view;
    launch.out[1].w = up.view;
    launch.out[0].y = api.alloc(size_t(n_ff) * 4);
    launch.out[1].y = launch.out[0].y;
    api.gemv(launch);
    const std::vector<double> xd(x.begin(), x.end());
    const std::vector<double> g = ref_gemv(gate.values, n_ff, n_embd, xd), u = ref_gemv(up.values, n_ff, n_embd, xd);
    std::vector<double> ref(n_ff);
    for (int i = 0; i < n_ff; ++i) ref[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    char name[160];
    std::snprintf(name, sizeof name, "swiglu gate %s up %s %dx%d%s", weight_type_name(gate_type),
                  weight_type_name(up_type), n_ff, n_embd, quantize_x ? ", x quantized as staged" : "");
    // Both factors carry the activation quantization noise: twice the single bound.
    const std::vector<float> got = read_output(api, launch.out[0].y, n_ff, false);
    report({name, nmse(got, ref), 2 * kBoundQ8Gemv});
    check_regrouped_sums(api, report, launch, 2, n_ff, false, got, name);
    api.reset();
}

// A GEMV that also makes the next GEMV's 8-bit x (GemvLaunch::q8_out, option
// prepare=gemv), then that next GEMV: a GEMV adding a residual (an output or down
// projection) with the next RMS norm's weight, or gate/up through SwiGLU without a norm.
// Its bytes and scales must be the q8 rule's on the outputs it stored (times the norm's
// weight) bit for bit, its norm's scale that of y, its tickets back at zero; the next
// GEMV, which multiplies its dots by that scale, must meet the reference of
// W rms_norm(y) as a GEMV of x prepared by `prepare` does, and differ from that one only
// by rounding.
inline void check_gemv_q8_out(DeviceApi& api, const Report& report, int32_t type, int32_t next_type, int n_rows,
                              int n_cols, int n_next, bool swiglu, int warps_per_row, uint32_t seed,
                              bool pairs = false) {
    std::mt19937 rng(seed);
    const std::vector<float> x = random_vector(n_cols, rng);
    const DeviceActivation a = prepare_on_device(api, x, false);
    const TestMatrix w0 = make_device_matrix(api, type, n_rows, n_cols, rng);
    const TestMatrix w1 = make_device_matrix(api, type, swiglu ? n_rows : 1, n_cols, rng);
    std::vector<float> norm_w = random_vector(n_rows, rng, 0.3f);
    for (float& e : norm_w) e += 1.0f;
    const int n_pad = padded_length(n_rows), n_groups = n_pad / kQ8Group;
    GemvLaunch launch;
    launch.x = a.view;
    launch.asked_warps_per_row = warps_per_row;
    launch.swiglu_pairs = launch.row_pairs = pairs;
    launch.out[0].w = w0.view;
    launch.out[0].y = api.alloc(size_t(n_rows) * 4);
    if (swiglu) {
        launch.n_outputs = 2;
        launch.epilogue = kEpilogueSwiGLU;
        launch.out[1].w = w1.view;
        launch.out[1].y = launch.out[0].y;
    } else {
        launch.n_outputs = 1;
        launch.out[0].residual = api.upload_vector(random_vector(n_rows, rng, 2.0f));
        launch.q8_out.norm_weight = api.upload_vector(norm_w);
        launch.q8_out.sums = static_cast<float*>(api.alloc(size_t(n_groups) * 4));
        launch.q8_out.norm_scale = static_cast<float*>(api.alloc(4));
        launch.q8_out.norm_eps = 1e-6f;
    }
    launch.q8_out.q = static_cast<uint8_t*>(api.alloc(size_t(n_pad)));
    launch.q8_out.segments = alloc_q8_segments(api, n_pad);
    launch.q8_out.tickets = static_cast<int32_t*>(api.alloc(size_t(n_groups + 1) * 4));
    api.gemv(launch);

    char name[160];
    std::snprintf(name, sizeof name, "gemv %s %dx%d%s, %d warps a row%s, making the next x", weight_type_name(type),
                  n_rows, n_cols, swiglu ? " swiglu" : " +residual, norm's weight", warps_per_row,
                  pairs ? ", rows in pairs" : "");
    const std::vector<float> y = read_output(api, launch.out[0].y, n_rows, false);
    const std::vector<int8_t> q = api.download_vector(reinterpret_cast<const int8_t*>(launch.q8_out.q), n_pad);
    const std::vector<Words2> segments = api.download_vector(launch.q8_out.segments, n_pad / 16);
    std::vector<float> scales(n_groups);
    int wrong = 0;
    double sum_squares = 0.0;
    for (int g = 0; g < n_groups; ++g) {
        float u[kQ8Group], amax = 0.0f;
        double sum = 0.0;
        for (int j = 0; j < kQ8Group; ++j) {
            const int i = g * kQ8Group + j;
            u[j] = i < n_rows ? (swiglu ? y[i] : y[i] * norm_w[i]) : 0.0f;
            amax = std::max(amax, std::fabs(u[j]));
            if (i < n_rows) sum += double(y[i]) * y[i];
        }
        const float scale = scales[g] = q8_scale(amax);
        for (int j = 0; j < kQ8Group; ++j) wrong += q[g * kQ8Group + j] != q8_round(u[j], q8_inverse(scale));
        sum_squares += sum;
    }
    report({std::string(name) + ": bytes unlike the q8 rule's on y", double(wrong), 0.0});
    report({std::string(name) + ": segments whose scale or sum differs",
            double(q8_segments_differing(segments, q, scales)), 0.0});
    if (!swiglu) {
        const double scale = 1.0 / std::sqrt(sum_squares / n_rows + 1e-6);
        const float got = api.download_vector(launch.q8_out.norm_scale, 1)[0];
        report({std::string(name) + ": relative error of the norm's scale", std::fabs(got - scale) / scale, 1e-6});
    }
    int tickets_left = 0;
    for (int32_t t : api.download_vector(launch.q8_out.tickets, n_groups + 1)) tickets_left += t != 0;
    report({std::string(name) + ": tickets not back at zero", double(tickets_left), 0.0});

    // The next GEMV, from the bytes made above and from x prepared from y; when y is as
    // long as a whole number of its weight type's blocks.
    if (n_rows % plane_geometry(next_type).block_elems != 0) return api.reset();
    const TestMatrix next = make_device_matrix(api, next_type, n_next, n_rows, rng);
    GemvLaunch reader;
    reader.n_outputs = 1;
    reader.out[0].w = next.view;
    reader.out[0].y = api.alloc(size_t(n_next) * 4);
    reader.x.q8 = {launch.q8_out.q, launch.q8_out.segments};
    reader.x.n = n_rows;
    reader.x.n_pad = n_pad;
    reader.x.norm_scale = launch.q8_out.norm_scale;
    reader.row_pairs = pairs;
    api.gemv(reader);
    const std::vector<float> got = read_output(api, reader.out[0].y, n_next, false);
    std::vector<double> xn(y.begin(), y.end());
    if (!swiglu) xn = ref_rms_norm(xn, norm_w, 1e-6);
    // SwiGLU's products are heavier-tailed than Gaussian x: a group's largest value makes
    // the step of the others coarser, so twice the bound (prepare's x does no better).
    report({std::string(name) + ", then gemv " + weight_type_name(next_type), nmse(got, ref_gemv(next.values, n_next, n_rows, xn)),
            swiglu ? 2 * kBoundQ8Gemv : kBoundQ8Gemv});
    GemvLaunch prepared = reader;
    prepared.x = prepare_on_device(api, y, false, swiglu ? nullptr : api.upload_vector(norm_w)).view;
    prepared.x.norm_eps = 1e-6f;
    prepared.out[0].y = api.alloc(size_t(n_next) * 4);
    api.gemv(prepared);
    report({std::string(name) + ", then gemv: against x made by prepare",
            nmse(got, read_output(api, prepared.out[0].y, n_next, false)), 1e-6});
    api.reset();
}

}  // namespace edgerun::cuda_orin::testing
