// A whole decode step composed of the kernels (one Llama-style layer, tied embeddings),
// run for several steps with the position and KV length advanced on the device, against a
// double-precision CPU decode of the same weights. This checks that the kernels compose: the
// buffers one writes are what the next reads, the residual updates in place, the cache
// grows by one token per step (see kernel_checks.hpp for the device interface). And the
// Q/K/V GEMV that does rope_append's work against the two launches it replaces.
#pragma once

#include "kernel_checks_attention.hpp"
#include "kernel_checks_gemv_x.hpp"

namespace edgerun::cuda_orin::testing {

// The Q/K/V GEMV that also does rope_append's work (GemvLaunch::rope_append_tickets)
// against the GEMV and then rope_append_kernel: q rotated, k and v as projected, and the
// whole cache, bit for bit, at two positions one launch after the other (the second
// finds the tickets the first left); every ticket back at 0 after each. `vary` sets the
// GEMV's shape (warps a row, rows a warp, tasks in flight), so that heads end inside
// blocks, span several blocks or share one.
struct RopeInGemvCase {
    RopeCase rope;  // its pos and pos + 1 are the two launches' positions
    int n_cols;
    int32_t q_type, kv_weight_type;  // of the Q matrix, of the K and V matrices
    const char* shape;  // what `vary` does, for the report
};
template <class Vary>
inline void check_rope_append_in_gemv(DeviceApi& api, const Report& report, const RopeInGemvCase& c, Vary vary,
                                      uint32_t seed) {
    std::mt19937 rng(seed);
    const RopeCase& rc = c.rope;
    const int dim = rc.dim, nq = rc.n_head * dim, nkv = rc.n_head_kv * dim;
    const TestMatrix wq = make_device_matrix(api, c.q_type, nq, c.n_cols, rng);
    const TestMatrix wk = make_device_matrix(api, c.kv_weight_type, nkv, c.n_cols, rng);
    const TestMatrix wv = make_device_matrix(api, c.kv_weight_type, nkv, c.n_cols, rng);
    auto norm_weight = [&] {
        std::vector<float> w = random_vector(dim, rng, 0.2f);
        for (float& e : w) e += 1.0f;
        return api.upload_vector(w);
    };
    std::vector<float> factors(rc.n_rot / 2);
    std::uniform_real_distribution<float> uf(1.0f, 4.0f);
    for (float& f : factors) f = uf(rng);
    int32_t* pos = api.upload_vector(std::vector<int32_t>{rc.pos});

    // The two paths' launches, alike but for their outputs, caches and the tickets.
    RopeAppendParams r;
    r.n_head = rc.n_head;
    if (rc.qk_norm) {
        r.q_norm = norm_weight();
        r.k_norm = norm_weight();
    }
    r.rope = {rc.mode, dim, rc.n_rot, rope_theta_scale(10000.0f, rc.n_rot), 0.75f,
              rc.freq_factors ? api.upload_vector(factors) : nullptr};
    r.pos = pos;
    GemvLaunch g;
    g.n_outputs = 3;
    g.out[0].w = wq.view;
    g.out[1].w = wk.view;
    g.out[2].w = wv.view;
    vary(g);
    struct Path {
        RopeAppendParams r;
        GemvLaunch g;
    } paths[2];
    size_t value_bytes = 0;
    for (Path& path : paths) {
        path.r = r;
        path.r.q = static_cast<float*>(api.alloc(size_t(nq) * 4));
        path.r.k = static_cast<float*>(api.alloc(size_t(nkv) * 4));
        path.r.v = static_cast<float*>(api.alloc(size_t(nkv) * 4));
        path.r.cache = alloc_cache(api, rc.kv_type, rc.n_head_kv, rc.n_ctx, dim);
        value_bytes = kv_values_bytes(path.r.cache);
        const std::vector<uint8_t> sentinel(value_bytes, 0x5A);
        api.upload(path.r.cache.k, sentinel.data(), value_bytes);
        api.upload(path.r.cache.v, sentinel.data(), value_bytes);
        path.g = g;
        path.g.out[0].y = path.r.q;
        path.g.out[1].y = const_cast<float*>(path.r.k);
        path.g.out[2].y = const_cast<float*>(path.r.v);
    }
    int32_t* tickets = static_cast<int32_t*>(api.alloc(size_t(rc.n_head + rc.n_head_kv) * 4));
    paths[1].g.rope_append = paths[1].r;
    paths[1].g.rope_append_tickets = tickets;

    auto bytes = [&](const void* d, size_t n) { return api.download_vector(static_cast<const uint8_t*>(d), n); };
    char name[220];
    std::snprintf(name, sizeof name, "rope_append in the Q/K/V GEMV %s/%s %dx%d %s dim %d rot %d%s%s %s, %s",
                  weight_type_name(c.q_type), weight_type_name(c.kv_weight_type), nq, c.n_cols,
                  rc.mode == kRopeNeox ? "neox" : "normal", dim, rc.n_rot, rc.freq_factors ? " factors" : "",
                  rc.qk_norm ? " qk-norm" : "", kv_name(rc.kv_type), c.shape);
    for (int step = 0; step < 2; ++step) {
        std::vector<float> x = random_vector(c.n_cols, rng, 2.0f);
        const DeviceActivation a = prepare_on_device(api, x, false);
        const int32_t at = rc.pos + step;
        api.upload(pos, &at, 4);
        for (Path& path : paths) {
            path.g.x = a.view;
            if (path.g.quantize_x) path.g.x.q8 = {nullptr, nullptr};  // the floats, quantized as staged
        }
        api.gemv(paths[0].g);
        api.rope_append(paths[0].r);
        api.gemv(paths[1].g);
        const std::string what = std::string(name) + ", position " + std::to_string(at);
        const int sizes[3] = {nq, nkv, nkv};
        const void* outs[2][3] = {{paths[0].r.q, paths[0].r.k, paths[0].r.v}, {paths[1].r.q, paths[1].r.k, paths[1].r.v}};
        const char* names[3] = {"q (rotated)", "k", "v"};
        for (int i = 0; i < 3; ++i)
            report({what + ": " + names[i] + " largest difference",
                    largest_difference(read_output(api, outs[1][i], sizes[i], false),
                                       read_output(api, outs[0][i], sizes[i], false)),
                    0.0});
        int differing = 0;
        const KvCacheLayer &c0 = paths[0].r.cache, &c1 = paths[1].r.cache;
        const std::pair<const void*, const void*> planes[] = {{c0.k, c1.k}, {c0.v, c1.v}, {c0.k_scales, c1.k_scales},
                                                              {c0.v_scales, c1.v_scales}};
        for (int i = 0; i < 4; ++i) {
            const size_t n = i < 2 ? value_bytes : kv_scales_bytes(c0);
            if (n == 0) continue;
            const std::vector<uint8_t> b0 = bytes(planes[i].first, n), b1 = bytes(planes[i].second, n);
            for (size_t j = 0; j < n; ++j) differing += b0[j] != b1[j];
        }
        report({what + ": cache bytes differing", double(differing), 0.0});
        const std::vector<int32_t> left = api.download_vector(tickets, size_t(rc.n_head + rc.n_head_kv));
        report({what + ": tickets not back at 0",
                double(std::count_if(left.begin(), left.end(), [](int32_t t) { return t != 0; })), 0.0});
    }
    api.reset();
}

struct DecodeShape {
    int n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, steps;
};

inline void check_decode_chain(DeviceApi& api, const Report& report, const DecodeShape& s, int32_t kv_type,
                               uint32_t seed) {
    std::mt19937 rng(seed);
    const int nq = s.n_head * s.head_dim, nkv = s.n_head_kv * s.head_dim, n_ctx = s.steps + 3;
    // Weights: Q4_K_M-like mix where the width allows K-quants.
    const bool k = s.n_embd % 256 == 0 && s.n_ff % 256 == 0 && nq % 256 == 0;
    const int32_t t4 = k ? kQ4_K : kQ5_0, t6 = k ? kQ6_K : kQ8_0;
    const TestMatrix wq = make_device_matrix(api, t4, nq, s.n_embd, rng), wk = make_device_matrix(api, t4, nkv, s.n_embd, rng);
    const TestMatrix wv = make_device_matrix(api, t6, nkv, s.n_embd, rng), wo = make_device_matrix(api, t4, s.n_embd, nq, rng);
    const TestMatrix wg = make_device_matrix(api, t4, s.n_ff, s.n_embd, rng), wu = make_device_matrix(api, t4, s.n_ff, s.n_embd, rng);
    const TestMatrix wd = make_device_matrix(api, t6, s.n_embd, s.n_ff, rng), wout = make_device_matrix(api, t6, s.n_vocab, s.n_embd, rng);
    auto norm_w = [&](int n) {
        std::vector<float> w = random_vector(n, rng, 0.1f);
        for (float& e : w) e += 1.0f;
        return w;
    };
    const std::vector<float> attn_norm = norm_w(s.n_embd), ffn_norm = norm_w(s.n_embd), out_norm = norm_w(s.n_embd);
    const float base = 10000.0f;
    const RopeConfig rope{kRopeNeox, s.head_dim, s.head_dim, rope_theta_scale(base, s.head_dim), 1.0f, nullptr};

    // Device state.
    auto* counters = static_cast<StepCounters*>(api.alloc(sizeof(StepCounters)));
    auto floats = [&](size_t n) { return static_cast<float*>(api.alloc(n * 4)); };
    float *h = floats(s.n_embd), *q = floats(nq), *kk = floats(nkv), *v = floats(nkv), *attn = floats(nq);
    float *ff = floats(s.n_ff), *logits = floats(s.n_vocab);
    const int n_splits = 2;
    float* workspace = floats(attention_workspace_floats(s.n_head, s.head_dim, n_splits));
    const int n_max = std::max({s.n_embd, s.n_ff, nq});
    float* act_f = floats(padded_length(n_max));
    auto* act_q = static_cast<int8_t*>(api.alloc(padded_length(n_max)));
    Words2* act_segments = alloc_q8_segments(api, padded_length(n_max));
    const KvCacheLayer cache = alloc_cache(api, kv_type, s.n_head_kv, n_ctx, s.head_dim);
    const float *d_attn_norm = api.upload_vector(attn_norm), *d_ffn_norm = api.upload_vector(ffn_norm);
    const float* d_out_norm = api.upload_vector(out_norm);

    auto prepare = [&](const float* x, int n, const float* norm) {
        PrepareParams p;
        p.x = x;
        p.n = n;
        p.norm_weight = norm;
        p.norm_eps = 1e-5f;
        p.out_f = act_f;
        p.out_q = act_q;
        p.out_segments = act_segments;
        api.prepare(p);
        return Activation{{reinterpret_cast<const uint8_t*>(act_q), act_segments}, act_f, n, padded_length(n)};
    };
    auto gemv = [&](const Activation& x, std::vector<std::pair<const TestMatrix*, float*>> outs, const float* residual,
                    int epilogue) {
        GemvLaunch l;
        l.x = x;
        l.epilogue = epilogue;
        for (auto& [m, y] : outs) {
            l.out[l.n_outputs].w = m->view;
            l.out[l.n_outputs].y = y;
            l.out[l.n_outputs].residual = residual;
            ++l.n_outputs;
        }
        api.gemv(l);
    };

    // CPU reference state: exact K/V history.
    std::vector<float> k_hist(size_t(s.n_head_kv) * n_ctx * s.head_dim), v_hist(k_hist.size());
    double worst = 0;
    for (int step = 0; step < s.steps; ++step) {
        const int32_t token = (5 * step + 1) % s.n_vocab;
        if (step == 0) {
            const StepCounters start{0, 1, token};
            api.upload(counters, &start, sizeof start);
        } else {
            api.upload(&counters->token, &token, 4);  // the sampler's write between steps
        }
        // --- device step ---
        EmbedParams e;  // tied embeddings, as the backend holds them: the output matrix's rows
        e.type = wout.view.type;
        e.packed = wout.view;
        e.n_rows = s.n_vocab;
        e.n_cols = s.n_embd;
        e.token = &counters->token;
        e.out = h;
        api.embed(e);
        gemv(prepare(h, s.n_embd, d_attn_norm), {{&wq, q}, {&wk, kk}, {&wv, v}}, nullptr, kEpilogueStore);
        RopeAppendParams r;
        r.q = q;
        r.n_head = s.n_head;
        r.k = kk;
        r.v = v;
        r.rope = rope;
        r.pos = &counters->pos;
        r.cache = cache;
        api.rope_append(r);
        AttentionParams a;
        a.q = q;
        a.cache = cache;
        a.kv_len = &counters->kv_len;
        a.n_head = s.n_head;
        a.scale = 1.0f / std::sqrt(float(s.head_dim));
        a.n_splits = n_splits;
        a.workspace = workspace;
        a.out = attn;
        api.attention(a);
        gemv(prepare(attn, nq, nullptr), {{&wo, h}}, h, kEpilogueStore);
        gemv(prepare(h, s.n_embd, d_ffn_norm), {{&wg, ff}, {&wu, ff}}, nullptr, kEpilogueSwiGLU);
        gemv(prepare(ff, s.n_ff, nullptr), {{&wd, h}}, h, kEpilogueStore);
        gemv(prepare(h, s.n_embd, d_out_norm), {{&wout, logits}}, nullptr, kEpilogueStore);
        api.advance(counters);
        const std::vector<float> got = api.download_vector(logits, s.n_vocab);

        // --- reference step, in double ---
        std::vector<double> hd(wout.values.begin() + size_t(token) * s.n_embd,
                               wout.values.begin() + size_t(token + 1) * s.n_embd);
        const std::vector<double> xn = ref_rms_norm(hd, attn_norm, 1e-5);
        std::vector<double> qd = ref_gemv(wq.values, nq, s.n_embd, xn), kd = ref_gemv(wk.values, nkv, s.n_embd, xn);
        const std::vector<double> vd = ref_gemv(wv.values, nkv, s.n_embd, xn);
        for (int hh = 0; hh < s.n_head; ++hh) ref_rope(&qd[size_t(hh) * s.head_dim], s.head_dim, kRopeNeox, base, 1.0, nullptr, step);
        for (int hh = 0; hh < s.n_head_kv; ++hh) {
            ref_rope(&kd[size_t(hh) * s.head_dim], s.head_dim, kRopeNeox, base, 1.0, nullptr, step);
            for (int d = 0; d < s.head_dim; ++d) {
                k_hist[(size_t(hh) * n_ctx + step) * s.head_dim + d] = float(kd[size_t(hh) * s.head_dim + d]);
                v_hist[(size_t(hh) * n_ctx + step) * s.head_dim + d] = float(vd[size_t(hh) * s.head_dim + d]);
            }
        }
        std::vector<double> attn_ref;
        const std::vector<float> qf(qd.begin(), qd.end());
        for (int hh = 0; hh < s.n_head; ++hh) {
            const size_t base_kv = size_t(hh / (s.n_head / s.n_head_kv)) * n_ctx * s.head_dim;
            const std::vector<float> kh(k_hist.begin() + base_kv, k_hist.begin() + base_kv + size_t(step + 1) * s.head_dim);
            const std::vector<float> vh(v_hist.begin() + base_kv, v_hist.begin() + base_kv + size_t(step + 1) * s.head_dim);
            const std::vector<double> o =
                ref_attention_head(&qf[size_t(hh) * s.head_dim], kh, vh, step + 1, s.head_dim, 1.0 / std::sqrt(double(s.head_dim)));
            attn_ref.insert(attn_ref.end(), o.begin(), o.end());
        }
        const std::vector<double> od = ref_gemv(wo.values, s.n_embd, nq, attn_ref);
        for (int i = 0; i < s.n_embd; ++i) hd[i] += od[i];
        const std::vector<double> fn = ref_rms_norm(hd, ffn_norm, 1e-5);
        const std::vector<double> g = ref_gemv(wg.values, s.n_ff, s.n_embd, fn), u = ref_gemv(wu.values, s.n_ff, s.n_embd, fn);
        std::vector<double> f(s.n_ff);
        for (int i = 0; i < s.n_ff; ++i) f[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const std::vector<double> dd = ref_gemv(wd.values, s.n_embd, s.n_ff, f);
        for (int i = 0; i < s.n_embd; ++i) hd[i] += dd[i];
        const std::vector<double> ref = ref_gemv(wout.values, s.n_vocab, s.n_embd, ref_rms_norm(hd, out_norm, 1e-5));
        worst = std::max(worst, nmse(got, ref));
    }
    StepCounters end{};
    api.download(&end, counters, sizeof end);
    char name[200];
    std::snprintf(name, sizeof name, "decode chain %s %d steps (embd %d, heads %d/%d x %d, ff %d): worst logits nmse",
                  kv_name(kv_type), s.steps, s.n_embd, s.n_head, s.n_head_kv, s.head_dim, s.n_ff);
    // Seven chained 8-bit activation quantizations, the largest the heavy-tailed SwiGLU
    // output feeding ffn_down (max up to ~10x rms: ~5e-4), plus the cache's rounding,
    // over few logits (a noisy statistic, worst of all steps). A wrong position, length
    // or buffer shows up as an error of order 1.
    report({name, worst, 5e-3});
    report({std::string(name, strstr(name, ":") - name) + ": counters after the last step",
            double(std::abs(end.pos - s.steps) + std::abs(end.kv_len - s.steps - 1)), 0.0});
    api.reset();
}

}  // namespace edgerun::cuda_orin::testing
