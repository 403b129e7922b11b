#!/usr/bin/env python3
"""SASS instructions the split attention (flash-decode) spends per KB of K/V it streams,
and the bandwidth at which issuing them becomes the limit.

  bench/attention_instructions.py [--nvcc NVCC] [--cuobjdump CUOBJDUMP] [--arch sm_90 ...]

Compiles plugins/cuda_orin/kernels/attention.cu, disassembles it and, in each
attention_split_kernel<head dim, cache form>, finds the 32-key tile loop and the two loops
inside it: the key passes (step 1) and the V rows (step 3). The same for the split kernel
on tensor cores (attention_mma.cu, attention_mma_kernel<head dim, cache type, prefetch>),
whose tile loop has no loop inside but two arms: full tiles, and the tail tile whose rows
are clamped and masked; a full tile is counted, with its next tile's prefetch in the
instantiation that prefetches. And the tiled kernel of many-row steps
(attention_tiles.cu, attention_tiles_kernel<head dim, cache type>): per 32-key tile its
block's threads run the staging loop (Dim/32 iterations each) and each warp the rest of
the tile loop (scores, softmax, P V on mma; counted for a tile below every row's causal
length, which takes no mask); a block tile is four warps of both. One tile executes the tile
loop's body once and each inner loop's body as often as the kernel's constants say
(below, as in attention.cu); an inner loop the compiler unrolled is in the tile body
already. Static counts, with every query-head branch taken (four heads a KV head, as
Llama-3.2 and Qwen3 have): what the SM must issue, not what stalls cost; a GPU run
(cuda_orin_bench, flash-decode at 32k) measures the rest.
"""

import re
import sys

from sass_reader import GPUS, KERNELS, backward_branches, ceiling_cells, command_line, functions, span_size

# attention.cu's constants: 32-key tiles, key passes loaded two at a time, V steps four.
TILE, KEY_BATCH, VALUE_BATCH = 32, 2, 4
# Cache forms (template argument): 1 F16, 2 INT8 scored by dp4a (decode), 3 INT8 with the
# float query (steps of several rows).
FORMS = {1: "F16", 2: "INT8 (decode)", 3: "INT8 (float query)"}  # the mma kernel: 1 F16, 2 INT8
KERNEL = re.compile(r"attention_split_kernelILi(\d+)ELi(\d)E")
MMA_KERNEL = re.compile(r"attention_mma_kernelILi(\d+)ELi(\d)ELb([01])E")
TILED_KERNEL = re.compile(r"attention_tiles_kernelILi(\d+)ELi(\d)E")


