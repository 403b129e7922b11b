#!/usr/bin/env python3
"""The tensor tables edgerun writes, against the ones llama.cpp's quantizer writes.

1. SmolLM2 (the real model): `edgerun quantize` to each file type and llama.cpp's
   llama_model_quantize to the same must choose the same type for every tensor; the
   Q4_K_M file is written for real, loaded by llama.cpp, and its metadata compared.
2. Synthesized presets: `edgerun synth --type Q4_K_M` must have exactly the table llama.cpp
   makes when it quantizes the same preset synthesized in F16.

    test_tables_llamacpp.py --edgerun BIN --plugin-dir DIR --smollm2 MODEL|@fetch:REPO_ROOT [--slow]

Exit 0 pass, 1 fail, 77 skipped (llama-cpp-python or gguf missing). --slow (or
EDGERUN_SLOW_TESTS=1) covers every preset and more file types of them.
"""
import argparse
import atexit
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402

try:
    import llama_cpp
    from gguf import GGUFReader, GGUFValueType
except ImportError as e:  # pragma: no cover
    sys.exit(f"missing test reference: {e}: run scripts/install-deps.sh --test and use its .venv")

# llama.cpp logs every tensor it quantizes: kept from the test's output, and read by
# llama_plan (a dry run's only output).
_LOG = []
_KEEP_LOG = llama_cpp.llama_log_callback(lambda level, text, user_data: _LOG.append(text.decode(errors="replace")))
llama_cpp.llama_log_set(_KEEP_LOG, ctypes.c_void_p(0))

# One thread for llama.cpp: ctest runs another test beside this one, and llama.cpp's
# threads spin at every barrier, which stalls both when they share a core.
THREADS = 1

