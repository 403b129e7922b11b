#!/usr/bin/env python3
"""bench/tune_options.py checked where there is no GPU.

  test_tune_options.py fake ROOT WORK
      driven through a stand-in for edgerun whose decode speed is a known product of
      factors per option, and a stand-in conformance suite with one planted fault: the
      scores, the joining of gainers, the fall-back past a set that fails conformance,
      the deadline, the defaults failing, wrong arguments.
  test_tune_options.py emulated ROOT WORK EDGERUN PLUGIN_DIR SUITE MODEL
      every option set of bench/device/candidates.txt is taken by cuda_orin's CPU
      emulation (cuda_orin_emu), and the tuner reads the real `edgerun bench --json` and
      runs the real suite.
  test_tune_options.py device-call ROOT WORK
      bench/device/tune_compare.sh, the 15-minute session's one device call, through
      stand-ins for the bundle, llama-bench and nvidia-smi: the tuner's choice reaches
      the comparison, conformance runs once, and what comes back fits the device tool.
"""

import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_bench_scripts import FAKE_LLAMA_BENCH, fake_tool  # noqa: E402

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def close(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))


# Decode tok/s: the test's base times the factor of each option it is given (the factor of
# a depth-only option is 1 at depth 0). Repetitions spread around it, median 1.0x.
BASE = {("a.gguf", 0): 100.0, ("b.gguf", 0): 50.0, ("a.gguf", 4096): 80.0}
FACTORS = {"fast=1": (1.10, 1.10), "faster=1": (1.20, 1.0), "depth=1": (1.0, 1.30), "slow=1": (0.90, 0.90),
           "noise=1": (1.01, 1.01), "tif=2": (1.05, 1.05), "tif=4": (1.15, 1.15),  # (depth 0, depth > 0)
           "same=1": (1.06, 1.06)}  # nothing more with tif=4 (the stand-in's rule)
SPREAD = (1.0, 0.97, 1.04)

FAKE_EDGERUN = r'''
import json, os, sys, time
a = sys.argv[1:]
arg = lambda k, d=None: a[a.index(k) + 1] if k in a else d
if a[0] != "bench" or "--json" not in a or arg("-p") != "0" or arg("--backend") != "cuda_orin":
    sys.exit("fake edgerun: unexpected command line " + " ".join(a))
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(a) + "\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
if os.environ.get("FAKE_DEFAULTS_FAIL_FROM") and not arg("--backend-options"):
    counter = os.environ["FAKE_LOG"] + ".defaults"
    n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(n))
    if n >= int(os.environ["FAKE_DEFAULTS_FAIL_FROM"]):
        print("edgerun: error: cuda_orin: an unspecified launch failure", file=sys.stderr)
        sys.exit(1)
if os.environ.get("FAKE_ALL_FAIL"):
    print("edgerun: error: cuda_orin: no CUDA device", file=sys.stderr)
    sys.exit(1)
BASE, FACTORS, SPREAD = %s
model, depth, reps = os.path.basename(arg("-m")), int(arg("-d")), int(arg("-r"))
opts = [o for o in arg("--backend-options", "").split(",") if o]
if "hang=1" in opts:  # a kernel that never ends
    time.sleep(60)
if "faster=1" in opts and "depth=1" in opts:
    print("edgerun: error: cuda_orin: options faster=1 and depth=1 do not combine", file=sys.stderr)
    sys.exit(1)
speed = BASE[(model, depth)]
for o in opts:
    if o not in FACTORS:
        print(f"edgerun: error: cuda_orin: unknown option '{o}'", file=sys.stderr)
        sys.exit(1)
    if not (o == "same=1" and "tif=4" in opts):
        speed *= FACTORS[o][0 if depth == 0 else 1]
samples = [speed * SPREAD[i %% len(SPREAD)] for i in range(reps)]
print("info: a log line first")
print(json.dumps({"backend": "cuda_orin", "device": "Fake GPU", "n_depth": depth, "tg_tok_s": sum(samples) / reps,
                  "tg_tok_s_samples": samples}))
''' % repr((BASE, FACTORS, SPREAD))

