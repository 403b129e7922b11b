// Shared-memory layout of the tiled attention's staged K/V tile (attention_tiles.cu), here
// so that tests/cuda/test_attention_tiles.cpp checks the bank conflicts of every access
// the kernel makes with the kernel's own index functions.
//
// Per 32-key tile the block stages k_tile[key][dim] and v_tile[key][dim] as halves, rows
// padded to Dim + 8 halves. Staging is coalesced: thread i takes unit i % (Dim / 8) (8
// dims) of key i / (Dim / 8), so a warp reads whole key rows of the cache (two keys of
// 256 bytes at head dim 128) and stores 16 bytes a lane. The mma operands are read by
// ldmatrix, whose 8 lanes of a phase each read a 16-byte piece of one of 8 consecutive
// rows: the padding (16 bytes) puts those pieces on 8 different bank quads.
#pragma once

#include "launch_math.hpp"

#include <edgerun/quant/blocks.hpp>  // ER_HD

namespace edgerun::cuda_orin {

inline constexpr int kTileRowPad = 8;  // halves of padding per shared row
template <int Dim>
inline constexpr int kTileRowHalves = Dim + kTileRowPad;

template <int Dim>
struct TileStaging {
    static_assert(Dim == 64 || Dim == 128, "the tiled kernel's head dims");
    static constexpr int kUnits = Dim / 8;  // 16-byte units of halves per key
    static constexpr int kSteps = kTiledAttentionKeys * kUnits;
    ER_HD static int key(int step) { return step / kUnits; }
    ER_HD static int unit(int step) { return step % kUnits; }
    // The (row, column in halves) whose 16 bytes lane `lane` points ldmatrix at: matrix
    // lane / 8, row lane % 8. K (k_tile): the B fragments of k-steps ks, ks + 1 of n-tile
    // nt (keys 8 nt.., dims 16 ks + 8 matrix..). V (v_tile, transposed as it loads): the B
    // fragments of dim tiles dn, dn + 1 of k-step kk (keys 16 kk + 8 (matrix % 2)..,
    // dims 8 (dn + matrix / 2)..).
    ER_HD static int k_operand_row(int nt, int lane) { return 8 * nt + lane % 8; }
    ER_HD static int k_operand_column(int ks, int lane) { return 16 * ks + 8 * (lane / 8); }
    ER_HD static int v_operand_row(int kk, int lane) { return 16 * kk + 8 * (lane / 8 % 2) + lane % 8; }
    ER_HD static int v_operand_column(int dn, int lane) { return 8 * (dn + lane / 16); }
};

}  // namespace edgerun::cuda_orin
