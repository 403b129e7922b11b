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

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# GGUF type id, name, weight bytes per 32 weights (the packed planes: the file's bytes).
TYPES = {2: ("Q4_0", 18), 3: ("Q4_1", 20), 6: ("Q5_0", 22), 7: ("Q5_1", 24), 8: ("Q8_0", 34),
         10: ("Q2_K", 84 / 8), 11: ("Q3_K", 110 / 8), 12: ("Q4_K", 144 / 8), 13: ("Q5_K", 176 / 8),
         14: ("Q6_K", 210 / 8)}

# (name, SMs, boost clock GHz, copy peak GB/s). The H200's peak is the device-to-device
# copy measured on 2026-11-24; the Orins' are data-sheet figures (no Jetson here).
GPUS = [("H200", 132, 1.98, 4270.0), ("Orin AGX 64GB", 16, 1.30, 204.8), ("Orin Nano 8GB", 8, 0.625, 68.0)]

# Input forms (gemv_task_loops.cu): float x staged; 8-bit x prepared in global memory;
# 8-bit x quantized into the stage by the GEMV itself.
FORMS = ("f32", "q8", "q8s")

FUNCTION = re.compile(r"Function : (\S+)")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)[^;]*?(?:0x([0-9a-f]+))?\s*;")
KERNEL = re.compile(r"task_loop_(f32|q8s|q8)ILi(\d+)E")


def loop_instructions(sass):
    """{(form, type id): instructions one task executes}: the task loop is the span of the
    function's longest backward branch. A loop inside it can only be the float dot's loop
    over the task's two segments (quant_tasks.hpp), so its body counts twice; a second
    inner loop is refused (the count would be a guess)."""
    counts, name, body = {}, None, []

    def size(first, last):
        return sum(1 for at, op, _ in body if first <= at <= last and op != "NOP")

    def close():
        if name and (m := KERNEL.search(name)):
            spans = [(target, at) for at, op, target in body if op == "BRA" and target is not None and target < at]
            if spans:
                outer = max(spans, key=lambda s: s[1] - s[0])
                inner = [s for s in spans if s != outer and outer[0] <= s[0] and s[1] <= outer[1]]
                if len(inner) > 1:
                    sys.exit(f"gemv_task_instructions: {name}: {len(inner)} loops inside the task loop")
                counts[(m.group(1), int(m.group(2)))] = size(*outer) + sum(size(*s) for s in inner)

    for line in sass.splitlines():
        if m := FUNCTION.search(line):
            close()
            name, body = m.group(1), []
        elif (m := INSTRUCTION.search(line)) and name:
            body.append((int(m.group(1), 16), m.group(2), int(m.group(3), 16) if m.group(3) else None))
    close()
    return counts


def find_cuobjdump(nvcc, given):
    if given:
        return given
    beside = os.path.join(os.path.dirname(nvcc), "cuobjdump")
    return beside if os.path.isfile(beside) else shutil.which("cuobjdump")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--arch", action="append", help="sm_87, sm_90 (default: both)")
    args = ap.parse_args(argv)
    cuobjdump = find_cuobjdump(args.nvcc, args.cuobjdump)
    if not cuobjdump:
        print("gemv_task_instructions: no cuobjdump beside nvcc or on PATH (give --cuobjdump)", file=sys.stderr)
        return 1
    for tool, path in (("nvcc", args.nvcc), ("cuobjdump", cuobjdump)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print(f"gemv_task_instructions: {tool} '{path}' is not an executable file", file=sys.stderr)
            return 1
    kernels = os.path.join(ROOT, "plugins", "cuda_orin", "kernels")
    for arch in args.arch or ["sm_87", "sm_90"]:
        with tempfile.TemporaryDirectory() as tmp:
            cubin = os.path.join(tmp, "loops.cubin")
            compiled = subprocess.run([args.nvcc, "-cubin", "-O3", "-DNDEBUG", "-std=c++17", f"-arch={arch}", "-o",
                                       cubin, os.path.join(ROOT, "bench", "gemv_task_loops.cu"), f"-I{kernels}",
                                       f"-I{os.path.join(ROOT, 'core', 'include')}"], capture_output=True, text=True)
            if compiled.returncode != 0:
                print(f"gemv_task_instructions: nvcc failed for {arch}:\n{compiled.stderr}", file=sys.stderr)
                return 1
            dumped = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
            if dumped.returncode != 0:
                print(f"gemv_task_instructions: cuobjdump failed: {dumped.stderr.strip()}", file=sys.stderr)
                return 1
            sass = dumped.stdout
        counts = loop_instructions(sass)
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
                n = counts[(form, type_id)]
                cells = []
                for _, sms, ghz, peak in GPUS:
                    ceiling = 4.0 * 32 * task_bytes / n * sms * ghz  # GB/s: 32 lanes' tasks per warp iteration
                    cells.append(f"{ceiling:.0f} GB/s = {ceiling / peak:.2f}x")
                print(f"| {name} | {form} | {n} | {n / 32:.1f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
