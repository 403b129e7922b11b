// Checks of the RoPE/KV-append, attention and embedding kernels (see kernel_checks.hpp).
#pragma once

#include "kernel_checks.hpp"

namespace edgerun::cuda_orin::testing {

// A KV cache layer on the device filled from float K/V [n_head_kv][n_ctx][dim], plus the
// values the kernel will actually read (halves, or int8 times fp16 scales). Positions from
// `valid` on hold NaN (F16 values; INT8 scales): a kernel that reads past a row's length,
// even under a probability of 0, gets NaN into its output.
struct TestCache {
    KvCacheLayer layer;
    std::vector<float> k_read, v_read;
};

inline void store_cache_plane(DeviceApi& api, const KvCacheLayer& c, const std::vector<float>& src, void* values,
                              uint16_t* scales, std::vector<float>& read, int valid) {
    constexpr uint16_t kHalfNan = 0x7E00;
    const size_t n = src.size(), dim = size_t(c.head_dim);
    const auto past_valid = [&](size_t i) { return int(i / dim % size_t(c.n_ctx)) >= valid; };
    read.resize(n);
    if (c.type == kKvF16) {
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; ++i) {
            h[i] = past_valid(i) ? kHalfNan : quant::fp32_to_fp16(src[i]);
            read[i] = quant::fp16_to_fp32(h[i]);
        }
        api.upload(values, h.data(), n * 2);
        return;
    }
    std::vector<int8_t> q(n);
    std::vector<uint16_t> d(n / 32);
    for (size_t g = 0; g < n / 32; ++g) {
        d[g] = past_valid(32 * g) ? kHalfNan : kv_q8_quantize_group(&src[32 * g], &q[32 * g]);
        for (int i = 0; i < 32; ++i) read[32 * g + i] = kv_q8_value(q[32 * g + i], d[g]);
    }
    api.upload(values, q.data(), n);
    api.upload(scales, d.data(), d.size() * 2);
}

inline KvCacheLayer alloc_cache(DeviceApi& api, int32_t type, int n_head_kv, int n_ctx, int dim) {
    KvCacheLayer c;
    c.type = type;
    c.n_ctx = n_ctx;
    c.n_head_kv = n_head_kv;
    c.head_dim = dim;
    c.k = api.alloc(kv_values_bytes(c));
    c.v = api.alloc(kv_values_bytes(c));
    if (type == kKvQ8) {
        c.k_scales = static_cast<uint16_t*>(api.alloc(kv_scales_bytes(c)));
        c.v_scales = static_cast<uint16_t*>(api.alloc(kv_scales_bytes(c)));
    }
    return c;
}

inline TestCache make_cache(DeviceApi& api, int32_t type, int n_head_kv, int n_ctx, int dim, std::mt19937& rng,
                            int valid) {
    TestCache t;
    t.layer = alloc_cache(api, type, n_head_kv, n_ctx, dim);
    const std::vector<float> k = random_vector(size_t(n_head_kv) * n_ctx * dim, rng);
    const std::vector<float> v = random_vector(size_t(n_head_kv) * n_ctx * dim, rng);
    store_cache_plane(api, t.layer, k, t.layer.k, t.layer.k_scales, t.k_read, valid);
    store_cache_plane(api, t.layer, v, t.layer.v, t.layer.v_scales, t.v_read, valid);
    return t;
}

inline const char* kv_name(int32_t t) { return t == kKvF16 ? "f16" : "int8"; }

// Which kernel takes an attention launch: the split kernel on CUDA cores (a block per
// row), the same on tensor cores (attention_mma.cu), or the tiled one (a block per tile
// of rows of one sequence; attention_tiles.cu).
enum class AttentionKernel { split, mma, tiled };
inline const char* kernel_name(AttentionKernel k) {
    return k == AttentionKernel::split ? "split" : k == AttentionKernel::mma ? "split, mma" : "tiled";
}

