#!/usr/bin/env python3
"""The models level's bounds must admit llama.cpp's own rounding.

The bounds say a backend may round activations to 8 bits inside its quantized dot products
(llama.cpp's Q8_1 and Q8_K, cuda_orin's `activations=q8`). This measures what that rounding
does in the reference peer itself: llama.cpp (llama-cpp-python, CPU) against cpu_ref on
the same synthesized models and tokens, teacher-forced, with the suite's own statistics
(conformance/metrics.cpp: the reference's logit sd, KL(reference || candidate), top-1 over
positions whose reference gap is at least the near-tie gap), under both of the suite's
comparisons: the same cache type (both F32) and an INT8 cache against F16 (llama.cpp's
q8_0 cache, one scale per 32 values like cuda_orin's, against cpu_ref's F16). The bounds
are read from `edgerun-conformance thresholds`. Fails when llama.cpp exceeds a bound (the
bound would call the peer's arithmetic a fault), or when it shows no rounding at all (max
|logit diff| under 0.01 sd: then nothing was measured).

    check_bounds_admit_llamacpp.py --edgerun BIN --conformance BIN --models-dir DIR
        [--models smollm2-135m-Q6_K,...] [--tokens 48] [--threads 2]
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

try:
    import llama_cpp
except ImportError as e:
    print(f"SKIP: llama-cpp-python is missing ({e})")
    sys.exit(77)

_QUIET = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))

# llama.cpp's CPU build dots K-quants against 256-value 8-bit blocks (Q8_K), the others
# against 32-value blocks (Q8_1/Q8_0): the K-quant files are where its noise is largest.
DEFAULT_MODELS = ("smollm2-135m-Q5_K_M,smollm2-135m-Q6_K,qwen3-0.6b-Q4_K_M,qwen3-0.6b-Q5_K_M,"
                  "smollm2-135m-Q4_1,qwen2.5-0.5b-Q8_0")


# (label in `edgerun-conformance thresholds`, llama.cpp's cache type, cpu_ref's cache type)
COMPARISONS = [("same cache type", 0, "f32"),      # GGML_TYPE_F32 against F32
               ("INT8 vs F16 cache", 8, "f16")]   # GGML_TYPE_Q8_0 against F16


def model_bounds(conformance, label):
    out = subprocess.run([conformance, "thresholds"], check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("models") and label in l)
    pattern = (r"top-1 >= ([\d.]+)%, mean KL <= ([\d.e+-]+), max KL <= ([\d.e+-]+), "
               r"max \|dlogit\| <= ([\d.]+) sd, near-tie gap < ([\d.]+)")
    top1, mean_kl, max_kl, max_sd, tie = map(float, re.search(pattern, line).groups())
    return {"top1": top1 / 100, "mean_kl": mean_kl, "max_kl": max_kl, "max_sd": max_sd, "tie": tie}


def words_tokens(model, n, seed):
    vocab = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=False)
    rng = np.random.default_rng(seed)
    text = " ".join("".join(rng.choice(list("etaoinshrdlcumwfgypbvk"), size=rng.integers(2, 7))) for _ in range(4 * n))
    return vocab.tokenize(text.encode(), add_bos=False)[:n]


def llamacpp_logits(model, tokens, threads, cache_type):
    # A quantized V cache needs llama.cpp's flash attention.
    llm = llama_cpp.Llama(model_path=model, n_ctx=max(256, len(tokens)), n_batch=len(tokens), n_threads=threads,
                          logits_all=True, verbose=False, type_k=cache_type, type_v=cache_type,
                          flash_attn=cache_type != 0)
    llm.eval(tokens)
    return np.array(llm.scores[: len(tokens)], dtype=np.float64)


def cpu_ref_logits(edgerun, model, tokens, threads, kv_type, work):
    out = os.path.join(work, "cpu_ref.npy")
    subprocess.run([edgerun, "eval", "-m", model, "--backend", "cpu_ref", "--threads", str(threads), "--ctx-size",
                    str(max(256, len(tokens))), "--kv-type", kv_type, "--tokens", " ".join(map(str, tokens)),
                    "--logits-out", out], check=True, stderr=subprocess.DEVNULL)
    return np.load(out).astype(np.float64)


def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def statistics(cand, ref, tie_gap):
    """conformance/metrics.cpp's per-sequence figures, the reference being cpu_ref."""
    sd = np.sqrt(((ref - ref.mean(axis=1, keepdims=True)) ** 2).mean(axis=1))
    lp, lq = log_softmax(ref), log_softmax(cand)
    kl = np.maximum(0.0, (np.exp(lp) * (lp - lq)).sum(axis=1))
    top2 = np.sort(ref, axis=1)[:, -2:]
    decisive = (top2[:, 1] - top2[:, 0]) >= tie_gap
    agree = cand.argmax(axis=1) == ref.argmax(axis=1)
    return {"top1": float(agree[decisive].mean()) if decisive.any() else 1.0, "mean_kl": float(kl.mean()),
            "max_kl": float(kl.max()), "max_sd": float((np.abs(cand - ref).max(axis=1) / sd).max())}


