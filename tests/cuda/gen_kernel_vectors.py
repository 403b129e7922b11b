#!/usr/bin/env python3
"""Reference vectors for the cuda_orin kernel-math tests, made with the PyPI package gguf
(whose dequantizers and Q8_0 quantizer nobody on this project wrote).

    gen_kernel_vectors.py OUTDIR

Writes, for every weight type the GEMV kernels read, OUTDIR/weights_<TYPE>.bin:
    int32 type, int32 n_rows, int32 n_cols, then the GGUF bytes of the matrix, then
    n_rows*n_cols float32 values gguf dequantizes them to.
Block bytes are random (every bit pattern of the quant fields occurs), with the fp16
scale fields replaced by random finite halves so the values stay finite.
And OUTDIR/q8_groups.bin: int32 n_groups, n_groups*32 float32 inputs, then the Q8_0
blocks (34 bytes each) gguf.quantize makes of them, including ties and zero groups.
"""
import struct
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import dequantize, quantize

# type: (block elems, block bytes, byte offsets of fp16 scale fields)
LAYOUTS = {
    T.Q4_0: (32, 18, [0]),
    T.Q4_1: (32, 20, [0, 2]),
    T.Q5_0: (32, 22, [0]),
    T.Q5_1: (32, 24, [0, 2]),
    T.Q8_0: (32, 34, [0]),
    T.Q2_K: (256, 84, [80, 82]),
    T.Q3_K: (256, 110, [108]),
    T.Q4_K: (256, 144, [0, 2]),
    T.Q5_K: (256, 176, [0, 2]),
    T.Q6_K: (256, 210, [208]),
}
# Odd row counts and several row lengths, K-quant rows of 1 and 3 super-blocks.
SHAPES = {32: (7, 32 * 13), 256: (5, 256 * 3)}


def random_halves(rng, n):
    """Finite fp16 values of both signs across several decades."""
    mag = 10.0 ** rng.uniform(-4, 0.5, n)
    return (mag * rng.choice([-1.0, 1.0], n)).astype(np.float16)


def weights_file(rng, qtype, out):
    elems, nbytes, half_fields = LAYOUTS[qtype]
    n_rows, n_cols = SHAPES[elems]
    n_blocks = n_rows * n_cols // elems
    blocks = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
    for off in half_fields:
        blocks[:, off:off + 2] = random_halves(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    raw = blocks.reshape(n_rows, -1)
    values = dequantize(raw, qtype).astype(np.float32).reshape(n_rows, n_cols)
    write(out / f"weights_{qtype.name}.bin", qtype, n_rows, n_cols, raw.tobytes(), values)


def plain_file(rng, qtype, out):
    n_rows, n_cols = 6, 100  # a row length that is not a multiple of 32: the repack pads
    vals = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    if qtype == T.F16:
        raw = vals.astype(np.float16).view(np.uint8)
    elif qtype == T.BF16:  # the top halves of the floats (truncation: any bf16 will do)
        raw = (vals.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    else:
        raw = vals.view(np.uint8)
    raw = raw.reshape(n_rows, -1)
    values = dequantize(raw, qtype).astype(np.float32).reshape(n_rows, n_cols)
    write(out / f"weights_{qtype.name}.bin", qtype, n_rows, n_cols, raw.tobytes(), values)


def write(path, qtype, n_rows, n_cols, raw, values):
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", int(qtype), n_rows, n_cols))
        f.write(raw)
        f.write(values.astype("<f4").tobytes())


def q8_file(rng, out):
    groups = [rng.standard_normal(32) * s for s in (1e-3, 0.1, 1.0, 30.0, 1e4)]
    groups += [np.zeros(32)]
    # Ties: with max 127 the scale is exactly 1, so x.5 must round away from zero.
    tie = np.array([127.0] + [k + 0.5 for k in range(-15, 16)])
    groups += [tie, -tie]
    groups += [rng.standard_normal(32) * 10.0 ** rng.uniform(-3, 3) for _ in range(120)]
    x = np.concatenate(groups).astype(np.float32)
    q = quantize(x.reshape(-1, 32), T.Q8_0)
    with open(out / "q8_groups.bin", "wb") as f:
        f.write(struct.pack("<i", len(groups)))
        f.write(x.astype("<f4").tobytes())
        f.write(np.ascontiguousarray(q).tobytes())


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240607)
    for qtype in LAYOUTS:
        weights_file(rng, qtype, out)
    for qtype in (T.F16, T.F32, T.BF16):
        plain_file(rng, qtype, out)
    q8_file(rng, out)


if __name__ == "__main__":
    main()