// The split kernel's launch `p` (its output `merged_by_kernel`, merged by the merge
// kernel) run again with its splits merged by its own last blocks (merge_tickets), twice,
// into an output and a workspace of NaNs (so no partial of an earlier launch can stand in
// for one not yet written): the same sums in the same order, so the same values bit for
// bit both times, and every ticket back at 0 after each launch (the second launch counts
// from where the first left them).
inline void check_merge_in_last_blocks(DeviceApi& api, const Report& report, AttentionParams p,
                                       const std::vector<float>& merged_by_kernel, const std::string& name) {
    const AttentionGrid g = plan_attention(p);
    const size_t n_tickets = size_t(g.kv_heads) * g.chunks * g.rows;
    p.merge_tickets = static_cast<int32_t*>(api.alloc(n_tickets * 4));
    const size_t workspace = size_t(attention_workspace_floats(p.n_rows * p.n_head, p.cache.head_dim, p.n_splits));
    const std::vector<float> nans(std::max(workspace, merged_by_kernel.size()), std::nanf(""));
    for (int launch = 1; launch <= 2; ++launch) {
        api.upload(p.out, nans.data(), merged_by_kernel.size() * 4);
        api.upload(p.workspace, nans.data(), workspace * 4);
        api.attention(p);
        const std::vector<float> out = api.download_vector(static_cast<const float*>(p.out), merged_by_kernel.size());
        const std::string which = ", merged in its last blocks, launch " + std::to_string(launch);
        report({name + which + ": largest difference against the merge kernel", largest_difference(out, merged_by_kernel), 0.0});
        const std::vector<int32_t> tickets = api.download_vector(static_cast<const int32_t*>(p.merge_tickets), n_tickets);
        report({name + which + ": tickets not back at 0",
                double(std::count_if(tickets.begin(), tickets.end(), [](int32_t t) { return t != 0; })), 0.0});
    }
}

// The split kernel's launch `p` (its output `merged`) run again with its merge also
// writing the output's 8-bit x (AttentionParams::out_q), merged by the merge kernel and by
// the split kernel's last blocks: the float output the same bit for bit, and the bytes and
// segment words those of prepare's 8-bit x of each row of `merged`, exactly.
inline void check_merge_q8(DeviceApi& api, const Report& report, AttentionParams p, const std::vector<float>& merged,
                           const std::string& name) {
    const int width = p.n_head * p.cache.head_dim;  // a multiple of 32: no padding
    std::vector<int8_t> want_q;
    std::vector<Words2> want_words;
    for (int r = 0; r < p.n_rows; ++r) {
        const std::vector<float> row(merged.begin() + int64_t(r) * width, merged.begin() + int64_t(r + 1) * width);
        const DeviceActivation a = prepare_on_device(api, row, false);
        const std::vector<int8_t> q = api.download_vector(reinterpret_cast<const int8_t*>(a.view.q8.q), size_t(width));
        const std::vector<Words2> words = api.download_vector(a.view.q8.segments, size_t(width / 16));
        want_q.insert(want_q.end(), q.begin(), q.end());
        want_words.insert(want_words.end(), words.begin(), words.end());
    }
    p.out_q = static_cast<uint8_t*>(api.alloc(want_q.size()));
    p.out_segments = alloc_q8_segments(api, width, p.n_rows);
    const AttentionGrid g = plan_attention(p);
    int32_t* tickets = static_cast<int32_t*>(api.alloc(size_t(g.kv_heads) * g.chunks * g.rows * 4));
    for (const bool in_last_blocks : {false, true}) {
        p.merge_tickets = in_last_blocks ? tickets : nullptr;
        // NaNs and bytes no quantization writes (-128), so nothing of the run before can pass.
        const std::vector<float> nans(merged.size(), std::nanf(""));
        const std::vector<uint8_t> stale(want_q.size() + want_words.size() * sizeof(Words2), 0x80);
        api.upload(p.out, nans.data(), merged.size() * 4);
        api.upload(p.out_q, stale.data(), want_q.size());
        api.upload(p.out_segments, stale.data(), want_words.size() * sizeof(Words2));
        api.attention(p);
        const std::string which = name + (in_last_blocks ? ", merged in its last blocks" : ", merged by the merge kernel") +
                                  " with its 8-bit x";
        const std::vector<float> out = api.download_vector(static_cast<const float*>(p.out), merged.size());
        report({which + ": largest difference of the output", largest_difference(out, merged), 0.0});
        const std::vector<int8_t> q = api.download_vector(reinterpret_cast<const int8_t*>(p.out_q), want_q.size());
        const std::vector<Words2> words = api.download_vector(p.out_segments, want_words.size());
        int bytes_differing = 0, words_differing = 0;
        for (size_t i = 0; i < q.size(); ++i) bytes_differing += q[i] != want_q[i];
        for (size_t i = 0; i < words.size(); ++i)
            words_differing += words[i].w[0] != want_words[i].w[0] || words[i].w[1] != want_words[i].w[1];
        report({which + ": bytes differing from prepare's", double(bytes_differing), 0.0});
        report({which + ": segment words differing from prepare's", double(words_differing), 0.0});
    }
}

