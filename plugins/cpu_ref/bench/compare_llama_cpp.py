#!/usr/bin/env python3
"""Compares cpu_ref's logits with llama.cpp's (llama-cpp-python) on a real model.

Runs llama.cpp over the tokens of a prompt (all logits), runs `edgerun eval --backend
cpu_ref` over the same tokens, and prints how far apart they are: the largest
absolute difference relative to the logit range, and how often the argmax agrees.
llama.cpp rounds activations to 8 bits inside its quantized matmuls and cpu_ref does
not, so small differences are expected; the argmax should agree almost everywhere.

    compare_llama_cpp.py MODEL.gguf BUILD/bin/edgerun [--prompt TEXT] [--kv f32|f16]
                         [--llama-model SAME_MODEL_IN_F32.gguf]

With --llama-model pointing at the same weights dequantized to F32 (llama.cpp's
quantizer, ftype ALL_F32, allow_requantize) and --kv f32, llama.cpp's matmuls take F32
activations too, so the two should agree to float rounding.
"""
import argparse
import subprocess
import tempfile

import llama_cpp
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("edgerun")
    ap.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog. Edge devices run language "
                    "models when memory bandwidth allows, and a reference backend tells whether they do it right.")
    ap.add_argument("--kv", default="f16", choices=["f32", "f16"])
    ap.add_argument("--llama-model", default=None)
    args = ap.parse_args()
    model, prompt = args.model, args.prompt
    ggml_type = 0 if args.kv == "f32" else 1
    llm = llama_cpp.Llama(model_path=args.llama_model or model, n_ctx=512, n_batch=512, logits_all=True, n_threads=2,
                          type_k=ggml_type, type_v=ggml_type, verbose=False)
    tokens = llm.tokenize(prompt.encode(), add_bos=True)
    llm.eval(tokens)
    want = np.array(llm.scores[: len(tokens)], dtype=np.float32)
    with tempfile.NamedTemporaryFile(suffix=".npy") as out:
        subprocess.run([args.edgerun, "eval", "--backend", "cpu_ref", "-m", model, "--kv-type", args.kv,
                        "-b", str(len(tokens)), "--tokens", " ".join(map(str, tokens)), "--logits-out", out.name],
                       check=True, stderr=subprocess.DEVNULL)
        got = np.load(out.name).reshape(want.shape)
    span = float(want.max() - want.min())
    diff = np.abs(got - want)
    agree = float(np.mean(got.argmax(axis=1) == want.argmax(axis=1)))
    top5 = np.mean([len(set(np.argsort(-g)[:5]) & set(np.argsort(-w)[:5])) / 5 for g, w in zip(got, want)])
    print(f"{len(tokens)} tokens, vocab {want.shape[1]}: max |diff| {diff.max():.4f} "
          f"({diff.max() / span:.2e} of the logit range {span:.1f}), mean |diff| {diff.mean():.4f}, "
          f"argmax agrees {agree:.1%}, top-5 overlap {top5:.1%}")


if __name__ == "__main__":
    main()
