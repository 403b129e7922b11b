#!/usr/bin/env python3
"""Reference data for the tokenizer tests, produced by llama.cpp itself (llama-cpp-python).

    llama_reference.py variants --out DIR
        GGUF vocabularies derived from the test vocabularies: gpt-2's with each
        pre-tokenizer family, llama-spm's dressed up as Phi-3.
    llama_reference.py cases --vocab GGUF --out FILE [--corpus small|full]
        Every corpus string tokenized with each add_special/parse_special combination,
        with llama_detokenize of the result and the pieces decoded as a stream would
        show them; plus every token's attributes, EOG flag and pieces.

All strings are written hex-encoded, so any bytes survive. The corpus is deterministic.
"""
import argparse
import ctypes
import os
import random
import sys

import corpus
import gguf_edit

GPT2_VOCAB = "ggml-vocab-gpt-2.gguf"
SPM_VOCAB = "ggml-vocab-llama-spm.gguf"

# One name from each pre-tokenizer family edgerun implements (they differ in split
# patterns or flags); each becomes a copy of the gpt-2 vocabulary with that name.
PRE_VARIANTS = [
    "default", "mpt", "trillion", "llama-bpe", "dbrx", "chatglm-bpe", "qwen2", "stablelm2", "qwen35",
    "seed-coder", "ufakzeka", "bailingmoe", "starcoder", "refact", "command-r", "falcon", "deepseek-coder",
    "deepseek-llm", "deepseek-v3", "poro-chat", "bloom", "viking", "gpt-4o", "tekken",
]

# Phi-3 appends these to Llama's 32000 SentencePiece tokens (id, text, GGUF token type).
PHI3_ADDED = [("<|endoftext|>", 3), ("<|assistant|>", 4), ("<|placeholder1|>", 4), ("<|placeholder2|>", 4),
              ("<|placeholder3|>", 4), ("<|placeholder4|>", 4), ("<|system|>", 4), ("<|end|>", 4),
              ("<|placeholder5|>", 4), ("<|placeholder6|>", 4), ("<|user|>", 4)]


def hexs(b):
    return b.hex() if b else "-"


# --------------------------------------------------------------- variants --

def make_variants(vocab_dir, out):
    os.makedirs(out, exist_ok=True)
    version, base = gguf_edit.read(os.path.join(vocab_dir, GPT2_VOCAB))
    for pre in PRE_VARIANTS:
        records = list(base)
        gguf_edit.set_value(records, "tokenizer.ggml.pre", gguf_edit.STRING, gguf_edit.encode_string(pre))
        gguf_edit.set_value(records, "general.name", gguf_edit.STRING, gguf_edit.encode_string("gpt-2 as " + pre))
        gguf_edit.write(os.path.join(out, f"gpt2-pre-{pre}.gguf"), version, records)

    version, records = gguf_edit.read(os.path.join(vocab_dir, SPM_VOCAB))
    fields = {k: (t, v) for k, t, v in records}
    added = [(gguf_edit.encode_string(text), gguf_edit.encode_scalar(6, 0.0), gguf_edit.encode_scalar(5, ty))
             for text, ty in PHI3_ADDED]
    gguf_edit.set_value(records, "general.name", gguf_edit.STRING,
                        gguf_edit.encode_string("Phi 3 mini (phi-3 vocabulary test)"))
    for key, sub, column in [("tokenizer.ggml.tokens", gguf_edit.STRING, 0), ("tokenizer.ggml.scores", 6, 1),
                             ("tokenizer.ggml.token_type", 5, 2)]:
        value = gguf_edit.append_to_array(fields[key][1], sub, [a[column] for a in added])
        gguf_edit.set_value(records, key, gguf_edit.ARRAY, value)
    gguf_edit.set_value(records, "tokenizer.ggml.eos_token_id", 4, gguf_edit.encode_scalar(4, 32000))
    gguf_edit.write(os.path.join(out, "spm-phi-3.gguf"), version, records)


# ------------------------------------------------------------------ cases --

