#!/usr/bin/env python3
"""Registers, stack frames, spills and shared memory of every cuda_orin kernel, from ptxas.

Reads ptxas's report (`-Xptxas=-v`) of each kernel source of plugins/cuda_orin/kernels as
the build compiled it, for each architecture it was built for (sm_87: Orin, sm_90: the
H200), from the logs the build keeps (kernels/ptxas_log.sh); prints one table row per
kernel, and fails when a kernel keeps a stack frame in local memory or spills, beyond the allowances
below (ALLOWED). Such a frame is per-thread memory traffic no test of results can see: the GEMV
kernels once copied their ~500-byte launch struct into one per thread (fixed with
__grid_constant__), a copy that cost more than the weights it multiplied.

Also fails when a kernel's static shared memory plus the most dynamic shared memory it is
launched with passes the 48 KiB a launch gets without opting in to more: the GEMV's stage
of x (kGemvMaxStageBytes, read from kernel_params.hpp) shares that budget with the
kernel's own arrays, and a launch past it fails on the device, never on the emulation.
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys

# Kernels allowed local memory, and why: (bytes of stack frame, bytes of spills).
ALLOWED = {
    # sincosf's slow path for large angles (the Payne-Hanek reduction) keeps a few words in
    # local memory; it runs once per rotated pair, for angles past about 1e5 radians.
    "rope_append_kernel": (32, 0),
    "rope_rows_kernel": (32, 0),
    # The table form of EMBED, left only for Q8_1 and Q8_K embeddings (types the packed
    # layout cannot hold): blocks.hpp's dequantizer of every type, one launch per step.
    "embed_kernel": (2048, 512),
    # The one-row GEMV: with four tasks in flight at 128 registers (gemv_kernel<false, 4>)
    # one word stored before the staging of x and reloaded once a row, never inside a task
    # loop (bench/spill_places.py shows where, from the SASS); earlier, at 80 registers,
    # the kernel of several rows a warp kept a few words of its loop over rows so. The
    # task loops keep what a thread's tasks share (TaskIndex: places in a group, the
    # stage's swizzle) in registers instead of recomputing it per task: about 15% fewer
    # instructions a task (kernels/README.md). The stack frame (32-40 bytes) is the
    # rope_append epilogue's (rope_append_in_last_blocks, a call made only by the Q/K/V
    # launch with rope_append=gemv): sincosf's slow path, as in rope_append_kernel above,
    # and a word saved across the call, stored once at the start and reloaded once at the
    # end (bench/spill_places.py lists the slow path's loops among the kernel's: they run
    # only for angles past about 1e5 radians). The kernel of several rows a warp
    # (gemv_kernel<true, 1>) since its 8-bit x carries each segment's sum (2026-11-28): one
    # word stored once a row, before the type switch, and reloaded once a row by the path
    # of the row's type; ptxas counts the reloads of all ten paths, 40 bytes.
    "gemv_kernel": (40, 40),
    # The split attention on tensor cores over an INT8 cache at head dim 128, held to 128
    # registers for the four blocks an SM the split count assumes (choose_kv_splits): on
    # sm_90 two words stored and two reloaded once a 32-key tile of about 760 instructions
    # (bench/spill_places.py), the rest reloaded after the loop by the write of the split's
    # partial and the merge in the last block (attention_split.cuh): 32 bytes stored, 76
    # loaded. Before that merge, four words stored a tile and 40 bytes loaded.
    "attention_mma_kernel": (32, 80),
}

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
LAUNCH_SHARED_LIMIT = 48 * 1024
STAGE = re.compile(r"kGemvMaxStageBytes = (\d+) \* 1024;")


def dynamic_shared(kernels_dir):
    """The most dynamic shared memory each kernel is launched with (kernels not listed: none)."""
    m = STAGE.search((kernels_dir / "kernel_params.hpp").read_text())
    if not m:
        sys.exit("FAIL: kGemvMaxStageBytes = N * 1024 not found in kernel_params.hpp")
    stage = int(m.group(1)) * 1024
    return {"gemv_kernel": stage, "gemv_rows_kernel": stage}  # by name, whatever the template arguments


def demangle(names):
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def short_name(demangled):
    """`edgerun::cuda_orin::(anonymous namespace)::gemv_kernel(...)` -> `gemv_kernel`, keeping template arguments."""
    name, depth = demangled.replace("(anonymous namespace)::", ""), 0
    for i, c in enumerate(name):  # the argument list: the first '(' outside the template arguments
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            name = name[:i]
            break
    name = re.sub(r"^void ", "", name)
    return re.sub(r"^[\w:]*::(?=\w+(<.*>)?$)", "", name)


def read_report(source, log_dir):
    """The kernels ptxas compiled from `source`, with their resources, from the build's log."""
    log = log_dir / f"{source.name}.o.ptxas"
    if not log.exists():
        sys.exit(f"FAIL: no ptxas report {log}: build the kernel library (cuda_orin_kernels) first")
    kernels, current = [], None
    for line in log.read_text().splitlines():
        if m := ENTRY.search(line):
            current = {"source": source.name, "arch": m.group(2), "mangled": m.group(1)}
            kernels.append(current)
        elif current and (m := FRAME.search(line)) and "stack" not in current:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current and (m := USED.search(line)):
            current["registers"] = int(m.group(1))
            m = SMEM.search(line)
            current["smem"] = int(m.group(1)) if m else 0
            current = None
    return kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kernels_dir", type=pathlib.Path, help="plugins/cuda_orin/kernels")
    ap.add_argument("log_dir", type=pathlib.Path, help="where the build keeps ptxas's reports")
    ap.add_argument("--arch", action="append", default=[], help="architectures every kernel must have been built for")
    args = ap.parse_args()
    archs = args.arch or ["sm_87", "sm_90"]
    sources = sorted(args.kernels_dir.glob("*.cu"))
    if not sources:
        sys.exit(f"FAIL: no kernel sources in {args.kernels_dir}")

    kernels = [k for s in sources for k in read_report(s, args.log_dir)]
    names = demangle(sorted({k["mangled"] for k in kernels}))
    dynamic = dynamic_shared(args.kernels_dir)
    problems = []
    print(f"| source | arch | kernel | registers | stack frame (bytes) | spills (bytes stored/loaded) | static + dynamic shared (bytes) |")
    print("|---|---|---|---:|---:|---|---:|")
    for k in sorted(kernels, key=lambda k: (k["source"], short_name(names[k["mangled"]]), k["arch"])):
        name = short_name(names[k["mangled"]])
        shared = k.get("smem", 0) + dynamic.get(name.split("<")[0], 0)
        print(f"| {k['source']} | {k['arch']} | {name} | {k.get('registers', '?')} | {k.get('stack', '?')} | "
              f"{k.get('spill_stores', '?')}/{k.get('spill_loads', '?')} | {shared} |")
        if shared > LAUNCH_SHARED_LIMIT:
            problems.append(f"{name} ({k['arch']}): {shared} bytes of shared memory per block, over the "
                            f"{LAUNCH_SHARED_LIMIT} a launch gets without opting in")
        if "stack" not in k or "registers" not in k:
            problems.append(f"{name} ({k['arch']}): ptxas printed no resource line")
            continue
        stack_allowed, spill_allowed = ALLOWED.get(name.split("<")[0], (0, 0))
        if max(k["spill_stores"], k["spill_loads"]) > spill_allowed:
            problems.append(f"{name} ({k['arch']}): spills {k['spill_stores']}/{k['spill_loads']} bytes (allowed {spill_allowed})")
        if k["stack"] > stack_allowed:
            problems.append(f"{name} ({k['arch']}): {k['stack']}-byte stack frame in local memory (allowed {stack_allowed})")
    built = {(k["source"], k["arch"]) for k in kernels}
    for source in sources:
        for arch in archs:
            if (source.name, arch) not in built:
                problems.append(f"{source.name}: ptxas's report has no {arch} kernel (the build's CUDA architectures?)")
    if problems:
        print("\nFAIL:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print(f"\nok: {len(kernels)} kernels over {', '.join(archs)}: no stack frame or spill beyond the allowances, "
          f"shared memory within {LAUNCH_SHARED_LIMIT} bytes")


if __name__ == "__main__":
    main()
