// Tiled attention for steps of many rows (prompt chunks; verification and batched steps
// when they are long enough), on tensor cores (mma.cuh).
//
// The split kernel (attention.cu) takes one row per block, so a prompt of n rows reads
// its sequence's keys and values n times; at a 4k context a 512-row chunk read about 2 GB
// per layer. Here a block takes a tile of up to 64 query vectors, rows of one sequence
// times all query heads of one KV head (16 rows of a group of 4), and reads each
// key and value once for all of them: n / 16 times instead of n. Per 32-key tile:
//   1. the block stages the keys and the values as halves (k_tile, v_tile: [key][dim]);
//      a warp reads whole key rows, and neither its stores nor the operand loads meet
//      bank conflicts (attention_tile_layout.hpp). The mma operands come from there by
//      ldmatrix, four registers a load, V's transposed as they load (mma.cuh);
//   2. each warp, owning 16 query vectors, scores them against the 32 keys,
//      S = Q K^T (Dim/16 x 4 mmas; its query fragments stay in registers for the whole
//      range, scaled into the log2 domain and rounded to halves), masks keys past each
//      row's causal length, and folds S into its online softmax (softmax_merge.hpp): a
//      lane's accumulator rows are its score rows, so it rescales them in place;
//   3. P (halves) times V accumulates into o (2 x Dim/8 mmas), P's fragments being S's
//      accumulators as they lie in the lane.
// Warps skip key tiles past their longest row (the causal triangle). n_splits > 1 splits
// the tile's KV range like the split kernel, every split writing a partial per row (an
// empty one as m = -inf) for attention_merge_kernel; with one split the block writes the
// output itself.
//
// Precision: the query and the probabilities are rounded to halves (the F16 cache's keys
// and values are halves already, INT8 ones are dequantized to halves); products are
// exact and summed in F32. The split kernel keeps the query in F32.
//
// Step 1 either waits for its loads between two barriers (one stage, the INT8 cache's
// default), or, with AttentionParams::tile_stages = 2 (the F16 cache's), was issued as
// cp.async copies one tile earlier (copy_keys_async), so that the tile's DRAM or L2
// latency passes while the block computes the previous one.
//
// STATUS: one stage run on an H200 (2026-11-25: the GPU kernel tests and conformance
// pass; pp512 at depth 4096 2.6x the split kernel's block per row). One stage with all of
// a thread's loads of a tile issued before its stores (2026-11-27, stage_keys) and two
// stages (bit for bit one stage's outputs): on an H100 and an H200 (2026-11-28:
// conformance passes; over F16 1.08-1.18x one stage's speed, over INT8 0.84-0.87x, so
// INT8 takes one by default). widen_kv_kernel (the INT8 cache widened to halves once a
// layer, then the F16 form; option widen_kv): the emulation only (2026-11-28).
#include "async_copy.cuh"
#include "attention_params.hpp"
#include "attention_tile_layout.hpp"
#if ER_KERNEL_LAUNCHERS
#include "launch_kernel.cuh"
#endif
#include "device_math.hpp"
#include "grid_dependency.cuh"
#include "mma.cuh"
#include "softmax_merge.hpp"
#include "warp.cuh"