# Fails every set holding faster=1 (a planted fault in the fastest option) and records
# what it was asked.
FAKE_SUITE = r'''
import os, sys
a = sys.argv[1:]
opts = a[a.index("--candidate-options") + 1] if "--candidate-options" in a else ""
with open(os.environ["FAKE_SUITE_LOG"], "a") as f:
    f.write(opts + "\n")
if "faster=1" in opts.split(","):
    print("FAIL: 3 problems (MATMUL)")
    print("edgerun-conformance: the candidate failed", file=sys.stderr)
    sys.exit(1)
print("PASS: 0 problems")
'''


def expected_score(options):
    """The stand-in's speed-up over the defaults, as a geometric mean over the three tests."""
    ratios = []
    for (_, depth) in BASE:
        r = 1.0
        for o in (x for x in options.split(",") if x):
            if not (o == "same=1" and "tif=4" in options.split(",")):
                r *= FACTORS[o][0 if depth == 0 else 1]
        ratios.append(r)
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def run_tuner(root, work, extra, env=None):
    cmd = [sys.executable, os.path.join(root, "bench", "tune_options.py"), "--edgerun", os.path.join(work, "edgerun"),
           "--test", "a.gguf", "--test", "b.gguf@0", "--test", "a.gguf@4096", "--commit", "abc123", "-r", "3"] + extra
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def test_fake(root, work):
    fake_tool(work, "edgerun", FAKE_EDGERUN)
    suite = fake_tool(work, "suite", FAKE_SUITE)
    cands = os.path.join(work, "candidates.txt")
    with open(cands, "w") as f:
        f.write("# a comment line\nfast=1\nfaster=1   # the planted fault\n\ndepth=1\nslow=1\nnoise=1\n")
    out, chosen = os.path.join(work, "t", "tune.json"), os.path.join(work, "t", "chosen")
    log, suite_log = os.path.join(work, "runs.log"), os.path.join(work, "suite.log")
    env = {"FAKE_LOG": log, "FAKE_SUITE_LOG": suite_log}
    r = run_tuner(root, work, ["--candidates-file", cands, "--candidate", "broken=1", "--candidate", "tif=2",
                               "--candidate", "tif=4", "--candidate", "same=1", "--candidate", "hang=1", "--candidate", "fast=1", "--timeout", "3", "--conformance", f"{suite} run --candidate x",
                               "--out", out, "--chosen", chosen, "--deadline", "200", "--reserve", "20"], env)
    check("tuning runs", r.returncode == 0, (r.returncode, r.stderr[-2000:]))
    if not os.path.isfile(out):
        return
    doc = json.load(open(out))
    sets = {s["options"]: s for s in doc["sets"]}
    check("the file's sets, then --candidate's, each once", doc["candidates"] ==
          ["fast=1", "faster=1", "depth=1", "slow=1", "noise=1", "broken=1", "tif=2", "tif=4", "same=1", "hang=1"], doc["candidates"])
    for o in ("fast=1", "faster=1", "depth=1", "slow=1", "noise=1", "tif=2", "tif=4", "same=1"):
        check(f"score of {o} alone", close(sets.get(o, {}).get("score"), expected_score(o)),
              (sets.get(o), expected_score(o)))
    check("a set the backend refuses has no score and keeps its error", sets.get("broken=1", {}).get("score") is None and any(
        x["options"] == "broken=1" and "unknown option 'broken=1'" in (x["error"] or "") for x in doc["runs"]), sets.get("broken=1"))
    hung = [x for x in doc["runs"] if x["options"] == "hang=1"]
    check("a set whose run hangs: stopped at --timeout, no score", len(hung) == 1 and "timed out after 3 s" in (
        hung[0]["error"] or "") and sets.get("hang=1", {}).get("score", 0) is None, hung)
    runs_of = lambda o: [x for x in doc["runs"] if x["options"] == o]
    check("... and stops at its first failing test", len(runs_of("broken=1")) == 1, len(runs_of("broken=1")))
    check("the defaults run twice, every test", len(runs_of("")) == 6, len(runs_of("")))
    check("... their drift is reported (none here)", doc["drift_of_defaults"] and all(
        close(v, 1.0) for v in doc["drift_of_defaults"].values()), doc["drift_of_defaults"])

    # Gainers by score: tif=4 1.15, faster=1 1.129, fast=1 1.10, depth=1 1.091, same=1
    # 1.06, tif=2 1.05.
    joined = [o for o, s in sets.items() if s["step"] == "joined"]
    check("gainers joined in order of score, conflicts dropped", joined ==
          ["tif=4,faster=1", "tif=4,faster=1,fast=1", "tif=4,faster=1,fast=1,depth=1", "tif=4,faster=1,fast=1,same=1"],
          joined)
    check("the greedy's best is the union that kept gaining: a union the backend refuses, or that gains "
          "nothing more, is not kept", doc["greedy_best"] == "tif=4,faster=1,fast=1", doc["greedy_best"])
    check("its score is the product of its parts'", close(sets["tif=4,faster=1,fast=1"]["score"],
                                                           expected_score("tif=4,faster=1,fast=1")))
    check("sets giving one option two values are never joined", not any("tif=2" in o and "tif=4" in o for o in sets))
    check("below --min-gain nothing is joined", not any("noise=1" in o and o != "noise=1" for o in sets))

    # Conformance: the planted fault fails every set with faster=1; the first without it is chosen.
    asked = open(suite_log).read().splitlines()
    check("conformance in order of score until one passes", asked == ["tif=4,faster=1,fast=1", "tif=4,faster=1", "tif=4"],
          asked)
    check("the choice: the fastest set that passed", doc["chosen"] == "tif=4" and open(chosen).read() == "tif=4\n",
          doc["chosen"])
    check("the last line says the choice", r.stdout.strip().splitlines()[-1] == "chosen: tif=4", r.stdout[-300:])
    table = open(out[:-5] + ".md").read()
    check("the table has a row a set, with its medians and verdict", "| tif=4 | alone | 115.0 | 57.5 | 92.0 | 1.150 | passed |"
          in table and "| tif=4,faster=1 | joined |" in table and "FAILED" in table, table)
    check("bench runs are decode only, with the JSON", all("-p" in json.loads(l) and "--json" in json.loads(l)
                                                           for l in open(log)))

    # The deadline: with every run 0.3 s and 3 s in all, 1 of them kept, the tuner
    # measures what fits, stops, and still chooses among what it measured (no
    # conformance asked for).
    out2 = os.path.join(work, "t2", "tune.json")
    r = run_tuner(root, work, ["--candidates-file", cands, "--out", out2, "--deadline", "3", "--reserve", "1"],
                  dict(env, FAKE_SLEEP="0.3"))
    doc2 = json.load(open(out2)) if os.path.isfile(out2) else {"sets": [], "seconds": None, "chosen": None}
    check("a short deadline: stops measuring in time", r.returncode == 0 and doc2["seconds"] is not None
          and doc2["seconds"] < 3 + 1.5 and 1 <= len(doc2["sets"]) < 6, (r.returncode, doc2.get("seconds"), len(doc2["sets"])))
    check("... and chooses among what it measured", doc2["chosen"] in {s["options"] for s in doc2["sets"]}, doc2["chosen"])

    # Without gains the defaults are checked and chosen.
    out3, chosen3 = os.path.join(work, "t3", "tune.json"), os.path.join(work, "t3", "chosen")
    r = run_tuner(root, work, ["--candidate", "slow=1", "--candidate", "noise=1", "--out", out3, "--chosen", chosen3,
                               "--conformance", f"{suite} run"], env)
    doc3 = json.load(open(out3)) if os.path.isfile(out3) else {}
    check("no gain: the defaults, checked", r.returncode == 0 and doc3.get("chosen") == "" and open(chosen3).read() == "\n"
          and [c["options"] for c in doc3["conformance"]] == [""], (r.returncode, doc3.get("conformance")))

    # The defaults' second run failing: their first run's samples still score the sets.
    out6 = os.path.join(work, "t6", "tune.json")
    r = run_tuner(root, work, ["--candidate", "fast=1", "--out", out6],
                  dict(env, FAKE_LOG=os.path.join(work, "runs6.log"), FAKE_DEFAULTS_FAIL_FROM="4"))
    doc6 = json.load(open(out6)) if os.path.isfile(out6) else {"sets": [], "runs": []}
    s6 = {s["options"]: s["score"] for s in doc6["sets"]}
    check("the defaults' second run failing: the first's samples still score", r.returncode == 0 and close(
        s6.get("fast=1"), expected_score("fast=1")) and doc6.get("chosen") == "fast=1"
        and sum(1 for x in doc6["runs"] if x["error"]) == 1, (r.returncode, s6, r.stderr[-500:]))

    # Every set failing conformance: exit 1, nothing chosen.
    out4 = os.path.join(work, "t4", "tune.json")
    r = run_tuner(root, work, ["--candidate", "faster=1", "--out", out4, "--conformance", f"{suite} run --candidate-options faster=1"], env)
    doc4 = json.load(open(out4)) if os.path.isfile(out4) else {}
    check("nothing passes: exit 1 and no choice", r.returncode == 1 and doc4.get("chosen") is None
          and "none passed" in r.stdout, (r.returncode, r.stdout[-300:]))

    # The defaults failing: one line naming the test, exit 1, the JSON still written.
    out5 = os.path.join(work, "t5", "tune.json")
    r = run_tuner(root, work, ["--candidate", "fast=1", "--out", out5], dict(env, FAKE_ALL_FAIL="1"))
    err = [l for l in r.stderr.splitlines() if l.startswith("tune: the defaults")]
    check("the defaults failing: exit 1, the test and the error said", r.returncode == 1 and len(err) == 1
          and "a.gguf@0" in err[0] and "no CUDA device" in err[0] and os.path.isfile(out5), (r.returncode, r.stderr[-500:]))

    for extra, what in ((["--out", out5], "no test"), (["--test", "x.gguf@deep", "--out", out5], "MODEL@DEPTH"),
                        (["--test", "a.gguf", "--candidate", "fast", "--out", out5], "key=value")):
        cmd = [sys.executable, os.path.join(root, "bench", "tune_options.py")] + extra
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(f"refused: {what}", r.returncode == 2 and what in r.stderr, r.stderr[-300:])


