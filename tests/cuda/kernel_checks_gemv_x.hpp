// Checks of the forms of x a GEMV block stages: float x staged and read in place, x
// quantized as the block stages it, and an RMS norm folded into the staging (see
// kernel_checks.hpp for the device interface).
#pragma once

#include "kernel_checks_gemv.hpp"

namespace edgerun::cuda_orin::testing {

// Float activations (the backend's default path) for n_x rows of x in one launch, with x
// staged in each block's shared memory and read in place: both against the reference
// (float rounding only), and equal to each other bit for bit, since only where x is read
// from differs. `expect_staged`: whether the planner should stage this launch (it
// stages what fits kGemvMaxStageBytes).
inline void check_gemv_float_x(DeviceApi& api, const Report& report, int32_t type, int n_rows, int n_cols, int n_x,
                               bool expect_staged, uint32_t seed) {
    std::mt19937 rng(seed);
    const int n_pad = padded_length(n_cols);
    const TestMatrix m = make_device_matrix(api, type, n_rows, n_cols, rng);
    std::vector<float> x_host(size_t(n_x) * n_pad, 0.0f);
    std::vector<double> ref, energy_x;
    double energy = 0;
    for (int r = 0; r < n_x; ++r) {
        const std::vector<float> x = random_vector(n_cols, rng);
        std::copy(x.begin(), x.end(), x_host.begin() + size_t(r) * n_pad);
        const std::vector<double> xd(x.begin(), x.end());
        const std::vector<double> ref_r = ref_gemv(m.values, n_rows, n_cols, xd);
        ref.insert(ref.end(), ref_r.begin(), ref_r.end());
        energy += gemv_term_energy(m.values, n_rows, n_cols, xd);
    }
    GemvLaunch launch;
    launch.x.q8 = {nullptr, nullptr};
    launch.x.f = api.upload_vector(x_host);
    launch.x.n = n_cols;
    launch.x.n_pad = n_pad;
    launch.n_x_rows = n_x;
    launch.n_outputs = 1;
    launch.out[0].w = m.view;
    launch.out[0].y_row_stride = n_rows;
    std::vector<std::vector<float>> y;
    for (int stage : {1, 0}) {
        launch.stage_x = stage;
        launch.out[0].y = api.alloc(size_t(n_rows) * n_x * 4);
        api.gemv(launch);
        y.push_back(read_output(api, launch.out[0].y, n_rows * n_x, false));
    }
    GemvLaunch planned = launch;
    planned.stage_x = 1;
    plan_gemv(planned, 132);
    char name[200];
    std::snprintf(name, sizeof name, "gemv, float x, %d rows of x, %s %dx%d", n_x, weight_type_name(type), n_rows, n_cols);
    report({std::string(name) + (expect_staged ? ", x staged" : ", x too wide to stage"), nmse(y[0], ref, energy),
            kBoundF16Gemv});
    report({std::string(name) + ": staged as expected (0: yes)", (planned.x_stage_bytes != 0) == expect_staged ? 0.0 : 1.0, 0.0});
    report({std::string(name) + ": largest difference, staged against in place", largest_difference(y[0], y[1]), 0.0});
    api.reset();
}

// x quantized by the GEMV as it stages it (GemvLaunch::quantize_x) for n_x rows: against
// the reference, and equal bit for bit to the same launch given prepare's 8-bit rows
// (the same bytes, scales and sums of bytes, so the same products in the same order).
// With `norm` (one row) x is normalised first: against norm-then-multiply in double.
// A launch it cannot take is refused: prepared q8 given as well, a plain output, a stage
// too wide, a norm over several rows.
inline void check_gemv_quantize_x(DeviceApi& api, const Report& report, const std::vector<int32_t>& types,
                                  const std::vector<int>& rows, int n_cols, int n_x, bool norm, uint32_t seed) {
    std::mt19937 rng(seed);
    const int n_pad = padded_length(n_cols);
    std::vector<float> x_host(size_t(n_x) * n_pad, 0.0f);
    std::vector<std::vector<double>> x_ref(n_x);
    const std::vector<float> weight = random_vector(n_cols, rng);
    const float eps = 1e-5f;
    for (int r = 0; r < n_x; ++r) {
        const std::vector<float> x = random_vector(n_cols, rng);
        std::copy(x.begin(), x.end(), x_host.begin() + size_t(r) * n_pad);
        double sum_sq = 0;
        for (float v : x) sum_sq += double(v) * v;
        const double inv_rms = norm ? 1.0 / std::sqrt(sum_sq / n_cols + eps) : 1.0;
        for (int i = 0; i < n_cols; ++i) x_ref[r].push_back(x[i] * inv_rms * (norm ? weight[i] : 1.0));
    }
    GemvLaunch launch;
    launch.x.f = api.upload_vector(x_host);
    launch.x.n = n_cols;
    launch.x.n_pad = n_pad;
    if (norm) {
        launch.x.norm = api.upload_vector(weight);
        launch.x.norm_eps = eps;
    }
    launch.n_x_rows = n_x;
    launch.quantize_x = 1;
    launch.n_outputs = int(types.size());
    std::vector<TestMatrix> ms;
    for (size_t i = 0; i < types.size(); ++i) {
        ms.push_back(make_device_matrix(api, types[i], rows[i], n_cols, rng));
        launch.out[i].w = ms[i].view;
        launch.out[i].y = api.alloc(size_t(rows[i]) * n_x * 4);
        launch.out[i].y_row_stride = rows[i];
    }
    api.gemv(launch);
    // One row of x: again with each warp taking three rows one after another
    // (rows_per_warp), which only regroups the rows into blocks.
    GemvLaunch regrouped = launch, in_flight[3] = {launch, launch, launch};  // 2 and 4 tasks in flight, 1 ahead
    regrouped.rows_per_warp = 3;
    in_flight[0].tasks_in_flight = 2;
    in_flight[1].tasks_in_flight = 4;
    in_flight[2].load_ahead = 1;
    if (n_x == 1) {
        for (size_t i = 0; i < types.size(); ++i) {
            regrouped.out[i].y = api.alloc(size_t(rows[i]) * 4);
            for (GemvLaunch& l : in_flight) l.out[i].y = api.alloc(size_t(rows[i]) * 4);
        }
        api.gemv(regrouped);
        for (const GemvLaunch& l : in_flight) api.gemv(l);
    }
    // The same rows through prepare (no norm: with one the sums of squares are added in
    // another order, so the normalised x may differ in its last bit).
    GemvLaunch prepared = launch;
    if (!norm) {
        int8_t* q = static_cast<int8_t*>(api.alloc(size_t(n_x) * n_pad));
        Words2* segments = alloc_q8_segments(api, n_pad, n_x);
        float* f = static_cast<float*>(api.alloc(size_t(n_x) * n_pad * 4));
        for (int r = 0; r < n_x; ++r) {
            PrepareParams p;
            p.x = launch.x.f + size_t(r) * n_pad;
            p.n = n_pad;
            p.out_f = f + size_t(r) * n_pad;
            p.out_q = q + size_t(r) * n_pad;
            p.out_segments = segments + size_t(r) * (n_pad / 16);
            api.prepare(p);
        }
        prepared.quantize_x = 0;
        prepared.x.q8 = {reinterpret_cast<const uint8_t*>(q), segments};
        for (size_t i = 0; i < types.size(); ++i) prepared.out[i].y = api.alloc(size_t(rows[i]) * n_x * 4);
        api.gemv(prepared);
    }
    for (size_t i = 0; i < types.size(); ++i) {
        const std::vector<float> got = read_output(api, launch.out[i].y, rows[i] * n_x, false);
        std::vector<double> ref;
        double energy = 0;
        for (int r = 0; r < n_x; ++r) {
            const std::vector<double> ref_r = ref_gemv(ms[i].values, rows[i], n_cols, x_ref[r]);
            ref.insert(ref.end(), ref_r.begin(), ref_r.end());
            energy += gemv_term_energy(ms[i].values, rows[i], n_cols, x_ref[r]);
        }
        char name[200];
        std::snprintf(name, sizeof name, "gemv, x quantized as staged%s, %d rows of x, output %zu/%zu %s %dx%d",
                      norm ? " after its norm" : "", n_x, i + 1, types.size(), weight_type_name(types[i]), rows[i], n_cols);
        report({name, nmse(got, ref, energy), kBoundQ8Gemv});
        if (n_x == 1) {
            report({std::string(name) + ": largest difference, three rows a warp against one",
                    largest_difference(read_output(api, regrouped.out[i].y, rows[i], false), got), 0.0});
            for (const GemvLaunch& l : in_flight)
                report({std::string(name) + ": largest difference, " +
                            (l.load_ahead ? std::string("the first task loaded ahead against not")
                                          : std::to_string(l.tasks_in_flight) + " tasks in flight against one"),
                        largest_difference(read_output(api, l.out[i].y, rows[i], false), got), 0.0});
        }
        if (norm) continue;
        report({std::string(name) + ": largest difference from prepare's 8-bit x",
                largest_difference(got, read_output(api, prepared.out[i].y, rows[i] * n_x, false)), 0.0});
    }
    // Each a copy of the launch that ran, with one flaw.
    GemvLaunch accepted = launch, given_q8 = launch, plain = launch, too_wide = launch, norm_rows = launch;
    given_q8.x.q8 = {reinterpret_cast<const uint8_t*>(launch.x.f), reinterpret_cast<const Words2*>(launch.x.f)};
    plain.out[0].w.type = kF16;
    too_wide.n_outputs = 1;
    too_wide.x.n = too_wide.x.n_pad = too_wide.out[0].w.n_cols = 40 * 1024;
    norm_rows.x.norm = launch.x.f;
    norm_rows.n_x_rows = 2;
    const bool refused = plan_gemv(accepted, 132) != 0 && accepted.x_stage_bytes == q8_stage(n_x, n_pad).bytes &&
                         plan_gemv(given_q8, 132) == 0 && plan_gemv(plain, 132) == 0 &&
                         plan_gemv(too_wide, 132) == 0 && plan_gemv(norm_rows, 132) == 0;
    report({std::string("gemv, x quantized as staged: launches it cannot take refused (0: yes), ") + weight_type_name(types[0]),
            refused ? 0.0 : 1.0, 0.0});
    api.reset();
}

// A fused RMS_NORM (Activation::norm): the one-row GEMV normalises x while staging it;
// against the reference norm-then-multiply in double. A launch that would not stage x
// (stage_x = 0, or several rows) is refused, not run without its norm.
inline void check_gemv_norm(DeviceApi& api, const Report& report, int32_t type, int n_rows, int n_cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const TestMatrix m = make_device_matrix(api, type, n_rows, n_cols, rng);
    const std::vector<float> x = random_vector(n_cols, rng), weight = random_vector(n_cols, rng);
    const float eps = 1e-5f;
    double sum_sq = 0;
    for (float v : x) sum_sq += double(v) * v;
    const double inv_rms = 1.0 / std::sqrt(sum_sq / n_cols + eps);
    std::vector<double> h(static_cast<size_t>(n_cols), 0.0);
    for (int i = 0; i < n_cols; ++i) h[size_t(i)] = x[size_t(i)] * inv_rms * weight[size_t(i)];
    GemvLaunch launch;
    launch.x.q8 = {nullptr, nullptr};
    launch.x.f = api.upload_vector(x);
    launch.x.n = n_cols;
    launch.x.n_pad = n_cols;
    launch.x.norm = api.upload_vector(weight);
    launch.x.norm_eps = eps;
    launch.n_outputs = 1;
    launch.out[0].w = m.view;
    launch.out[0].y = api.alloc(size_t(n_rows) * 4);
    api.gemv(launch);
    const std::vector<float> y = read_output(api, launch.out[0].y, n_rows, false);
    char name[160];
    std::snprintf(name, sizeof name, "gemv with its RMS_NORM fused, %s %dx%d", weight_type_name(type), n_rows, n_cols);
    report({name, nmse(y, ref_gemv(m.values, n_rows, n_cols, h), gemv_term_energy(m.values, n_rows, n_cols, h)),
            kBoundF16Gemv});
    GemvLaunch in_place = launch, two_rows = launch;
    in_place.stage_x = 0;
    two_rows.n_x_rows = 2;
    two_rows.out[0].y_row_stride = n_rows;
    report({std::string(name) + ": unstaged and multi-row launches refused (0: yes)",
            plan_gemv(in_place, 132) == 0 && plan_gemv(two_rows, 132) == 0 ? 0.0 : 1.0, 0.0});
    api.reset();
}

}  // namespace edgerun::cuda_orin::testing
