#!/usr/bin/env python3
"""The GPU comparison's scripts, checked where there is no GPU.

  test_bench_scripts.py plot ROOT WORK      bench/plot_results.py on the hand-made fixture
  test_bench_scripts.py compare ROOT WORK   bench/compare_llamacpp_gpu.py driven through
                                            stand-ins for llama-bench and edgerun
  test_bench_scripts.py project ROOT WORK   bench/project_orin.py on a hand-made profile

The fixture's figures are made up (the file says so); what is checked is that the PNGs
are written and that the table says what the JSON says, and that the comparison turns the
two tools' outputs into the right minimum/median/maximum, survives one side failing and
records why.
"""

import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import textwrap

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def table_rows(text):
    """{model: {(test, depth, kv): [cells]}} from the markdown table."""
    tables, model = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            model = line[4:]
            tables[model] = {}
        elif model and line.startswith("| ") and (line.startswith("| pp") or line.startswith("| tg")):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tables[model][(cells[0], int(cells[1]), cells[2])] = cells[3:]
    return tables


def expected_cells(rows_by_runtime):
    """The cells the table must show for one (test, depth, kv): computed here from the JSON."""
    l, e = rows_by_runtime.get("llama.cpp"), rows_by_runtime.get("edgerun")
    tok = lambda r: f"{r['tok_s']['median']:.1f} ({r['tok_s']['min']:.1f}–{r['tok_s']['max']:.1f})" if r else "—"
    ratio = f"{e['tok_s']['median'] / l['tok_s']['median']:.2f}" if l and e else "—"

    def gbs(r):
        if not r or "achieved_gb_s" not in r:
            return "—"
        if "fraction_of_peak" in r:
            return f"{r['achieved_gb_s']:.0f} ({100 * r['fraction_of_peak']:.0f}%)"
        return f"{r['achieved_gb_s']:.0f}"

    ttft = lambda r: f"{r['ttft_ms']['median']:.1f}" if r and "ttft_ms" in r else "—"
    return [tok(l), tok(e), ratio, gbs(l), gbs(e), ttft(l), ttft(e)]


def check_table(doc, text, label):
    tables = table_rows(text)
    check(f"{label}: one table per model", sorted(tables) == sorted(m["name"] for m in doc["models"]), sorted(tables))
    for m in doc["models"]:
        by_key = {}
        for r in m["results"]:
            by_key.setdefault((r["test"], r["depth"], r["kv"]), {})[r["runtime"]] = r
        got = tables.get(m["name"], {})
        check(f"{label}: {m['name']}: a row per test, context and KV", sorted(got) == sorted(by_key),
              (sorted(got), sorted(by_key)))
        wrong = [(k, got[k], expected_cells(v)) for k, v in by_key.items() if k in got and got[k] != expected_cells(v)]
        check(f"{label}: {m['name']}: every cell as in the JSON", not wrong, wrong[:3])
        for run in m["runs"]:
            if run.get("error"):
                check(f"{label}: {m['name']}: the failure '{run['error']}' is in the table", run["error"] in text)