FILE_TYPES = {"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K_S": 14, "Q4_K_M": 15,
              "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18}


def llama_quantize(src, dst, file_type, pure=False):
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FILE_TYPES[file_type]
    params.nthread = THREADS
    params.allow_requantize = True
    params.pure = pure
    if llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp failed to quantize {src} to {file_type}")


# A dry run's line per tensor: "[  3/ 21]  token_embd.weight - [ 2048, 128256, 1, 1], type =
# f16, size = 501.000 MiB -> 205.43 MiB (q6_K)"; a tensor kept as it is has no "(type)".
_PLAN_LINE = re.compile(r"\[\s*\d+/\s*(\d+)\]\s+(\S+)\s+- \[[^\]]*\], type =\s*(\w+), size =[^\n(]*(?:\((\w+)\))?\n")


def llama_plan(src, file_type, pure=False):
    """The type llama.cpp's quantizer chooses for each tensor, from its dry run (no file is
    quantized or written: a real run of the larger presets took most of this test's time)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FILE_TYPES[file_type]
    params.allow_requantize = True
    params.pure = pure
    params.dry_run = True
    _LOG.clear()
    if llama_cpp.llama_model_quantize(src.encode(), os.devnull.encode(), ctypes.byref(params)) != 0:
        raise RuntimeError(f"llama.cpp failed to plan {src} as {file_type}")
    lines = _PLAN_LINE.findall("".join(_LOG))
    if not lines or len(lines) != int(lines[0][0]):
        raise RuntimeError(f"read {len(lines)} tensor lines of llama.cpp's dry run of {src}; its log format changed?")
    return {name: (new or old).upper() for _, name, old, new in lines}


def table(path):
    return {t.name: (t.tensor_type.name, [int(x) for x in t.shape]) for t in GGUFReader(path).tensors}


def meta(path):
    out = {}
    for key, field in GGUFReader(path).fields.items():
        if key.startswith("GGUF."):
            continue
        value = len(field.data) if field.types[0] == GGUFValueType.ARRAY else field.contents()
        out[key] = (tuple(field.types), value)
    return out


def dry_run_table(edgerun, plugin_args, src, how):
    out = subprocess.run([edgerun, "quantize", *plugin_args, src, "--dry-run", *how], check=True,
                         capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        if " -> " in line and not line.startswith(("Q", "F")):
            fields = line.split()
            result[fields[0]] = fields[-1]
    return result


class Checker:
    def __init__(self):
        self.failures = 0

    def same_tables(self, label, ours, theirs):
        if ours == theirs:
            print(f"ok   {label}: {len(ours)} tensors, identical tables")
            return
        self.failures += 1
        diff = sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))
        print(f"FAIL {label}: {len(diff)} tensors differ, e.g.")
        for n in diff[:8]:
            print(f"       {n}: ours {ours.get(n)} llama.cpp {theirs.get(n)}")


def check_behaviour(check, label, path):
    """A synthesized model must give finite logits and a clear top-1 margin when decoding
    greedily (the property backends' greedy comparisons rely on)."""
    import numpy as np
    model = llama_cpp.Llama(model_path=path, n_ctx=256, n_threads=THREADS, verbose=False, logits_all=True)
    out = model.create_completion("The quick brown fox jumps over the lazy dog", max_tokens=16, temperature=0,
                                  top_k=1, repeat_penalty=1.0, logprobs=2)
    gaps = [sorted(d.values())[-1] - sorted(d.values())[-2] for d in out["choices"][0]["logprobs"]["top_logprobs"]]
    finite = bool(np.isfinite(np.array(model.scores[: model.n_tokens])).all())
    del model
    ok = finite and len(gaps) == 16 and min(gaps) > 1.0
    check.failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {label}: finite logits {finite}, greedy top-1 margins {min(gaps):.2f}.."
          f"{max(gaps):.2f} nats over {len(gaps)} tokens")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--plugin-dir", action="append", default=[])
    ap.add_argument("--smollm2", required=True)
    ap.add_argument("--slow", action="store_true", default=os.environ.get("EDGERUN_SLOW_TESTS") == "1")
    args = ap.parse_args()
    args.smollm2 = model_path(args.smollm2)
    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    check = Checker()
    work = tempfile.mkdtemp(prefix="edgerun-tables-")
    atexit.register(shutil.rmtree, work, True)  # half a GB of models: gone however the run ends
    theirs_path = os.path.join(work, "llama.gguf")

    # 1. The real model, every file type (both sides' dry runs) and one real file.
    for ft in FILE_TYPES:
        theirs = llama_plan(args.smollm2, ft)
        check.same_tables(f"SmolLM2 {ft}", dry_run_table(args.edgerun, plugin_args, args.smollm2, ["--type", ft]), theirs)
    for pure in ["Q4_K", "Q8_0"]:
        theirs = llama_plan(args.smollm2, {"Q4_K": "Q4_K_M", "Q8_0": "Q8_0"}[pure], pure=True)
        check.same_tables(f"SmolLM2 --pure {pure}", dry_run_table(args.edgerun, plugin_args, args.smollm2, ["--pure", pure]), theirs)

    ours_path = os.path.join(work, "ours.gguf")
    subprocess.run([args.edgerun, "quantize", *plugin_args, args.smollm2, ours_path, "--type", "Q4_K_M"], check=True)
    llama_quantize(args.smollm2, theirs_path, "Q4_K_M")
    check.same_tables("SmolLM2 Q4_K_M written file", table(ours_path), table(theirs_path))
    # The dry run read above is what the real run writes.
    check.same_tables("llama.cpp's Q4_K_M dry run against its written file", llama_plan(args.smollm2, "Q4_K_M"),
                      {n: t for n, (t, _) in table(theirs_path).items()})
    if meta(ours_path) != meta(theirs_path):
        check.failures += 1
        a, b = meta(ours_path), meta(theirs_path)
        print("FAIL SmolLM2 Q4_K_M metadata differs:", sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))
    else:
        print("ok   SmolLM2 Q4_K_M metadata: same keys, types and values as llama.cpp's output")
    model = llama_cpp.Llama(model_path=ours_path, n_ctx=128, n_threads=THREADS, verbose=False)
    text = model("The capital of France is", max_tokens=8, temperature=0)["choices"][0]["text"]
    print(f"ok   llama.cpp loads our Q4_K_M file and generates {text!r}")
    del model

    # 2. Synthesized presets: our file against llama.cpp's quantization of the F16 one.
    presets = [("smollm2-135m", 0), ("qwen3-0.6b", 2), ("llama3.2-1b", 2)]
    if args.slow:
        presets = [(p, 0) for p in ("smollm2-135m", "qwen3-0.6b", "llama3.2-1b")] + [("qwen3-1.7b", 8), ("qwen3-4b", 8), ("llama3.2-3b", 8)]
    for preset, layers in presets:
        layer_args = ["--layers", str(layers)] if layers else []
        f16_path = os.path.join(work, "f16.gguf")
        subprocess.run([args.edgerun, "synth", *plugin_args, "--preset", preset, "--type", "F16", *layer_args, "-o", f16_path], check=True)
        for ft in (["Q4_K_M", "Q6_K", "Q8_0", "Q5_K_M"] if args.slow else ["Q4_K_M"]):
            subprocess.run([args.edgerun, "synth", *plugin_args, "--preset", preset, "--type", ft, *layer_args, "-o", ours_path], check=True)
            plan, shapes = llama_plan(f16_path, ft), table(f16_path)
            theirs = {n: (plan.get(n), shape) for n, (_, shape) in shapes.items()}
            check.same_tables(f"synth {preset} {ft} ({layers or 'all'} layers)", table(ours_path), theirs)
            if ft == "Q4_K_M":
                check_behaviour(check, f"synth {preset} {ft}", ours_path)
        os.remove(f16_path)

    print("FAIL" if check.failures else "PASS")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
