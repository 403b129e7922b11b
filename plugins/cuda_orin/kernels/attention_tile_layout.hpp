// Shared-memory layout of the tiled attention's staged K/V tile (attention_tiles.cu), here
// so that tests/cuda/test_attention_tiles.cpp checks the bank conflicts of every access
// the kernel makes with the kernel's own index functions.
//
// Per 32-key tile the block stages
//   k_tile[key][dim]   halves, rows padded to Dim + 8: the S = Q K^T operand loads (lane
//                      g, t reads key 8 nt + g, dims 16 ks + 2t..) hit 32 banks;
//   v_t[dim][key]      halves, transposed for the P V operand loads (lane g, t reads dim
//                      8 dn + g, keys 16 kk + 2t..), rows padded to 32 + 8.
// Staging is coalesced: thread i takes unit i % (Dim / 8) (8 dims) of key i / (Dim / 8),
// so a warp reads whole key rows of the cache (two keys of 256 bytes at head dim 128).
// Its transposed stores into v_t would then put the 16 units of a key (rows 8u + d) on
// one bank; v_t's word columns are XOR-swizzled by the row's unit so that they spread
// over 16 banks, and the operand loads, whose lanes share one unit, stay on 32.
#pragma once

#include "launch_math.hpp"

#include <edgerun/quant/blocks.hpp>  // ER_HD

namespace edgerun::cuda_orin {

inline constexpr int kTileRowPad = 8;  // halves of padding per shared row
inline constexpr int kTileVRowHalves = kTiledAttentionKeys + kTileRowPad;

template <int Dim>
struct TileStaging {
    static_assert(Dim == 64 || Dim == 128, "the swizzle spreads 8 or 16 units over 16 word columns");
    static constexpr int kUnits = Dim / 8;  // 16-byte units of halves per key
    static constexpr int kSteps = kTiledAttentionKeys * kUnits;
    ER_HD static int key(int step) { return step / kUnits; }
    ER_HD static int unit(int step) { return step % kUnits; }
    // v_t's element (dim, key) at half (dim, v_t_column(dim, key)) of its row: the pair of
    // keys 2c, 2c + 1 (one 32-bit word, the mma operand) moves as one. It depends on dim
    // only through its unit (dim / 8), so the kernel asks once a unit.
    ER_HD static int v_t_column(int dim, int key) {
        const int swizzle = ((dim / 8) * (128 / Dim)) % (kTiledAttentionKeys / 2);
        return 2 * ((key / 2) ^ swizzle) + key % 2;
    }
};

}  // namespace edgerun::cuda_orin