def tile_shape(dim, form):
    """(key-loop iterations, V-loop iterations, bytes of K and of V per key)."""
    lanes_per_key = dim // 16 if form == 1 else dim // 32
    key_iterations = TILE // (32 // lanes_per_key) // KEY_BATCH
    value_dims = 16 if form == 2 else 8
    value_iterations = TILE // (32 // (dim // value_dims)) // VALUE_BATCH
    row_bytes = 2 * dim if form == 1 else dim + 2 * (dim // 32)
    return key_iterations, value_iterations, row_bytes


def tile_loops(body):
    """(tile, key loop or None, V loop or None) as (first, last) address spans."""
    end = max(at for at, op, _ in body if op == "EXIT")  # the out-of-line divergence paths follow
    spans = [s for s in backward_branches(body) if s[1] <= end]
    tile = max(spans, key=lambda s: s[1] - s[0])
    loads = lambda first, last: [at for at, op, _ in body if first <= at <= last and op == "LDG"]
    inner = sorted(s for s in spans if s != tile and tile[0] <= s[0] and s[1] <= tile[1] and loads(*s))
    if len(inner) > 2:
        sys.exit(f"attention_instructions: {len(inner)} loops with loads inside the tile loop (the count would be a guess)")
    if len(inner) == 2:
        return tile, inner[0], inner[1]
    if len(inner) == 1:  # the other phase unrolled: loads after this loop mean it is the key loop
        later = [at for at in loads(*tile) if at > inner[0][1]]
        return (tile, inner[0], None) if later else (tile, None, inner[0])
    return tile, None, None


def full_tile_size(body, tile):
    """Instructions a full tile of a tensor-core kernel issues: its tile loop less the
    longer arm of the largest if/else inside (the tail or masked tile's; the full tile's
    arm is the shorter)."""
    step = 0x10  # bytes an instruction (sm_80 and later)
    branches = {at: target for at, op, target in body if tile[0] <= at <= tile[1] and op == "BRA" and target}
    arms = []
    for at, else_at in branches.items():
        then_end = else_at - step  # the then-arm ends by branching to the join
        if at < then_end and branches.get(then_end, 0) > else_at:
            arms.append((span_size(body, (at + step, then_end)), span_size(body, (else_at, branches[then_end] - step))))
    if not arms:
        sys.exit("attention_instructions: no full-tile and tail-tile arms in a tensor-core tile loop")
    return span_size(body, tile) - max(max(a) for a in arms)


def tiled_counts(body, dim):
    """(staging iteration, staging a thread, the rest a warp, block tile) of the tiled
    kernel, or None where the compiler laid the tile loop out otherwise: its longest loop
    is the tile loop, the loop inside it that stores to shared memory the staging, and the
    unmasked and masked arms an if/else inside it (ptxas for sm_90 does so; for sm_87 it
    rotates the loop, one arm jumping back to the loop's start and the other past it)."""
    spans = backward_branches(body)
    tile = max(spans, key=lambda s: s[1] - s[0])
    stores = lambda first, last: any(first <= at <= last and op == "STS" for at, op, _ in body)
    staging = [s for s in spans if s != tile and tile[0] <= s[0] and s[1] <= tile[1] and stores(*s)]
    if len(staging) != 1:
        return None
    iteration = span_size(body, staging[0])
    per_thread = iteration * (dim // 32)  # 32 keys x Dim/8 units over 128 threads
    rest = full_tile_size(body, tile) - iteration  # a tile below every row's length: unmasked
    return iteration, per_thread, rest, 4 * (per_thread + rest)


def print_tiled(nvcc, cuobjdump, arch):
    print(f"\n{arch}: the tiled kernel's SASS instructions per 32-key tile (static)\n")
    print("| head dim | cache | staging iteration | staging, a thread | scores, softmax, P V, a warp | block tile |")
    print("|---:|---|---:|---:|---:|---:|")
    for name, body in sorted(functions(nvcc, cuobjdump, f"{KERNELS}/attention_tiles.cu", arch).items()):
        m = TILED_KERNEL.search(name)
        if m:
            dim, form = int(m.group(1)), int(m.group(2))
            cells = tiled_counts(body, dim)
            shown = [str(c) for c in cells] if cells else ["(tile loop laid out otherwise: not counted)"] + [""] * 3
            print(f"| {dim} | {FORMS[form].split(' ')[0]} | " + " | ".join(shown) + " |")


def main(argv):
    nvcc, cuobjdump, archs = command_line(__doc__, argv)
    for arch in archs:
        found = functions(nvcc, cuobjdump, f"{KERNELS}/attention.cu", arch)
        print(f"\n{arch}: SASS instructions per KB of K and V streamed (static; four query heads a KV head)\n")
        header = " | ".join(f"{g[0]} ceiling / peak" for g in GPUS)
        print(f"| head dim | cache | key loop per KB of K | V loop per KB of V | tile per KB of K+V | {header} |")
        print("|---:|---|---:|---:|---:|" + "---:|" * len(GPUS))
        rows = 0
        for name, body in sorted(found.items()):
            m = KERNEL.search(name)
            if not m:
                continue
            dim, form = int(m.group(1)), int(m.group(2))
            key_iterations, value_iterations, row_bytes = tile_shape(dim, form)
            tile, keys, values = tile_loops(body)
            per_tile = span_size(body, tile)
            per_tile += (key_iterations - 1) * span_size(body, keys) if keys else 0
            per_tile += (value_iterations - 1) * span_size(body, values) if values else 0
            phase_kb = TILE * row_bytes / 1024  # KB of K (or of V) per tile
            key_cell = f"{key_iterations * span_size(body, keys) / phase_kb:.0f}" if keys else "unrolled"
            value_cell = f"{value_iterations * span_size(body, values) / phase_kb:.0f}" if values else "unrolled"
            per_kb = per_tile / (2 * phase_kb)
            cells = ceiling_cells(1024 / per_kb)
            print(f"| {dim} | {FORMS[form]} | {key_cell} | {value_cell} | {per_kb:.0f} | " + " | ".join(cells) + " |")
            rows += 1
        for name, body in sorted(functions(nvcc, cuobjdump, f"{KERNELS}/attention_mma.cu", arch).items()):
            m = MMA_KERNEL.search(name)
            if not m:
                continue
            dim, form, prefetch = int(m.group(1)), int(m.group(2)), m.group(3) == "1"
            _, _, row_bytes = tile_shape(dim, form)
            tile, keys, values = tile_loops(body)
            if keys or values:
                sys.exit(f"attention_instructions: a loop inside {name}'s tile loop (the count would be a guess)")
            per_kb = full_tile_size(body, tile) / (2 * TILE * row_bytes / 1024)
            cells = ceiling_cells(1024 / per_kb)
            how = ", mma, next tile prefetched" if prefetch else ", mma"
            print(f"| {dim} | {FORMS[form]}{how} | unrolled | unrolled | {per_kb:.0f} | " + " | ".join(cells) + " |")
            rows += 1
        # 6 on CUDA cores (3 forms x 2 head dims), 8 on tensor cores (2 x 2, with and without
        # the next tile's prefetch; INT8 at head dim 128 is the same code both ways).
        if rows != 14:
            print(f"attention_instructions: found {rows} split kernels in the {arch} SASS, expected 14", file=sys.stderr)
            return 1
        print_tiled(nvcc, cuobjdump, arch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