// Launch `p` (its output `out`) run again as `variant` changes it, into an output of NaNs:
// a variant that changes no value gives the same output bit for bit.
template <class Variant>
inline void check_same_output(DeviceApi& api, const Report& report, AttentionParams p, const std::vector<float>& out,
                              const std::string& name, Variant&& variant) {
    const std::string what = variant(p);
    const std::vector<float> nans(out.size(), std::nanf(""));
    api.upload(p.out, nans.data(), out.size() * 4);
    api.attention(p);
    const std::vector<float> again = api.download_vector(static_cast<const float*>(p.out), out.size());
    report({name + ", " + what + ": largest difference", largest_difference(again, out), 0.0});
}

// The tensor-core split kernel with each warp asking L2 for its next tile ahead: a
// prefetch changes no value.
inline void check_prefetch_next_tile(DeviceApi& api, const Report& report, const AttentionParams& p,
                                     const std::vector<float>& out, const std::string& name) {
    check_same_output(api, report, p, out, name, [](AttentionParams& q) {
        q.prefetch_next_tile = 1;
        return "next tiles prefetched";
    });
}

// The tensor-core split kernel with each warp's tiles software-pipelined (a tile's values
// and the next tile's keys loaded as soon as the tile's scores are taken): the same
// products in the same order.
inline void check_pipelined_tiles(DeviceApi& api, const Report& report, const AttentionParams& p,
                                  const std::vector<float>& out, const std::string& name) {
    check_same_output(api, report, p, out, name, [](AttentionParams& q) {
        q.pipeline_tiles = 1;
        return "tiles pipelined";
    });
}

// The tiled kernel with two K/V tiles in flight (the next tile's copies on their way while
// this one is computed): the same tiles in the same order.
inline void check_tile_stages(DeviceApi& api, const Report& report, const AttentionParams& p, const std::vector<float>& out,
                              const std::string& name) {
    check_same_output(api, report, p, out, name, [](AttentionParams& q) {
        q.tile_stages = 2;
        return "two tiles in flight";
    });
}

// The tiled kernel over the cache widened to halves first (widen_kv), as a step of one
// sequence's rows takes it with widen_kv=1: the halves are the ones the kernel makes tile
// by tile, so the output is the same bit for bit, with one stage or two. The widened K
// and V start as NaNs, so a position the widening missed below a row's length poisons the
// output; every one at or past the longest row must still be NaN.
inline void check_widened_kv(DeviceApi& api, const Report& report, const AttentionParams& p, const std::vector<float>& out,
                             const std::string& name, int longest) {
    const KvCacheLayer& c = p.cache;
    const size_t values = kv_values(c);
    const std::vector<uint16_t> nans(values, 0x7E00);
    const WidenKvParams w = widening_for(p, api.upload_vector(nans), api.upload_vector(nans));
    api.widen_kv(w);
    for (const int stages : {1, 2})
        check_same_output(api, report, p, out, name, [&](AttentionParams& q) {
            q = reading_widened(q, w);
            q.tile_stages = stages;
            return "cache widened to halves first, " + std::to_string(stages) + " stage" + (stages > 1 ? "s" : "");
        });
    double written_past = 0;
    for (const uint16_t* plane : {w.k, w.v}) {
        const std::vector<uint16_t> halves = api.download_vector(plane, values);
        for (size_t at = 0; at < values; ++at)
            if (int(at / c.head_dim % c.n_ctx) >= longest && halves[at] != 0x7E00) ++written_past;
    }
    report({name + ", widened: halves written at or past the longest row", written_past, 0.0});
}

