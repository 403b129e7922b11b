#!/usr/bin/env python3
"""cpu_ref against llama.cpp (through llama-cpp-python) on a real model.

Against two builds of llama.cpp over the same weights: the model as it is (quantized),
and an F32 copy of it (see below). Two checks, both on the same token sequences:
  greedy   edgerun and llama.cpp each generate N tokens greedily from the same prompt; the
           tokens must be identical, or first differ at a position where llama.cpp's own
           top-2 logit gap is below --max-gap (there the two are equally right).
  logits   teacher-forced logits of prompt + llama.cpp's continuation, position by
           position: top-1 agreement and the absolute differences.

llama.cpp's CPU backend rounds activations to 8 bits inside its quantized dot products,
so its logits carry noise that an FP32 reference does not. The script measures that
noise independently: it writes an F32 copy of the model (every tensor dequantized with
the `gguf` package) and runs llama.cpp on it, where its dot products are FP32. Then
  llama.cpp(quantized) vs llama.cpp(F32 copy)   = llama.cpp's activation-rounding noise
  cpu_ref(quantized)   vs llama.cpp(F32 copy)   = what is left between the two runtimes
Failing: any greedy divergence from the F32 build where its top-2 gap is >= --max-gap;
a divergence from the quantized build where its gap is >= --max-gap, unless the quantized
build itself leaves its F32 build's path at that same token while edgerun stays on it
(its 8-bit activations flipped the token, and the margin and that noise are reported);
logits further than --max-logit-diff from the F32 build. Exit status 1 when a check fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea, there lived",
    "Water boils at 100 degrees Celsius. In Fahrenheit, that is",
    "<|im_start|>user\nWhat is the tallest mountain in the world?<|im_end|>\n<|im_start|>assistant\n",
    "Les fleurs du jardin sont",
    "1, 1, 2, 3, 5, 8, 13,",
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def f32_copy(src, dst):
    """Every tensor of `src` dequantized to F32, all metadata kept."""
    import gguf

    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"]
    writer = gguf.GGUFWriter(dst, bytes(arch.parts[arch.data[0]]).decode())
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        value_type = field.types[0]
        if value_type == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == gguf.GGUFValueType.STRING:
                value = [bytes(field.parts[i]).decode("utf-8", errors="surrogateescape") for i in field.data]
            else:
                value = [field.parts[i].tolist()[0] for i in field.data]
            writer.add_array(field.name, value)
        elif value_type == gguf.GGUFValueType.STRING:
            writer.add_string(field.name, bytes(field.parts[field.data[0]]).decode())
        else:
            writer.add_key_value(field.name, field.parts[field.data[0]].tolist()[0], value_type)
    writer.add_uint32("general.file_type", 0)
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        writer.add_tensor(t.name, values.reshape([int(d) for d in reversed(t.shape)]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


class LlamaCpp:
    def __init__(self, path, n_ctx, threads):
        import llama_cpp

        self.llm = llama_cpp.Llama(path, n_ctx=n_ctx, n_batch=512, n_threads=threads, logits_all=True,
                                   flash_attn=False, verbose=False)  # KV cache: llama.cpp's default, F16
        # The checks ask for the same sequence's logits several times (where the runtimes'
        # greedy paths agree, as they mostly do): each sequence is evaluated once.
        self.known_logits = {}

    def tokenize(self, text):
        return self.llm.tokenize(text.encode(), add_bos=True, special=True)

    def logits(self, tokens):
        key = tuple(tokens)
        if key not in self.known_logits:
            self.llm.reset()
            self.llm.eval(tokens)
            self.known_logits[key] = np.array(self.llm.scores[: len(tokens)], dtype=np.float32)
        return self.known_logits[key]

    def greedy(self, prompt, n):
        self.llm.reset()
        self.llm.eval(prompt)
        out = []
        for _ in range(n):
            token = int(np.argmax(self.llm.scores[self.llm.n_tokens - 1]))
            out.append(token)
            self.llm.eval([token])
        return out


def edgerun_greedy(args, prompt_text, n, workdir):
    tokens_out = os.path.join(workdir, "tokens.json")
    cmd = [args.edgerun, "-m", args.model, "--backend", args.backend, "-p", prompt_text, "-n", str(n), "--temp", "0",
           "--ignore-eos", "--threads", str(args.threads), "--kv-type", args.kv_type, "--tokens-out", tokens_out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with open(tokens_out) as f:
        result = json.load(f)
    return result["prompt"], result["generated"]


_EDGERUN_LOGITS = {}  # by token sequence: one model, backend and KV type a run


def edgerun_logits(args, tokens, workdir):
    """edgerun's teacher-forced logits of `tokens`, each sequence evaluated once."""
    if tuple(tokens) in _EDGERUN_LOGITS:
        return _EDGERUN_LOGITS[tuple(tokens)]
    out = os.path.join(workdir, "logits.npy")
    subprocess.run([args.edgerun, "eval", "-m", args.model, "--backend", args.backend, "--threads", str(args.threads),
                    "--kv-type", args.kv_type, "-c", str(len(tokens)), "--tokens", " ".join(map(str, tokens)),
                    "--logits-out", out], check=True, stderr=subprocess.PIPE)
    _EDGERUN_LOGITS[tuple(tokens)] = np.load(out)
    return _EDGERUN_LOGITS[tuple(tokens)]


