#!/usr/bin/env python3
"""The stress models are fair tests: cpu_ref computes them right, and they reach the regime
they are named for.

For each model file: a float64 numpy forward pass over the weights as the PyPI package
gguf decodes them (llama, qwen2 and qwen3 written out plainly: a softmax that subtracts
its maximum, RMSNorm with the file's epsilon) against cpu_ref's logits through the real
binary (`edgerun eval`, F32 KV cache). On the way it measures the two regimes:
  eps share   the largest eps / (mean square + eps) over every RMSNorm input row: how much
              the epsilon changes a normalised value (1e-6 over a mean square of 1e-6: 50%)
  max score   the largest attention score (after the 1/sqrt(head_dim) scale); past 88.7
              exp() overflows in F32 unless the softmax subtracts the maximum

    check_stress_models.py EDGERUN [--expect REGIME] MODEL [[--expect REGIME] MODEL ...]

--expect attention-scale: the max score must exceed 88.7 (log of the largest float);
--expect small-activations: the eps share must exceed 0.3;
--expect plain: neither (the plain models stay clear of both regimes).
"""
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader
from gguf import quants

LOG_FLT_MAX = np.log(np.finfo(np.float32).max)  # 88.72
# Token ids of no particular text (every synthesized vocabulary has 4096 or more).
TOKENS = [1, 504, 2754, 1090, 16, 3150, 28, 260, 3937, 6, 3828, 253, 1218, 2125, 30, 1250, 2161, 355, 3290, 2097,
          23, 5, 3432, 12, 80, 77, 1999, 402, 9, 3000, 17, 641]


def field(reader, key, default=None):
    if key not in reader.fields:
        return default
    f = reader.fields[key]
    if f.types and f.types[0].name == "STRING":
        return bytes(f.parts[f.data[0]]).decode()
    return f.parts[f.data[0]][0]


class Stats:
    def __init__(self):
        self.eps_share = 0.0
        self.max_score = -np.inf

    def norm(self, x, g, eps):
        ms = np.mean(x * x, axis=-1, keepdims=True)
        self.eps_share = max(self.eps_share, float(np.max(eps / (ms + eps))))
        return x / np.sqrt(ms + eps) * g


def load(path):
    reader = GGUFReader(path)
    arch = field(reader, "general.architecture")
    hp = {
        "arch": arch,
        "n_layer": int(field(reader, f"{arch}.block_count")),
        "n_head": int(field(reader, f"{arch}.attention.head_count")),
        "n_head_kv": int(field(reader, f"{arch}.attention.head_count_kv")),
        "eps": float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "base": float(field(reader, f"{arch}.rope.freq_base")),
        "head_dim": field(reader, f"{arch}.attention.key_length"),
    }
    weights = {}
    for t in reader.tensors:
        values = quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        weights[t.name] = values.reshape(-1, int(t.shape[0])) if len(t.shape) > 1 else values.reshape(-1)
    if hp["head_dim"] is None:
        hp["head_dim"] = weights["blk.0.attn_q.weight"].shape[0] // hp["n_head"]
    hp["head_dim"] = int(hp["head_dim"])
    return hp, weights


