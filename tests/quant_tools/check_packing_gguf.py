#!/usr/bin/env python3
"""Our quantizers' blocks, decoded by python gguf (a decoder nobody here wrote), must give
the values our own decoder (blocks.hpp) gives, and stay close to the input.

    check_packing_gguf.py SHIM.so        exit 0 pass, 1 fail, 77 skipped (no gguf module)
"""
import ctypes
import sys

try:
    import numpy as np
    from gguf import GGMLQuantizationType as T, quants
except ImportError as e:  # pragma: no cover
    sys.exit(f"missing test reference: {e}: run scripts/install-deps.sh --test and use its .venv")

shim = ctypes.CDLL(sys.argv[1])
shim.edgerun_quantize_rows.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
shim.edgerun_dequantize.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

rng = np.random.default_rng(11)
rows, n = 64, 1536  # 1536 = 6 super-blocks: K-quant rows of several blocks
x = (rng.standard_normal((rows, n)) * np.exp(0.4 * rng.standard_normal((rows, n))) * 0.03).astype(np.float32)
x[3, 100] = 2.0  # an outlier
x[5, :256] = 0.0  # an all-zero super-block

failed = False
for t in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K, T.F16, T.BF16):
    block, type_size = quants.GGML_QUANT_SIZES[t]
    out = np.zeros(rows * n // block * type_size, np.uint8)
    if shim.edgerun_quantize_rows(int(t), x.ctypes.data, out.ctypes.data, rows, n) != 0:
        print(f"{t.name}: quantize refused"); failed = True; continue
    theirs = quants.dequantize(out.reshape(rows, -1), t).reshape(rows, n).astype(np.float32)
    ours = np.zeros_like(x)
    assert shim.edgerun_dequantize(int(t), out.ctypes.data, ours.ctypes.data, rows * n) == 0
    decode_diff = float(np.max(np.abs(theirs - ours)))
    rel = float(np.sqrt(np.mean((theirs - x) ** 2) / np.mean(x ** 2)))
    ok = decode_diff <= 1e-6 * float(np.max(np.abs(x))) and rel < 0.12 and np.all(theirs[5, :256] == 0)
    print(f"{t.name:5s} decoders differ by {decode_diff:.3g}, relative RMSE {rel:.4f} {'ok' if ok else 'FAIL'}")
    failed |= not ok
sys.exit(1 if failed else 0)
