#!/usr/bin/env python3
"""Bad input through the real binary: output paths that are not files, a model whose
forward pass gives NaN, a config file shared by every command, flags out of range. Each
must end in one line naming the problem and a non-zero exit, with nothing written.
    test_bad_input_cli.py EDGERUN MODEL WORKDIR
"""
import os
import shutil
import stat

import numpy as np
from gguf import GGUFReader

from cli_harness import EDGERUN, MODEL, WORK, check, run, run_tests


def tiny_model(name):
    path = os.path.join(WORK, name)
    if not os.path.exists(path):
        r = run("synth", "--preset", "smollm2-135m", "--type", "F32", "--layers", "1", "--vocab", "4096", "-o", path)
        assert r.returncode == 0, r.stderr
    return path


def one_line_error(r, needle):
    lines = r.stderr.strip().splitlines()
    return r.returncode not in (0,) and r.returncode < 128 and len(lines) == 1 and needle in lines[0]


def old_file_behind_link(name):
    """link-NAME -> target-NAME, a file holding "old"; both made afresh."""
    link, target = os.path.join(WORK, "link-" + name), os.path.join(WORK, "target-" + name)
    for path in (link, target):
        if os.path.lexists(path):
            os.remove(path)
    open(target, "w").write("old")
    os.symlink(target, link)
    return link, target


def outputs_that_are_not_files():
    model = tiny_model("tiny.gguf")
    fifo = os.path.join(WORK, "fifo.gguf")  # the name the writer takes
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    for command in (["eval", "-m", model, "--tokens", "1 2 3", "--logits-out", fifo],
                    ["synth", "--preset", "smollm2-135m", "--type", "F32", "--layers", "1", "--vocab", "4096", "-o", fifo],
                    ["quantize", model, fifo, "--type", "Q8_0"]):
        r = run(*command, timeout=60)
        check(f"{command[0]} refuses a FIFO as its output", one_line_error(r, "not a regular file"), r.stderr)
        check(f"{command[0]} leaves the FIFO a FIFO", stat.S_ISFIFO(os.lstat(fifo).st_mode))
    folder = os.path.join(WORK, "a-folder")
    os.makedirs(folder, exist_ok=True)
    r = run("eval", "-m", model, "--tokens", "1 2", "--logits-out", folder)
    check("eval refuses a directory as its output", one_line_error(r, "not a regular file"), r.stderr)

    # A symbolic link is written through: the link stays, the file it names is replaced.
    link, target = old_file_behind_link("logits.npy")
    r = run("eval", "-m", model, "--tokens", "1 2 3", "--logits-out", link)
    check("eval through a symbolic link exits 0", r.returncode == 0, r.stderr)
    check("the link is still a link", os.path.islink(link))
    check("the file it names holds the logits", np.load(target).shape == (3, 4096))
    link, target = old_file_behind_link("model.gguf")
    r = run("quantize", model, link, "--type", "Q8_0")
    check("quantize through a symbolic link exits 0", r.returncode == 0, r.stderr)
    check("quantize keeps the link", os.path.islink(link) and open(target, "rb").read(4) == b"GGUF")


def non_finite_logits():
    model = tiny_model("tiny.gguf")
    broken = os.path.join(WORK, "nan.gguf")
    shutil.copyfile(model, broken)
    reader = GGUFReader(broken, "r+")
    norm = next(t for t in reader.tensors if t.name == "output_norm.weight")
    norm.data[:] = np.nan
    del reader
    for args, what in ((["--temp", "0.8"], "sampling"), (["--temp", "0"], "greedy")):
        r = run("-m", broken, "-p", "hi", "-n", "4", "-c", "32", *args)
        check(f"{what} from NaN logits fails in one line", one_line_error(r, "is not finite"), r.stderr)
        check(f"{what} from NaN logits prints nothing", r.stdout == "", r.stdout)
    out = os.path.join(WORK, "nan-logits.npy")
    if os.path.exists(out):
        os.remove(out)
    r = run("eval", "-m", broken, "--tokens", "1 2 3", "--logits-out", out)
    check("eval of NaN logits fails naming the position", one_line_error(r, "position 0: the logit of token 0 is not finite"),
          r.stderr)
    check("eval of NaN logits writes no file", not os.path.exists(out))


