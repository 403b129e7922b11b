// The GPU weight layout: each GGUF block split into "planes" of fields with power-of-two
// sizes, so every field a thread reads is naturally aligned and 16-byte vector loads
// work (a Q6_K block is 210 bytes and only 2-byte aligned in the file; Q4_0 is 18).
//
// A plane holds one field of every block, row after row: plane p of a matrix is
// [n_rows][blocks_per_row][plane_bytes(p)], starting on a 256-byte boundary. Bytes per
// weight are exactly the file's: repacking moves bytes, it never widens them (Q3_K's
// 12 scale bytes stay 12: read as three aligned 4-byte words).
//
//   type  block  planes (bytes per block)
//   Q4_0   32    qs 16 | d 2
//   Q4_1   32    qs 16 | d,m 4
//   Q5_0   32    qs 16 | qh 4 | d 2
//   Q5_1   32    qs 16 | qh 4 | d,m 4
//   Q8_0   32    qs 32 | d 2
//   Q2_K  256    qs 64 | scales 16 | d,dmin 4
//   Q3_K  256    qs 64 | hmask 32 | scales 12 | d 2
//   Q4_K  256    qs 128 | d,dmin,scales 16
//   Q5_K  256    qs 128 | qh 32 | d,dmin,scales 16
//   Q6_K  256    ql 128 | qh 64 | scales 16 | d 2
//   F32    32    values 128 (rows zero-padded to a multiple of 32)
//   F16    32    values 64  (likewise)
//   BF16   32    values 64  (likewise)
//
// Host code here is plain C++ (the repack runs once at load, on the CPU).
#pragma once

#include <edgerun/quant/blocks.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace edgerun::cuda_orin {

// GGUF type ids of the weight types the GEMV kernels read.
enum WeightType : int32_t {
    kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
    kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30,
};

// Bytes per value of the plain (unquantized) types, 0 for block-quantized ones. Plain
// rows are read as values, dotted with float activations, and padded to 32 with zeros.
ER_HD constexpr int plain_value_bytes(int32_t type) {
    return type == kF32 ? 4 : type == kF16 || type == kBF16 ? 2 : 0;
}

inline const char* weight_type_name(int32_t t) {
    switch (t) {
        case kF32: return "F32";
        case kF16: return "F16";
        case kBF16: return "BF16";
        case kQ4_0: return "Q4_0";
        case kQ4_1: return "Q4_1";
        case kQ5_0: return "Q5_0";
        case kQ5_1: return "Q5_1";
        case kQ8_0: return "Q8_0";
        case kQ2_K: return "Q2_K";
        case kQ3_K: return "Q3_K";
        case kQ4_K: return "Q4_K";
        case kQ5_K: return "Q5_K";
        case kQ6_K: return "Q6_K";
    }
    return "?";
}

inline constexpr int kMaxPlanes = 4;
inline constexpr uint64_t kPlaneAlign = 256;

struct PlaneGeometry {
    int32_t block_elems;            // weights per block (32 or 256)
    int32_t gguf_block_bytes;       // bytes per block in the file (plain types: per 32 values)
    int32_t n_planes;
    int32_t plane_bytes[kMaxPlanes];
};

// nullptr-like result (n_planes == 0) for a type the kernels do not read.
ER_HD PlaneGeometry plane_geometry(int32_t type) {
    switch (type) {
        case kQ4_0: return {32, 18, 2, {16, 2, 0, 0}};
        case kQ4_1: return {32, 20, 2, {16, 4, 0, 0}};
        case kQ5_0: return {32, 22, 3, {16, 4, 2, 0}};
        case kQ5_1: return {32, 24, 3, {16, 4, 4, 0}};
        case kQ8_0: return {32, 34, 2, {32, 2, 0, 0}};
        case kQ2_K: return {256, 84, 3, {64, 16, 4, 0}};
        case kQ3_K: return {256, 110, 4, {64, 32, 12, 2}};
        case kQ4_K: return {256, 144, 2, {128, 16, 0, 0}};
        case kQ5_K: return {256, 176, 3, {128, 32, 16, 0}};
        case kQ6_K: return {256, 210, 4, {128, 64, 16, 2}};
        case kF32: return {32, 128, 1, {128, 0, 0, 0}};
        case kF16: return {32, 64, 1, {64, 0, 0, 0}};
        case kBF16: return {32, 64, 1, {64, 0, 0, 0}};
        default: return {0, 0, 0, {0, 0, 0, 0}};
    }
}

