#!/usr/bin/env python3
"""Compares edgerun's code point classes with the ones llama.cpp uses, for every code
point, by asking llama.cpp (llama-cpp-python) how it splits probe strings.

    scripts/check_unicode_classes.py [--vocab-dir DIR]

A probe vocabulary has only GPT-2's 256 byte characters plus merges that join 'a', '1'
and '!' with any following byte character, so the tokens of "a" + c show whether the
pre-tokenizer kept c in the same word as 'a'. With the gpt-2 pre-tokenizer that reveals
letters, numbers and whitespace as llama.cpp's tables classify them; with
deepseek-coder, qwen35 and deepseek-v3 it exercises \\p{P}, \\p{M} and \\p{S} as its
collapsed regexes see them. edgerun's answers come from build/bin/edgerun_text_check.
Prints the code points split differently, as ranges, with their general category in
this Python's unicodedata. Takes several minutes (llama.cpp is called 6.7 million times).
"""
import argparse
import ctypes
import os
import subprocess
import sys
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "text"))
import gguf_edit  # noqa: E402

def byte_chars():
    bs = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def make_probe_vocab(base_path, out_path, pre):
    version, records = gguf_edit.read(base_path)
    chars = [byte_chars()[b] for b in range(256)]
    tokens = list(chars)
    merges = []
    for lead in "a1!":
        for c in chars:
            tokens.append(lead + c)
            merges.append(lead + " " + c)
    enc_strings = lambda items: (gguf_edit.struct.pack("<IQ", gguf_edit.STRING, len(items)) +
                                 b"".join(gguf_edit.encode_string(s) for s in items))
    gguf_edit.set_value(records, "tokenizer.ggml.tokens", gguf_edit.ARRAY, enc_strings(tokens))
    gguf_edit.set_value(records, "tokenizer.ggml.merges", gguf_edit.ARRAY, enc_strings(merges))
    gguf_edit.set_value(records, "tokenizer.ggml.token_type", gguf_edit.ARRAY,
                        gguf_edit.struct.pack("<IQ", 5, len(tokens)) + gguf_edit.struct.pack(f"<{len(tokens)}i", *([1] * len(tokens))))
    gguf_edit.set_value(records, "tokenizer.ggml.pre", gguf_edit.STRING, gguf_edit.encode_string(pre))
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"):
        gguf_edit.set_value(records, key, 4, gguf_edit.encode_scalar(4, 0))
    gguf_edit.write(out_path, version, records)


def ranges_of(points):
    out = []
    for cp in points:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--vocab-dir", default=os.path.join(repo, "tests", "data", "vocab"))
    ap.add_argument("--work", default="/tmp/edgerun-unicode-probe")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--check-tool", default=os.path.join(here, "..", "build", "bin", "edgerun_text_check"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    import llama_cpp as lc
    global _quiet
    _quiet = lc.llama_log_callback(lambda level, text, data: None)
    lc.llama_log_set(_quiet, ctypes.c_void_p(0))
    buf = (lc.llama_token * 64)()

    probes = [("gpt-2", "a"), ("gpt-2", "1"), ("gpt-2", "!"), ("deepseek-coder", "!"), ("qwen35", "a"),
              ("deepseek-v3", "!")]
    total = 0
    for pre, lead in probes:
        path = os.path.join(args.work, f"probe-{pre}.gguf")
        make_probe_vocab(os.path.join(args.vocab_dir, "ggml-vocab-gpt-2.gguf"), path, pre)
        params = lc.llama_model_default_params()
        params.vocab_only = True
        model = lc.llama_model_load_from_file(path.encode(), params)
        if not model:
            sys.exit(f"llama.cpp could not load {path}")
        vocab = lc.llama_model_get_vocab(model)
        llama_joined = set()
        for cp in range(0x110000):
            text = (lead + chr(cp)).encode("utf-8", "surrogatepass")
            lc.llama_tokenize(vocab, text, len(text), buf, 64, False, False)
            if buf[0] >= 256:
                llama_joined.add(cp)
        lc.llama_model_free(model)

        probe = subprocess.run([args.check_tool, "probe", path, lead], capture_output=True, text=True, check=True)
        ours = set()
        for line in probe.stdout.split("\n"):
            if line:
                lo, hi = map(int, line.split())
                ours.update(range(lo, hi + 1))
        diff = sorted(llama_joined ^ ours)
        total += len(diff)
        print(f"{pre:15s} '{lead}' + c: {len(diff)} code points split differently")
        for lo, hi in ranges_of(diff)[:40]:
            who = "llama.cpp joins" if lo in llama_joined else "edgerun joins"
            print(f"    U+{lo:04X}..U+{hi:04X} ({hi - lo + 1}): {who}; "
                  f"Python {unicodedata.unidata_version} category {unicodedata.category(chr(lo))}")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