def test_emulated(root, work, edgerun, plugin_dir, suite, model):
    plugin = os.path.join(plugin_dir, "libedgerun_cuda_orin_emu.so")
    cands = [l.split("#", 1)[0].strip() for l in open(os.path.join(root, "bench", "device", "candidates.txt"))]
    cands = [c for c in cands if c]
    check("candidates.txt lists option sets", len(cands) >= 5, cands)

    # Every set is one the backend takes (it checks options when it is made: the ops
    # level's smallest op is enough), and a wrong one is refused there.
    def accepted(options):
        r = subprocess.run([suite, "run", "--candidate", plugin, "--candidate-options", options, "--levels", "ops",
                            "--ops", "ADD"], capture_output=True, text=True, timeout=300)
        return r.returncode == 0, r.stderr.strip()[-300:]
    refused = [(c, why) for c in cands for ok, why in [accepted(c)] if not ok]
    check("the backend takes every candidate", not refused, refused)
    check("... and refuses a wrong one", not accepted("gemv_tasks_in_flight=3")[0])

    # The tuner on the real edgerun bench and suite: one candidate (the emulation runs a
    # decode step in seconds), --min-gain 1000 so that the defaults are what is checked.
    out = os.path.join(work, "tune.json")
    cmd = [sys.executable, os.path.join(root, "bench", "tune_options.py"), "--edgerun", edgerun, "--backend", "cuda_orin_emu",
           "--plugin-dir", plugin_dir, "--test", model + "@4", "--candidate", cands[0], "--n-gen", "1", "-r", "1",
           "--min-gain", "1000", "--deadline", "600", "--reserve", "60", "--timeout", "300",
           "--conformance", f"{suite} run --candidate {plugin} --levels ops --ops ADD", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=800)
    check("tuning on the emulation runs", r.returncode == 0, (r.returncode, r.stderr[-2000:]))
    if not os.path.isfile(out):
        return
    doc = json.load(open(out))
    runs = [x for x in doc["runs"] if not x["error"]]
    check("edgerun bench's JSON read: the defaults twice and the candidate, positive samples", len(runs) == 3
          and all(x["tok_s"]["min"] > 0 and x["depth"] == 4 for x in runs), doc["runs"])
    check("the device named as edgerun bench names it", all("emulation" in (x.get("device") or "") for x in runs), runs[:1])
    check("the defaults checked by the real suite and chosen", doc["chosen"] == "" and len(doc["conformance"]) == 1
          and doc["conformance"][0]["passed"], doc["conformance"])