def rope(x, n_head, d, base, neox, factors):
    t = x.shape[0]
    x = x.reshape(t, n_head, d)
    freq = base ** (-2.0 * np.arange(d // 2) / d)
    if factors is not None:
        freq = freq / factors
    theta = np.arange(t)[:, None] * freq  # t x d/2
    c, s = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    a, b = (x[..., : d // 2], x[..., d // 2:]) if neox else (x[..., 0::2], x[..., 1::2])
    ra, rb = a * c - b * s, a * s + b * c
    out = np.empty_like(x)
    if neox:
        out[..., : d // 2], out[..., d // 2:] = ra, rb
    else:
        out[..., 0::2], out[..., 1::2] = ra, rb
    return out.reshape(t, n_head * d)


def forward(hp, w, tokens, stats):
    neox = hp["arch"] in ("qwen2", "qwen3")
    eps, n_head, n_kv, d = hp["eps"], hp["n_head"], hp["n_head_kv"], hp["head_dim"]
    factors = w.get("rope_freqs.weight")
    t = len(tokens)
    x = w["token_embd.weight"][tokens]
    for l in range(hp["n_layer"]):
        p = f"blk.{l}."
        h = stats.norm(x, w[p + "attn_norm.weight"], eps)
        q, k, v = (h @ w[p + f"attn_{n}.weight"].T + w.get(p + f"attn_{n}.bias", 0.0) for n in "qkv")
        if p + "attn_q_norm.weight" in w:
            q = stats.norm(q.reshape(t, n_head, d), w[p + "attn_q_norm.weight"], eps).reshape(t, -1)
            k = stats.norm(k.reshape(t, n_kv, d), w[p + "attn_k_norm.weight"], eps).reshape(t, -1)
        q = rope(q, n_head, d, hp["base"], neox, factors).reshape(t, n_head, d)
        k = rope(k, n_kv, d, hp["base"], neox, factors).reshape(t, n_kv, d)
        v = v.reshape(t, n_kv, d)
        out = np.zeros_like(q)
        causal = np.triu(np.ones((t, t), dtype=bool), 1)
        for head in range(n_head):
            g = head // (n_head // n_kv)
            scores = q[:, head] @ k[:, g].T / np.sqrt(d)
            scores[causal] = -np.inf
            stats.max_score = max(stats.max_score, float(scores.max()))
            probs = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[:, head] = (probs / probs.sum(axis=1, keepdims=True)) @ v[:, g]
        x = x + out.reshape(t, -1) @ w[p + "attn_output.weight"].T
        f = stats.norm(x, w[p + "ffn_norm.weight"], eps)
        gate, up = f @ w[p + "ffn_gate.weight"].T, f @ w[p + "ffn_up.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
    head_weights = w.get("output.weight", w["token_embd.weight"])
    return stats.norm(x, w["output_norm.weight"], eps) @ head_weights.T


def cpu_ref_logits(edgerun, model, tokens, batch):
    with tempfile.NamedTemporaryFile(suffix=".npy") as out:
        subprocess.run([edgerun, "eval", "--backend", "cpu_ref", "-m", model, "--kv-type", "f32", "-t", "2",
                        "-b", str(batch), "--tokens", " ".join(map(str, tokens)), "--logits-out", out.name],
                       check=True)
        return np.load(out.name).astype(np.float64)


def check(edgerun, model, expect):
    hp, weights = load(model)
    stats = Stats()
    want = forward(hp, weights, TOKENS, stats)
    failures = []
    span = want.max() - want.min()
    for batch in (len(TOKENS), 5):  # one prefill step, and several steps of 5
        got = cpu_ref_logits(edgerun, model, TOKENS, batch)
        worst = np.abs(got - want).max()
        agree = np.mean(got.argmax(axis=1) == want.argmax(axis=1))
        print(f"  batch {batch}: max |cpu_ref - numpy| {worst:.2e} = {worst / span:.2e} of the logit range {span:.1f}; "
              f"argmax agrees at {agree:.0%} of positions")
        if not np.all(np.isfinite(got)):
            failures.append("cpu_ref's logits are not all finite")
        elif not worst <= 2e-5 * span or agree < 1.0:
            failures.append(f"cpu_ref is further from the float64 reference than F32 rounding explains (batch {batch})")
    print(f"  eps share {stats.eps_share:.3f} (eps {hp['eps']:g}); max attention score {stats.max_score:.1f}")
    overflow, small = stats.max_score > LOG_FLT_MAX, stats.eps_share > 0.3
    if expect == "attention-scale" and not overflow:
        failures.append(f"max attention score {stats.max_score:.1f} does not pass {LOG_FLT_MAX:.1f}")
    if expect == "small-activations" and not small:
        failures.append(f"the epsilon's share {stats.eps_share:.3f} does not reach 0.3")
    if expect == "plain" and (overflow or small):
        failures.append("a plain model reaches a stress regime")
    return failures


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    edgerun, items = sys.argv[1], sys.argv[2:]
    expect, failures = None, []
    i = 0
    while i < len(items):
        if items[i] == "--expect":
            expect = items[i + 1]
            if expect not in ("attention-scale", "small-activations", "plain"):
                print(f"--expect {expect}: one of attention-scale, small-activations, plain", file=sys.stderr)
                return 2
            i += 2
            continue
        model = items[i]
        print(f"{model} ({expect or 'no regime expected'}):")
        failures += [f"{model}: {f}" for f in check(edgerun, model, expect)]
        expect = None
        i += 1
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