def one_config_file_for_every_command():
    home = os.path.join(WORK, "home")
    os.makedirs(os.path.join(home, ".config", "edgerun"), exist_ok=True)
    config = os.path.join(home, ".config", "edgerun", "edgerun.toml")
    env = dict(os.environ, HOME=home)
    env.pop("XDG_CONFIG_HOME", None)
    with open(config, "w") as f:
        f.write("threads = 2\nport = 8080\ntemp = 0\n")
    r = run("plugins", env=env)
    check("keys of other commands do not stop `plugins`", r.returncode == 0 and "cpu_ref" in r.stdout, r.stderr)
    r = run("tokenize", "-m", MODEL, "hello", env=env)
    check("nor `tokenize`", r.returncode == 0, r.stderr)
    r = run("-m", MODEL, "-p", "hi", "-n", "1", env=env)
    check("nor plain generation, which has no --port", r.returncode == 0, r.stderr)
    with open(config, "w") as f:
        f.write("threads = 2\nthreds = 2\n")
    r = run("plugins", env=env)
    check("a key no command takes is still an error", one_line_error(r, "edgerun.toml:2: unknown key 'threds'"),
          r.stderr)
    with open(config, "w") as f:
        f.write("threads = \"two\"\n")
    r = run("-m", MODEL, "-p", "hi", "-n", "1", env=env)
    check("a command's own key of the wrong type is an error", one_line_error(r, "key 'threads' must be an integer"),
          r.stderr)
    r = run("--config", WORK, "plugins")
    check("--config naming a folder says so", one_line_error(r, "not a regular file"), r.stderr)


def flags_out_of_range():
    prompt_file = os.path.join(WORK, "prompt.txt")
    open(prompt_file, "w").write("hello")
    cases = [
        (["-m", MODEL, "-p", "hi", "-n", "-5"], "-n must be -1"),
        (["-m", MODEL, "-p", "hi", "-f", prompt_file], "-p and -f both give the prompt"),
        (["-m", MODEL, "-f", WORK], "is a folder, not a file"),
        (["tokenize", "-m", MODEL, "--file", WORK], "is a folder, not a file"),
        (["-m", MODEL, "-p", "hi", "--lookup", "4", "--draft", "0"], "--draft must be 1 to 64"),
        (["-m", MODEL, "-p", "hi", "--lookup", "4", "--draft-cost", "nan"], "--draft-cost must be a finite number"),
        (["-m", MODEL, "-p", "hi", "--lookup", "4", "--draft-verify-cost", "inf"], "--draft-verify-cost must be a finite"),
        (["bench", "-m", MODEL, "--text", "hello"], "--text and --text-file are for bench with a drafter"),
        (["synth", "--preset", "smollm2-135m", "-o", os.path.join(WORK, "x.gguf"), "--layers", "0"],
         "--layers must be at least 1 (got 0)"),
        (["synth", "--preset", "smollm2-135m", "-o", os.path.join(WORK, "x.gguf"), "--vocab", "0"],
         "--vocab must be at least 1 (got 0)"),
        (["plugins", "--plugin-dir", os.path.join(WORK, "no-such-folder")], "--plugin-dir: "),
        (["-m", MODEL, "-p", "hi", "--sampler-plugin", "nope"], "`edgerun plugins` lists the ones found"),
        # serve's, refused before the model loads (no "serve: ... slots" line comes first)
        (["serve", "-m", MODEL, "--port", "0", "--parallel", "2000"], "--parallel must be 1 to 1024"),
        (["serve", "-m", MODEL, "--port", "0", "--max-body", "-1"], "--max-body must be 1 to"),
        (["serve", "-m", MODEL, "--port", "0", "--host", "nonsense"], "--host: 'nonsense' is not an IP address"),
    ]
    for args, needle in cases:
        r = run(*args, timeout=120)
        check(f"refused: {' '.join(args[2:])}", one_line_error(r, needle), r.stderr)


run_tests(outputs_that_are_not_files, non_finite_logits, one_config_file_for_every_command, flags_out_of_range)