// Runs the split attention over `cache` and returns the output [n_head][dim] (merged by
// the merge kernel); `params`, if given, receives the launch.
inline std::vector<float> run_attention(DeviceApi& api, const KvCacheLayer& cache, const std::vector<float>& q,
                                        int n_head, int kv_len, int n_splits, AttentionKernel kernel,
                                        AttentionParams* params = nullptr) {
    AttentionParams p;
    p.mma = kernel == AttentionKernel::mma;
    p.q = api.upload_vector(q);
    p.cache = cache;
    p.kv_len = api.upload_vector(std::vector<int32_t>{kv_len});
    p.n_head = n_head;
    p.scale = 1.0f / std::sqrt(float(cache.head_dim));
    p.n_splits = n_splits;
    p.workspace = static_cast<float*>(api.alloc(attention_workspace_floats(n_head, cache.head_dim, n_splits) * 4));
    p.out = api.alloc(size_t(n_head) * cache.head_dim * 4);
    api.attention(p);
    if (params) *params = p;
    return api.download_vector(static_cast<const float*>(p.out), size_t(n_head) * cache.head_dim);
}

inline std::vector<double> ref_attention(const std::vector<float>& q, const TestCache& t, int n_head, int kv_len) {
    const KvCacheLayer& c = t.layer;
    const int dim = c.head_dim, group = n_head / c.n_head_kv;
    std::vector<double> out;
    for (int h = 0; h < n_head; ++h) {
        const int kvh = h / group;
        const size_t base = size_t(kvh) * c.n_ctx * dim;
        const std::vector<float> k(t.k_read.begin() + base, t.k_read.begin() + base + size_t(kv_len) * dim);
        const std::vector<float> v(t.v_read.begin() + base, t.v_read.begin() + base + size_t(kv_len) * dim);
        const std::vector<double> o = ref_attention_head(&q[size_t(h) * dim], k, v, kv_len, dim, 1.0 / std::sqrt(double(dim)));
        out.insert(out.end(), o.begin(), o.end());
    }
    return out;
}

inline void check_attention(DeviceApi& api, const Report& report, int n_head, int n_head_kv, int dim, int kv_len,
                            int n_ctx, int32_t kv_type, int n_splits, uint32_t seed,
                            AttentionKernel kernel = AttentionKernel::split) {
    std::mt19937 rng(seed);
    const TestCache t = make_cache(api, kv_type, n_head_kv, n_ctx, dim, rng, kv_len);
    const std::vector<float> q = random_vector(size_t(n_head) * dim, rng, 2.0f);
    AttentionParams p;
    const std::vector<float> out = run_attention(api, t.layer, q, n_head, kv_len, n_splits, kernel, &p);
    char name[160];
    std::snprintf(name, sizeof name, "attention (%s) %s heads %d/%d dim %d kv_len %d/%d splits %d", kernel_name(kernel),
                  kv_name(kv_type), n_head, n_head_kv, dim, kv_len, n_ctx, n_splits);
    const double bound = kernel == AttentionKernel::mma ? kBoundTensorCoreAttention
                         : kv_type == kKvF16           ? kBoundF16Attention
                                                       : kBoundQ8Attention;
    report({name, nmse(out, ref_attention(q, t, n_head, kv_len)), bound});
    if (kernel == AttentionKernel::mma) {
        check_prefetch_next_tile(api, report, p, out, name);
        check_pipelined_tiles(api, report, p, out, name);
    }
    check_merge_in_last_blocks(api, report, p, out, name);
    check_merge_q8(api, report, p, out, name);
    api.reset();
}

