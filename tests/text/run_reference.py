#!/usr/bin/env python3
"""ctest driver for the comparisons with llama.cpp and jinja2: makes the reference data,
then runs edgerun_text_check on it in one process per vocabulary.

    run_reference.py TOOL tokenizer VOCAB WORKDIR [--corpus small|full]
    run_reference.py TOOL variants VOCAB_DIR WORKDIR
    run_reference.py TOOL chat WORKDIR [MODEL]

VOCAB and MODEL may be @fetch:REPO_ROOT for the model scripts/fetch-model.sh fetches;
the test is skipped (exit 77) when that cannot be downloaded.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import llama_reference  # noqa: E402
from fetched_model import model_path  # noqa: E402


def check(tool, *args):
    return subprocess.run([tool, *args]).returncode == 0


def main():
    tool, what = sys.argv[1], sys.argv[2]
    rest = [a for a in sys.argv[3:] if not a.startswith("--")]
    corpus = "small" if "--corpus=small" in sys.argv else "full"
    if what == "tokenizer":
        vocab, work = model_path(rest[0]), rest[1]
        os.makedirs(work, exist_ok=True)
        cases = os.path.join(work, os.path.basename(vocab) + ".cases")
        llama_reference.write_cases(vocab, cases, corpus)
        return 0 if check(tool, "cases", vocab, cases) else 1
    if what == "variants":
        vocab_dir, work = rest
        llama_reference.make_variants(vocab_dir, work)
        failed = []
        for name in sorted(os.listdir(work)):
            if not name.endswith(".gguf"):
                continue
            vocab = os.path.join(work, name)
            cases = vocab + ".cases"
            # Token attributes and pieces do not depend on the pre-tokenizer: the gpt-2
            # test covers them; the Phi-3 vocabulary has its own.
            llama_reference.write_cases(vocab, cases, "small", with_tokens=name.startswith("spm-"))
            if not check(tool, "cases", vocab, cases):
                failed.append(name)
        print(f"pre-tokenizer variants: {len(failed)} failed" + (": " + ", ".join(failed) if failed else ""))
        return 1 if failed else 0
    if what == "chat":
        import chat_reference  # jinja2 is needed only here
        work = rest[0]
        os.makedirs(work, exist_ok=True)
        cases = os.path.join(work, "chat.cases")
        argv = ["chat_reference.py", "--out", cases]
        model = model_path(rest[1], optional=True) if len(rest) > 1 else None
        if model:
            argv += ["--model", model]
        sys.argv = argv
        chat_reference.main()
        return 0 if check(tool, "chat", cases) else 1
    sys.exit(f"run_reference.py: unknown check '{what}'")


if __name__ == "__main__":
    sys.exit(main())
