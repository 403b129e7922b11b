#!/usr/bin/env python3
"""Quantization quality and recipe of `edgerun quantize` against llama.cpp's own quantizer.

For a source model (by default an F16 model synthesized with Qwen3 shapes), quantize it
with both tools to each type, decode every tensor with python gguf (a decoder neither tool
wrote) and compare each tensor's RMSE against the source. Also checks that both tools
chose the same type for every tensor.

    scripts/compare_quant_llamacpp.py --edgerun build/bin/edgerun [--source F16.gguf]
        [--types Q4_0,Q8_0,Q4_K,Q6_K,...] [--files Q4_K_M,Q6_K] [--tolerance 1.02]

Types given to --types are quantized "pure" (that type everywhere it fits); --files are
file types with llama.cpp's recipe. Exit status 1 when a tensor of ours is worse than
llama.cpp's by more than the tolerance, or the tensor tables differ.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType, quants

import llama_cpp

# llama.cpp logs every tensor it quantizes; keep the report readable.
_QUIET = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))

FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K_S": 14,
              "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "BF16": 32}
# The file type llama.cpp records for a pure file of each tensor type.
PURE_FILE_TYPE = {"Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1", "Q8_0": "Q8_0",
                  "Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M", "Q6_K": "Q6_K", "F16": "F16"}


def llama_quantize(src, dst, file_type, pure, threads):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FILE_TYPES[file_type]
    params.nthread = threads
    params.allow_requantize = True
    params.pure = pure
    if llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params)) != 0:
        sys.exit(f"llama.cpp failed to quantize {src} to {file_type}")


def decode(tensor):
    shape = [int(x) for x in reversed(list(tensor.shape))]
    return quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float64).reshape(shape)


def kind(name):
    return re.sub(r"^blk\.\d+\.", "", name).replace(".weight", "")


def compare(source, ours_path, theirs_path):
    ours = {t.name: t for t in GGUFReader(ours_path).tensors}
    theirs = {t.name: t for t in GGUFReader(theirs_path).tensors}
    table_diff = sorted(n for n in set(ours) | set(theirs)
                        if n not in ours or n not in theirs or ours[n].tensor_type != theirs[n].tensor_type
                        or list(ours[n].shape) != list(theirs[n].shape))
    rows = []
    for name, src in source.items():
        if name not in ours or name not in theirs or ours[name].tensor_type == src.tensor_type:
            continue
        x = decode(src)
        e_ours = float(np.sqrt(np.mean((decode(ours[name]) - x) ** 2)))
        e_theirs = float(np.sqrt(np.mean((decode(theirs[name]) - x) ** 2)))
        rows.append((name, ours[name].tensor_type.name, e_ours, e_theirs))
    return rows, table_diff


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--plugin-dir", action="append", default=[])
    ap.add_argument("--source", help="source model (default: synthesize --preset in F16)")
    ap.add_argument("--preset", default="qwen3-0.6b")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--types", default="Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q4_K,Q5_K,Q6_K")
    ap.add_argument("--files", default="Q4_K_M,Q5_K_M,Q6_K,Q8_0")
    ap.add_argument("--tolerance", type=float, default=1.02, help="largest allowed RMSE ratio ours/llama.cpp per tensor")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workdir")
    args = ap.parse_args()

    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    work = args.workdir or tempfile.mkdtemp(prefix="edgerun-qcmp-")
    source_path = args.source
    if not source_path:
        source_path = os.path.join(work, f"{args.preset}-L{args.layers}-F16.gguf")
        subprocess.run([args.edgerun, "synth", *plugin_args, "--preset", args.preset, "--layers", str(args.layers),
                        "--type", "F16", "-o", source_path], check=True)
    source = {t.name: t for t in GGUFReader(source_path).tensors}

    jobs = [(t, True) for t in args.types.split(",") if t] + [(f, False) for f in args.files.split(",") if f]
    failed = False
    print(f"source: {source_path}\n")
    print("| type | tensors | RMSE ours/llama.cpp: all | worst tensor | by kind |")
    print("|---|---|---|---|---|")
    for name, pure in jobs:
        file_type = PURE_FILE_TYPE[name] if pure else name
        ours_path = os.path.join(work, f"ours-{name}{'-pure' if pure else ''}.gguf")
        theirs_path = os.path.join(work, f"llama-{name}{'-pure' if pure else ''}.gguf")
        cmd = [args.edgerun, "quantize", *plugin_args, source_path, ours_path, "--threads", str(args.threads)]
        cmd += ["--pure", name] if pure else ["--type", name]
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        llama_quantize(source_path, theirs_path, file_type, pure, args.threads)
        rows, table_diff = compare(source, ours_path, theirs_path)
        if table_diff:
            failed = True
            print(f"| {name} | TABLES DIFFER: {', '.join(table_diff[:5])} | | | |")
        by_kind = defaultdict(lambda: [0.0, 0.0])
        for tname, _, eo, et in rows:
            by_kind[kind(tname)][0] += eo ** 2
            by_kind[kind(tname)][1] += et ** 2
        total_ours = sum(v[0] for v in by_kind.values())
        total_theirs = sum(v[1] for v in by_kind.values())
        worst = max(rows, key=lambda r: r[2] / r[3] if r[3] > 0 else 0)
        worst_ratio = worst[2] / worst[3] if worst[3] > 0 else 0
        kinds = " ".join(f"{k} {np.sqrt(v[0] / v[1]):.3f}" for k, v in sorted(by_kind.items()) if v[1] > 0)
        label = f"{name} (pure)" if pure else name
        print(f"| {label} | {len(rows)} | {np.sqrt(total_ours / total_theirs):.4f} | {worst_ratio:.4f} {worst[0]} | {kinds} |")
        failed |= worst_ratio > args.tolerance
        for path in (ours_path, theirs_path):
            os.remove(path)
    print("\nFAIL" if failed else "\nPASS: every tensor within tolerance, identical tables")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