// A step of several rows in one launch: rows of two sequences held one after another in
// the layer (as a context of several sequences holds them), each row with its own causal
// length, against the reference per row.
inline void check_attention_rows(DeviceApi& api, const Report& report, int n_head, int n_head_kv, int dim, int n_ctx,
                                 int32_t kv_type, const std::vector<int32_t>& seqs, const std::vector<int32_t>& lengths,
                                 int n_splits, uint32_t seed, AttentionKernel kernel = AttentionKernel::split) {
    std::mt19937 rng(seed);
    const int n_rows = int(seqs.size());
    const int longest = *std::max_element(lengths.begin(), lengths.end());
    const TestCache t = make_cache(api, kv_type, 2 * n_head_kv, n_ctx, dim, rng, longest);  // sequences 0 and 1
    const std::vector<float> q = random_vector(size_t(n_rows) * n_head * dim, rng, 2.0f);
    AttentionParams p;
    p.q = api.upload_vector(q);
    p.cache = t.layer;
    p.cache.n_head_kv = n_head_kv;
    p.kv_len = api.upload_vector(lengths);
    p.n_rows = n_rows;
    p.row_seq = api.upload_vector(seqs);
    p.seq_stride_values = int64_t(n_head_kv) * n_ctx * dim;
    p.seq_stride_scales = p.seq_stride_values / 32;
    p.n_head = n_head;
    p.scale = 1.0f / std::sqrt(float(dim));
    p.n_splits = n_splits;
    p.workspace = static_cast<float*>(api.alloc(attention_workspace_floats(n_rows * n_head, dim, n_splits) * 4));
    p.out = api.alloc(size_t(n_rows) * n_head * dim * 4);
    p.mma = kernel == AttentionKernel::mma;
    const int group = n_head / n_head_kv;
    if (kernel == AttentionKernel::tiled) {
        const int rows_per_tile = tiled_attention_rows_per_tile(group);
        p.n_tiles = max_attention_tiles(n_rows, 2, rows_per_tile);
        std::vector<int32_t> tiles(size_t(2 * p.n_tiles)), tile_rows(static_cast<size_t>(n_rows));
        fill_attention_tiles(seqs.data(), n_rows, 2, rows_per_tile, tiles.data(), tile_rows.data(), p.n_tiles);
        p.tiles = api.upload_vector(tiles);
        p.tile_rows = api.upload_vector(tile_rows);
    }
    api.attention(p);
    const std::vector<float> out =
        api.download_vector(static_cast<const float*>(p.out), size_t(n_rows) * n_head * dim);
    std::vector<double> ref;
    for (int r = 0; r < n_rows; ++r)
        for (int h = 0; h < n_head; ++h) {
            const size_t base = (size_t(seqs[size_t(r)]) * n_head_kv + h / group) * n_ctx * dim;
            const size_t len = size_t(lengths[size_t(r)]);
            const std::vector<float> k(t.k_read.begin() + base, t.k_read.begin() + base + len * dim);
            const std::vector<float> v(t.v_read.begin() + base, t.v_read.begin() + base + len * dim);
            const std::vector<double> o = ref_attention_head(&q[(size_t(r) * n_head + h) * dim], k, v, int(len), dim,
                                                             1.0 / std::sqrt(double(dim)));
            ref.insert(ref.end(), o.begin(), o.end());
        }
    char name[200];
    std::snprintf(name, sizeof name, "attention (%s) of %d rows, 2 sequences, %s heads %d/%d dim %d n_ctx %d splits %d",
                  kernel_name(kernel), n_rows, kv_name(kv_type), n_head, n_head_kv, dim,
                  n_ctx, n_splits);
    const double q8_bound = n_rows == 1 ? kBoundQ8Attention : kBoundQ8RowsAttention;
    const double bound = kernel != AttentionKernel::split ? kBoundTensorCoreAttention
                         : kv_type == kKvF16         ? kBoundF16Attention
                                                     : q8_bound;
    report({name, nmse(out, ref), bound});
    if (kernel == AttentionKernel::mma) {
        check_prefetch_next_tile(api, report, p, out, name);
        check_pipelined_tiles(api, report, p, out, name);
    }
    if (kernel == AttentionKernel::tiled) check_tile_stages(api, report, p, out, name);
    const bool one_sequence = std::all_of(seqs.begin(), seqs.end(), [&](int32_t s) { return s == seqs[0]; });
    if (kernel == AttentionKernel::tiled && kv_type == kKvQ8 && one_sequence)
        check_widened_kv(api, report, p, out, name, longest);
    if (kernel != AttentionKernel::tiled) {
        check_merge_in_last_blocks(api, report, p, out, name);
        check_merge_q8(api, report, p, out, name);
    }
    api.reset();
}

// The same K/V stored as F16 and as INT8: outputs within the stated bound.
inline void check_attention_q8_vs_f16(DeviceApi& api, const Report& report, int n_head, int n_head_kv, int dim,
                                      int kv_len, int n_splits, uint32_t seed) {
    std::mt19937 rng(seed);
    const int n_ctx = kv_len;
    const std::vector<float> k = random_vector(size_t(n_head_kv) * n_ctx * dim, rng);
    const std::vector<float> v = random_vector(size_t(n_head_kv) * n_ctx * dim, rng);
    const std::vector<float> q = random_vector(size_t(n_head) * dim, rng, 2.0f);
    std::vector<float> outs[2];
    for (int i = 0; i < 2; ++i) {
        TestCache t;
        t.layer = alloc_cache(api, i == 0 ? kKvF16 : kKvQ8, n_head_kv, n_ctx, dim);
        store_cache_plane(api, t.layer, k, t.layer.k, t.layer.k_scales, t.k_read, kv_len);
        store_cache_plane(api, t.layer, v, t.layer.v, t.layer.v_scales, t.v_read, kv_len);
        outs[i] = run_attention(api, t.layer, q, n_head, kv_len, n_splits, AttentionKernel::split);
    }
    char name[160];
    std::snprintf(name, sizeof name, "attention int8 vs f16 heads %d/%d dim %d kv_len %d", n_head, n_head_kv, dim, kv_len);
    report({name, nmse(outs[1], outs[0]), kBoundQ8VsF16Attention});
    api.reset();
}

