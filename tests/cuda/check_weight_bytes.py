#!/usr/bin/env python3
"""cuda_orin holds a weight used for both EMBED and the output projection (tied
embeddings) once, in the GEMV layout, on the emulated device.

    check_weight_bytes.py EDGERUN PLUGIN_DIR WORKDIR

Synthesizes small models with tied embeddings (`edgerun synth`: no output.weight; the
graph's LOGITS read token_embd), loads each with cuda_orin_emu, and compares the bytes the
backend logs as its weights on the device with the figure computed here from the file's
tensor shapes and types, with the GEMV layout's rules (plugins/cuda_orin/kernels/
weight_layout.hpp): each matrix's planes of [rows][blocks][field bytes], each plane
starting on a 256-byte boundary; plain rows padded to 32 values; vectors (norms) as F32;
every form starting on a 256-byte boundary of the model's one allocation (plugin.cpp).
A second copy of token_embd (its GGUF bytes, as the backend held it before) would add
the table's size to the logged figure.
"""
import re
import subprocess
import sys
from pathlib import Path

from gguf import GGMLQuantizationType as T
from gguf import GGUFReader

# type: (block elems, bytes per block of each plane)
PLANES = {
    T.Q4_0: (32, [16, 2]), T.Q4_1: (32, [16, 4]), T.Q5_0: (32, [16, 4, 2]), T.Q5_1: (32, [16, 4, 4]),
    T.Q8_0: (32, [32, 2]), T.Q2_K: (256, [64, 16, 4]), T.Q3_K: (256, [64, 32, 12, 2]),
    T.Q4_K: (256, [128, 16]), T.Q5_K: (256, [128, 32, 16]), T.Q6_K: (256, [128, 64, 16, 2]),
    T.F32: (32, [128]), T.F16: (32, [64]), T.BF16: (32, [64]),
}
ALIGN = 256
LOGGED = re.compile(r"cuda_orin: weights on the device: (\d+) bytes")


def fail(message, output=""):
    print(output)
    print("FAIL: " + message)
    sys.exit(1)


def packed_bytes(qtype, rows, cols):
    elems, planes = PLANES[qtype]
    blocks = (cols + elems - 1) // elems
    total = 0
    for plane in planes:
        total = (total + rows * blocks * plane + ALIGN - 1) // ALIGN * ALIGN
    return total


def expected_bytes(path):
    """(bytes on the device, bytes of token_embd's GGUF table) from the file's tensors."""
    total, table = 0, None
    names = set()
    for t in GGUFReader(path).tensors:
        names.add(t.name)
        cols = int(t.shape[0])
        rows = 1
        for d in t.shape[1:]:
            rows *= int(d)
        if len(t.shape) == 1:  # a norm weight (or rope factors): F32 values
            form = 4 * cols
        else:
            form = packed_bytes(t.tensor_type, rows, cols)
        total += (form + ALIGN - 1) // ALIGN * ALIGN
        if t.name == "token_embd.weight":
            table = int(t.n_bytes)
    if table is None or "output.weight" in names:
        fail(f"{path}: not a model with tied embeddings (token_embd.weight and no output.weight)")
    return total, table


def main():
    edgerun, plugin_dir, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    for preset, qtype in (("smollm2-135m", "Q4_K_M"), ("llama3.2-1b", "Q8_0")):
        model = work / f"{preset}-{qtype}-tied.gguf"
        synth = [edgerun, "synth", "--preset", preset, "--type", qtype, "--layers", "1", "--vocab", "4096",
                 "-o", str(model)]
        done = subprocess.run(synth, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            fail(f"exit {done.returncode}: {' '.join(synth)}", done.stdout + done.stderr)
        expect, table = expected_bytes(model)
        cmd = [edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu", "--log-level", "info",
               "-m", str(model), "-p", "hi", "-n", "1", "-c", "32", "--temp", "0"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        output = done.stdout + done.stderr
        if done.returncode != 0:
            fail(f"exit {done.returncode}: {' '.join(cmd)}", output)
        logged = [int(m.group(1)) for m in LOGGED.finditer(output)]
        if len(logged) != 1:
            fail(f"{model.name}: {len(logged)} 'weights on the device' lines, not 1", output)
        print(f"{model.name}: weights on the device {logged[0]} bytes; computed {expect} "
              f"(token_embd once, packed; a second, GGUF copy would add {table})")
        if logged[0] != expect:
            fail(f"{model.name}: {logged[0]} bytes on the device, not the {expect} the tensors take once each "
                 f"(difference {logged[0] - expect}; token_embd's table is {table})", output)
    print("PASS")


if __name__ == "__main__":
    main()
