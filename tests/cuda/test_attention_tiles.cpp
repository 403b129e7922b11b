// The tiled attention's host-side planning (kernels/launch_math.hpp): the tile table a
// step's rows make, the bound the grid is sized by, and the KV splits.
#include "launch_math.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
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
