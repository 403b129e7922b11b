#!/usr/bin/env python3
"""SASS instructions the GEMV spends per task (32 weights), per weight type and input form,
and the DRAM bandwidth at which issuing them becomes the limit.

  bench/gemv_task_instructions.py [--nvcc NVCC] [--cuobjdump CUOBJDUMP] [--arch sm_90 ...]

Compiles bench/gemv_task_loops.cu (the GEMV's task loop, one kernel per type and form),
disassembles it with cuobjdump and counts the instructions of each kernel's loop (one
iteration is one task). A static figure, from the compiler alone: an SM issues at most 4
warp-instructions a clock, and a warp's iteration of n instructions takes 32 tasks of b
bytes of weights, so the SM can keep up with at most 4 * 32 b / n bytes a clock, whatever
the memory does. Printed against
the copy peak of a few GPUs (SM count, boost clock and peak below): where the ceiling is
under the peak, the GEMV cannot reach the peak on that GPU, however well it hides latency.
Scheduling stalls, shared-memory and L1 throughput come on top; only a GPU run measures
those (cuda_orin_bench).

cuobjdump is in the CUDA Toolkit's bin/; where the toolkit lacks it, PyPI's
nvidia-cuda-cuobjdump wheel has it (unpack it anywhere, pass --cuobjdump).
"""

import re
import sys

from sass_reader import GPUS, ROOT, backward_branches, ceiling_cells, command_line, functions, span_size

# GGUF type id, name, weight bytes per 32 weights (the packed planes: the file's bytes).
TYPES = {2: ("Q4_0", 18), 3: ("Q4_1", 20), 6: ("Q5_0", 22), 7: ("Q5_1", 24), 8: ("Q8_0", 34),
         10: ("Q2_K", 84 / 8), 11: ("Q3_K", 110 / 8), 12: ("Q4_K", 144 / 8), 13: ("Q5_K", 176 / 8),
         14: ("Q6_K", 210 / 8)}

# Input forms (gemv_task_loops.cu): float x staged; 8-bit x prepared in global memory;
# 8-bit x quantized into the stage by the GEMV itself; prepared 8-bit x against two rows
# at once (SwiGLU's gate and up walked together), an iteration being a task of each; the
# same through the ring of tasks in shared memory (task_ring.cuh, option gemv_ring).
FORMS = ("f32", "q8", "q8s", "q8pair", "q8ring")
TASKS_AN_ITERATION = {"q8pair": 2, "q8ring": 2}

KERNEL = re.compile(r"task_loop_(f32|q8s|q8pair|q8ring|q8)ILi(\d+)E")


def loop_instructions(found):
    """{(form, type id): instructions one task executes}: the task loop is the span of the
    function's longest backward branch (for the ring, the longest holding its wait, DEPBAR).
    A loop inside it can only be the float dot's loop
    over the task's two segments (quant_tasks.hpp unrolls it; were ptxas to keep it), so
    its body counts twice; a second inner loop is refused (the count would be a guess)."""
    counts = {}
    for name, body in found.items():
        m = KERNEL.search(name)
        spans = backward_branches(body)
        if not m or not spans:
            continue
        if m and m.group(1) == "q8ring":  # the ring's prologue is a loop too: the task loop waits
            spans = [s for s in spans if any(s[0] <= at <= s[1] and op.startswith("DEPBAR") for at, op, _ in body)]
            if not spans:
                continue
        outer = max(spans, key=lambda s: s[1] - s[0])
        inner = [s for s in spans if s != outer and outer[0] <= s[0] and s[1] <= outer[1]]
        if len(inner) > 1:
            sys.exit(f"gemv_task_instructions: {name}: {len(inner)} loops inside the task loop")
        counts[(m.group(1), int(m.group(2)))] = span_size(body, outer) + sum(span_size(body, s) for s in inner)
    return counts


def main(argv):
    nvcc, cuobjdump, archs = command_line(__doc__, argv)
    for arch in archs:
        counts = loop_instructions(functions(nvcc, cuobjdump, f"{ROOT}/bench/gemv_task_loops.cu", arch))
        if len(counts) != len(FORMS) * len(TYPES):
            print(f"gemv_task_instructions: found {len(counts)} task loops in the {arch} SASS, "
                  f"expected {len(FORMS) * len(TYPES)}", file=sys.stderr)
            return 1
        header = " | ".join(f"{g[0]} ceiling / peak" for g in GPUS)
        print(f"\n{arch}: SASS instructions per task (32 weights) and the issue ceiling (4 warp-instructions "
              f"a clock per SM) against each GPU's copy peak\n")
        print(f"| type | x | instructions per task | per weight | {header} |")
        print("|---|---|---:|---:|" + "---:|" * len(GPUS))
        for type_id, (name, task_bytes) in TYPES.items():
            for form in FORMS:
                n = counts[(form, type_id)] / TASKS_AN_ITERATION.get(form, 1)
                # A warp's iteration of n instructions a task takes 32 lanes' tasks.
                cells = ceiling_cells(32 * task_bytes / n)
                print(f"| {name} | {form} | {n:g} | {n / 32:.1f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
