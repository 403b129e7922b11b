// The tiled attention's host-side planning (kernels/launch_math.hpp): the tile table a
// step's rows make, the bound the grid is sized by, and the KV splits; and its shared
// layout (kernels/attention_tile_layout.hpp): the bank conflicts of every shared access.
#include "attention_tile_layout.hpp"
#include "launch_math.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

using namespace edgerun::cuda_orin;

namespace {

struct Table {
    std::vector<int32_t> tiles, tile_rows;
    int used = 0;
};

Table fill(const std::vector<int32_t>& seqs, int n_seqs, int rows_per_tile) {
    const int n = int(seqs.size());
    Table t;
    const int max_tiles = max_attention_tiles(n, n_seqs, rows_per_tile);
    t.tiles.assign(size_t(2 * max_tiles), -1);
    t.tile_rows.assign(size_t(n), -1);
    t.used = fill_attention_tiles(seqs.data(), n, n_seqs, rows_per_tile, t.tiles.data(), t.tile_rows.data(), max_tiles);
    return t;
}

}  // namespace

TEST_CASE("tiled attention: a prompt of one sequence in tiles of rows_per_tile") {
    const Table t = fill(std::vector<int32_t>(40, 0), 1, 16);
    CHECK(t.used == 3);
    CHECK(t.tiles == std::vector<int32_t>{0, 16, 16, 16, 32, 8});
    for (int r = 0; r < 40; ++r) CHECK(t.tile_rows[size_t(r)] == r);
}

TEST_CASE("tiled attention: interleaved sequences are gathered, every row in exactly one tile") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        const int n_seqs = 1 + int(rng() % 6), n = 1 + int(rng() % 100), rows_per_tile = 1 + int(rng() % 64);
        std::vector<int32_t> seqs(static_cast<size_t>(n));
        for (int32_t& s : seqs) s = int32_t(rng() % uint32_t(n_seqs));
        const Table t = fill(seqs, n_seqs, rows_per_tile);
        const int max_tiles = max_attention_tiles(n, n_seqs, rows_per_tile);
        REQUIRE(t.used >= 1);
        REQUIRE(t.used <= max_tiles);
        std::vector<int> seen(size_t(n), 0);
        for (int tile = 0; tile < max_tiles; ++tile) {
            const int first = t.tiles[size_t(2 * tile)], count = t.tiles[size_t(2 * tile + 1)];
            if (tile >= t.used) {
                CHECK(count == 0);  // unused tiles have no rows
                continue;
            }
            REQUIRE(count >= 1);
            REQUIRE(count <= rows_per_tile);
            REQUIRE(first + count <= n);
            for (int i = first; i < first + count; ++i) {
                const int row = t.tile_rows[size_t(i)];
                ++seen[size_t(row)];
                CHECK(seqs[size_t(row)] == seqs[size_t(t.tile_rows[size_t(first)])]);  // one sequence a tile
                if (i > first) CHECK(row > t.tile_rows[size_t(i - 1)]);                 // in step order
            }
        }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
    }
}

TEST_CASE("tiled attention: rows per tile and KV splits") {
    CHECK(tiled_attention_rows_per_tile(4) == 16);   // Llama-3.2, Qwen3
    CHECK(tiled_attention_rows_per_tile(7) == 9);    // Qwen2.5: 63 of 64 vectors
    CHECK(tiled_attention_rows_per_tile(1) == 64);
    CHECK(tiled_attention_rows_per_tile(65) == 0);   // wider than a block: not tiled
    // A 512-row prompt chunk of a group-4 model on 132 SMs: 32 tiles x 8 KV heads, three
    // splits for about four blocks per SM; a 16-row verification step (one tile) over a
    // 32k context gets 66 splits of 512 keys.
    CHECK(choose_tiled_kv_splits(32, 8, 4096, 132) == 3);
    CHECK(choose_tiled_kv_splits(1, 8, 32768, 132) == 66);
    CHECK(choose_tiled_kv_splits(1, 8, 512, 132) == 2);  // at least 256 keys a split
    CHECK(choose_tiled_kv_splits(4, 8, 4096, 8) == 1);   // Orin Nano: 32 blocks for 8 SMs
}

