#!/usr/bin/env python3
"""`edgerun inspect` checked against the python gguf package (GGUFReader) and the roofline
formula (bytes per token = weights read + KV cache read + activations) recomputed here from GGUFReader's view of the file.

    check_inspect.py EDGERUN model @fetch:REPO_ROOT|FILE   tensor table, totals, bytes/token, roofline
    check_inspect.py EDGERUN vocab FILE                    a vocabulary-only file: no tensors, no failure
    check_inspect.py EDGERUN errors WORKDIR                bad input: one error line, non-zero exit
"""
import collections
import os
import re
import subprocess
import sys

from gguf import GGUFReader, GGMLQuantizationType

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402

DEVICES = {"orin-nano": 68, "orin-nano-super": 102, "orin-agx": 204, "h100": 3350}


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(edgerun, *args):
    return subprocess.run([edgerun, "inspect", *args], capture_output=True, text=True)


def section(text, title):
    """Lines of the section whose heading starts with `title`, up to the next blank line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title):
            out = []
            for body in lines[i + 1:]:
                if not body.strip():
                    break
                out.append(body)
            return line, out
    fail(f"no section {title!r} in:\n{text}")


def field(reader, key, default=None):
    f = reader.fields.get(key)
    return f.contents() if f is not None else default


def expected_bytes_per_token(reader, ctx, kv_bytes_per_value):
    """Every matrix read once per token (embedding lookups read one row; with tied
    embeddings the LM head reads token_embd once more in full) + KV cache + activations."""
    weights = 0
    names = {t.name for t in reader.tensors}
    for t in reader.tensors:
        if t.name in ("token_embd.weight", "position_embd.weight", "token_types.weight"):
            rows = int(t.n_elements) // int(t.shape[0])
            weights += int(t.n_bytes) // rows
            if t.name == "token_embd.weight" and "output.weight" not in names:
                weights += int(t.n_bytes)
        else:
            weights += int(t.n_bytes)
    arch = field(reader, "general.architecture")
    n_layer = field(reader, f"{arch}.block_count")
    n_head = field(reader, f"{arch}.attention.head_count")
    n_head_kv = field(reader, f"{arch}.attention.head_count_kv", n_head)
    n_embd = field(reader, f"{arch}.embedding_length")
    head_dim_k = field(reader, f"{arch}.attention.key_length", n_embd // n_head)
    head_dim_v = field(reader, f"{arch}.attention.value_length", head_dim_k)
    kv = round(n_layer * n_head_kv * (head_dim_k + head_dim_v) * ctx * kv_bytes_per_value)
    n_vocab = field(reader, f"{arch}.vocab_size") or len(reader.fields["tokenizer.ggml.tokens"].data)
    activations = 4 * (2 * n_layer * n_embd + 2 * n_vocab)
    return weights, kv, activations


def check_cost(out, reader, ctx, kv_bytes_per_value, kv_name, devices):
    heading, lines = section(out, "bytes read per decoded token")
    if f"at context {ctx} (KV cache {kv_name})" not in heading:
        fail(f"heading {heading!r}")
    printed = {}
    for line in lines:
        match = re.match(r"\s+(weights|KV cache|activations|total)\s+(\d+) bytes", line)
        if not match:
            fail(f"unexpected line {line!r}")
        printed[match.group(1).split()[0]] = int(match.group(2))
    weights, kv, activations = expected_bytes_per_token(reader, ctx, kv_bytes_per_value)
    for name, value in [("weights", weights), ("KV", kv), ("activations", activations),
                        ("total", weights + kv + activations)]:
        if printed.get(name) != value:
            fail(f"{name}: inspect says {printed.get(name)}, expected {value}")
    _, roof = section(out, "roofline")
    for device in devices:
        line = next((l for l in roof if l.split()[0] == device), None)
        if line is None:
            fail(f"no roofline line for {device}")
        tokens = float(line.split()[3])
        want = DEVICES[device] * 1e9 / (weights + kv + activations)
        if abs(tokens - want) > 0.051:
            fail(f"{device}: {tokens} tokens/s, expected {want:.1f}")
    if len(roof) != len(devices):
        fail(f"roofline lines {roof}, expected {devices}")


def check_model(edgerun, path):
    path = model_path(path)
    reader = GGUFReader(path)
    done = run(edgerun, path)
    if done.returncode != 0:
        fail(f"exit {done.returncode}: {done.stderr}")
    out = done.stdout

    heading, rows = section(out, "tensors (")
    if heading != f"tensors ({len(reader.tensors)})":
        fail(f"{heading!r}, GGUFReader has {len(reader.tensors)} tensors")
    rows = rows[1:]  # the column titles
    if len(rows) != len(reader.tensors):
        fail(f"{len(rows)} table rows, GGUFReader has {len(reader.tensors)} tensors")
    for row, t in zip(rows, reader.tensors):
        name, type_name, shape, nbytes, offset = row.split()
        want = (t.name, t.tensor_type.name, "x".join(str(int(d)) for d in t.shape), int(t.n_bytes), int(t.data_offset))
        got = (name, type_name, shape, int(nbytes), int(offset))
        if got != want:
            fail(f"tensor row {got}, GGUFReader has {want}")

    _, totals = section(out, "totals by type")
    by_type = collections.defaultdict(lambda: [0, 0])
    for t in reader.tensors:
        by_type[t.tensor_type.name][0] += 1
        by_type[t.tensor_type.name][1] += int(t.n_bytes)
    all_bytes = sum(b for _, b in by_type.values())
    printed = {line.split()[0]: line.split()[1:] for line in totals[1:]}
    for type_name, (count, nbytes) in by_type.items():
        got = printed.get(type_name)
        want = [str(count), str(nbytes), f"{100.0 * nbytes / all_bytes:.1f}%"]
        if got is None or got[:3] != want:
            fail(f"totals for {type_name}: {got}, expected {want}")
    if printed["total"][:2] != [str(len(reader.tensors)), str(all_bytes)]:
        fail(f"total row {printed['total']}")

    n_keys = len(reader.fields) - 3
    if f"\nmetadata ({n_keys} keys)\n" not in out:
        fail(f"metadata count, GGUFReader has {n_keys}")

    arch = field(reader, "general.architecture")
    ctx = min(field(reader, f"{arch}.context_length"), 4096)
    check_cost(out, reader, ctx, 2.0, "f16", list(DEVICES))

    done = run(edgerun, path, "-c", "1000", "--kv-type", "q8", "--device", "orin-nano")
    if done.returncode != 0:
        fail(f"exit {done.returncode}: {done.stderr}")
    check_cost(done.stdout, reader, 1000, 34 / 32, "q8", ["orin-nano"])
    print(f"OK: inspect agrees with GGUFReader on {len(reader.tensors)} tensors of {path}")


def check_vocab(edgerun, path):
    reader = GGUFReader(path)
    done = run(edgerun, path)
    if done.returncode != 0 or done.stderr:
        fail(f"exit {done.returncode}, stderr {done.stderr!r}")
    out = done.stdout
    n_keys = len(reader.fields) - 3
    expected = [f"\nmetadata ({n_keys} keys)\n", "\ntensors (0)\n  none: a vocabulary-only file\n",
                "  not applicable: the file has no tensors\n",
                f" {len(reader.fields['tokenizer.ggml.tokens'].data)} tokens, "]
    for text in expected:
        if text not in out:
            fail(f"{text!r} not in the output:\n{out}")
    print(f"OK: inspect on {path}")


def check_errors(edgerun, work):
    os.makedirs(work, exist_ok=True)
    vocab = os.path.join(os.path.dirname(__file__), "..", "data", "vocab", "ggml-vocab-llama-spm.gguf")
    with open(vocab, "rb") as f:
        data = f.read()
    truncated = os.path.join(work, "truncated.gguf")
    with open(truncated, "wb") as f:
        f.write(data[: len(data) // 2])
    text = os.path.join(work, "notes.txt")
    with open(text, "w") as f:
        f.write("not a model\n")
    cases = [
        ([os.path.join(work, "missing.gguf")], "No such file or directory"),
        ([text], "no format plugin recognises this file"),
        ([work], "Is a directory"),
        ([truncated], "the file ends at byte"),
        ([vocab, "--kv-type", "q4"], "--kv-type: 'q4' is not f16, f32 or q8"),
        ([vocab, "--device", "tpu"], "--device: unknown device 'tpu'"),
        ([], "no file given"),
    ]
    for args, message in cases:
        done = run(edgerun, *args)
        lines = done.stderr.splitlines()
        if done.returncode == 0 or len(lines) != 1 or message not in lines[0] or done.stdout:
            fail(f"inspect {args}: exit {done.returncode}, stderr {done.stderr!r}, stdout {done.stdout[:200]!r}")
    print("OK: bad input gives one error line and a non-zero exit")


def main():
    edgerun, mode, arg = sys.argv[1:4]
    {"model": check_model, "vocab": check_vocab, "errors": check_errors}[mode](edgerun, arg)


if __name__ == "__main__":
    main()