namespace edgerun::cuda_orin {
namespace {

constexpr int kTileWarps = kTiledAttentionWarps, kKeys = kTiledAttentionKeys;
constexpr int kNoLength = 0x7FFFFFFF;  // an inactive row's length in a minimum

// Which form of a tile's body a call takes (a type, so each form is compiled alone).
template <bool Masked>
struct TileForm {
    static constexpr bool masked = Masked;
};

// Eight INT8 cache values (bytes q) with their group's scale as halves.
__device__ __forceinline__ Words4 int8_unit_to_halves(const Words2& q, uint32_t scale) {
    const uint32_t scales = scale | (scale << 16);
    Words4 h;
    for (int i = 0; i < 2; ++i) {  // word i: values 4i..4i+3
        const uint32_t biased = q.w[i] ^ kByteBias;
        h.w[2 * i] = int8_pair_to_halves(biased, 0x4140u, scales);
        h.w[2 * i + 1] = int8_pair_to_halves(biased, 0x4342u, scales);
    }
    return h;
}

// Eight values (unit u: dims 8u..8u+7) of one cached key and of its value, as loaded:
// halves (F16 cache), or INT8 bytes with their group's scales; zeros stand for no key.
template <int Kv>
struct RawUnit {
    Words4 k{}, v{};
    __device__ Words4 k_halves() const { return k; }
    __device__ Words4 v_halves() const { return v; }
};
template <>
struct RawUnit<kKvQ8> {
    Words2 k{}, v{};
    uint32_t k_scale = 0, v_scale = 0;
    __device__ Words4 k_halves() const { return int8_unit_to_halves(k, k_scale); }
    __device__ Words4 v_halves() const { return int8_unit_to_halves(v, v_scale); }
};

template <int Dim, int Kv>
__device__ __forceinline__ RawUnit<Kv> load_key_unit(const KvCacheLayer& c, int kv_head, int key, int u) {
    const size_t token = size_t(kv_head) * c.n_ctx + key;
    RawUnit<Kv> r;
    if constexpr (Kv == kKvF16) {
        r.k = load_16B(static_cast<const uint8_t*>(c.k) + (token * Dim + 8 * u) * 2);
        r.v = load_16B(static_cast<const uint8_t*>(c.v) + (token * Dim + 8 * u) * 2);
    } else {
        const size_t scale = token * (Dim / 32) + u / 4;
        r.k = load_8B(static_cast<const uint8_t*>(c.k) + token * Dim + 8 * u);
        r.v = load_8B(static_cast<const uint8_t*>(c.v) + token * Dim + 8 * u);
        r.k_scale = load_2B(c.k_scales + scale);
        r.v_scale = load_2B(c.v_scales + scale);
    }
    return r;
}

// Keys [first, first + 32) into k_tile and v_tile (attention_tile_layout.hpp); keys at or
// past `end` as zeros, so a masked probability (0) never meets a NaN. Every load of the
// thread's units is issued before the first store: a loop of load-then-store waited for
// one DRAM or L2 round trip per unit, four a tile at head dim 128 (sm_90 SASS of c23497e),
// where this waits for one.
template <int Dim, int Kv>
__device__ void stage_keys(const KvCacheLayer& c, int kv_head, int first, int end, uint16_t (*k_tile)[kTileRowHalves<Dim>],
                           uint16_t (*v_tile)[kTileRowHalves<Dim>]) {
    using Staging = TileStaging<Dim>;
    constexpr int kThreads = kTileWarps * 32, kUnitsPerThread = Staging::kSteps / kThreads;
    static_assert(Staging::kSteps % kThreads == 0, "every thread stages as many units");
    RawUnit<Kv> units[kUnitsPerThread];
#pragma unroll
    for (int n = 0; n < kUnitsPerThread; ++n) {
        const int i = threadIdx.x + n * kThreads, key = first + Staging::key(i);
        if (key < end) units[n] = load_key_unit<Dim, Kv>(c, kv_head, key, Staging::unit(i));
    }
#pragma unroll
    for (int n = 0; n < kUnitsPerThread; ++n) {
        const int i = threadIdx.x + n * kThreads, j = Staging::key(i), u = Staging::unit(i);
        store_shared(&k_tile[j][8 * u], units[n].k_halves());
        store_shared(&v_tile[j][8 * u], units[n].v_halves());
    }
}

// tile_stages = 2: the next tile's copies are issued before this tile is computed, by
// cp.async (async_copy.cuh), so that its latency overlaps the tile's products instead of
// stalling every warp of the block at the start of each tile. The F16 cache's units go
// straight to the second of two tile buffers. The INT8 cache's raw units (8 bytes of K,
// 8 of V, each with the 4-byte word holding its group's scale) go to one of two raw
// buffers, and each thread turns its own units into halves once they are in: its own
// copies are visible to it after its wait, with no barrier.
template <int Dim>
struct RawKeys {  // one 32-key tile of the INT8 cache as copied, by staging step
    static constexpr int kSteps = TileStaging<Dim>::kSteps;
    Words2 k[kSteps], v[kSteps];
    uint32_t k_scales[kSteps], v_scales[kSteps];  // the scale pair holding the step's group
};

// A block's tile buffers: K and V as halves (two with the F16 cache's two stages), and with
// RawInt8 two of RawKeys for the INT8 cache's.
template <int Dim, int HalfTiles, bool RawInt8>
struct TileBuffers {
    uint16_t k[HalfTiles][kKeys][kTileRowHalves<Dim>];
    uint16_t v[HalfTiles][kKeys][kTileRowHalves<Dim>];
    __device__ RawKeys<Dim>* raw(int) { return nullptr; }
};
template <int Dim, int HalfTiles>
struct TileBuffers<Dim, HalfTiles, true> {
    uint16_t k[HalfTiles][kKeys][kTileRowHalves<Dim>];
    uint16_t v[HalfTiles][kKeys][kTileRowHalves<Dim>];
    RawKeys<Dim> raw_keys[2];
    __device__ RawKeys<Dim>* raw(int i) { return &raw_keys[i]; }
};

// Keys [first, first + 32), this thread's staging steps, on their way into k_tile and
// v_tile (F16) or `raw` (INT8); keys at or past `end` as zeros. The address of key
// `first` (< end) stands in for the others' unread ones.
template <int Dim, int Kv>
__device__ void copy_keys_async(const KvCacheLayer& c, int kv_head, int first, int end, uint16_t (*k_tile)[kTileRowHalves<Dim>],
                                uint16_t (*v_tile)[kTileRowHalves<Dim>], RawKeys<Dim>* raw) {
    using Staging = TileStaging<Dim>;
    for (int i = threadIdx.x; i < Staging::kSteps; i += blockDim.x) {
        const int j = Staging::key(i), u = Staging::unit(i);
        const bool in_range = first + j < end;
        const size_t token = size_t(kv_head) * c.n_ctx + (in_range ? first + j : first);
        if constexpr (Kv == kKvF16) {
            copy_async<16>(&k_tile[j][8 * u], static_cast<const uint8_t*>(c.k) + (token * Dim + 8 * u) * 2, in_range);
            copy_async<16>(&v_tile[j][8 * u], static_cast<const uint8_t*>(c.v) + (token * Dim + 8 * u) * 2, in_range);
        } else {
            // The scales are halves, one per group of 32; a copy takes at least 4 bytes,
            // so the even-aligned pair holding the group (Dim / 32 is even).
            const size_t pair = (token * (Dim / 32) + u / 4) & ~size_t(1);
            copy_async<8>(&raw->k[i], static_cast<const uint8_t*>(c.k) + token * Dim + 8 * u, in_range);
            copy_async<8>(&raw->v[i], static_cast<const uint8_t*>(c.v) + token * Dim + 8 * u, in_range);
            copy_async<4>(&raw->k_scales[i], c.k_scales + pair, in_range);
            copy_async<4>(&raw->v_scales[i], c.v_scales + pair, in_range);
        }
    }
}

// This thread's INT8 units of `raw` (waited for) as halves into k_tile and v_tile, as
// stage_keys converts them; the zeros of keys past the range stay zeros.
template <int Dim>
__device__ void convert_raw_keys(const RawKeys<Dim>& raw, uint16_t (*k_tile)[kTileRowHalves<Dim>],
                                 uint16_t (*v_tile)[kTileRowHalves<Dim>]) {
    using Staging = TileStaging<Dim>;
    for (int i = threadIdx.x; i < Staging::kSteps; i += blockDim.x) {
        const int j = Staging::key(i), u = Staging::unit(i), shift = 16 * (u / 4 % 2);
        store_shared(&k_tile[j][8 * u], int8_unit_to_halves(load_shared<Words2>(&raw.k[i]), (raw.k_scales[i] >> shift) & 0xFFFFu));
        store_shared(&v_tile[j][8 * u], int8_unit_to_halves(load_shared<Words2>(&raw.v[i]), (raw.v_scales[i] >> shift) & 0xFFFFu));
    }
}

// At least two blocks per SM: without a minimum ptxas held the head-dim-64 kernel to 96
// registers and spilled; with two it takes ~120 (64) and ~200 (128) registers, no spills
// (tests/cuda/check_kernel_resources.py).
//
// Stages: 1, the tile is loaded and stored by the block's threads between two barriers;
// 2, the next tile's copies are on their way while this one is computed (copy_keys_async).
template <int Dim, int Kv, int Stages>
__global__ void __launch_bounds__(kTileWarps * 32, 2) attention_tiles_kernel(const AttentionParams p) {
    static_assert(Stages == 1 || Stages == 2);
    begin_after_prior_grids();  // grid_dependency.cuh
    using Staging = TileStaging<Dim>;
    constexpr bool kAsync = Stages == 2;
    constexpr int kHalfTiles = kAsync && Kv == kKvF16 ? 2 : 1;  // INT8 double-buffers its raw bytes
    alignas(16) __shared__ TileBuffers<Dim, kHalfTiles, kAsync && Kv == kKvQ8> tiles;
    ER_SHARED_ARRAY(tiles);
    const auto k_tiles = tiles.k, v_tiles = tiles.v;

    const int split = blockIdx.x, kv_head = blockIdx.y, tile = blockIdx.z;
    const int32_t* rows = p.tile_rows + p.tiles[2 * tile];
    const int n_tile_rows = p.tiles[2 * tile + 1];
    if (n_tile_rows <= 0) return;  // a tile this step leaves unused
    const KvCacheLayer cache =
        p.row_seq ? sequence_cache(p.cache, p.row_seq[rows[0]], p.seq_stride_values, p.seq_stride_scales) : p.cache;
    int kv_end = 0;  // the tile's KV range: up to its longest row
    for (int r = 0; r < n_tile_rows; ++r) kv_end = max(kv_end, min(p.kv_len[rows[r]], cache.n_ctx));
    int begin, end;
    split_range(kv_end, p.n_splits, kKeys, split, &begin, &end);

    // This lane's two fragment rows: query vectors 16 warp + g and 16 warp + g + 8, each a
    // (row, query head) of the tile.
    const int group = p.n_head / cache.n_head_kv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    bool active[2];
    int kv_len[2];
    size_t query[2];  // row * n_head + head
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int vector = 16 * warp + g + 8 * h, r = vector / group;
        active[h] = r < n_tile_rows;
        const int row = rows[active[h] ? r : 0];
        query[h] = size_t(row) * p.n_head + kv_head * group + vector % group;
        kv_len[h] = active[h] ? min(min(p.kv_len[row], cache.n_ctx), end) : 0;
    }
    const int warp_kv = int(warp_max(float(max(kv_len[0], kv_len[1]))));
    // Tiles wholly below every active row's length need no causal mask (exact in float:
    // lengths are far below 2^24).
    const float unmasked_below = -warp_max(-float(min(active[0] ? kv_len[0] : kNoLength, active[1] ? kv_len[1] : kNoLength)));

