#!/usr/bin/env python3
"""Reference data for blocks.hpp from code nobody here wrote: the PyPI package `gguf`.

For every GGUF type a model uses, makes random blocks (random bytes, with every fp16
scale field replaced by a random finite half so no value is NaN) and decodes them with
gguf.quants.dequantize. Writes one binary file the C++ test reads:

    per type: u32 type id, u32 n_values, u32 n_bytes, then the raw bytes, then n_values
    little-endian float32 values.

A last record (type id 0x10008) holds gguf's Q8_0 *quantization* of random floats (the
bytes) and the floats (the values): the reference for cpu_ref's INT8 KV cache, which
stores llama.cpp's Q8_0 blocks.

    gen_gguf_reference.py OUT.bin
"""
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

# Byte offsets of the fp16 fields inside each block (from the GGUF block layouts).
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
N_BLOCKS = 96


def random_finite_halves(rng, n):
    """Random fp16 bit patterns over every finite value (subnormals and zero included)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bits[(bits & 0x7C00) == 0x7C00] &= 0xBFFF  # exponent 31 (inf/NaN) -> 15: finite
    return bits


def main():
    out_path = sys.argv[1]
    rng = np.random.default_rng(20240611)
    records = []
    for qtype, fields in HALF_FIELDS.items():
        block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(N_BLOCKS, block_bytes), dtype=np.uint16).astype(np.uint8)
        for off in fields:
            raw[:, off:off + 2] = random_finite_halves(rng, N_BLOCKS).view(np.uint8).reshape(N_BLOCKS, 2)
        values = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)
        records.append((int(qtype), raw.tobytes(), values))
    # F16: every finite half plus +-inf (NaN payloads are not compared).
    halves = random_finite_halves(rng, 4096)
    halves[:4] = [0x7C00, 0xFC00, 0x0001, 0x8000]
    records.append((int(T.F16), halves.tobytes(), quants.dequantize(halves.view(np.uint8), T.F16)))
    # BF16: any 16 bits, NaNs included: the decode is a shift, so bits must match.
    bf = rng.integers(0, 1 << 16, size=4096, dtype=np.uint32).astype(np.uint16)
    records.append((int(T.BF16), bf.tobytes(), quants.dequantize(bf.view(np.uint8), T.BF16)))
    # Q8_0 quantization: varied magnitudes, an all-zero block, and exact .5 ties
    # (amax 127 gives d = 1, so x * id = x: ties round away from zero).
    x = (rng.standard_normal((64, 32)) * np.exp(rng.uniform(-8, 8, (64, 1)))).astype(np.float32)
    x[0] = 0.0
    x[1] = np.array([127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5] * 4, dtype=np.float32)
    q8 = quants.quantize(x, T.Q8_0)
    records.append((0x10008, q8.tobytes(), x.reshape(-1)))
    with open(out_path, "wb") as f:
        for qtype, data, values in records:
            values = np.ascontiguousarray(values, dtype="<f4").reshape(-1)
            f.write(struct.pack("<III", qtype, values.size, len(data)))
            f.write(data)
            f.write(values.tobytes())
    print(f"wrote {len(records)} types to {out_path}")


if __name__ == "__main__":
    main()
