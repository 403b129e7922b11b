// Flash-decode on tensor cores: the split kernel's blocks, splits and merge
// (attention_split.cuh) with each warp's products on mma.m16n8k16 (mma.cuh) instead of
// FMAs. The block's query heads (up to kAttentionMaxGroup of one KV head) are the rows of
// S = Q K^T and the columns of O^T = V^T P^T; the products' other rows and columns are
// zeros or ignored, tensor-core time the kernel has to spare. Per 32-key tile a warp
// (lane = 4g + t)
//   1. scores S = Q K^T, 4 n-tiles of 8 keys x Dim/16 k-steps. Lane (g, t) holds key
//      8 nt + g, as the B operand wants it. A dot may take the dims in any order if Q's
//      A fragment takes the same, so lane t's dims are two contiguous chunks of the row,
//      C t.. and Dim/2 + C t.. (C = Dim/8): every load is a lane's C contiguous values
//      (16 bytes of INT8 at head dim 128), and an INT8 chunk lies in one scale group;
//   2. folds S into each head's online softmax (softmax_merge.hpp): S row g is head g,
//      held by lanes 4g..4g+3;
//   3. O^T += V^T P^T, 16 keys a k-step: the dims are the rows (Dim/16 m-tiles), so P^T's
//      B fragment is S's accumulator as it lies in the lane (mma.cuh), and lane (g, t)'s
//      A fragment takes dims C g..C g + C - 1 of key rows 2t, 2t+1, 2t+8, 2t+9: one
//      16-byte load a row (INT8), two rows' bytes paired by byte_perm.
// INT8 values become halves exactly (the byte under a half's exponent byte 1024, less
// 1152: a byte_perm and an f16x2 add for two values), then times their scale, rounded
// once: 93 SASS instructions per KB of INT8 K+V at head dim 128, sm_90, against the
// CUDA-core kernel's 236 (bench/attention_instructions.py counts both).
//
// Precision: the tiled kernel's (attention_tiles.cu): the query, keys, values and
// probabilities as halves, products exact and summed in F32. The CUDA-core kernel keeps
// the query in F32 (8 bits for INT8 decode steps).
//
// A warp's tile is one DRAM round trip for its keys, then (the scores need them first;
// ptxas issues the V loads after the first mma, whatever the source order) one for its
// values. With AttentionParams::prefetch_next_tile each warp asks L2 for its next tile's
// keys and values before loading this tile's, and for its first tile's values at the
// start, so that those loads find L2. With AttentionParams::pipeline_tiles a warp issues a
// tile's value loads and its next tile's key loads as soon as the tile's scores are taken
// (add_tiles_pipelined): the values' round trip runs under the softmax, the next keys'
// under the softmax and O^T's products.
//
// STATUS: run on an H200 (2026-11-25: the GPU kernel tests and conformance pass; the
// default for decode since 9240755, 1.25-1.63x the CUDA-core kernel at KV 32768). The
// prefetch of next tiles: H200 kernel bench (e392d98) 0.88-1.01x the walk in turn, off by
// default. The pipelined walk: the emulation only (2026-11-28), off by default.
#include "attention_params.hpp"
#include "attention_split.cuh"
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

static_assert(kSplitMaxGroup == 4, "O^T's columns 2t, 2t + 1 of lanes t < 2 are the block's query heads");

// n 32-bit words from p (n = 2: 8-byte aligned; else a multiple of 4, 16-byte aligned).
template <int N>
__device__ __forceinline__ void load_words(const uint8_t* p, uint32_t (&w)[N]) {
    if constexpr (N == 2) {
        const Words2 v = load_8B(p);
        w[0] = v.w[0];
        w[1] = v.w[1];
    } else {
        for (int i = 0; i < N / 4; ++i) {
            const Words4 v = load_16B(p + 16 * i);
            for (int k = 0; k < 4; ++k) w[4 * i + k] = v.w[k];
        }
    }
}

// A lane's C = Dim/8 contiguous dims of one cached row (key or value), as loaded.
template <int Dim, int Kv>
struct RowChunk {
    static constexpr int kValueBytes = Kv == kKvF16 ? 2 : 1;
    static constexpr int kWords = Dim / 8 * kValueBytes / 4;
    uint32_t w[kWords];
    uint32_t scale;  // INT8: the chunk's scale group's (one group: C divides 32)
};