    // Register r of a k-step holds row g + 8 (r % 2), columns 2t, 2t + 1 (+ 8 for r >= 2).
    const float q_scale = p.scale * kLog2e;
    uint32_t qa[Dim / 16][4];
#pragma unroll
    for (int ks = 0; ks < Dim / 16; ++ks)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int h = r % 2, dim = 16 * ks + 8 * (r / 2) + 2 * t;
            const float* q = p.q + query[h] * Dim + dim;
            qa[ks][r] = active[h] ? pack_halves(q[0] * q_scale, q[1] * q_scale) : 0u;
        }

    float o[Dim / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    if constexpr (kAsync) {  // the first tile on its way
        if (begin < end) copy_keys_async<Dim, Kv>(cache, kv_head, begin, end, k_tiles[0], v_tiles[0], tiles.raw(0));
        commit_async_copies();
    }
    for (int first = begin; first < end; first += kKeys) {
        const int buffer = kAsync ? (first - begin) / kKeys % 2 : 0;
        __syncthreads();  // every warp is done with the previous tile (and so with the buffer copied into next)
        if constexpr (kAsync) {
            if (first + kKeys < end)
                copy_keys_async<Dim, Kv>(cache, kv_head, first + kKeys, end, k_tiles[(buffer + 1) % kHalfTiles],
                                         v_tiles[(buffer + 1) % kHalfTiles], tiles.raw((buffer + 1) % 2));
            commit_async_copies();
            wait_async_copies<1>();  // this thread's copies of this tile are in
            if constexpr (Kv == kKvQ8) convert_raw_keys<Dim>(*tiles.raw(buffer), k_tiles[0], v_tiles[0]);
        } else {
            stage_keys<Dim, Kv>(cache, kv_head, first, end, k_tiles[0], v_tiles[0]);
        }
        __syncthreads();
        if (first >= warp_kv) continue;  // past every row of this warp (warp-uniform)
        uint16_t(*k_tile)[kTileRowHalves<Dim>] = k_tiles[buffer % kHalfTiles];
        uint16_t(*v_tile)[kTileRowHalves<Dim>] = v_tiles[buffer % kHalfTiles];

        // A tile's scores, softmax and products; Masked: some key lies past a row's length.
        const auto add_tile = [&](auto form) {
            constexpr bool Masked = decltype(form)::masked;
            // 1. S = Q K^T: element i of n-tile nt is key first + 8 nt + 2t + i % 2 of row h = i / 2.
            // K's B fragments of k-steps ks, ks + 1 in one load (attention_tile_layout.hpp).
            float s[4][4] = {};
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int ks = 0; ks < Dim / 16; ks += 2) {
                    uint32_t b[4];
                    load_matrices_x4(b, &k_tile[Staging::k_operand_row(nt, lane)][Staging::k_operand_column(ks, lane)]);
                    mma_m16n8k16(s[nt], qa[ks], {b[0], b[1]});
                    mma_m16n8k16(s[nt], qa[ks + 1], {b[2], b[3]});
                }
            // 2. Causal mask, online softmax; scores become probabilities in place.
            float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int h = i / 2;
                    if (Masked && first + 8 * nt + 2 * t + i % 2 >= kv_len[h]) s[nt][i] = -INFINITY;
                    tile_max[h] = fmaxf(tile_max[h], s[nt][i]);
                }
            float factor[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
            for (int h = 0; h < 2; ++h) factor[h] = online_softmax_rescale(&m[h], fragment_row_max(tile_max[h]));
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int h = i / 2;
                    s[nt][i] = Masked && s[nt][i] == -INFINITY ? 0.0f : exp2f(s[nt][i] - m[h]);
                    sum[h] += s[nt][i];
                }
#pragma unroll
            for (int h = 0; h < 2; ++h) l[h] = l[h] * factor[h] + fragment_row_sum(sum[h]);
            // o needs rescaling only where a row's maximum moved: once a long range's
            // maxima settle, rarely (a warp-uniform vote; multiplying by 1 changed nothing).
            if (__any_sync(kFullMask, factor[0] != 1.0f || factor[1] != 1.0f))
#pragma unroll
                for (int dn = 0; dn < Dim / 8; ++dn)
#pragma unroll
                    for (int i = 0; i < 4; ++i) o[dn][i] *= factor[i / 2];
            // 3. o += P V, keys 16 kk.. as the k of the product: P's A fragment is the pair
            // of S n-tiles 2 kk, 2 kk + 1 (mma.cuh).
#pragma unroll
            for (int kk = 0; kk < 2; ++kk) {
                const float (&lo)[4] = s[2 * kk], (&hi)[4] = s[2 * kk + 1];
                const uint32_t pa[4] = {pack_halves(lo[0], lo[1]), pack_halves(lo[2], lo[3]), pack_halves(hi[0], hi[1]),
                                        pack_halves(hi[2], hi[3])};
                // V's B fragments of dim tiles dn, dn + 1, transposed as they load.
#pragma unroll
                for (int dn = 0; dn < Dim / 8; dn += 2) {
                    uint32_t b[4];
                    load_matrices_x4_transposed(b, &v_tile[Staging::v_operand_row(kk, lane)][Staging::v_operand_column(dn, lane)]);
                    mma_m16n8k16(o[dn], pa, {b[0], b[1]});
                    mma_m16n8k16(o[dn + 1], pa, {b[2], b[3]});
                }
            }
        };
        if (float(first + kKeys) <= unmasked_below) add_tile(TileForm<false>{});
        else add_tile(TileForm<true>{});
    }

    // Element i of o[dn] is dim 8 dn + 2t + i % 2 of row h = i / 2.
    float* part_o = p.workspace;
    float* part_ml = p.workspace + size_t(p.n_rows) * p.n_head * p.n_splits * Dim;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (!active[h]) continue;
        if (p.n_splits > 1) {  // a partial for the merge, empty or not
            const size_t slot = query[h] * p.n_splits + split;
#pragma unroll
            for (int dn = 0; dn < Dim / 8; ++dn)
#pragma unroll
                for (int i = 0; i < 2; ++i) part_o[slot * Dim + 8 * dn + 2 * t + i] = o[dn][2 * h + i];
            if (t == 0) {
                part_ml[2 * slot] = m[h];
                part_ml[2 * slot + 1] = l[h];
            }
            continue;
        }
        const float inverse = l[h] > 0.0f ? 1.0f / l[h] : 0.0f;