// The loads one GEMV task of 32 weights of a quantized type makes (load_task,
// dequantize_task.hpp): 16-byte ones from the planes above, and narrower ones of 1, 2 or 4
// bytes (a Q6_K task's two scale bytes and its d, three of Q3_K's scale words and its d).
// The ring of tasks in shared memory (task_ring.cuh) gives each a place; the emulation
// checks the two agree.
struct TaskLoadCounts {
    int32_t wide = 0;    // 16-byte loads
    int32_t narrow = 0;  // loads of 1 to 4 bytes
};

ER_HD constexpr TaskLoadCounts task_load_counts(int32_t type) {
    switch (type) {
        case kQ4_0: case kQ4_1: return {1, 1};
        case kQ5_0: case kQ5_1: return {1, 2};
        case kQ8_0: case kQ2_K: return {2, 1};
        case kQ3_K: return {2, 4};
        case kQ4_K: return {2, 0};
        case kQ5_K: return {3, 0};
        case kQ6_K: return {2, 3};
        default: return {0, 0};
    }
}

// Bytes of one slot of the GEMV's ring of tasks (task_ring.cuh): 32 lanes' loads of one
// task, the narrow ones a 4-byte word each.
ER_HD constexpr int ring_slot_bytes(int32_t type) {
    return 32 * (16 * task_load_counts(type).wide + 4 * task_load_counts(type).narrow);
}

// A weight type as a compile-time value (decltype(tag)::value; visit_weight_type's); no
// <type_traits>, which NVRTC (scripts/cuda12-check.sh) does not have.
template <int32_t Type>
struct TypeTag {
    static constexpr int32_t value = Type;
};

inline bool is_gemv_weight_type(int32_t type) { return plane_geometry(type).n_planes > 0; }

// A packed matrix as the kernels see it: rows of `n_cols` weights (n_cols a multiple of
// the block for quantized types; plain rows are padded to 32 with zeros).
struct PackedMatrix {
    int32_t type = 0;
    int32_t n_rows = 0;
    int32_t n_cols = 0;           // logical row length
    int32_t blocks_per_row = 0;   // padded row length / block_elems
    const uint8_t* plane[kMaxPlanes] = {nullptr, nullptr, nullptr, nullptr};
};

// Where each plane goes inside one allocation.
struct PackedLayout {
    PlaneGeometry geometry{};
    int32_t blocks_per_row = 0;
    uint64_t plane_offset[kMaxPlanes] = {0, 0, 0, 0};
    uint64_t total_bytes = 0;     // 0: the type or shape cannot be packed
};

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline PackedLayout packed_layout(int32_t type, int64_t n_rows, int64_t n_cols) {
    PackedLayout layout;
    layout.geometry = plane_geometry(type);
    const PlaneGeometry& g = layout.geometry;
    if (g.n_planes == 0 || n_rows <= 0 || n_cols <= 0) return layout;
    if (plain_value_bytes(type) == 0 && n_cols % g.block_elems != 0) return layout;
    layout.blocks_per_row = int32_t((n_cols + g.block_elems - 1) / g.block_elems);
    uint64_t offset = 0;
    for (int p = 0; p < g.n_planes; ++p) {
        layout.plane_offset[p] = offset;
        offset = align_up(offset + uint64_t(n_rows) * layout.blocks_per_row * g.plane_bytes[p], kPlaneAlign);
    }
    layout.total_bytes = offset;
    return layout;
}

// Bytes of the GGUF (file) form of the same matrix.
inline uint64_t gguf_matrix_bytes(int32_t type, int64_t n_rows, int64_t n_cols) {
    if (plain_value_bytes(type)) return uint64_t(n_rows) * uint64_t(n_cols) * plain_value_bytes(type);
    const PlaneGeometry g = plane_geometry(type);
    return uint64_t(n_rows) * uint64_t(n_cols / g.block_elems) * g.gguf_block_bytes;
}

inline PackedMatrix packed_view(const PackedLayout& layout, int32_t type, int32_t n_rows, int32_t n_cols,
                                const void* base) {
    PackedMatrix m;
    m.type = type;
    m.n_rows = n_rows;
    m.n_cols = n_cols;
    m.blocks_per_row = layout.blocks_per_row;
    for (int p = 0; p < layout.geometry.n_planes; ++p)
        m.plane[p] = static_cast<const uint8_t*>(base) + layout.plane_offset[p];
    return m;
}

// Start of row `row` in plane `p`.
ER_HD const uint8_t* plane_row(const PackedMatrix& m, int p, int row, int plane_bytes) {
    return m.plane[p] + size_t(row) * size_t(m.blocks_per_row) * size_t(plane_bytes);
}