// Where a lane's chunk (dims first_dim..) of a KV head's rows lies in a cache plane, so
// that a row's address is one multiply-add of its key.
template <int Dim, int Kv>
struct ChunkColumn {
    const uint8_t* values;
    const uint16_t* scales;

    __device__ ChunkColumn(const void* plane, const uint16_t* scale_plane, const KvCacheLayer& c, int kv_head, int first_dim) {
        const size_t head_rows = size_t(kv_head) * c.n_ctx;
        values = static_cast<const uint8_t*>(plane) + (head_rows * Dim + first_dim) * RowChunk<Dim, Kv>::kValueBytes;
        scales = Kv == kKvF16 ? nullptr : scale_plane + head_rows * (Dim / 32) + first_dim / 32;
    }
    static constexpr int kRowBytes = Dim * RowChunk<Dim, Kv>::kValueBytes;
    // The chunk of row key + rows, `dims` dims further. With `rows` and `dims` known to
    // the compiler, rows of one key differ by constant offsets of one address.
    __device__ RowChunk<Dim, Kv> row(int key, int rows = 0, int dims = 0) const {
        RowChunk<Dim, Kv> r;
        const size_t k = uint32_t(key);  // zero-extended: key * stride + base is one wide multiply-add
        load_words(values + k * kRowBytes + (rows * kRowBytes + dims * RowChunk<Dim, Kv>::kValueBytes), r.w);
        if constexpr (Kv != kKvF16) r.scale = load_2B(scales + k * (Dim / 32) + (rows * (Dim / 32) + dims / 32));
        return r;
    }
};

// Asks L2 for rows first..end-1 (at most 32) of a column of whole rows (first_dim 0):
// lane i for row first + i, its bytes, then for INT8 its scales where they begin a line
// (or begin the range). For AttentionParams::prefetch_next_tile.
template <int Dim, int Kv>
__device__ __forceinline__ void prefetch_rows(const ChunkColumn<Dim, Kv>& rows, int first, int end, int lane) {
    constexpr int kRowBytes = ChunkColumn<Dim, Kv>::kRowBytes;
    if (first + lane >= end) return;
    const size_t key = size_t(first + lane);
    const uint8_t* row = rows.values + key * kRowBytes;
#pragma unroll
    for (int offset = 0; offset < kRowBytes; offset += int(kCacheLineBytes)) prefetch_l2_line(row + offset, row + kRowBytes);
    if constexpr (Kv != kKvF16) {
        const uint16_t* scales = rows.scales + key * (Dim / 32);
        if (lane == 0 || reinterpret_cast<uintptr_t>(scales) % kCacheLineBytes == 0) prefetch_l2_line(scales, scales + Dim / 32);
    }
}

// A lane's key: chunk h holds dims h Dim/2 + C t..; k-step ks takes dims key_dim(ks, t) .. + 3.
template <int Dim>
__device__ __forceinline__ int key_dim(int ks, int t) {
    constexpr int kStepsPerChunk = Dim / 32;
    return (ks / kStepsPerChunk) * (Dim / 2) + (Dim / 8) * t + 4 * (ks % kStepsPerChunk);
}

template <int Dim, int Kv>
struct KeyChunks {
    RowChunk<Dim, Kv> chunk[2];  // dims C t.. and Dim/2 + C t..
    // The B fragment of k-step ks: dims key_dim .. + 1 (b[0]) and + 2, + 3 (b[1]).
    __device__ void fragment(int ks, uint32_t (&b)[2]) const {
        constexpr int kStepsPerChunk = Dim / 32;
        const RowChunk<Dim, Kv>& c = chunk[ks / kStepsPerChunk];
        const int j = ks % kStepsPerChunk;
        if constexpr (Kv == kKvF16) {
            b[0] = c.w[2 * j];
            b[1] = c.w[2 * j + 1];
        } else {
            const uint32_t biased = c.w[j] ^ kByteBias, scales = c.scale | (c.scale << 16);
            b[0] = int8_pair_to_halves(biased, 0x4140u, scales);
            b[1] = int8_pair_to_halves(biased, 0x4342u, scales);
        }
    }
};