#pragma unroll
        for (int dn = 0; dn < Dim / 8; ++dn)
#pragma unroll
            for (int i = 0; i < 2; ++i)
                store_float_or_half(p.out, p.out_is_f16, query[h] * Dim + 8 * dn + 2 * t + i, o[dn][2 * h + i] * inverse);
    }
}

// WidenKvParams (attention_params.hpp): block (x: kWidenKvPositions positions, y: KV head),
// each thread widening a chunk's units as stage_keys does, every load before the first
// store. Blocks past the longest row return once they have its length.
constexpr int kWidenKvThreads = 256, kWidenKvPositions = 256, kWidenKvChunk = 64;

template <int Dim>
__global__ void __launch_bounds__(kWidenKvThreads) widen_kv_kernel(const WidenKvParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    constexpr int kUnits = Dim / 8, kUnitsPerThread = kWidenKvChunk * kUnits / kWidenKvThreads;
    static_assert(kWidenKvChunk * kUnits % kWidenKvThreads == 0, "every thread widens as many units a chunk");
    __shared__ float scratch[32];
    ER_SHARED_ARRAY(scratch);
    float longest = 0.0f;  // a length as a float: exact, lengths are far below 2^24
    for (int r = threadIdx.x; r < p.n_rows; r += blockDim.x)
        longest = fmaxf(longest, float(min(p.kv_len[r], p.cache.n_ctx)));
    const int end = int(block_max(longest, scratch));
    const int kv_head = blockIdx.y, begin = blockIdx.x * kWidenKvPositions;
    if (begin >= end) return;
    const KvCacheLayer c =
        p.row_seq ? sequence_cache(p.cache, p.row_seq[0], p.seq_stride_values, p.seq_stride_scales) : p.cache;
    for (int first = begin; first < min(begin + kWidenKvPositions, end); first += kWidenKvChunk) {
        RawUnit<kKvQ8> units[kUnitsPerThread];
#pragma unroll
        for (int n = 0; n < kUnitsPerThread; ++n) {
            const int i = threadIdx.x + n * kWidenKvThreads, key = first + i / kUnits;
            if (key < end) units[n] = load_key_unit<Dim, kKvQ8>(c, kv_head, key, i % kUnits);
        }
#pragma unroll
        for (int n = 0; n < kUnitsPerThread; ++n) {
            const int i = threadIdx.x + n * kWidenKvThreads, key = first + i / kUnits;
            if (key >= end) continue;
            const size_t at = (size_t(kv_head) * c.n_ctx + key) * Dim + 8 * (i % kUnits);
            store_16B(p.k + at, units[n].k_halves());
            store_16B(p.v + at, units[n].v_halves());
        }
    }
}

