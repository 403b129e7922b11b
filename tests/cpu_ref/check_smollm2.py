#!/usr/bin/env python3
"""cpu_ref on the real model (SmolLM2-135M, llama architecture) against a float64 numpy
forward pass over the weights as the PyPI package gguf dequantizes them: code nobody here
wrote reads and dequantizes the file, and the math is the llama forward pass written
out plainly. cpu_ref runs through the real binary (`edgerun eval`, F32 KV cache).

    check_smollm2.py EDGERUN_BINARY SOURCE_DIR

Exit 77 (skipped) when scripts/fetch-model.sh cannot provide the model.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader
from gguf import quants

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402

# Token ids of no particular text: the check is about the numbers, not the words.
TOKENS = [1, 504, 2754, 1090, 16, 3150, 28, 260, 3937, 6, 3828, 253, 1218, 2125, 30, 1250, 2161, 355, 5290, 2097,
          23, 5, 6432, 12, 80]


def field(reader, key):
    f = reader.fields[key]
    return f.parts[f.data[0]][0]


def load(reader):
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    hp = {
        "n_layer": int(field(reader, f"{arch}.block_count")),
        "n_head": int(field(reader, f"{arch}.attention.head_count")),
        "n_head_kv": int(field(reader, f"{arch}.attention.head_count_kv")),
        "eps": float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "base": float(field(reader, f"{arch}.rope.freq_base")),
    }
    weights = {}
    for t in reader.tensors:
        values = quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        weights[t.name] = values.reshape(-1, int(t.shape[0])) if len(t.shape) > 1 else values.reshape(-1)
    return hp, weights


def rms_norm(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rope(x, n_head, base):  # adjacent pairs (llama), positions 0..T-1
    t, width = x.shape
    d = width // n_head
    x = x.reshape(t, n_head, d // 2, 2)
    theta = np.arange(t)[:, None] * base ** (-2.0 * np.arange(d // 2) / d)
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    out = np.empty_like(x)
    out[..., 0] = x[..., 0] * c - x[..., 1] * s
    out[..., 1] = x[..., 0] * s + x[..., 1] * c
    return out.reshape(t, width)


def forward(hp, w, tokens):
    x = w["token_embd.weight"][tokens]
    t = len(tokens)
    n_head, n_kv = hp["n_head"], hp["n_head_kv"]
    for l in range(hp["n_layer"]):
        p = f"blk.{l}."
        h = rms_norm(x, w[p + "attn_norm.weight"], hp["eps"])
        q = rope(h @ w[p + "attn_q.weight"].T, n_head, hp["base"])
        k = rope(h @ w[p + "attn_k.weight"].T, n_kv, hp["base"])
        v = h @ w[p + "attn_v.weight"].T
        d = q.shape[1] // n_head
        q, k, v = q.reshape(t, n_head, d), k.reshape(t, n_kv, d), v.reshape(t, n_kv, d)
        out = np.zeros_like(q)
        for head in range(n_head):
            g = head // (n_head // n_kv)
            scores = q[:, head] @ k[:, g].T / np.sqrt(d)
            scores[np.triu(np.ones((t, t), dtype=bool), 1)] = -np.inf
            probs = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[:, head] = (probs / probs.sum(axis=1, keepdims=True)) @ v[:, g]
        x = x + out.reshape(t, -1) @ w[p + "attn_output.weight"].T
        f = rms_norm(x, w[p + "ffn_norm.weight"], hp["eps"])
        gate, up = f @ w[p + "ffn_gate.weight"].T, f @ w[p + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
    out = w.get("output.weight", w["token_embd.weight"])
    return rms_norm(x, w["output_norm.weight"], hp["eps"]) @ out.T


def main():
    edgerun, source_dir = sys.argv[1], sys.argv[2]
    model = model_path("@fetch:" + source_dir)
    hp, weights = load(GGUFReader(model))
    want = forward(hp, weights, TOKENS)
    for batch in (len(TOKENS), 7):  # one prefill step (BLAS tiles), and steps of 7, 7, 7, 4
        with tempfile.NamedTemporaryFile(suffix=".npy") as out:
            subprocess.run([edgerun, "eval", "--backend", "cpu_ref", "-m", model, "--kv-type", "f32", "-t", "2",
                            "-b", str(batch), "--tokens", " ".join(map(str, TOKENS)), "--logits-out", out.name],
                           check=True)
            got = np.load(out.name).astype(np.float64)
        span = want.max() - want.min()
        worst = np.abs(got - want).max()
        agree = np.mean(got.argmax(axis=1) == want.argmax(axis=1))
        print(f"batch {batch}: max |cpu_ref - numpy| {worst:.2e} = {worst / span:.2e} of the logit range "
              f"{span:.1f}; argmax agrees at {agree:.0%} of positions")
        if not worst <= 2e-5 * span or agree < 1.0:
            print("FAILED: cpu_ref is further from the float64 reference than F32 rounding explains")
            sys.exit(1)


if __name__ == "__main__":
    main()