struct RopeCase {
    int n_head, n_head_kv, dim, n_rot, mode;
    bool freq_factors, qk_norm;
    int32_t kv_type;
    int pos, n_ctx;
};

inline void check_rope_append(DeviceApi& api, const Report& report, const RopeCase& rc, uint32_t seed) {
    std::mt19937 rng(seed);
    const int dim = rc.dim;
    const std::vector<float> q = random_vector(size_t(rc.n_head) * dim, rng), k = random_vector(size_t(rc.n_head_kv) * dim, rng);
    const std::vector<float> v = random_vector(size_t(rc.n_head_kv) * dim, rng);
    std::vector<float> qn = random_vector(dim, rng, 0.2f), kn = random_vector(dim, rng, 0.2f);
    for (float& e : qn) e += 1.0f;
    for (float& e : kn) e += 1.0f;
    std::vector<float> factors(rc.n_rot / 2);
    std::uniform_real_distribution<float> uf(1.0f, 4.0f);
    for (float& f : factors) f = uf(rng);
    const float base = 10000.0f, freq_scale = 0.75f;

    RopeAppendParams p;
    p.q = api.upload_vector(q);
    p.n_head = rc.n_head;
    p.k = api.upload_vector(k);
    p.v = api.upload_vector(v);
    if (rc.qk_norm) {
        p.q_norm = api.upload_vector(qn);
        p.k_norm = api.upload_vector(kn);
    }
    p.norm_eps = 1e-6f;
    p.rope = {rc.mode, dim, rc.n_rot, rope_theta_scale(base, rc.n_rot), freq_scale,
              rc.freq_factors ? api.upload_vector(factors) : nullptr};
    p.pos = api.upload_vector(std::vector<int32_t>{rc.pos});
    p.cache = alloc_cache(api, rc.kv_type, rc.n_head_kv, rc.n_ctx, dim);
    // A sentinel in the whole cache shows that nothing but the row at pos is written.
    const size_t value_bytes = kv_values_bytes(p.cache), scale_bytes = kv_scales_bytes(p.cache);
    const std::vector<uint8_t> sentinel(std::max(value_bytes, scale_bytes), 0x5A);
    api.upload(p.cache.k, sentinel.data(), value_bytes);
    api.upload(p.cache.v, sentinel.data(), value_bytes);
    if (scale_bytes) {
        api.upload(p.cache.k_scales, sentinel.data(), scale_bytes);
        api.upload(p.cache.v_scales, sentinel.data(), scale_bytes);
    }
    api.rope_append(p);

    auto transform = [&](const float* src, const std::vector<float>& norm) {
        std::vector<double> h(src, src + dim);
        if (rc.qk_norm) h = ref_rms_norm(h, norm, 1e-6);
        ref_rope(h.data(), rc.n_rot, rc.mode, base, freq_scale, rc.freq_factors ? factors.data() : nullptr, rc.pos);
        return h;
    };
    std::vector<double> q_ref, k_ref;
    for (int h = 0; h < rc.n_head; ++h) {
        const std::vector<double> r = transform(&q[size_t(h) * dim], qn);
        q_ref.insert(q_ref.end(), r.begin(), r.end());
    }
    for (int h = 0; h < rc.n_head_kv; ++h) {
        const std::vector<double> r = transform(&k[size_t(h) * dim], kn);
        k_ref.insert(k_ref.end(), r.begin(), r.end());
    }
    char name[200];
    std::snprintf(name, sizeof name, "rope+append %s %s dim %d rot %d%s%s pos %d", kv_name(rc.kv_type),
                  rc.mode == kRopeNeox ? "neox" : "normal", dim, rc.n_rot, rc.freq_factors ? " factors" : "",
                  rc.qk_norm ? " qk-norm" : "", rc.pos);
    // Angles by repeated float multiplication (as ggml) drift ~1e-7 * pos rad from the
    // exact ones: NMSE below 1e-4 up to 32k positions.
    report({std::string(name) + " q", nmse(api.download_vector(p.q, q.size()), q_ref), 1e-4});

    // Read the cache back: K and V rows at pos as floats, and count foreign writes.
    const std::vector<uint8_t> kb = api.download_vector(static_cast<const uint8_t*>(p.cache.k), value_bytes);
    const std::vector<uint8_t> vb = api.download_vector(static_cast<const uint8_t*>(p.cache.v), value_bytes);
    std::vector<uint8_t> ks, vs;
    if (scale_bytes) {
        ks = api.download_vector(reinterpret_cast<const uint8_t*>(p.cache.k_scales), scale_bytes);
        vs = api.download_vector(reinterpret_cast<const uint8_t*>(p.cache.v_scales), scale_bytes);
    }
    const int elem = rc.kv_type == kKvF16 ? 2 : 1;
    std::vector<float> k_row, v_row;
    int foreign = 0, v_mismatch = 0;
    for (int h = 0; h < rc.n_head_kv; ++h)
        for (int t = 0; t < rc.n_ctx; ++t) {
            const size_t token = size_t(h) * rc.n_ctx + t;
            for (int d = 0; d < dim; ++d) {
                const size_t at = (token * dim + d) * elem;
                if (t != rc.pos) {
                    foreign += kb[at] != 0x5A || vb[at] != 0x5A;
                    continue;
                }
                float kf, vf;
                if (rc.kv_type == kKvF16) {
                    uint16_t a, b;
                    std::memcpy(&a, &kb[at], 2);
                    std::memcpy(&b, &vb[at], 2);
                    kf = quant::fp16_to_fp32(a);
                    vf = quant::fp16_to_fp32(b);
                } else {
                    uint16_t a, b;
                    std::memcpy(&a, &ks[(token * (dim / 32) + d / 32) * 2], 2);
                    std::memcpy(&b, &vs[(token * (dim / 32) + d / 32) * 2], 2);
                    kf = kv_q8_value(int8_t(kb[at]), a);
                    vf = kv_q8_value(int8_t(vb[at]), b);
                }
                k_row.push_back(kf);
                v_row.push_back(vf);
            }
        }
    // V passes through untouched, so its stored form must be exactly the host rule's.
    for (int h = 0; h < rc.n_head_kv; ++h)
        for (int g = 0; g < dim / 32; ++g) {
            const float* src = &v[size_t(h) * dim + 32 * g];
            for (int i = 0; i < 32; ++i) {
                float expect;
                if (rc.kv_type == kKvF16) {
                    expect = quant::fp16_to_fp32(quant::fp32_to_fp16(src[i]));
                } else {
                    int8_t qv[32];
                    const uint16_t d = kv_q8_quantize_group(src, qv);
                    expect = kv_q8_value(qv[i], d);
                }
                v_mismatch += v_row[size_t(h) * dim + 32 * g + i] != expect;
            }
        }
    // K: half rounding (~1e-7) or 8-bit per 32 values (~2e-5) on top of the RoPE bound.
    report({std::string(name) + " k row", nmse(k_row, k_ref), rc.kv_type == kKvF16 ? 1e-4 : 2e-4});
    report({std::string(name) + " v row values differing from the host rule", double(v_mismatch), 0.0});
    report({std::string(name) + " cache bytes written outside pos", double(foreign), 0.0});
    api.reset();
}