namespace detail {

// The fields of one block in file order, with the plane each belongs to: a GGUF block
// is the concatenation of (plane, offset-in-file, bytes) pieces.
struct BlockPiece {
    int plane;
    int file_offset;
    int bytes;
};

inline int block_pieces(int32_t type, BlockPiece* out) {
    using namespace quant;
    switch (type) {
        case kQ4_0: out[0] = {1, 0, 2}; out[1] = {0, 2, 16}; return 2;
        case kQ4_1: out[0] = {1, 0, 4}; out[1] = {0, 4, 16}; return 2;
        case kQ5_0: out[0] = {2, 0, 2}; out[1] = {1, 2, 4}; out[2] = {0, 6, 16}; return 3;
        case kQ5_1: out[0] = {2, 0, 4}; out[1] = {1, 4, 4}; out[2] = {0, 8, 16}; return 3;
        case kQ2_K: out[0] = {1, 0, 16}; out[1] = {0, 16, 64}; out[2] = {2, 80, 4}; return 3;
        case kQ3_K: out[0] = {1, 0, 32}; out[1] = {0, 32, 64}; out[2] = {2, 96, 12}; out[3] = {3, 108, 2}; return 4;
        case kQ8_0: out[0] = {1, 0, 2}; out[1] = {0, 2, 32}; return 2;
        case kQ4_K: out[0] = {1, 0, 16}; out[1] = {0, 16, 128}; return 2;
        case kQ5_K: out[0] = {2, 0, 16}; out[1] = {1, 16, 32}; out[2] = {0, 48, 128}; return 3;
        case kQ6_K: out[0] = {0, 0, 128}; out[1] = {1, 128, 64}; out[2] = {2, 192, 16}; out[3] = {3, 208, 2}; return 4;
        default: return 0;
    }
}

}  // namespace detail

// GGUF rows -> packed planes. `dst` holds layout.total_bytes; padding is zeroed.
// Returns false for a type or shape the kernels do not read.
inline bool repack_matrix(int32_t type, const void* gguf, int64_t n_rows, int64_t n_cols, void* dst) {
    const PackedLayout layout = packed_layout(type, n_rows, n_cols);
    if (layout.total_bytes == 0) return false;
    auto* out = static_cast<uint8_t*>(dst);
    std::memset(out, 0, layout.total_bytes);
    const auto* src = static_cast<const uint8_t*>(gguf);
    if (const uint64_t value_bytes = plain_value_bytes(type)) {
        const uint64_t padded_row = uint64_t(layout.blocks_per_row) * layout.geometry.gguf_block_bytes;
        for (int64_t r = 0; r < n_rows; ++r)
            std::memcpy(out + uint64_t(r) * padded_row, src + uint64_t(r) * n_cols * value_bytes, n_cols * value_bytes);
        return true;
    }
    detail::BlockPiece pieces[kMaxPlanes];
    const int n_pieces = detail::block_pieces(type, pieces);
    const PlaneGeometry& g = layout.geometry;
    const uint64_t n_blocks = uint64_t(n_rows) * layout.blocks_per_row;
    for (uint64_t b = 0; b < n_blocks; ++b)
        for (int i = 0; i < n_pieces; ++i) {
            const detail::BlockPiece& piece = pieces[i];
            std::memcpy(out + layout.plane_offset[piece.plane] + b * g.plane_bytes[piece.plane],
                        src + b * g.gguf_block_bytes + piece.file_offset, piece.bytes);
        }
    return true;
}

// Packed planes -> GGUF rows (the inverse; used by tests and for reading weights back).
inline bool unpack_matrix(int32_t type, const void* packed, int64_t n_rows, int64_t n_cols, void* gguf) {
    const PackedLayout layout = packed_layout(type, n_rows, n_cols);
    if (layout.total_bytes == 0) return false;
    const auto* in = static_cast<const uint8_t*>(packed);
    auto* dst = static_cast<uint8_t*>(gguf);
    if (const uint64_t value_bytes = plain_value_bytes(type)) {
        const uint64_t padded_row = uint64_t(layout.blocks_per_row) * layout.geometry.gguf_block_bytes;
        for (int64_t r = 0; r < n_rows; ++r)
            std::memcpy(dst + uint64_t(r) * n_cols * value_bytes, in + uint64_t(r) * padded_row, n_cols * value_bytes);
        return true;
    }
    detail::BlockPiece pieces[kMaxPlanes];
    const int n_pieces = detail::block_pieces(type, pieces);
    const PlaneGeometry& g = layout.geometry;
    const uint64_t n_blocks = uint64_t(n_rows) * layout.blocks_per_row;
    for (uint64_t b = 0; b < n_blocks; ++b)
        for (int i = 0; i < n_pieces; ++i) {
            const detail::BlockPiece& piece = pieces[i];
            std::memcpy(dst + b * g.gguf_block_bytes + piece.file_offset,
                        in + layout.plane_offset[piece.plane] + b * g.plane_bytes[piece.plane], piece.bytes);
        }
    return true;
}

}  // namespace edgerun::cuda_orin