// Two A-fragment registers of m-tile mt from value rows a and b (keys k, k + 1): their
// values at the tile's row g (dim 2 mt of the chunk) and row g + 8 (dim 2 mt + 1).
template <int Dim, int Kv>
__device__ __forceinline__ void value_pair(const RowChunk<Dim, Kv>& a, const RowChunk<Dim, Kv>& b, int mt,
                                           uint32_t& row_g, uint32_t& row_g8) {
    if constexpr (Kv == kKvF16) {
        row_g = byte_perm(a.w[mt], b.w[mt], 0x5410u);   // low halves: a's, then b's
        row_g8 = byte_perm(a.w[mt], b.w[mt], 0x7632u);  // high halves
    } else {
        // Bytes 2 (mt % 2) and + 1 of each row, interleaved: a0 b0 a1 b1.
        const uint32_t paired = byte_perm(a.w[mt / 2] ^ kByteBias, b.w[mt / 2] ^ kByteBias, mt % 2 ? 0x7362u : 0x5140u);
        const uint32_t scales = a.scale | (b.scale << 16);
        row_g = int8_pair_to_halves(paired, 0x4140u, scales);
        row_g8 = int8_pair_to_halves(paired, 0x4342u, scales);
    }
}

// One warp's part of a block: the query's A fragment and, over the tiles it takes, O^T
// and head g's softmax state.
template <int Dim, int Kv>
struct WarpFlashDecode {
    static constexpr int kSteps = Dim / 16;  // k-steps of S, m-tiles of O^T
    static constexpr int kChunk = Dim / 8;
    int g, t;  // lane = 4g + t
    ChunkColumn<Dim, Kv> key_chunk, value_chunk;
    // Q's A fragment: row g is query head q_head0 + g (zeros past n_q, and rows g + 8 in
    // registers 1 and 3), its dims in the keys' order, scaled into the log2 domain.
    uint32_t qa[kSteps][4];
    // O^T, m-tile mt: rows dims C g + 2 mt (registers 0, 1) and + 1 (2, 3), columns heads
    // 2t (0, 2) and 2t + 1 (1, 3). m and l are head g's.
    float o[kSteps][4] = {}, m = -INFINITY, l = 0.0f;

