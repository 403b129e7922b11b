#!/usr/bin/env python3
"""Model files that must be refused at load time, through the real binaries: each command
that loads the model (generation, eval, bench) fails alike, in one line naming the key or
tensor and both numbers, with exit status 1 and no hang.

    check_bad_models.py EDGERUN GGUF_TOOL WORKDIR
"""
import os
import shutil
import subprocess
import sys

from gguf import GGUFReader

EDGERUN, GGUF_TOOL, WORK = sys.argv[1:4]
failures = []


def check(name, condition, detail=""):
    print(f"{'ok  ' if condition else 'FAIL'} {name}" + (f": {detail}" if detail and not condition else ""))
    if not condition:
        failures.append(name)


def run(*args, binary=EDGERUN, timeout=60):
    """The finished process, or None when it ran past `timeout` seconds."""
    try:
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def synth(preset, file_type):
    path = os.path.join(WORK, f"{preset}-{file_type}.gguf")
    if not os.path.exists(path):
        r = run("synth", "--preset", preset, "--type", file_type, "--layers", "1", "--vocab", "4096", "-o", path)
        assert r is not None and r.returncode == 0, r and r.stderr
    return path


def edited(source, name, edit):
    """A copy of `source` changed in place by edit(GGUFReader)."""
    path = os.path.join(WORK, name)
    shutil.copyfile(source, path)
    reader = GGUFReader(path, "r+")
    edit(reader)
    del reader
    return path


def set_key(key, value):
    def edit(reader):
        reader.fields[key].parts[-1][0] = value
    return edit


def set_shape(tensor, dims):
    def edit(reader):
        shape = next(t for t in reader.tensors if t.name == tensor).field.parts[3]
        shape[:] = dims
    return edit


def loading_commands(model):
    out = os.path.join(WORK, "logits.npy")
    return {
        "generation": ["-m", model, "-p", "hi", "-n", "4"],
        "eval": ["eval", "-m", model, "--tokens", "1 2", "--logits-out", out],
        "bench": ["bench", "-m", model, "-p", "4", "-n", "4", "-r", "1"],
    }


def refused_alike(case, model, message):
    """Every command that loads `model` exits 1 with the one line `edgerun: error: message`."""
    for command, args in loading_commands(model).items():
        r = run(*args)
        if r is None:
            check(f"{case}: {command} does not hang", False)
            continue
        check(f"{case}: {command} refuses it in one line with exit 1",
              r.returncode == 1 and r.stderr == f"edgerun: error: {message}\n" and r.stdout == "",
              f"exit {r.returncode}, stderr {r.stderr!r}")


def vocabulary_size_disagreements():
    llama = synth("smollm2-135m", "F32")  # llama.vocab_size 4096, 4096 tokens, token_embd [576, 4096]
    refused_alike("vocab_size 4095",
                  edited(llama, "vocab4095.gguf", set_key("llama.vocab_size", 4095)),
                  "model description: metadata key 'llama.vocab_size' is 4095, but 'tokenizer.ggml.tokens' "
                  "has 4096 tokens")
    refused_alike("token_embd of 1000 rows",
                  edited(llama, "embd1000.gguf", set_shape("token_embd.weight", [576, 1000])),
                  "tensor 'token_embd.weight' has 1000 rows, but the vocabulary size is 4096")


def sizes_past_int32():
    llama = synth("smollm2-135m", "F32")
    refused_alike("vocab_size 2^32-1",
                  edited(llama, "vocab_max.gguf", set_key("llama.vocab_size", 0xFFFFFFFF)),
                  "model description: metadata key 'llama.vocab_size' is 4294967295, more than the 2147483647 "
                  "supported")
    qwen3 = synth("qwen3-0.6b", "Q8_0")
    refused_alike("key_length 2^31",
                  edited(qwen3, "key_length.gguf", set_key("qwen3.attention.key_length", 0x80000000)),
                  "model description: metadata key 'qwen3.attention.key_length' is 2147483648, more than the "
                  "2147483647 supported")


def qwen3_head_norm_of_another_width():
    qwen3 = synth("qwen3-0.6b", "Q8_0")  # head size 128
    refused_alike("attn_q_norm of 64",
                  edited(qwen3, "q_norm64.gguf", set_shape("blk.0.attn_q_norm.weight", [64])),
                  "tensor 'blk.0.attn_q_norm.weight' has 64 values, but the head size is 128")


def fifo_as_the_model():
    fifo = os.path.join(WORK, "model_fifo.gguf")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    commands = dict(loading_commands(fifo))
    commands["inspect"] = ["inspect", fifo]
    commands["tokenize"] = ["tokenize", "-m", fifo, "hi"]
    for command, args in commands.items():
        r = run(*args, timeout=15)  # the open blocked forever
        check(f"a FIFO as the model: {command} refuses it in one line, without blocking",
              r is not None and r.returncode == 1 and r.stderr == f"edgerun: error: {fifo}: not a regular file\n",
              r and f"exit {r.returncode}, stderr {r.stderr!r}")
    r = run("dump", fifo, binary=GGUF_TOOL, timeout=15)
    check("a FIFO given to gguf_tool dump is refused without blocking",
          r is not None and r.returncode != 0 and r.stderr == f"gguf_tool: {fifo}: not a regular file\n",
          r and f"exit {r.returncode}, stderr {r.stderr!r}")


os.makedirs(WORK, exist_ok=True)
for test in (vocabulary_size_disagreements, sizes_past_int32, qwen3_head_norm_of_another_width, fifo_as_the_model):
    test()
print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
