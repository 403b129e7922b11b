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
import os
import subprocess
import sys
import tempfile

import numpy as np

import llama_cpp

PRESETS = "qwen3-0.6b,qwen3-1.7b,qwen3-4b,llama3.2-1b,llama3.2-3b,smollm2-135m"


def llama_logits(path, tokens, threads):
    model = llama_cpp.Llama(model_path=path, n_ctx=max(512, len(tokens)), n_batch=len(tokens), n_threads=threads,
                            logits_all=True, verbose=False)
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
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workdir")
    args = ap.parse_args()

    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    work = args.workdir or tempfile.mkdtemp(prefix="edgerun-xcheck-")
    failed = False
    print(f"| preset | layers | type | max abs diff / std | top-1 agree | min margin (std) |")
    print(f"|---|---|---|---|---|---|")
    for preset in args.presets.split(","):
        path = os.path.join(work, f"{preset}-{args.type}.gguf")
        cmd = [args.edgerun, "synth", *plugin_args, "--preset", preset, "--type", args.type, "--seed", str(args.seed),
               "-o", path]
        if args.layers:
            cmd += ["--layers", str(args.layers)]
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        # Ordinary tokens from across the vocabulary, the same for both runtimes.
        vocab = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        rng = np.random.default_rng(args.seed)
        text = " ".join("".join(rng.choice(list("etaoinshrdlcumwfgypbvk"), size=rng.integers(2, 7))) for _ in range(400))
        tokens = vocab.tokenize(text.encode(), add_bos=False)[: args.tokens]
        del vocab

        theirs = llama_logits(path, tokens, args.threads)
        npy = os.path.join(work, f"{preset}.npy")
        subprocess.run([args.edgerun, "eval", *plugin_args, "-m", path, "--backend", args.backend, "--threads",
                        str(args.threads), "--ctx-size", str(max(512, len(tokens))), "--tokens",
                        " ".join(map(str, tokens)), "--logits-out", npy], check=True, stderr=subprocess.DEVNULL)
        ours = np.load(npy).astype(np.float64)
        std = theirs.std(axis=1, keepdims=True)
        rel = float((np.abs(ours - theirs) / std).max())
        agree = float((ours.argmax(1) == theirs.argmax(1)).mean())
        top2 = np.sort(theirs, axis=1)[:, -2:]
        margin = float(((top2[:, 1] - top2[:, 0]) / std[:, 0]).min())
        ok = rel <= args.tolerance and agree == 1.0 and np.isfinite(ours).all()
        failed |= not ok
        print(f"| {preset} | {args.layers or 'all'} | {args.type} | {rel:.2e} | {100 * agree:.1f}% | {margin:.2f} |"
              + ("" if ok else " FAIL"))
        os.remove(path)
        os.remove(npy)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