    __device__ WarpFlashDecode(const AttentionParams& p, const SplitBlock& b, int lane)
        : g(lane / 4),
          t(lane % 4),
          key_chunk(b.cache.k, b.cache.k_scales, b.cache, b.kv_head, kChunk * t),
          value_chunk(b.cache.v, b.cache.v_scales, b.cache, b.kv_head, kChunk * g) {
        // Every load before the first use: behind a branch per k-step ptxas kept them
        // one L2 round trip each, eight in a row at head dim 128. Rows past n_q read
        // head q_head0's values and are zeroed.
        const bool own_head = g < b.n_q;
        const float* q = p.q + (size_t(b.row) * p.n_head + b.q_head0 + (own_head ? g : 0)) * Dim;
        Words4 values[kSteps];  // dims key_dim(ks, t) .. + 3: 16 aligned bytes
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks) values[ks] = load_16B(q + key_dim<Dim>(ks, t));
        const float q_scale = p.scale * kLog2e;
#pragma unroll
        for (int ks = 0; ks < kSteps; ++ks) {
            const auto scaled = [&](int i) { return quant::bits_to_float(values[ks].w[i]) * q_scale; };
            qa[ks][0] = own_head ? pack_halves(scaled(0), scaled(1)) : 0u;
            qa[ks][2] = own_head ? pack_halves(scaled(2), scaled(3)) : 0u;
            qa[ks][1] = qa[ks][3] = 0u;
        }
    }

    // The chunk of row lane_row + offset of the tile at `tile` (offset a constant once
    // unrolled). A tail tile (Tail) ends past `last`: its keys past the end load the last
    // key and are masked. A full one needs neither, so its rows' addresses are one base
    // and constant offsets.
    template <bool Tail>
    __device__ __forceinline__ RowChunk<Dim, Kv> tile_row(const ChunkColumn<Dim, Kv>& c, int tile, int last,
                                                          int lane_row, int offset, int dims = 0) const {
        return Tail ? c.row(min(tile + lane_row + offset, last), 0, dims) : c.row(tile + lane_row, offset, dims);
    }
    // The tile's keys, as S's B fragments want them.
    template <bool Tail>
    __device__ __forceinline__ void load_keys(KeyChunks<Dim, Kv> (&keys)[4], int tile, int last) const {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int h = 0; h < 2; ++h) keys[nt].chunk[h] = tile_row<Tail>(key_chunk, tile, last, g, 8 * nt, h * (Dim / 2));
    }
    // The tile's value rows of k-step kk of O^T: keys 2t, 2t + 1, 2t + 8, 2t + 9 of its 16.
    template <bool Tail>
    __device__ __forceinline__ void load_values(RowChunk<Dim, Kv> (&rows)[4], int tile, int last, int kk) const {
#pragma unroll
        for (int r = 0; r < 4; ++r) rows[r] = tile_row<Tail>(value_chunk, tile, last, 2 * t, 16 * kk + r % 2 + 8 * (r / 2));
    }
    // 1. S = Q K^T.
    __device__ __forceinline__ void scores(const KeyChunks<Dim, Kv> (&keys)[4], float (&s)[4][4]) const {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int ks = 0; ks < kSteps; ++ks) {
                uint32_t kb[2];
                keys[nt].fragment(ks, kb);
                mma_m16n8k16(s[nt], qa[ks], kb);
            }
    }
    // 2. Head g's online softmax: s[nt][i], i < 2, is key tile + 8 nt + 2t + i; s becomes
    // the probabilities.
    template <bool Tail>
    __device__ __forceinline__ void fold_scores(float (&s)[4][4], int tile, int last) {
        float tile_max = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                if (Tail && tile + 8 * nt + 2 * t + i > last) s[nt][i] = -INFINITY;
                tile_max = fmaxf(tile_max, s[nt][i]);
            }
        const float factor = online_softmax_rescale(&m, fragment_row_max(tile_max));
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                s[nt][i] = Tail && s[nt][i] == -INFINITY ? 0.0f : exp2f(s[nt][i] - m);
                sum += s[nt][i];
            }
        l = l * factor + fragment_row_sum(sum);
        // O^T needs rescaling only where a head's maximum moved: once a split's maxima
        // settle, rarely (a warp-uniform vote; multiplying by 1 changed nothing).
        if (__any_sync(kFullMask, factor != 1.0f)) {
            const float factor_2t = __shfl_sync(kFullMask, factor, 8 * t), factor_2t1 = __shfl_sync(kFullMask, factor, 8 * t + 4);
#pragma unroll
            for (int mt = 0; mt < kSteps; ++mt) {
                o[mt][0] *= factor_2t;
                o[mt][1] *= factor_2t1;
                o[mt][2] *= factor_2t;
                o[mt][3] *= factor_2t1;
            }
        }
    }
    // 3. O^T += V^T P^T for k-step kk. P^T's B fragment: head g's probabilities of keys
    // 2t, 2t + 1 (n-tile 2 kk) and 2t + 8, 2t + 9 (n-tile 2 kk + 1) of the k-step's 16.
    __device__ __forceinline__ void add_values(const RowChunk<Dim, Kv> (&rows)[4], const float (&s)[4][4], int kk) {
        const uint32_t pb[2] = {pack_halves(s[2 * kk][0], s[2 * kk][1]), pack_halves(s[2 * kk + 1][0], s[2 * kk + 1][1])};
#pragma unroll
        for (int mt = 0; mt < kSteps; ++mt) {
            uint32_t va[4];
            value_pair(rows[0], rows[1], mt, va[0], va[1]);
            value_pair(rows[2], rows[3], mt, va[2], va[3]);
            mma_m16n8k16(o[mt], va, pb);
        }
    }

    // Keys tile .. tile + 31, each DRAM round trip waited out in turn: its keys, then
    // (the scores need them first; ptxas issues the V loads after the first mma, whatever
    // the source order) its values.
    template <bool Tail>
    __device__ __forceinline__ void add_tile(int tile, int last) {
        KeyChunks<Dim, Kv> keys[4];
        load_keys<Tail>(keys, tile, last);
        float s[4][4] = {};
        scores(keys, s);
        fold_scores<Tail>(s, tile, last);
#pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            RowChunk<Dim, Kv> rows[4];
            load_values<Tail>(rows, tile, last, kk);
            add_values(rows, s, kk);
        }
    }

    // The warp's tiles first_tile, first_tile + step, ... below end, software-pipelined
    // (AttentionParams::pipeline_tiles): a tile's values are loaded as soon as its scores
    // are taken, and the next tile's keys then too, into the registers the scores freed.
    // The values' round trip runs under the softmax, the next keys' under the softmax and
    // O^T's products, so the next scores find their keys loaded: one round trip a tile
    // waited out where add_tile waits out two (the SASS keeps that order: the loads
    // between the scores' HMMAs and the softmax's exponentials). The same products in the
    // same order: add_tile's results bit for bit.
    __device__ __forceinline__ void add_tiles_pipelined(int first_tile, int step, int end) {
        const int last = end - 1;
        const auto full = [&](int tile) { return tile + kSplitTile <= end; };
        KeyChunks<Dim, Kv> keys[4];
        if (first_tile < end) {
            if (full(first_tile)) load_keys<false>(keys, first_tile, last);
            else load_keys<true>(keys, first_tile, last);
        }
        for (int tile = first_tile; tile < end; tile += step) {
            const bool tail = !full(tile);
            float s[4][4] = {};
            scores(keys, s);
            RowChunk<Dim, Kv> rows[2][4];
#pragma unroll
            for (int kk = 0; kk < 2; ++kk) {
                if (tail) load_values<true>(rows[kk], tile, last, kk);
                else load_values<false>(rows[kk], tile, last, kk);
            }
            const int next = tile + step;
            if (next < end) {
                if (full(next)) load_keys<false>(keys, next, last);
                else load_keys<true>(keys, next, last);
            }
            if (tail) fold_scores<true>(s, tile, last);
            else fold_scores<false>(s, tile, last);
#pragma unroll
            for (int kk = 0; kk < 2; ++kk) add_values(rows[kk], s, kk);
        }
    }
};