def load_vocab(path):
    import llama_cpp
    global _quiet_log  # the callback must outlive the library's use of it
    _quiet_log = llama_cpp.llama_log_callback(lambda level, text, data: None)
    llama_cpp.llama_log_set(_quiet_log, ctypes.c_void_p(0))
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        sys.exit(f"llama_reference: llama.cpp could not load {path}")
    return llama_cpp, model, llama_cpp.llama_model_get_vocab(model)


def tokenize(lc, vocab, text, add_special, parse_special):
    n = len(text) + 8
    buf = (lc.llama_token * n)()
    got = lc.llama_tokenize(vocab, text, len(text), buf, n, add_special, parse_special)
    if got < 0:
        buf = (lc.llama_token * -got)()
        got = lc.llama_tokenize(vocab, text, len(text), buf, -got, add_special, parse_special)
    return list(buf[:got])


def detokenize(lc, vocab, ids, remove_special, unparse_special):
    arr = (lc.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 16 * len(ids)
    for _ in range(2):
        out = ctypes.create_string_buffer(size)
        got = lc.llama_detokenize(vocab, arr, len(ids), out, size, remove_special, unparse_special)
        if got >= 0:
            return out.raw[:got]
        size = -got + 1
    raise RuntimeError("llama_detokenize failed")


def piece(lc, vocab, token, special):
    size = 64
    for _ in range(2):
        out = ctypes.create_string_buffer(size)
        got = lc.llama_token_to_piece(vocab, token, out, size, 0, special)
        if got >= 0:
            return out.raw[:got]
        size = -got + 1
    raise RuntimeError("llama_token_to_piece failed")


def write_cases(vocab_path, out_path, which, with_tokens=True):
    lc, model, vocab = load_vocab(vocab_path)
    texts = corpus.strings(which)
    n_tokens = lc.llama_vocab_n_tokens(vocab)
    with open(out_path, "w") as f:
        f.write("edgerun-tokenizer-cases 1\n")
        ids = {
            "bos": lc.llama_vocab_bos(vocab), "eos": lc.llama_vocab_eos(vocab), "eot": lc.llama_vocab_eot(vocab),
            "nl": lc.llama_vocab_nl(vocab), "pad": lc.llama_vocab_pad(vocab), "sep": lc.llama_vocab_sep(vocab),
            "add_bos": int(lc.llama_vocab_get_add_bos(vocab)), "add_eos": int(lc.llama_vocab_get_add_eos(vocab)),
        }
        for k, v in ids.items():
            f.write(f"{k} {v}\n")
        f.write(f"tokens {n_tokens}\n")
        for t in range(n_tokens if with_tokens else 0):
            f.write("token %d %d %d %s %s\n" % (t, lc.llama_vocab_get_attr(vocab, t), int(lc.llama_vocab_is_eog(vocab, t)),
                                               hexs(piece(lc, vocab, t, False)), hexs(piece(lc, vocab, t, True))))
        for text in texts:
            for add_special in (False, True):
                for parse_special in (False, True):
                    got = tokenize(lc, vocab, text, add_special, parse_special)
                    f.write("case %s %d %d\n" % (hexs(text), add_special, parse_special))
                    f.write("ids %s\n" % " ".join(map(str, got)))
                    f.write("detok %s %s\n" % (hexs(detokenize(lc, vocab, got, False, False)),
                                               hexs(detokenize(lc, vocab, got, True, True))))
                    # What a streaming decoder must show: the pieces as Python decodes them,
                    # each maximal ill-formed subsequence as one U+FFFD.
                    stream = b"".join(piece(lc, vocab, t, False) for t in got).decode("utf-8", "replace")
                    f.write("stream %s\n" % hexs(stream.encode("utf-8")))
        f.write("end\n")
    lc.llama_model_free(model)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("variants")
    v.add_argument("--vocab-dir", required=True)
    v.add_argument("--out", required=True)
    c = sub.add_parser("cases")
    c.add_argument("--vocab", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--corpus", default="full", choices=["small", "full"])
    args = ap.parse_args()
    if args.cmd == "variants":
        make_variants(args.vocab_dir, args.out)
    else:
        write_cases(args.vocab, args.out, args.corpus)


if __name__ == "__main__":
    main()
