#!/usr/bin/env python3
"""Compares what the formats_gguf plugin reads from a GGUF file (gguf_tool dump) with what
the python `gguf` package's GGUFReader reads: the version and counts, every metadata key
with its type and full value (arrays element by element), every tensor's name, type,
shape, size and absolute data offset, and the model/vocab descriptions derived from the
metadata. GGUFReader is the independent reference (written by llama.cpp's authors).

    compare_with_gguf_py.py GGUF_TOOL FILE [--write-sample]
    compare_with_gguf_py.py GGUF_TOOL @fetch:REPO_ROOT      the model scripts/fetch-model.sh fetches

With --write-sample, FILE is first written by the plugin's writer (gguf_tool
write-sample), so the check proves that the python reader reads what we write.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fetched_model import model_path  # noqa: E402

PSEUDO_FIELDS = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")
FLOAT_TYPES = (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64)


def fail(message):
    print(f"MISMATCH: {message}")
    sys.exit(1)


def reference_value(field, part_index, value_type):
    part = field.parts[part_index]
    if value_type == GGUFValueType.STRING:
        return bytes(part.tobytes())
    scalar = part.tolist()[0]
    if value_type in FLOAT_TYPES:
        return float(scalar)
    return int(scalar)


def ours_value(value, value_type):
    if value_type == GGUFValueType.STRING:
        return bytes.fromhex(value)
    if value_type in FLOAT_TYPES:
        return float(value)  # "nan", "inf" and "-inf" arrive as strings; float() takes both
    return int(value)


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def compare_metadata(reader, ours):
    fields = [f for name, f in reader.fields.items() if name not in PSEUDO_FIELDS]
    if len(fields) != len(ours["metadata"]):
        fail(f"{len(ours['metadata'])} metadata keys, GGUFReader has {len(fields)}")
    for field, entry in zip(fields, ours["metadata"]):
        key = bytes.fromhex(entry["key"]).decode("utf-8")
        if key != field.name:
            fail(f"key {key!r}, GGUFReader has {field.name!r}")
        if entry["type"] != int(field.types[0]):
            fail(f"{key}: type {entry['type']}, GGUFReader has {int(field.types[0])}")
        if field.types[0] == GGUFValueType.ARRAY:
            if len(field.types) > 2:
                continue  # nested arrays: GGUFReader flattens them, no like-for-like comparison
            element_type = field.types[1] if len(field.types) > 1 else None
            values = entry["value"]["values"]
            if len(values) != len(field.data):
                fail(f"{key}: {len(values)} elements, GGUFReader has {len(field.data)}")
            if element_type is not None and entry["value"]["array_type"] != int(element_type):
                fail(f"{key}: element type {entry['value']['array_type']}, GGUFReader has {int(element_type)}")
            for i, (mine, index) in enumerate(zip(values, field.data)):
                expected = reference_value(field, index, element_type)
                if not same(ours_value(mine, element_type), expected):
                    fail(f"{key}[{i}]: {mine!r}, GGUFReader has {expected!r}")
        else:
            expected = reference_value(field, field.data[0], field.types[0])
            if not same(ours_value(entry["value"], field.types[0]), expected):
                fail(f"{key}: {entry['value']!r}, GGUFReader has {expected!r}")
    return len(fields)


def compare_tensors(reader, ours):
    if len(reader.tensors) != len(ours["tensors"]):
        fail(f"{len(ours['tensors'])} tensors, GGUFReader has {len(reader.tensors)}")
    for t, mine in zip(reader.tensors, ours["tensors"]):
        name = bytes.fromhex(mine["name"]).decode("utf-8")
        checks = [
            ("name", name, t.name),
            ("type", mine["type"], int(t.tensor_type)),
            ("shape", mine["shape"], [int(d) for d in t.shape]),
            ("nbytes", mine["nbytes"], int(t.n_bytes)),
            ("offset", mine["offset"], int(t.data_offset)),
        ]
        for what, a, b in checks:
            if a != b:
                fail(f"tensor {t.name}: {what} {a!r}, GGUFReader has {b!r}")


def scalar_field(reader, key):
    field = reader.fields.get(key)
    if field is None:
        return None
    return field.contents()


def compare_descriptions(reader, ours):
    arch = scalar_field(reader, "general.architecture")
    model = ours["model"]
    if model is not None:
        pairs = [("n_embd", "embedding_length"), ("n_layer", "block_count"), ("n_ff", "feed_forward_length"),
                 ("n_head", "attention.head_count"), ("n_ctx_train", "context_length")]
        for mine, suffix in pairs:
            expected = scalar_field(reader, f"{arch}.{suffix}")
            if model[mine] != expected:
                fail(f"model {mine} {model[mine]}, {arch}.{suffix} is {expected}")
        head_count_kv = scalar_field(reader, f"{arch}.attention.head_count_kv")
        if model["n_head_kv"] != (head_count_kv if head_count_kv is not None else model["n_head"]):
            fail(f"model n_head_kv {model['n_head_kv']}")
    vocab = ours["vocab"]
    if vocab is not None:
        tokens = reader.fields.get("tokenizer.ggml.tokens")
        merges = reader.fields.get("tokenizer.ggml.merges")
        if vocab["n_tokens"] != (len(tokens.data) if tokens else 0):
            fail(f"vocab n_tokens {vocab['n_tokens']}")
        if vocab["n_merges"] != (len(merges.data) if merges else 0):
            fail(f"vocab n_merges {vocab['n_merges']}")
        for mine, key in [("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id"),
                          ("pad", "padding_token_id")]:
            expected = scalar_field(reader, f"tokenizer.ggml.{key}")
            if vocab[mine] != (expected if expected is not None else -1):
                fail(f"vocab {mine} {vocab[mine]}, tokenizer.ggml.{key} is {expected}")


def main():
    tool, path = sys.argv[1], sys.argv[2]
    path = model_path(path)
    if "--write-sample" in sys.argv[3:]:
        subprocess.run([tool, "write-sample", path], check=True)
    ours = json.loads(subprocess.run([tool, "dump", path], check=True, capture_output=True).stdout)
    reader = GGUFReader(path)

    version = int(reader.fields["GGUF.version"].parts[-1][0])
    n_keys = compare_metadata(reader, ours)
    compare_tensors(reader, ours)
    compare_descriptions(reader, ours)
    expected_describe = (f"GGUF v{version}, {len(reader.tensors)} tensors, {n_keys} metadata keys, "
                         f"alignment {reader.alignment}")
    if ours["describe"] != expected_describe:
        fail(f"describe {ours['describe']!r}, expected {expected_describe!r}")
    print(f"OK: {path}: {n_keys} metadata keys and {len(reader.tensors)} tensors agree with GGUFReader")


if __name__ == "__main__":
    main()