// How a warp walks its tiles: each in turn (add_tile), the same with L2 asked for the
// next tile first (AttentionParams::prefetch_next_tile), or software-pipelined
// (AttentionParams::pipeline_tiles, add_tiles_pipelined). Each an instantiation of its own,
// so that the kernel walking tiles in turn is the same code as before the others.
enum class TileWalk : int { in_turn, prefetch_next, pipelined };

// Blocks an SM. INT8: four, as choose_kv_splits assumes (walking in turn at head dim 128
// ptxas keeps two words of a tile in local memory to fit 128 registers), but two for the
// pipelined walk at head dim 128, which holds a tile's values and the next tile's keys at
// once (199-201 registers; at head dim 64 it fits 128). F16 takes more registers for its
// keys' words: two blocks an SM, 8 warps with 8 KB of K each in flight.
template <int Dim, int Kv, TileWalk Walk>
constexpr int kMmaBlocksPerSm = Kv == kKvF16 || (Walk == TileWalk::pipelined && Dim == 128) ? 2 : 4;

template <int Dim, int Kv, TileWalk Walk>
__global__ void __launch_bounds__(kSplitWarps * 32, (kMmaBlocksPerSm<Dim, Kv, Walk>))
    attention_mma_kernel(const AttentionParams p) {
    begin_after_prior_grids();  // grid_dependency.cuh
    __shared__ float warp_o[kSplitWarps][kSplitMaxGroup][Dim];
    ER_SHARED_ARRAY(warp_o);
    __shared__ float warp_ml[kSplitWarps][kSplitMaxGroup][2];
    ER_SHARED_ARRAY(warp_ml);

    const SplitBlock b = split_block(p);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // The query's loads need no KV length: issued before the emptiness check, they
    // overlap its wait for the row's length instead of following it.
    WarpFlashDecode<Dim, Kv> w(p, b, lane);
    if (split_is_empty(p, b)) return;
    constexpr int kStep = kSplitWarps * kSplitTile;  // from a warp's tile to its next
    const int first_tile = b.begin + warp * kSplitTile;
    if constexpr (Walk == TileWalk::pipelined) {
        w.add_tiles_pipelined(first_tile, kStep, b.end);
    } else {
        constexpr bool kPrefetches = Walk == TileWalk::prefetch_next && attention_prefetches(Dim, Kv);
        // The block's KV head's whole rows of K and V, for the prefetches.
        const ChunkColumn<Dim, Kv> key_rows(b.cache.k, b.cache.k_scales, b.cache, b.kv_head, 0),
            value_rows(b.cache.v, b.cache.v_scales, b.cache, b.kv_head, 0);
        if (kPrefetches && first_tile < b.end) prefetch_rows(value_rows, first_tile, min(first_tile + kSplitTile, b.end), lane);
        for (int tile = first_tile; tile < b.end; tile += kStep) {
            if (kPrefetches && tile + kStep < b.end) {
                const int next_end = min(tile + kStep + kSplitTile, b.end);
                prefetch_rows(key_rows, tile + kStep, next_end, lane);
                prefetch_rows(value_rows, tile + kStep, next_end, lane);
            }
            if (tile + kSplitTile <= b.end) w.template add_tile<false>(tile, b.end - 1);
            else w.template add_tile<true>(tile, b.end - 1);
        }
    }

    // Lanes t < 2 hold heads 2t, 2t + 1; lanes 4g hold head g's m and l.
    if (w.t < 2)
#pragma unroll
        for (int mt = 0; mt < w.kSteps; ++mt)
#pragma unroll
            for (int i = 0; i < 4; ++i) warp_o[warp][2 * w.t + i % 2][w.kChunk * w.g + 2 * mt + i / 2] = w.o[mt][i];
    if (w.t == 0 && w.g < kSplitMaxGroup) {
        warp_ml[warp][w.g][0] = w.m;
        warp_ml[warp][w.g][1] = w.l;
    }
    __syncthreads();
    finish_split<Dim>(p, b, warp_o, warp_ml);
}

