#!/usr/bin/env python3
"""`edgerun tokenize` through the real binary, against llama.cpp (llama-cpp-python).

    check_tokenize_cli.py EDGERUN VOCAB_DIR MODEL|@fetch:REPO_ROOT

Text given as an argument, with --file and on standard input; --no-bos, --special and
--pieces; --chat; and the errors for bad input (one line, non-zero exit, no output).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import llama_reference  # noqa: E402
from fetched_model import model_path  # noqa: E402

failures = []


def run(edgerun, *args, stdin=None):
    return subprocess.run([edgerun, "tokenize", *args], input=stdin, capture_output=True)


def expect(label, got, want):
    if got != want:
        failures.append(f"{label}:\n    want {want!r}\n    got  {got!r}")


def main():
    edgerun, vocab_dir, model = sys.argv[1], sys.argv[2], model_path(sys.argv[3])
    spm = os.path.join(vocab_dir, "ggml-vocab-llama-spm.gguf")
    texts = ["Hello world", " leading space", "tabs\tand\nnewlines\n", "你好，世界 🦙", "<|im_start|>user\nhi<|im_end|>",
             "<s>[INST] x [/INST]", "don't stop 12345", "é\u0301"]
    with tempfile.TemporaryDirectory() as tmp:
        for path in (model, spm):
            lc, handle, vocab = llama_reference.load_vocab(path)
            name = os.path.basename(path)
            for text in texts:
                data = text.encode()
                for flags, add, special in [([], True, False), (["--no-bos"], False, False), (["--special"], True, True)]:
                    want = " ".join(map(str, llama_reference.tokenize(lc, vocab, data, add, special))) + "\n"
                    done = run(edgerun, "-m", path, *flags, text)
                    expect(f"{name} {flags} {text!r}", (done.returncode, done.stdout.decode()), (0, want))
                if text not in texts[:2]:
                    continue
                # The same text from a file and from standard input.
                want = " ".join(map(str, llama_reference.tokenize(lc, vocab, data, True, False))) + "\n"
                file = os.path.join(tmp, "text.txt")
                with open(file, "wb") as f:
                    f.write(data)
                done = run(edgerun, "-m", path, "--file", file)
                expect(f"{name} --file {text!r}", done.stdout.decode(), want)
                done = run(edgerun, "-m", path, "-", stdin=data)
                expect(f"{name} stdin {text!r}", done.stdout.decode(), want)
            # --pieces: one `id 'piece'` per line, pieces with special tokens spelled out.
            text = "Hi <|im_end|> x"
            ids = llama_reference.tokenize(lc, vocab, text.encode(), False, True)
            lines = [f"{i} '{llama_reference.piece(lc, vocab, i, True).decode()}'" for i in ids]
            done = run(edgerun, "-m", path, "--pieces", "--special", "--no-bos", text)
            expect(f"{name} --pieces", done.stdout.decode().splitlines(), lines)
            lc.llama_model_free(handle)

        # --chat: the prompt in the model's template, its special tokens parsed.
        lc, handle, vocab = llama_reference.load_vocab(model)
        prompt = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                  "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
        want = " ".join(map(str, llama_reference.tokenize(lc, vocab, prompt.encode(), True, True))) + "\n"
        expect("--chat", run(edgerun, "-m", model, "--chat", "What is 2+2?").stdout.decode(), want)
        lc.llama_model_free(handle)

        # Bad input: one line on stderr, nothing on stdout, a non-zero exit.
        junk = os.path.join(tmp, "junk.gguf")
        with open(junk, "wb") as f:
            f.write(b"GGUF\x03\x00\x00\x00garbage")
        for label, args in [("missing file", ["-m", os.path.join(tmp, "absent.gguf"), "x"]),
                            ("not a model", ["-m", __file__, "x"]),
                            ("truncated GGUF", ["-m", junk, "x"]),
                            ("no text", ["-m", model]),
                            ("no model", ["x"]),
                            ("bad --think", ["-m", model, "--chat", "--think", "maybe", "x"]),
                            ("unknown template", ["-m", model, "--chat", "--chat-template", "nope", "x"]),
                            ("template without --chat", ["-m", model, "--chat-template", "chatml", "x"]),
                            ("unknown option", ["-m", model, "--bogus", "x"])]:
            done = run(edgerun, *args)
            err = done.stderr.decode()
            ok = done.returncode != 0 and not done.stdout and err.count("\n") == 1 and err.startswith("edgerun: error:")
            expect(f"error: {label}", (ok, err), (True, err))
    if failures:
        print("\n".join(failures))
        print(f"edgerun tokenize: {len(failures)} checks failed")
        return 1
    print("edgerun tokenize: all checks match llama.cpp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