def test_plot(root, work):
    fixture = os.path.join(root, "tests", "bench", "fixture_gpu_results.json")
    script = os.path.join(root, "bench", "plot_results.py")
    with open(fixture) as f:
        doc = json.load(f)
    check("the fixture says its numbers are made up", "MADE-UP" in doc.get("FIXTURE", ""), doc.get("FIXTURE"))
    r = subprocess.run([sys.executable, script, fixture, "--out-dir", work], capture_output=True, text=True)
    check("plot_results exits 0", r.returncode == 0, r.stderr)
    for kind in ("context", "roofline"):
        path = os.path.join(work, f"fixture_gpu_results-{kind}.png")
        size = png_size(path) if os.path.isfile(path) else None
        check(f"{kind} plot is a PNG of a readable size", size is not None and size[0] >= 600 and size[1] >= 300, size)
        check(f"{kind} plot is not blank", os.path.isfile(path) and os.path.getsize(path) > 20000,
              os.path.getsize(path) if os.path.isfile(path) else "missing")
    table = os.path.join(work, "fixture_gpu_results.md")
    text = open(table).read() if os.path.isfile(table) else ""
    check("the table names the device and the copy peak",
          doc["device"]["name"] in text and f"{doc['copy_peak']['gb_s']['median']:.0f} GB/s" in text, text[:200])
    check_table(doc, text, "fixture")

    # With cuda_orin_bench's kernel figures: each GEMV input form is its own labelled point.
    kernels = os.path.join(work, "kernels.json")
    with open(kernels, "w") as f:
        json.dump({"device": "made up", "peak_copy_GBps": 4000.0, "results": [
            {"kernel": "gemv", "shape": "Qwen3-4B ffn_up 9728x2560", "type": "Q4_K", "activations": "f32",
             "time_us": 5.0, "bytes": 1.4e7, "GBps": 2800.0},
            {"kernel": "gemv", "shape": "Qwen3-4B ffn_up 9728x2560", "type": "Q4_K", "activations": "q8",
             "time_us": 4.0, "bytes": 1.4e7, "GBps": 3500.0},
            {"kernel": "gemv", "shape": "Qwen3-4B ffn_up 9728x2560", "type": "Q4_K", "activations": "f32",
             "tasks_in_flight": 2, "time_us": 4.5, "bytes": 1.4e7, "GBps": 3100.0},
            {"kernel": "gemv", "shape": "Qwen3-4B ffn_up 9728x2560", "type": "Q4_K", "activations": "f32",
             "tasks_in_flight": 1, "warps_per_row": 4, "time_us": 4.6, "bytes": 1.4e7, "GBps": 3000.0},
            {"kernel": "gemv", "shape": "Qwen3-4B ffn_up 9728x2560", "type": "Q4_K", "activations": "q8-prepared",
             "tasks_in_flight": 1, "rows_in_pairs": 1, "ring_depth": 3, "time_us": 4.1, "bytes": 1.4e7, "GBps": 3400.0},
            {"kernel": "attention", "shape": "kv 32768", "type": "f16 cache", "activations": "",
             "time_us": 50.0, "bytes": 1.3e8, "GBps": 2600.0}]}, f)
    r = subprocess.run([sys.executable, script, fixture, "--out-dir", work, "--kernels", kernels],
                       capture_output=True, text=True)
    check("plot_results --kernels exits 0", r.returncode == 0, r.stderr)
    sys.path.insert(0, os.path.join(root, "bench"))
    import plot_results
    labels = [p[0] for p in plot_results.kernel_points(doc, kernels)][len(doc.get("kernels", [])):]
    check("kernel points name the GEMV's input form, tasks in flight, warps a row and ring, and only where it has them",
          labels == ["cuda_orin gemv Qwen3-4B ffn_up 9728x2560 x f32", "cuda_orin gemv Qwen3-4B ffn_up 9728x2560 x q8",
                     "cuda_orin gemv Qwen3-4B ffn_up 9728x2560 x f32 2 tasks in flight",
                     "cuda_orin gemv Qwen3-4B ffn_up 9728x2560 x f32 4 warps a row",
                     "cuda_orin gemv Qwen3-4B ffn_up 9728x2560 x q8-prepared a ring 3 deep",
                     "cuda_orin attention kv 32768"], labels)

    # Bad input: a clear one-line error, non-zero exit, nothing written.
    bad_dir = os.path.join(work, "bad")
    os.makedirs(bad_dir)
    bad = os.path.join(bad_dir, "bad.json")
    with open(bad, "w") as f:
        json.dump({"device": {}, "commit": "x", "copy_peak": {}}, f)
    r = subprocess.run([sys.executable, script, bad], capture_output=True, text=True)
    check("a file that is no result is refused in one line",
          r.returncode == 1 and "no 'models'" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    check("... and nothing is written", sorted(os.listdir(bad_dir)) == ["bad.json"], os.listdir(bad_dir))
    no_decode = dict(doc, models=[dict(m, results=[x for x in m["results"] if x["test"].startswith("pp")])
                                  for m in doc["models"]])
    with open(bad, "w") as f:
        json.dump(no_decode, f)
    r = subprocess.run([sys.executable, script, bad], capture_output=True, text=True)
    check("results without decode figures are refused", r.returncode == 1 and "nothing to plot" in r.stderr, r.stderr)


FAKE_LLAMA_BENCH = r'''
import json, sys
a = sys.argv[1:]
arg = lambda k: a[a.index(k) + 1]
assert all(f in a for f in ("-fa", "-ngl", "-ctk", "-ctv")) and arg("-fa") == "1" and arg("-ngl") == "99", a
assert arg("-o") == "json" and arg("-ctk") == arg("-ctv"), a
assert arg("-ub") == "512", a  # the prompt's rows per step, as edgerun's -b
reps, kv = int(arg("-r")), arg("-ctk")
out = []
for d in [int(x) for x in arg("-d").split(",")]:
    for n_prompt, n_gen, base in ((int(arg("-p")), 0, 5000.0), (0, int(arg("-n")), 100.0)):
        # tok/s of each repetition: deterministic, different per test, depth and KV type
        ts = [base / (1 + d / 1000) * (1.5 if kv == "q8_0" else 1.0) * (1.0, 1.1, 1.6, 1.7, 2.5)[i] for i in range(reps)]
        ts = ts[1:] + ts[:1]  # not sorted: the script must sort
        n = n_prompt or n_gen
        out.append({"build_commit": "fake", "build_number": 1, "gpu_info": "Fake GPU", "backends": "CUDA",
                    "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": d, "type_k": kv, "type_v": kv,
                    "avg_ts": sum(ts) / len(ts), "samples_ts": ts, "samples_ns": [int(n / t * 1e9) for t in ts]})
print(json.dumps(out, indent=2))
'''

FAKE_EDGERUN = r'''
import json, sys
a = sys.argv[1:]
arg = lambda k: a[a.index(k) + 1]
if a[0] != "bench" or "--json" not in a or arg("--backend") != "cuda_orin" or arg("-b") != "512":
    print("fake edgerun: unexpected command line " + " ".join(a), file=sys.stderr)
    sys.exit(2)
kv, d, reps = arg("--kv-type"), int(arg("-d")), int(arg("-r"))
if kv == "q8" and d > 0:
    print("edgerun: error: cuda_orin: not implemented yet", file=sys.stderr)
    sys.exit(1)
f = (1 + d / 1000)
# spread unevenly, so that the median is not the mean
pp = [4000.0 / f * (1.0, 1.05, 1.4, 1.5, 1.9)[i] for i in range(reps)]
tg = [120.0 / f * (1.0, 1.02, 1.3, 1.4, 1.8)[i] for i in range(reps)][::-1]
if "--backend-options" in a:  # an option that doubles decode, so that passing it shows
    tg = [2 * t for t in tg] if arg("--backend-options") == "fast=1" else sys.exit("fake edgerun: unknown options")
print(json.dumps({"backend": "cuda_orin", "kv_type": kv, "n_depth": d, "n_prompt": int(arg("-p")), "n_gen": int(arg("-n")),
                  "pp_tok_s": sum(pp) / reps, "ttft_ms": 1.0, "tg_tok_s": sum(tg) / reps,
                  "pp_tok_s_samples": pp, "ttft_ms_samples": [512 / p * 1e3 for p in pp], "tg_tok_s_samples": tg,
                  "bytes_per_token": 1000000 + 2000 * d, "achieved_gb_s": 0.1}))
'''


def fake_tool(work, name, body):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(f"#!{sys.executable}\n" + textwrap.dedent(body))
    os.chmod(path, 0o755)
    return path


def summary_of(xs):
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def test_compare(root, work):
    script = os.path.join(root, "bench", "compare_llamacpp_gpu.py")
    llama = fake_tool(work, "llama-bench", FAKE_LLAMA_BENCH)
    edgerun = fake_tool(work, "edgerun", FAKE_EDGERUN)
    model = os.path.join(work, "tiny.gguf")
    open(model, "wb").close()
    out = os.path.join(work, "results", "cmp.json")
    r = subprocess.run([sys.executable, script, "--edgerun", edgerun, "--llama-bench", llama, "--model", model,
                        "--depths", "0,4096", "-r", "3", "--commit", "abc123", "--out", out],
                       capture_output=True, text=True, timeout=600)
    check("a failed run makes the exit status 1", r.returncode == 1, (r.returncode, r.stderr[-2000:]))
    check("the JSON and the table are written", os.path.isfile(out) and os.path.isfile(out[:-5] + ".md"), r.stderr)
    if not os.path.isfile(out):
        return
    doc = json.load(open(out))
    check("commit and command recorded", doc["commit"] == "abc123" and "--depths 0,4096" in doc["command"], doc["command"])
    peak = doc["copy_peak"]
    check("the copy peak is measured or its failure said", (peak["gb_s"] is None) != (peak["error"] is None), peak)
    m = doc["models"][0]
    res = {(x["runtime"], x["test"], x["depth"], x["kv"]): x for x in m["results"]}

    # llama.cpp: every test, depth and KV type, from the samples it printed.
    want = {}
    for kv in ("f16", "q8_0"):
        for d in (0, 4096):
            for test, base in (("pp512", 5000.0), ("tg128", 100.0)):
                want[("llama.cpp", test, d, kv)] = [base / (1 + d / 1000) * (1.5 if kv == "q8_0" else 1.0) * x
                                                    for x in (1.0, 1.1, 1.6)]
    for key, samples in want.items():
        got = res.get(key)
        check(f"llama.cpp {key[1:]} min/median/max", got is not None and all(
            close(got["tok_s"][k], v) for k, v in summary_of(samples).items()), got and got["tok_s"])
    pp = res.get(("llama.cpp", "pp512", 0, "f16"))
    check("llama.cpp's time to first token is its prompt time", pp is not None and close(
        pp["ttft_ms"]["median"], statistics.median([int(512 / t * 1e9) / 1e6 for t in want[("llama.cpp", "pp512", 0, "f16")]])),
        pp and pp.get("ttft_ms"))

    # edgerun: what ran; the refused runs recorded with their error, the rest still measured.
    tg = res.get(("edgerun", "tg128", 4096, "f16"))
    check("edgerun decode at depth 4096 min/median/max", tg is not None and all(
        close(tg["tok_s"][k], v) for k, v in summary_of([120.0 / 5.096 * x for x in (1.0, 1.02, 1.3)]).items()),
        tg and tg["tok_s"])
    refused = [x for x in m["runs"] if x["runtime"] == "edgerun" and x.get("error")]
    check("the refused edgerun run is recorded with its error",
          len(refused) == 1 and refused[0]["depth"] == 4096 and refused[0]["kv"] == "q8_0"
          and "not implemented yet" in refused[0]["error"], refused)
    check("... and has no figures", ("edgerun", "tg128", 4096, "q8_0") not in res)

    # Bytes per token: edgerun's count, lent to llama.cpp's run of the same model, KV and depth.
    l_tg = res.get(("llama.cpp", "tg128", 4096, "f16"))
    check("llama.cpp's decode gets edgerun's bytes per token", l_tg is not None and l_tg.get("bytes_per_token") == 1000000 + 2000 * 4096
          and close(l_tg["achieved_gb_s"], l_tg["bytes_per_token"] * l_tg["tok_s"]["median"] / 1e9), l_tg)
    l_q8 = res.get(("llama.cpp", "tg128", 4096, "q8_0"))
    check("... and none where edgerun did not run", l_q8 is not None and "achieved_gb_s" not in l_q8, l_q8)
    check_table(doc, open(out[:-5] + ".md").read(), "compare")

    # One side broken entirely: llama-bench printing no JSON. The edgerun half still comes.
    broken = fake_tool(work, "broken-llama-bench", "print('this is not JSON')\n")
    out2 = os.path.join(work, "results", "cmp2.json")
    r = subprocess.run([sys.executable, script, "--edgerun", edgerun, "--llama-bench", broken, "--model", model,
                        "--depths", "0", "-r", "2", "--kv", "f16", "--out", out2], capture_output=True, text=True, timeout=600)
    doc2 = json.load(open(out2)) if os.path.isfile(out2) else {"models": [{"runs": [], "results": []}]}
    runs2 = doc2["models"][0]["runs"]
    check("llama-bench without JSON: recorded", r.returncode == 1 and any(
        x["runtime"] == "llama.cpp" and "printed no JSON" in (x.get("error") or "") for x in runs2), runs2)
    check("... and edgerun still measured", any(x["runtime"] == "edgerun" for x in doc2["models"][0]["results"]),
          doc2["models"][0]["results"])

    # --append: a second model joins the first file.
    model2 = os.path.join(work, "other.gguf")
    open(model2, "wb").close()
    r = subprocess.run([sys.executable, script, "--edgerun", edgerun, "--llama-bench", llama, "--model", model2,
                        "--depths", "0", "-r", "2", "--only", "llama.cpp", "--append", "--out", out],
                       capture_output=True, text=True, timeout=600)
    doc3 = json.load(open(out))
    check("--append keeps the models already there", r.returncode == 0 and [x["name"] for x in doc3["models"]] ==
          ["tiny.gguf", "other.gguf"], (r.returncode, r.stderr[-500:], [x["name"] for x in doc3["models"]]))

    r = subprocess.run([sys.executable, script, "--llama-bench", llama, "--out", out], capture_output=True, text=True)
    check("no model: refused before any work", r.returncode == 2 and "no model" in r.stderr, r.stderr)

    # --backend-options: passed to every edgerun run, recorded, named in the table; a file
    # measured with other options is not appended to.
    out4 = os.path.join(work, "results", "cmp4.json")
    r = subprocess.run([sys.executable, script, "--edgerun", edgerun, "--llama-bench", llama, "--model", model,
                        "--depths", "0", "-r", "2", "--kv", "f16", "--backend-options", "fast=1", "--out", out4],
                       capture_output=True, text=True, timeout=600)
    doc4 = json.load(open(out4)) if os.path.isfile(out4) else {"settings": {}, "models": [{"results": []}]}
    tg4 = {(x["runtime"], x["test"]): x for x in doc4["models"][0]["results"]}.get(("edgerun", "tg128"))
    check("--backend-options reach edgerun bench", r.returncode == 0 and tg4 is not None and close(
        tg4["tok_s"]["median"], 2 * statistics.median([120.0 * x for x in (1.0, 1.02)])), (r.stderr[-500:], tg4))
    check("... are recorded", doc4["settings"].get("backend_options") == "fast=1", doc4["settings"])
    check("... and named in the table", os.path.isfile(out4[:-5] + ".md") and "options fast=1" in open(out4[:-5] + ".md").read())
    table = open(out[:-5] + ".md").read()
    check("without them the table says the defaults ran", "its default options" in table, table[:300])
    r = subprocess.run([sys.executable, script, "--edgerun", edgerun, "--llama-bench", llama, "--model", model2,
                        "--depths", "0", "-r", "2", "--backend-options", "fast=1", "--append", "--out", out],
                       capture_output=True, text=True, timeout=600)
    check("appending other options' figures is refused", r.returncode == 2 and "one set of options" in r.stderr
          and json.load(open(out)) == doc3, r.stderr[-500:])


PROFILE_LOG = """\
info: [cuda_orin] cuda_orin: launch profile of 63 decode steps (one row): 0.015 ms of kernel time per step, 1.000 ms wall per step (launch to synchronized)
info: [cuda_orin] cuda_orin:   launch                                       launches/step    total ms     ms/step   share     MB/step      GB/s
info: [cuda_orin] cuda_orin:   gemv 2048->16384, 2 outputs, 1 row                      16       0.630      0.0100   66.7%      30.000    3000.0
info: [cuda_orin] cuda_orin:   gemv 2048->2048, 1 output, 1 row                        16       0.126      0.0020   13.3%       2.000    1000.0
info: [cuda_orin] cuda_orin:   gemv 2048->128256, 1 output, 1 row                       1       0.063      0.0010    6.7%       5.000    5000.0
info: [cuda_orin] cuda_orin:   attention (split + merge)                               32       0.063      0.0010    6.7%       0.500     500.0
info: [cuda_orin] cuda_orin:   rope_append                                             16       0.063      0.0010    6.7%           -         -
info: [cuda_orin] cuda_orin: launches per step: 81
info: [cuda_orin] cuda_orin: bytes per step: 37.500 MB counted (GEMVs and attention); 2884.6 GB/s over the kernel time, 37.5 GB/s over the wall time
info: [cuda_orin] cuda_orin: launch profile of 1 prefill steps (several rows): 9.000 ms of kernel time per step, 9.000 ms wall per step (launch to synchronized)
info: [cuda_orin] cuda_orin:   launch                                       launches/step    total ms     ms/step   share     MB/step      GB/s
info: [cuda_orin] cuda_orin:   gemv 2048->16384, 2 outputs, 5 rows                     16       9.000      9.0000  100.0%      30.000       3.3
info: [cuda_orin] cuda_orin: launches per step: 16
"""


def test_project(root, work):
    """bench/project_orin.py on a hand-made profile: the issue's formula, computed here apart."""
    script = os.path.join(root, "bench", "project_orin.py")
    log = os.path.join(work, "profile.log")
    with open(log, "w") as f:
        f.write(PROFILE_LOG)
    out = os.path.join(work, "projection.json")
    r = subprocess.run([sys.executable, script, log, "--peak-gbs", "4000", "--orin", "Test Orin=100", "--json", out],
                       capture_output=True, text=True)
    check("projection runs", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    doc = json.load(open(out))
    # Efficiencies 3000/4000, 1000/4000, min(5000/4000, 1), 500/4000: the bytes over them.
    effective = 30 / 0.75 + 2 / 0.25 + 5 / 1.0 + 0.5 / 0.125
    check("bytes over efficiency, the L2-fed logits capped at the peak", close(doc["effective_mb_per_step"], effective),
          doc["effective_mb_per_step"])
    check("projected tok/s = bandwidth / sum(bytes / efficiency)",
          close(doc["projected_tok_s"]["Test Orin"], 100e3 / effective)
          and close(doc["projected_tok_s"]["Jetson AGX Orin 64GB"], 204.8e3 / effective), doc["projected_tok_s"])
    check("roofline tok/s = bandwidth / counted bytes", close(doc["roofline_tok_s"]["Test Orin"], 100e3 / 37.5),
          doc["roofline_tok_s"])
    check("the decode table, not the prefill one after it", len(doc["kinds"]) == 4 and close(doc["mb_per_step"], 37.5),
          doc["kinds"])
    check("the uncounted launches' share of the kernel time is said",
          close(doc["uncounted_share_of_kernel_time"], 0.001 / 0.015), doc["uncounted_share_of_kernel_time"])
    check("the table says it is a projection", "projection (not a measurement)" in r.stdout, r.stdout)

    with open(log, "w") as f:
        f.write("generate: 3 tokens\n")
    r = subprocess.run([sys.executable, script, log, "--peak-gbs", "4000"], capture_output=True, text=True)
    check("a log without a decode profile: refused in one line", r.returncode != 0 and
          "no decode launch profile" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    r = subprocess.run([sys.executable, script, log, "--peak-gbs", "0"], capture_output=True, text=True)
    check("a peak of 0: refused", r.returncode == 2 and "--peak-gbs" in r.stderr, r.stderr)


def main():
    mode, root, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"plot": test_plot, "compare": test_compare, "project": test_project}[mode](root, work)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