# The device call's own tools, for bench/device/tune_compare.sh: an edgerun that
# synthesizes empty files and decodes faster with four tasks in flight, a suite that
# passes and records what it was asked, nvidia-smi.
# The stand-ins of the bundle's binaries are as strict as the real ones where a device call
# went wrong on them: without the bundle's env.sh sourced (LD_LIBRARY_PATH: its syslib) a
# machine image without Boost cannot load them, and `edgerun synth` writes .gguf names only.
NEEDS_BUNDLE_ENV = r'''
import os, sys
if os.environ.get("FAKE_BUNDLE_ENV") != "1":
    sys.exit(os.path.basename(sys.argv[0]) + ": error while loading shared libraries: libboost_program_options.so.1.74.0")
'''
SCRIPT_EDGERUN = NEEDS_BUNDLE_ENV + r'''
import json, os, sys
a = sys.argv[1:]
arg = lambda k, d=None: a[a.index(k) + 1] if k in a else d
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(a) + "\n")
if a[0] == "synth":
    if not arg("-o").endswith(".gguf"):
        sys.exit(f"edgerun: error: {arg('-o')}: no format plugin writes its files; writable: .gguf")
    open(arg("-o"), "wb").write(b"GGUF")
    sys.exit(0)
if a[0] != "bench":
    print("memory taken since before the CUDA context 100 MiB")
    sys.exit(0)
options = arg("--backend-options", "").split(",")
fast = "gemv_tasks_in_flight=4" in options
# profile_skip: each launch left out of a step (399) takes 2 us off it.
skipped = sum(145 if o == "profile_skip=prepare" else 10 for o in options if o.startswith("profile_skip="))
step_ms = 1000.0 / (130.0 if fast else 100.0) - skipped * 0.002
tg = [1000.0 / step_ms * f for f in (1.0, 0.99, 1.01)][:int(arg("-r"))]
print(f"info: [cuda_orin] cuda_orin: 63 steps replayed from a CUDA Graph, 0 launched plainly; {399 - skipped} "
      "launches per step", file=sys.stderr)
pp = [4000.0, 4100.0, 3900.0][:int(arg("-r"))]
print(json.dumps({"backend": "cuda_orin", "device": "Fake GPU", "tg_tok_s": tg[0], "tg_tok_s_samples": tg,
                  "pp_tok_s": pp[0], "pp_tok_s_samples": pp, "ttft_ms": 1.0, "ttft_ms_samples": [1.0] * len(pp),
                  "bytes_per_token": 1000000, "achieved_gb_s": 0.1}))
'''
SCRIPT_SUITE = NEEDS_BUNDLE_ENV + r'''
import json, os, sys
with open(os.environ["FAKE_SUITE_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
print("PASS: 0 problems")
'''
SCRIPT_SMI = r'''
import sys
known = {"name": "Fake GPU", "driver_version": "1.0", "memory.total": "81559 MiB", "memory.used": "100",
         "clocks.max.memory": "2619 MHz"}
fields = next(a for a in sys.argv if a.startswith("--query-gpu=")).split("=", 1)[1].split(",")
if "noheader" not in " ".join(sys.argv):
    print(", ".join(fields))
print(", ".join(known[f] for f in fields))
'''


