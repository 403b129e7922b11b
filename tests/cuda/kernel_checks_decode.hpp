// A whole decode step composed of the kernels (one Llama-style layer, tied embeddings),
// run for several steps with the position and KV length advanced on the device, against a
// double-precision CPU decode of the same weights. This checks that the kernels compose: the
// buffers one writes are what the next reads, the residual updates in place, the cache
// grows by one token per step (see kernel_checks.hpp for the device interface).
#pragma once

#include "kernel_checks_attention.hpp"
#include "kernel_checks_gemv.hpp"

namespace edgerun::cuda_orin::testing {

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
    float* act_d = floats(padded_length(n_max) / 32);
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
        p.out_d = act_d;
        api.prepare(p);
        return Activation{{reinterpret_cast<const uint8_t*>(act_q), act_d}, act_f, n, padded_length(n)};
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
