#!/usr/bin/env python3
"""Architecture cross-check: llama.cpp and `edgerun eval` on the same synthesized models.

For each preset, synthesizes a model (reduced layers by default), runs a token sequence
through llama.cpp (llama-cpp-python) and through `edgerun eval` on a backend (cpu_ref by
default), and compares the logits of every position: the independent check of the
qwen3 and llama graphs, llama3 RoPE scaling (rope_freqs) included. The sequence is long
enough (--tokens) that the scaled RoPE bands turn by a sizeable angle.

    scripts/crosscheck_synth_llamacpp.py --edgerun build/bin/edgerun [--presets a,b]
        [--type F16] [--layers 4] [--tokens 300] [--tolerance 0.02]

Reported per preset: max |difference| / std of the logits, the share of positions whose
top token agrees, and the smallest top-1 margin (in logit std) llama.cpp saw. Exit 1 when
a preset's worst position exceeds --tolerance or top tokens disagree.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

import llama_cpp

_QUIET = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))

PRESETS = "qwen3-0.6b,qwen3-1.7b,qwen3-4b,llama3.2-1b,llama3.2-3b,smollm2-135m"


def llama_logits(path, tokens, threads, kv_f32):
    kv = {"type_k": 0, "type_v": 0} if kv_f32 else {}  # GGML_TYPE_F32
    model = llama_cpp.Llama(model_path=path, n_ctx=max(512, len(tokens)), n_batch=len(tokens), n_threads=threads,
                            logits_all=True, verbose=False, **kv)
    model.eval(tokens)
    return np.array(model.scores[: len(tokens)], dtype=np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--plugin-dir", action="append", default=[])
    ap.add_argument("--backend", default="cpu_ref")
    ap.add_argument("--presets", default=PRESETS)
    ap.add_argument("--type", default="F16")
    ap.add_argument("--layers", type=int, default=4, help="0: the real model's")
    ap.add_argument("--tokens", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=0.02, help="largest |logit difference| / logit std allowed")
    ap.add_argument("--kv-type", default="f32", choices=["f32", "f16"], help="KV cache type in both runtimes")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workdir")
    ap.add_argument("--models", help="compare these files (comma separated) instead of synthesizing presets")
    ap.add_argument("--text", help="take the tokens from this text file instead of random words")
    args = ap.parse_args()

    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    work = args.workdir or tempfile.mkdtemp(prefix="edgerun-xcheck-")
    os.makedirs(work, exist_ok=True)
    failed = False
    print(f"| preset | layers | type | max abs diff / std | top-1 agree | min margin (std) |")
    print(f"|---|---|---|---|---|---|")
    items = [(os.path.basename(m), m) for m in args.models.split(",")] if args.models else \
        [(p, None) for p in args.presets.split(",")]
    for preset, given in items:
        path = given or os.path.join(work, f"{preset}-{args.type}.gguf")
        if not given:
            cmd = [args.edgerun, "synth", *plugin_args, "--preset", preset, "--type", args.type, "--seed",
                   str(args.seed), "-o", path]
            if args.layers:
                cmd += ["--layers", str(args.layers)]
            subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        # Ordinary tokens from across the vocabulary (or a text), the same for both runtimes.
        vocab = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        rng = np.random.default_rng(args.seed)
        if args.text:
            text = open(args.text, encoding="utf-8").read()
        else:
            text = " ".join("".join(rng.choice(list("etaoinshrdlcumwfgypbvk"), size=rng.integers(2, 7)))
                            for _ in range(400))
        tokens = vocab.tokenize(text.encode(), add_bos=False)[: args.tokens]
        del vocab

        theirs = llama_logits(path, tokens, args.threads, args.kv_type == "f32")
        npy = os.path.join(work, f"{preset}.npy")
        subprocess.run([args.edgerun, "eval", *plugin_args, "-m", path, "--backend", args.backend, "--threads",
                        str(args.threads), "--ctx-size", str(max(512, len(tokens))), "--kv-type", args.kv_type, "--tokens",
                        " ".join(map(str, tokens)), "--logits-out", npy], check=True, stderr=subprocess.DEVNULL)
        ours = np.load(npy).astype(np.float64)
        std = theirs.std(axis=1, keepdims=True)
        rel = float((np.abs(ours - theirs) / std).max())
        agree = float((ours.argmax(1) == theirs.argmax(1)).mean())
        top2 = np.sort(theirs, axis=1)[:, -2:]
        margin = float(((top2[:, 1] - top2[:, 0]) / std[:, 0]).min())
        disagree = ours.argmax(1) != theirs.argmax(1)
        tie = float(((top2[:, 1] - top2[:, 0]) / std[:, 0])[disagree].max()) if disagree.any() else 0.0
        ok = rel <= args.tolerance and agree == 1.0 and np.isfinite(ours).all()
        failed |= not ok
        print(f"| {preset} | {'file' if given else args.layers or 'all'} | {args.type if not given else '-'} | {rel:.2e} "
              f"| {100 * agree:.1f}% | {margin:.2f} |" + ("" if ok else f" FAIL (largest margin where top-1 differs: {tie:.3f} std)"))
        if not given:
            os.remove(path)
        os.remove(npy)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