// The eight instantiations (head dim x cache type x stages), and the widening's two, named
// so NVRTC compiles them too.
#define ER_TILED_ATTENTION(dim, kv)                                                   \
    template __global__ void attention_tiles_kernel<dim, kv, 1>(const AttentionParams); \
    template __global__ void attention_tiles_kernel<dim, kv, 2>(const AttentionParams);
ER_TILED_ATTENTION(64, kKvF16)
ER_TILED_ATTENTION(128, kKvF16)
ER_TILED_ATTENTION(64, kKvQ8)
ER_TILED_ATTENTION(128, kKvQ8)
#undef ER_TILED_ATTENTION
template __global__ void widen_kv_kernel<64>(const WidenKvParams);
template __global__ void widen_kv_kernel<128>(const WidenKvParams);

#if !defined(__CUDACC_RTC__)
template <int kStages>
auto attention_tiles_kernel_of(const AttentionParams& p) {
    return for_attention_shape(p, [](auto dim, auto kv) {
        return attention_tiles_kernel<decltype(dim)::value, decltype(kv)::value, kStages>;
    });
}

// The instantiation that takes launch p (the CUDA launcher's and the emulation's).
inline auto attention_tiles_kernel_for(const AttentionParams& p) {
    return p.tile_stages == 2 ? attention_tiles_kernel_of<2>(p) : attention_tiles_kernel_of<1>(p);
}

// The widening's instantiation and grid for launch p (valid(p)), the CUDA launcher's and
// the emulation's.
inline auto widen_kv_kernel_for(const WidenKvParams& p) {
    return p.cache.head_dim == 64 ? widen_kv_kernel<64> : widen_kv_kernel<128>;
}
inline dim3 widen_kv_grid(const WidenKvParams& p) {
    return dim3(unsigned(ceil_div(p.cache.n_ctx, kWidenKvPositions)), unsigned(p.cache.n_head_kv));
}
#endif

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_attention_tiles(const AttentionParams& p, dim3 grid, LaunchStream stream) {
    return launch_kernel(attention_tiles_kernel_for(p), grid, dim3(kTileWarps * 32), 0, stream, p);
}

cudaError_t launch_widen_kv(const WidenKvParams& p, LaunchStream stream) {
    if (!valid(p)) return cudaErrorInvalidValue;
    return launch_kernel(widen_kv_kernel_for(p), widen_kv_grid(p), dim3(kWidenKvThreads), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
