#!/usr/bin/env python3
"""KL divergence of a quantized model's next-token distribution against its source.

Runs the source and each quantized file through llama.cpp (llama-cpp-python) on the same
text, in windows of --ctx tokens, and reports per file the mean KL(P_source || P_quant)
over all positions, the share of positions whose top token agrees, and the perplexity.
The default text is the GPL-3 from Debian's base-files package
(/usr/share/common-licenses/GPL-3), so every Debian machine has it.

    scripts/kl_quant_llamacpp.py SOURCE.gguf QUANT.gguf [QUANT.gguf ...] [--tokens 4096]
"""
import argparse
import sys

import numpy as np

import llama_cpp

DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def window_logprobs(path, windows, ctx, threads):
    model = llama_cpp.Llama(model_path=path, n_ctx=ctx, n_batch=ctx, n_threads=threads, logits_all=True, verbose=False)
    for window in windows:
        model.reset()
        model.eval(window)
        yield log_softmax(np.array(model.scores[: len(window)], dtype=np.float64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("quantized", nargs="+")
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    vocab_only = llama_cpp.Llama(model_path=args.source, vocab_only=True, verbose=False)
    text = open(args.text, encoding="utf-8").read().encode()
    tokens = vocab_only.tokenize(text, add_bos=False)[: args.tokens]
    windows = [tokens[i : i + args.ctx] for i in range(0, len(tokens) - 1, args.ctx)]
    windows = [w for w in windows if len(w) > 1]
    n_positions = sum(len(w) - 1 for w in windows)
    print(f"text: {args.text}, {len(tokens)} tokens in {len(windows)} windows of {args.ctx}")

    source = list(window_logprobs(args.source, windows, args.ctx, args.threads))
    nll_source = -sum(lp[np.arange(len(w) - 1), w[1:]].sum() for lp, w in zip(source, windows)) / n_positions
    print(f"{'file':60s} {'mean KL':>10s} {'top-1 agree':>12s} {'PPL':>8s}")
    print(f"{args.source:60s} {0.0:10.5f} {100.0:11.2f}% {np.exp(nll_source):8.3f}")
    for path in args.quantized:
        kl_sum = agree = nll = 0.0
        for lp_src, lp_q, w in zip(source, window_logprobs(path, windows, args.ctx, args.threads), windows):
            p = np.exp(lp_src[:-1])
            kl_sum += float((p * (lp_src[:-1] - lp_q[:-1])).sum())
            agree += float((lp_src[:-1].argmax(-1) == lp_q[:-1].argmax(-1)).sum())
            nll -= float(lp_q[np.arange(len(w) - 1), w[1:]].sum())
        print(f"{path:60s} {kl_sum / n_positions:10.5f} {100 * agree / n_positions:11.2f}% {np.exp(nll / n_positions):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