def top2_gap(row):
    top = np.partition(row, -2)[-2:]
    return float(abs(top[1] - top[0]))


def diff_stats(a, b):
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return {"max_abs": float(d.max()), "rms": float(np.sqrt((d ** 2).mean())),
            "top1_agree": float((a.argmax(1) == b.argmax(1)).mean())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edgerun", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--backend", default="cpu_ref")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-type", default="f16")
    ap.add_argument("-n", type=int, default=64, help="tokens to generate per prompt")
    ap.add_argument("--max-gap", type=float, default=0.1)
    ap.add_argument("--max-logit-diff", type=float, default=0.1,
                    help="largest |logit difference| allowed against llama.cpp's FP32 path")
    ap.add_argument("--prompts", type=int, default=len(PROMPTS))
    ap.add_argument("--workdir", default=None, help="keep the F32 copy here between runs")
    ap.add_argument("--json", default=None, help="write the report here")
    args = ap.parse_args()

    workdir = args.workdir or tempfile.mkdtemp(prefix="edgerun-llamacpp-")
    os.makedirs(workdir, exist_ok=True)
    f32_path = os.path.join(workdir, os.path.basename(args.model) + ".f32.gguf")
    if not os.path.exists(f32_path):
        log(f"writing the F32 copy {f32_path}")
        f32_copy(args.model, f32_path + ".tmp")
        os.replace(f32_path + ".tmp", f32_path)

    n_ctx = 512
    runtimes = {"llama.cpp": LlamaCpp(args.model, n_ctx, args.threads),
                "llama.cpp-f32": LlamaCpp(f32_path, n_ctx, args.threads)}
    failures, report = [], {"prompts": []}
    for text in PROMPTS[: args.prompts]:
        for known in [_EDGERUN_LOGITS] + [runtime.known_logits for runtime in runtimes.values()]:
            known.clear()  # another prompt, other sequences: hold one prompt's logits at a time
        ours_prompt, ours = edgerun_greedy(args, text, args.n, workdir)
        prompt = runtimes["llama.cpp"].tokenize(text)
        if ours_prompt != prompt:
            failures.append(f"{text!r}: prompt tokens differ: edgerun {ours_prompt} llama.cpp {prompt}")
            continue
        entry = {"prompt": text, "prompt_tokens": len(prompt)}
        greedy = {name: runtime.greedy(prompt, args.n) for name, runtime in runtimes.items()}
        # llama.cpp against itself: where its quantized build leaves its F32 build's greedy
        # path (its 8-bit activations flipping a token), and the F32 build's top-2 gap there.
        own = next((i for i in range(args.n) if greedy["llama.cpp"][i] != greedy["llama.cpp-f32"][i]), None)
        if own is not None:
            f32_logits = runtimes["llama.cpp-f32"].logits(prompt + greedy["llama.cpp-f32"])
            entry["llamacpp_self_divergence"] = {"position": own,
                                                 "f32_top2_gap": top2_gap(f32_logits[len(prompt) + own - 1])}
        for name, runtime in runtimes.items():
            theirs = greedy[name]
            sequence = prompt + theirs
            their_logits = runtime.logits(sequence)
            ours_logits = edgerun_logits(args, sequence, workdir)
            other = runtimes["llama.cpp-f32" if name == "llama.cpp" else "llama.cpp"].logits(sequence)
            result = {"logits": diff_stats(ours_logits, their_logits), "matched": args.n}
            divergence = next((i for i in range(args.n) if ours[i] != theirs[i]), None)
            if divergence is not None:
                row = len(prompt) + divergence - 1
                pair = [theirs[divergence], ours[divergence]]
                gap = top2_gap(their_logits[row])
                # How far the runtime's own two builds (8-bit activations vs FP32) move the
                # gap between these two tokens at this position: its noise here.
                noise = abs((their_logits[row][pair[0]] - their_logits[row][pair[1]]) -
                            (other[row][pair[0]] - other[row][pair[1]]))
                result.update(matched=divergence, divergence={
                    "position": divergence, "edgerun": ours[divergence], name: theirs[divergence],
                    "their_top2_gap": gap, "edgerun_top2_gap": top2_gap(ours_logits[row]),
                    "their_noise_on_gap": float(noise)})
                # A divergence is a tie the two runtimes broke differently when the
                # reference's own margin is below --max-gap. From the quantized build it is
                # also llama.cpp's own noise, not a fault of ours, when that build leaves
                # its own F32 build's path at this very token (while we still follow it).
                own_noise = name == "llama.cpp" and own == divergence and \
                    ours[:divergence + 1] == greedy["llama.cpp-f32"][:divergence + 1]
                if gap >= args.max_gap and not own_noise:
                    failures.append(f"{text!r}: diverges from {name} at generated token {divergence} "
                                    f"(edgerun {ours[divergence]}, {name} {theirs[divergence]}) where its top-2 gap "
                                    f"{gap:.3f} >= {args.max_gap}")
            if name == "llama.cpp-f32" and result["logits"]["max_abs"] > args.max_logit_diff:
                failures.append(f"{text!r}: logits differ from llama.cpp's FP32 path by up to "
                                f"{result['logits']['max_abs']:.4f} > {args.max_logit_diff}")
            entry[name] = result
        entry["llamacpp_noise"] = diff_stats(runtimes["llama.cpp"].logits(prompt + ours),
                                             runtimes["llama.cpp-f32"].logits(prompt + ours))
        report["prompts"].append(entry)
        q, f = entry["llama.cpp"], entry["llama.cpp-f32"]
        log(f"{text[:36]!r:40} vs llama.cpp: matched {q['matched']:2d}/{args.n}, top-1 {q['logits']['top1_agree']:.3f}, "
            f"max|d| {q['logits']['max_abs']:.3f} | vs llama.cpp FP32: matched {f['matched']:2d}/{args.n}, "
            f"top-1 {f['logits']['top1_agree']:.3f}, max|d| {f['logits']['max_abs']:.4f} | "
            f"llama.cpp's own noise max|d| {entry['llamacpp_noise']['max_abs']:.3f}")
        for name in runtimes:
            if "divergence" in entry[name]:
                log(f"    {name} divergence: {entry[name]['divergence']}")
        if "llamacpp_self_divergence" in entry:
            log(f"    llama.cpp quantized vs its own F32 build: {entry['llamacpp_self_divergence']}")

    report["failures"] = failures
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    for failure in failures:
        log("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