// How the embedding reads its weight: the GEMV's packed layout, or the GGUF bytes.
enum class EmbedForm { packed, table };

// The GGUF types blocks.hpp dequantizes that the GEMV layout cannot hold: embedded from
// the table form only.
inline constexpr int32_t kQ8_1 = 9, kQ8_K = 15;

inline uint64_t table_row_bytes(int32_t type, int n_cols) {
    if (type == kQ8_1) return uint64_t(n_cols / 32) * sizeof(quant::BlockQ8_1);
    if (type == kQ8_K) return uint64_t(n_cols / 256) * sizeof(quant::BlockQ8_K);
    return gguf_matrix_bytes(type, 1, n_cols);
}

// Random GGUF rows of any type check_embed takes: make_weights for the GEMV types; for
// Q8_1 and Q8_K random quants with finite scales.
inline std::vector<uint8_t> make_table_weights(int32_t type, int n_rows, int n_cols, std::mt19937& rng) {
    if (type != kQ8_1 && type != kQ8_K) return make_weights(type, n_rows, n_cols, rng);
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    std::vector<uint8_t> out(size_t(n_rows) * table_row_bytes(type, n_cols));
    for (uint8_t& b : out) b = uint8_t(byte(rng));
    const size_t block_bytes = type == kQ8_1 ? sizeof(quant::BlockQ8_1) : sizeof(quant::BlockQ8_K);
    for (size_t at = 0; at < out.size(); at += block_bytes) {
        if (type == kQ8_1) {
            const uint16_t d = quant::fp32_to_fp16(normal(rng)), sum = quant::fp32_to_fp16(normal(rng));
            std::memcpy(&out[at], &d, 2);
            std::memcpy(&out[at + 2], &sum, 2);
        } else {
            const float d = normal(rng);
            std::memcpy(&out[at], &d, 4);
        }
    }
    return out;
}

