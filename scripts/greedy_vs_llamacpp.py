#!/usr/bin/env python3
"""Greedy text of a model file from llama.cpp and from edgerun (cpu_ref by default).

    scripts/greedy_vs_llamacpp.py --edgerun build/bin/edgerun MODEL.gguf [MODEL.gguf ...]
        [--prompt TEXT] [-n 64] [--backend cpu_ref]

Prints both continuations per file and whether they are identical; exit 1 when any differ.
Small models have near-ties (SmolLM2 after "The capital of France is Paris.\n\nThe": 0.11
nats between two tokens), where the KV cache's rounding alone decides: compare with an
F32 cache (the default here) before suspecting a kernel.
"""
import argparse
import ctypes
import subprocess
import sys

import llama_cpp

_QUIET = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--plugin-dir", action="append", default=[])
    ap.add_argument("--backend", default="cpu_ref")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-type", default="f32", choices=["f32", "f16"], help="KV cache type in both runtimes")
    args = ap.parse_args()
    plugin_args = [a for d in args.plugin_dir for a in ("--plugin-dir", d)]
    differ = 0
    for path in args.models:
        kv = {"type_k": 0, "type_v": 0} if args.kv_type == "f32" else {}  # GGML_TYPE_F32
        model = llama_cpp.Llama(model_path=path, n_ctx=512, n_threads=args.threads, verbose=False, **kv)
        theirs = model.create_completion(args.prompt, max_tokens=args.n, temperature=0, top_k=1, repeat_penalty=1.0)
        theirs = theirs["choices"][0]["text"]
        del model
        ours = subprocess.run([args.edgerun, *plugin_args, "-m", path, "--backend", args.backend, "-p", args.prompt,
                               "-n", str(args.n), "--temp", "0", "--repeat-penalty", "1", "--threads", str(args.threads), "--kv-type", args.kv_type],
                              check=True, capture_output=True, text=True).stdout
        ours = ours[len(args.prompt):] if ours.startswith(args.prompt) else ours
        same = ours.rstrip("\n") == theirs.rstrip("\n")
        differ += not same
        print(f"{path}: {'identical' if same else 'DIFFERENT'}\n  llama.cpp: {theirs!r}\n  edgerun:   {ours!r}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