namespace {

// The ways of the worst bank of one shared-memory request: `words` are the 32-bit words
// its lanes touch; lanes on one word share it (a broadcast), different words on one bank
// are serialised. 16-byte requests are served a quarter-warp (8 lanes) at a time, so
// the caller passes each quarter's words alone.
int bank_ways(const std::vector<int>& words) {
    std::map<int, std::set<int>> banks;
    for (int w : words) banks[w % 32].insert(w);
    size_t worst = 0;
    for (const auto& [bank, distinct] : banks) worst = std::max(worst, distinct.size());
    return int(worst);
}

struct TileBanks {
    int stores = 0, k_loads = 0, v_loads = 0;  // worst ways of each access
};

// Every shared access of the kernel's staging (K and V alike: 16 bytes a lane at (key,
// 8 unit)) and its ldmatrix operand loads (a phase: one matrix, 8 lanes' 16-byte rows),
// warp by warp, for shared rows of `row_halves` (the kernel's, or another to compare).
template <int Dim>
TileBanks tile_banks(int row_halves) {
    using Staging = TileStaging<Dim>;
    const auto piece = [&](int row, int column, std::vector<int>& words) {  // 16 bytes: 4 words
        for (int w = 0; w < 4; ++w) words.push_back((row * row_halves + column) / 2 + w);
    };
    TileBanks b;
    for (int first = 0; first < Staging::kSteps; first += 32)  // one warp's staging pass
        for (int quarter = 0; quarter < 4; ++quarter) {        // 16-byte stores: a quarter-warp at a time
            std::vector<int> words;
            for (int lane = 8 * quarter; lane < 8 * quarter + 8; ++lane)
                piece(Staging::key(first + lane), 8 * Staging::unit(first + lane), words);
            b.stores = std::max(b.stores, bank_ways(words));
        }
    for (int matrix = 0; matrix < 4; ++matrix) {
        for (int nt = 0; nt < kTiledAttentionKeys / 8; ++nt)
            for (int ks = 0; ks < Dim / 16; ks += 2) {
                std::vector<int> words;
                for (int lane = 8 * matrix; lane < 8 * matrix + 8; ++lane)
                    piece(Staging::k_operand_row(nt, lane), Staging::k_operand_column(ks, lane), words);
                b.k_loads = std::max(b.k_loads, bank_ways(words));
            }
        for (int kk = 0; kk < 2; ++kk)
            for (int dn = 0; dn < Dim / 8; dn += 2) {
                std::vector<int> words;
                for (int lane = 8 * matrix; lane < 8 * matrix + 8; ++lane)
                    piece(Staging::v_operand_row(kk, lane), Staging::v_operand_column(dn, lane), words);
                b.v_loads = std::max(b.v_loads, bank_ways(words));
            }
    }
    return b;
}

template <int Dim>
void check_tile_banks() {
    CAPTURE(Dim);
    using Staging = TileStaging<Dim>;
    // The operand rows: the pieces each lane points ldmatrix at lie in the tile, start a
    // row at a 16-byte boundary, and cover each matrix's 8 rows and 8 columns as the mma
    // fragments want them (K: keys 8 nt.. by dims 16 ks + 8 matrix..; V: keys 16 kk +
    // 8 (matrix % 2).. by dims 8 (dn + matrix / 2)..).
    for (int lane = 0; lane < 32; ++lane) {
        const int matrix = lane / 8, row = lane % 8;
        for (int nt = 0; nt < kTiledAttentionKeys / 8; ++nt)
            for (int ks = 0; ks < Dim / 16; ks += 2) {
                CHECK(Staging::k_operand_row(nt, lane) == 8 * nt + row);
                CHECK(Staging::k_operand_column(ks, lane) == 16 * ks + 8 * matrix);
            }
        for (int kk = 0; kk < 2; ++kk)
            for (int dn = 0; dn < Dim / 8; dn += 2) {
                CHECK(Staging::v_operand_row(kk, lane) == 16 * kk + 8 * (matrix % 2) + row);
                CHECK(Staging::v_operand_column(dn, lane) == 8 * (dn + matrix / 2));
                CHECK(Staging::v_operand_row(kk, lane) < kTiledAttentionKeys);
            }
    }
    CHECK(kTileRowHalves<Dim> * 2 % 16 == 0);  // every row, hence every piece, 16-byte aligned
    // Coalesced: a warp's lanes read 16 consecutive bytes each of one span of the F16
    // cache (keys are consecutive there), 512 bytes a warp.
    for (int first = 0; first < Staging::kSteps; first += 32)
        for (int lane = 0; lane < 32; ++lane) {
            const int i = first + lane;
            CHECK((Staging::key(i) * Dim + 8 * Staging::unit(i)) * 2 == 2 * 8 * first + 16 * lane);
        }
    const TileBanks kernel = tile_banks<Dim>(kTileRowHalves<Dim>);
    CHECK(kernel.stores == 1);
    CHECK(kernel.k_loads == 1);
    CHECK(kernel.v_loads == 1);
    // Without the rows' padding an ldmatrix phase's 8 rows fall on one bank quad: what
    // the check is there to catch.
    const TileBanks unpadded = tile_banks<Dim>(Dim);
    MESSAGE("head dim " << Dim << ": operand loads " << unpadded.k_loads << "-way without the padding, 1 with it");
    CHECK(unpadded.k_loads == 8);
    CHECK(unpadded.v_loads == 8);
}

}  // namespace

TEST_CASE("tiled attention: the staged K/V tile meets no bank conflicts, its stores coalesced by key rows") {
    check_tile_banks<64>();
    check_tile_banks<128>();
}