def check_comparison(args, label, llamacpp_cache, cpu_ref_cache, work):
    bounds = model_bounds(args.conformance, label)
    print(f"\n{label}: top-1 >= {100 * bounds['top1']:.1f}%, mean KL <= {bounds['mean_kl']:.0e}, "
          f"max KL <= {bounds['max_kl']:.0e}, max |dlogit| <= {bounds['max_sd']:.2f} sd")
    print(f"{'llama.cpp vs cpu_ref kv=' + cpu_ref_cache:36s} {'top-1':>8s} {'mean KL':>9s} {'max KL':>9s} {'max|d|sd':>8s}")
    problems, worst = [], {k: 0.0 for k in ("mean_kl", "max_kl", "max_sd")}
    for name in args.models.split(","):
        model = os.path.join(args.models_dir, name + args.suffix)
        if not os.path.exists(model):
            problems.append(f"{model}: no such file (the conformance_models fixture makes it)")
            continue
        tokens = words_tokens(model, args.tokens, args.seed)
        s = statistics(llamacpp_logits(model, tokens, args.threads, llamacpp_cache),
                       cpu_ref_logits(args.edgerun, model, tokens, args.threads, cpu_ref_cache, work), bounds["tie"])
        print(f"{name:36s} {100 * s['top1']:7.2f}% {s['mean_kl']:9.2e} {s['max_kl']:9.2e} {s['max_sd']:8.3f}")
        for key in worst:
            worst[key] = max(worst[key], s[key])
            if s[key] > bounds[key]:
                problems.append(f"{label}, {name}: llama.cpp's {key} {s[key]:.3g} exceeds the bound {bounds[key]:.3g}")
        if s["top1"] < bounds["top1"]:
            problems.append(f"{label}, {name}: llama.cpp's top-1 {100 * s['top1']:.2f}% is under "
                            f"{100 * bounds['top1']:.1f}%")
        if s["max_sd"] < 0.01:
            problems.append(f"{label}, {name}: llama.cpp matches cpu_ref to {s['max_sd']:.2g} sd: it rounded "
                            "nothing, so this model measures no 8-bit noise")
    print("bound over llama.cpp's worst: " + ", ".join(f"{k} {bounds[k] / worst[k]:.1f}x" for k in worst if worst[k] > 0))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--conformance", required=True)
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--models", default=DEFAULT_MODELS, help="synthesized model names (without -l2-v4096.gguf)")
    ap.add_argument("--suffix", default="-l2-v4096.gguf")
    ap.add_argument("--tokens", type=int, default=48, help="teacher-forced positions (the suite's default)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    problems = []
    with tempfile.TemporaryDirectory(prefix="edgerun-peer-noise-") as work:
        for label, llamacpp_cache, cpu_ref_cache in COMPARISONS:
            problems += check_comparison(args, label, llamacpp_cache, cpu_ref_cache, work)
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