// The twelve instantiations (head dim x cache type x walk), named so NVRTC compiles them too.
#define ER_ATTENTION_MMA_WALK(walk)                                                              \
    template __global__ void attention_mma_kernel<64, kKvF16, walk>(const AttentionParams);     \
    template __global__ void attention_mma_kernel<128, kKvF16, walk>(const AttentionParams);    \
    template __global__ void attention_mma_kernel<64, kKvQ8, walk>(const AttentionParams);      \
    template __global__ void attention_mma_kernel<128, kKvQ8, walk>(const AttentionParams);
ER_ATTENTION_MMA_WALK(TileWalk::in_turn)
ER_ATTENTION_MMA_WALK(TileWalk::prefetch_next)
ER_ATTENTION_MMA_WALK(TileWalk::pipelined)
#undef ER_ATTENTION_MMA_WALK

#if !defined(__CUDACC_RTC__)
template <TileWalk Walk>
auto attention_mma_kernel_of(const AttentionParams& p) {
    return for_attention_shape(p, [](auto dim, auto kv) {
        return attention_mma_kernel<decltype(dim)::value, decltype(kv)::value, Walk>;
    });
}

// The instantiation that takes launch p (the CUDA launcher's and the emulation's).
inline auto attention_mma_kernel_for(const AttentionParams& p) {
    if (p.pipeline_tiles) return attention_mma_kernel_of<TileWalk::pipelined>(p);
    return p.prefetch_next_tile ? attention_mma_kernel_of<TileWalk::prefetch_next>(p)
                                : attention_mma_kernel_of<TileWalk::in_turn>(p);
}
#endif

}  // namespace

#if ER_KERNEL_LAUNCHERS
cudaError_t launch_attention_mma(const AttentionParams& p, dim3 grid, LaunchStream stream) {
    return launch_kernel(attention_mma_kernel_for(p), grid, dim3(kSplitWarps * 32), 0, stream, p);
}
#endif

}  // namespace edgerun::cuda_orin
