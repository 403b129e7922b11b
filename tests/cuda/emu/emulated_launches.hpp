// The kernels' launch shapes on the CPU emulation, as the CUDA launchers in
// plugins/cuda_orin/kernels give them: one home for the kernel tests' emulated launcher
// and the emulated device of the cuda_orin_emu plugin. Include after the kernel sources
// (prepare.cu, gemv.cu, attention.cu, attention_tiles.cu, attention_mma.cu, small_kernels.cu,
// rope_append.cu) and cuda_emulation.hpp.
#pragma once

namespace edgerun::cuda_orin::emulated {

inline void prepare(const PrepareParams& p) {
    emu::launch(dim3(prepare_blocks(p)), dim3(kPrepareThreads), [&] { prepare_kernel(p); }, 0, "prepare");
}

// `l` as plan_gemv filled it in; `blocks` what it returned.
inline void gemv(const GemvLaunch& l, int blocks) {
    emu::launch(dim3(blocks), dim3(kGemvWarps * 32), [&] { gemv_kernel_for(l)(l); }, size_t(l.shared_bytes),
                l.n_x_rows > 1 ? "gemv_rows" : "gemv");
}

// The split flash-decode kernel (on tensor cores with p.mma), or with p.tiles the tiled
// one, then the merge of their splits (none after a tiled launch of one split); `g` from plan_attention.
inline void attention(const AttentionParams& p, const AttentionGrid& g) {
    const dim3 grid(g.splits, g.kv_heads, g.chunks * g.rows);
    const bool f16 = p.cache.type == kKvF16, dp4a = scores_by_dp4a(p);
    if (p.tiles)
        emu::launch(grid, dim3(kTiledAttentionWarps * 32), [&] { attention_tiles_kernel_for(p)(p); }, 0, "attention_tiles");
    else if (p.mma)
        emu::launch(grid, dim3(kAttentionWarps * 32), [&] { attention_mma_kernel_for(p)(p); }, 0, "attention_mma");
    else
        emu::launch(grid, dim3(kAttentionWarps * 32), [&] {
            if (p.cache.head_dim == 64)
                f16 ? attention_split_kernel<64, kKvF16>(p)
                    : dp4a ? attention_split_kernel<64, kKvQ8>(p) : attention_split_kernel<64, kKvQ8FloatQuery>(p);
            else
                f16 ? attention_split_kernel<128, kKvF16>(p)
                    : dp4a ? attention_split_kernel<128, kKvQ8>(p) : attention_split_kernel<128, kKvQ8FloatQuery>(p);
        }, 0, "attention_split");
    if (!attention_merges(p)) return;
    emu::launch(dim3(p.n_head, p.n_rows), dim3(p.cache.head_dim), [&] { attention_merge_kernel(p); }, 0,
                "attention_merge");
}

// `p` must be valid(p).
inline void widen_kv(const WidenKvParams& p) {
    emu::launch(widen_kv_grid(p), dim3(kWidenKvThreads), [&] { widen_kv_kernel_for(p)(p); }, 0, "widen_kv");
}

// The packed or the table form, as launch_embed chooses; `p` must be valid(p).
inline void embed(const EmbedParams& p) {
    if (embeds_packed(p))
        emu::launch(embed_grid(p), dim3(kEmbedThreads), [&] { embed_packed_kernel(p); }, 0, "embed_packed");
    else
        emu::launch(embed_grid(p), dim3(kEmbedThreads), [&] { embed_kernel(p); }, 0, "embed");
}

// `p` must be valid(p).
inline void rope_append(const RopeAppendParams& p) {
    emu::launch(rope_append_grid(p), dim3(p.rope.head_dim), [&] { rope_append_kernel(p); }, 0, "rope_append");
}

}  // namespace edgerun::cuda_orin::emulated