// Rows tokens[r] of a weight, dequantized on the device in one launch, equal bit for bit
// to blocks.hpp's dequantization of the GGUF bytes; a token outside [0, n_rows) gives a
// row of zeros. The output starts as a NaN pattern, with one row more than the launch
// writes, so an unwritten value or a write past the rows shows.
inline void check_embed(DeviceApi& api, const Report& report, EmbedForm form, int32_t type, int n_rows, int n_cols,
                        const std::vector<int32_t>& tokens, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<uint8_t> gguf = make_table_weights(type, n_rows, n_cols, rng);
    const int n_tokens = int(tokens.size());
    EmbedParams p;
    p.type = type;
    p.n_rows = n_rows;
    p.n_cols = n_cols;
    if (form == EmbedForm::packed) {
        const PackedLayout layout = packed_layout(type, n_rows, n_cols);
        std::vector<uint8_t> packed(layout.total_bytes);
        repack_matrix(type, gguf.data(), n_rows, n_cols, packed.data());
        p.packed = packed_view(layout, type, n_rows, n_cols, api.upload_vector(packed));
    } else {
        p.table = api.upload_vector(gguf);
        p.row_bytes = int64_t(table_row_bytes(type, n_cols));
    }
    p.token = api.upload_vector(tokens);
    p.n_tokens = n_tokens;
    const float sentinel = quant::bits_to_float(0x7FC0ABCDu);
    p.out = api.upload_vector(std::vector<float>(size_t(n_tokens + 1) * n_cols, sentinel));
    api.embed(p);
    const std::vector<float> got = api.download_vector(p.out, size_t(n_tokens + 1) * n_cols);
    std::vector<float> all(size_t(n_rows) * n_cols);
    for (int r = 0; r < n_rows; ++r)
        quant::dequantize_row(type, gguf.data() + size_t(r) * table_row_bytes(type, n_cols), all.data() + size_t(r) * n_cols,
                              n_cols);
    int differing = 0, past_the_rows = 0;
    for (int r = 0; r < n_tokens; ++r)
        for (int c = 0; c < n_cols; ++c) {
            const int token = tokens[size_t(r)];
            const float expect = token >= 0 && token < n_rows ? all[size_t(token) * n_cols + c] : 0.0f;
            differing += quant::float_to_bits(got[size_t(r) * n_cols + c]) != quant::float_to_bits(expect);
        }
    for (int c = 0; c < n_cols; ++c)
        past_the_rows += quant::float_to_bits(got[size_t(n_tokens) * n_cols + c]) != quant::float_to_bits(sentinel);
    std::string ids;
    for (int32_t t : tokens) {
        if (!ids.empty()) ids += ',';
        ids += std::to_string(t);
    }
    char name[200];
    const char* type_name = type == kQ8_1 ? "Q8_1" : type == kQ8_K ? "Q8_K" : weight_type_name(type);
    std::snprintf(name, sizeof name, "embed (%s) %s %dx%d tokens %s", form == EmbedForm::packed ? "packed" : "table",
                  type_name, n_rows, n_cols, ids.c_str());
    report({std::string(name) + ": values differing in bits from blocks.hpp", double(differing), 0.0});
    report({std::string(name) + ": values written past the rows", double(past_the_rows), 0.0});
    api.reset();
}

}  // namespace edgerun::cuda_orin::testing
