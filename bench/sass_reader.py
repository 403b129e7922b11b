"""What the static instruction counters share (gemv_task_instructions.py,
attention_instructions.py): the command line, compiling one .cu file to a cubin for an
arch, and reading cuobjdump's SASS as instructions per function."""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "plugins", "cuda_orin", "kernels")

# (name, SMs, boost clock GHz, copy peak GB/s). The H200's peak is the device-to-device
# copy measured on 2026-11-24; the Orins' are data-sheet figures (no Jetson here).
GPUS = [("H200", 132, 1.98, 4270.0), ("Orin AGX 64GB", 16, 1.30, 204.8), ("Orin Nano 8GB", 8, 0.625, 68.0)]

FUNCTION = re.compile(r"Function : (\S+)")
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)[^;]*?(?:0x([0-9a-f]+))?\s*;")


def command_line(description, argv, more=None):
    """--nvcc, --cuobjdump, --arch parsed, the tools checked: (nvcc, cuobjdump, archs), and
    the parsed arguments too when `more` (a function given the parser) adds some of its
    own. Exits with a one-line error naming a missing tool."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    ap.add_argument("--cuobjdump", help="default: beside nvcc, else on PATH (PyPI's nvidia-cuda-cuobjdump has one)")
    ap.add_argument("--arch", action="append", help="sm_87, sm_90 (default: both)")
    if more:
        more(ap)
    args = ap.parse_args(argv)
    program = os.path.basename(sys.argv[0])
    cuobjdump = args.cuobjdump
    if not cuobjdump:
        beside = os.path.join(os.path.dirname(args.nvcc), "cuobjdump")
        cuobjdump = beside if os.path.isfile(beside) else shutil.which("cuobjdump")
    if not cuobjdump:
        sys.exit(f"{program}: no cuobjdump beside nvcc or on PATH (give --cuobjdump)")
    for tool, path in (("nvcc", args.nvcc), ("cuobjdump", cuobjdump)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            sys.exit(f"{program}: {tool} '{path}' is not an executable file")
    tools = (args.nvcc, cuobjdump, args.arch or ["sm_87", "sm_90"])
    return tools + (args,) if more else tools


def functions(nvcc, cuobjdump, source, arch):
    """{function name: [(address, opcode, branch target or None)]} of `source` compiled
    for `arch` with the kernels' include paths. Exits with the compiler's error."""
    program = os.path.basename(sys.argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "code.cubin")
        compiled = subprocess.run([nvcc, "-cubin", "-O3", "-DNDEBUG", "-std=c++17", f"-arch={arch}", "-o", cubin, source,
                                   f"-I{KERNELS}", f"-I{os.path.join(ROOT, 'core', 'include')}"],
                                  capture_output=True, text=True)
        if compiled.returncode != 0:
            sys.exit(f"{program}: nvcc failed for {arch}:\n{compiled.stderr}")
        dumped = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True)
        if dumped.returncode != 0:
            sys.exit(f"{program}: cuobjdump failed: {dumped.stderr.strip()}")
    found, name = {}, None
    for line in dumped.stdout.splitlines():
        if m := FUNCTION.search(line):
            name = m.group(1)
            found[name] = []
        elif (m := INSTRUCTION.search(line)) and name:
            found[name].append((int(m.group(1), 16), m.group(2), int(m.group(3), 16) if m.group(3) else None))
    return found


def backward_branches(body):
    """The (target, branch) address spans of a function's loops."""
    return [(target, at) for at, op, target in body if op == "BRA" and target is not None and target < at]


def span_size(body, span):
    """Instructions from span[0] to span[1], both included (NOPs are padding, not issued)."""
    return sum(1 for at, op, _ in body if span[0] <= at <= span[1] and op != "NOP")


def ceiling_cells(bytes_per_instruction):
    """Each GPU's issue ceiling (4 warp-instructions a clock per SM) as 'GB/s = fraction of
    its copy peak', given the bytes one warp-instruction accounts for."""
    cells = []
    for _, sms, ghz, peak in GPUS:
        ceiling = 4.0 * sms * ghz * bytes_per_instruction
        cells.append(f"{ceiling:.0f} GB/s = {ceiling / peak:.2f}x")
    return cells