def test_device_call(root, work):
    """bench/device/tune_compare.sh on a copy of bench/, the bundle and llama-bench replaced by stand-ins."""
    tree, out, tools = os.path.join(work, "tree"), os.path.join(work, "out"), os.path.join(work, "tools")
    shutil.copytree(os.path.join(root, "bench"), os.path.join(tree, "bench"), ignore=shutil.ignore_patterns("results"))
    bundle = os.path.join(tree, ".device-bundle")
    os.makedirs(os.path.join(bundle, "bin"))
    fake_tool(os.path.join(bundle, "bin"), "edgerun", SCRIPT_EDGERUN)
    fake_tool(os.path.join(bundle, "bin"), "edgerun-conformance", SCRIPT_SUITE)
    open(os.path.join(bundle, "env.sh"), "w").write("export FAKE_BUNDLE_ENV=1\n")
    open(os.path.join(bundle, "COMMIT"), "w").write("test123\n")
    os.makedirs(os.path.join(tree, ".smol-c"))
    os.makedirs(tools)
    fake_tool(tools, "llama-bench", FAKE_LLAMA_BENCH)
    subprocess.run(["tar", "-cJf", os.path.join(tree, ".smol-c", "llama-bench.tar.xz"), "-C", tools, "llama-bench"], check=True)
    fake_tool(tools, "nvidia-smi", SCRIPT_SMI)
    os.makedirs(out)
    for d in ("/tmp/logsT", "/tmp/logsC", "/tmp/lb"):
        shutil.rmtree(d, ignore_errors=True)
    log, suite_log = os.path.join(work, "edgerun.log"), os.path.join(work, "suite.log")
    env = dict(os.environ, OUT=out, PATH=tools + os.pathsep + os.environ["PATH"], FAKE_LOG=log, FAKE_SUITE_LOG=suite_log,
               DEADLINE="375", COMPARE_SECONDS="100", TUNE_RESERVE="20")
    r = subprocess.run(["bash", os.path.join(tree, "bench", "device", "tune_compare.sh")], capture_output=True, text=True,
                       env=env, timeout=600)
    check("the call's script ends well", r.returncode == 0 and "T done at" in r.stdout, (r.returncode, r.stdout[-1500:],
                                                                                           r.stderr[-1500:]))
    brought = sorted(os.listdir(out))
    check("what comes back: the tuning, the comparison, the skip profile, both logs, at most 8 files",
          brought == sorted(["tune.json", "tune.md", "gpu-compare.json", "gpu-compare.md", "skip-profile.md",
                             "logsT.tar.gz", "logsC.tar.gz"]), brought)
    tune_doc = json.load(open(os.path.join(out, "tune.json"))) if "tune.json" in brought else {}
    scored = {s["options"] for s in tune_doc.get("sets", []) if s["score"] is not None}
    check("every candidate of candidates.txt measured on three tests", len(tune_doc.get("tests", [])) == 3
          and len(tune_doc.get("candidates", [])) >= 5 and scored >= set(tune_doc["candidates"]),
          (tune_doc.get("tests"), sorted(set(tune_doc.get("candidates", [])) - scored)))
    check("four tasks in flight chosen", tune_doc.get("chosen") == "gemv_tasks_in_flight=4", tune_doc.get("chosen"))
    asked = [json.loads(l) for l in open(suite_log)] if os.path.isfile(suite_log) else []
    check("conformance by the tuner, with the choice, then the widened and the pipelined attention's ATTENTION cases",
          len(asked) == 3 and asked[0][-2:] == ["--candidate-options", "gemv_tasks_in_flight=4"]
          and asked[1][asked[1].index("--candidate-options") + 1] == "tiled_attention=2,widen_kv=1,gemv_tasks_in_flight=4"
          and asked[2][asked[2].index("--candidate-options") + 1] ==
          "tiled_attention=0,attention_pipeline=1,gemv_tasks_in_flight=4"
          and all(a[a.index("--ops") + 1] == "ATTENTION" for a in asked[1:]), asked)
    cmp_doc = json.load(open(os.path.join(out, "gpu-compare.json"))) if "gpu-compare.json" in brought else {}
    check("the comparison runs with the choice", cmp_doc.get("settings", {}).get("backend_options") == "gemv_tasks_in_flight=4"
          and len(cmp_doc.get("models", [])) == 3, (cmp_doc.get("settings"), len(cmp_doc.get("models", []))))
    ran = [json.loads(l) for l in open(log)]
    compared = [a for a in ran if a[0] == "bench" and "-b" in a]
    check("... every edgerun run of it", compared and all("gemv_tasks_in_flight=4" in a for a in compared), compared[:1])
    profiles = [a for a in ran if "--backend-options" in a and a[a.index("--backend-options") + 1].startswith("profile=1")]
    check("a launch profile of two models' decode and of a prefill at 32k, with the choice", len(profiles) == 3 and all(
        a[a.index("--backend-options") + 1] == "profile=1,gemv_tasks_in_flight=4" for a in profiles)
          and sum(a[0] == "bench" and a[a.index("-d") + 1] == "32768" for a in profiles) == 1, profiles)
    skips = [a[a.index("--backend-options") + 1] for a in ran if a[0] == "bench" and "--backend-options" in a
             and "profile_skip=" in a[a.index("--backend-options") + 1]]
    check("Qwen3-4B's decode with each kind of launch left out, with the choice", len(skips) == 5 and all(
        o.startswith("gemv_tasks_in_flight=4,profile_skip=") for o in skips) and "profile_skip=prepare" in
          ",".join(skips), skips)
    table = open(os.path.join(out, "skip-profile.md")).read() if "skip-profile.md" in brought else ""
    check("... and its table: prepare's 145 launches a step, 2.00 us each",
          re.search(r"\| prepare \| 254 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+% \| 2\.00 \| [0-9.]+ \|", table), table)
    widened = [a for a in ran if a[0] == "bench" and "--backend-options" in a
               and "widen_kv=" in a[a.index("--backend-options") + 1]]
    check("pp512 at depth 32768 over the INT8 cache, widened and not, for Qwen3-4B and Qwen3-0.6B, with the choice",
          sorted((os.path.basename(a[a.index("-m") + 1]), a[a.index("--backend-options") + 1]) for a in widened) ==
          sorted((m + "-Q4_K_M.gguf", f"widen_kv={n},gemv_tasks_in_flight=4")
                 for m in ("qwen3-4b", "qwen3-0.6b") for n in (0, 1))
          and all(a[a.index("-d") + 1] == "32768" and a[a.index("-p") + 1] == "512"
                  and a[a.index("--kv-type") + 1] == "q8" for a in widened), widened)
    pipelined = [a for a in ran if a[0] == "bench" and "--backend-options" in a and "--kv-type" in a
                 and "attention_pipeline=" in a[a.index("--backend-options") + 1]]
    check("Qwen3-4B's decode at depth 32768 over both caches, pipelined and not, with the choice",
          sorted((a[a.index("--kv-type") + 1], a[a.index("--backend-options") + 1]) for a in pipelined) ==
          sorted((kv, f"attention_pipeline={n},gemv_tasks_in_flight=4") for kv in ("q8", "f16") for n in (0, 1))
          and all(os.path.basename(a[a.index("-m") + 1]) == "qwen3-4b-Q4_K_M.gguf" and a[a.index("-d") + 1] == "32768"
                  and a[a.index("-p") + 1] == "0" for a in pipelined), pipelined)
    check("the models synthesized once each", sorted(a[a.index("--preset") + 1] for a in ran if a[0] == "synth") ==
          ["llama3.2-1b", "qwen3-0.6b", "qwen3-4b"], [a for a in ran if a[0] == "synth"])

    # compare.sh alone (a session whose tuning is done): it runs conformance itself first.
    shutil.rmtree("/tmp/logsC", ignore_errors=True)
    open(suite_log, "w").close()
    env.update(DEADLINE="120", EDGERUN_OPTIONS="stage_x=1")
    r = subprocess.run(["bash", os.path.join(tree, "bench", "device", "compare.sh")], capture_output=True, text=True,
                       env=env, timeout=300)
    asked = [json.loads(l) for l in open(suite_log)]
    check("compare.sh alone: conformance with its options, then the comparison, exit 0",
          r.returncode == 0 and len(asked) == 1 and "--candidate-options" in asked[0]
          and asked[0][asked[0].index("--candidate-options") + 1] == "stage_x=1",
          (r.returncode, asked, r.stdout[-1500:]))


def main():
    mode, root, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "fake":
        test_fake(root, work)
    elif mode == "device-call":
        test_device_call(root, work)
    else:
        test_emulated(root, work, *sys.argv[4:8])
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
