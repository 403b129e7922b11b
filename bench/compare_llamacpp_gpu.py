#!/usr/bin/env python3
"""edgerun (cuda_orin) against llama.cpp's CUDA build on the same GPU, in one run.

For each GGUF model it measures, in this order and in this one process:
  - the device-to-device copy peak (1 GiB copied, bytes read plus written, as
    bench/cuda_orin_bench does), the yardstick for "achieved GB/s";
  - llama.cpp: `llama-bench -fa 1 -ngl 99 -p 512 -n 128 -ub 512 -d 0,4096,32768 -o json`,
    once with the F16 KV cache and once with -ctk q8_0 -ctv q8_0;
  - edgerun: `edgerun bench --backend cuda_orin -b 512 --json` at the same prompt,
    generation, prompt rows per step and depths, with --kv-type f16 and q8.
"Decode at context D" is tg128 with D tokens already in the cache, for both runtimes.

It writes one JSON (device, commit, commands, every raw run with its output, per test
min/median/max over the repetitions) and one markdown table next to it. One side failing
(today cuda_orin refuses to run; a llama-bench build may be missing) is recorded in the
JSON with its error and the table says so; the other side is still measured. The exit
status is 1 when any run failed, so that a caller notices.

Typical use on the GPU machine (see bench/README.md for the whole procedure):
  bench/compare_llamacpp_gpu.py --edgerun .device-bundle/bin/edgerun \\
      --llama-bench build-llama-bench-cuda90/obj/bin/llama-bench \\
      --synth qwen3-4b:Q4_K_M --synth llama3.2-1b:Q4_K_M --synth qwen3-0.6b:Q4_K_M \\
      --out bench/results/gpu-compare.json
Several calls can fill one file: --append keeps the models already in it.
"""

import argparse
import ctypes
import ctypes.util
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

KV_TYPES = (("f16", "f16", "f16"), ("q8_0", "q8_0", "q8"))  # (name, llama.cpp -ctk, edgerun --kv-type)
SCHEMA = "edgerun-gpu-compare/1"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--edgerun", default="build/bin/edgerun", help="the edgerun binary (default: build/bin/edgerun)")
    p.add_argument("--backend", default="cuda_orin", help="edgerun backend (default: cuda_orin)")
    p.add_argument("--backend-options", default="",
                   help="edgerun backend options (key=value,...; default: none, the backend's defaults); the "
                        "table's header names them")
    p.add_argument("--llama-bench", default="build-llama-bench-cuda90/obj/bin/llama-bench",
                   help="llama.cpp's llama-bench (scripts/build-llama-bench.sh)")
    p.add_argument("--model", action="append", default=[], metavar="GGUF", help="a model file (repeatable)")
    p.add_argument("--synth", action="append", default=[], metavar="PRESET:TYPE",
                   help="a model `edgerun synth` writes first, e.g. qwen3-4b:Q4_K_M (repeatable)")
    p.add_argument("--model-dir", default="build-models", help="where --synth writes models (default: build-models)")
    p.add_argument("--depths", default="0,4096,32768", help="tokens already in the cache (default: 0,4096,32768)")
    p.add_argument("--n-prompt", type=int, default=512)
    p.add_argument("--n-gen", type=int, default=128)
    p.add_argument("--ubatch", type=int, default=512,
                   help="most prompt rows per step, both sides: llama-bench -ub, edgerun -b (default 512, both defaults)")
    p.add_argument("--repetitions", "-r", type=int, default=5)
    p.add_argument("--kv", default="f16,q8_0", help="KV types: f16, q8_0 or both (default)")
    p.add_argument("--only", choices=("both", "edgerun", "llama.cpp"), default="both", help="which runtimes to run")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds one benchmark command may take (default 300: a device call has 600 in all)")
    p.add_argument("--commit", default=None, help="edgerun commit measured (default: git rev-parse HEAD, if any)")
    p.add_argument("--out", required=True, help="results JSON; the table goes next to it as .md")
    p.add_argument("--append", action="store_true", help="keep the models already in --out")
    args = p.parse_args(argv)
    try:
        args.depths = [int(d) for d in args.depths.split(",") if d != ""]
    except ValueError:
        p.error(f"--depths {args.depths}: give token counts separated by commas, e.g. 0,4096,32768")
    kv = [k for k in args.kv.split(",") if k]
    unknown = [k for k in kv if k not in ("f16", "q8_0")]
    if unknown or not kv:
        p.error(f"--kv: unknown KV type(s) {unknown or args.kv}; use f16 and/or q8_0")
    args.kv_types = [t for t in KV_TYPES if t[0] in kv]
    if not args.model and not args.synth:
        p.error("no model: give --model GGUF and/or --synth PRESET:TYPE")
    if min(args.depths, default=-1) < 0 or args.n_prompt < 0 or args.n_gen < 1 or args.repetitions < 1:
        p.error("--depths must be >= 0, --n-prompt >= 0, --n-gen >= 1 and --repetitions >= 1")
    return args


def run_command(cmd, timeout):
    """Runs cmd; returns a record with the command, exit status, output and error (None if it ran fine)."""
    record = {"command": " ".join(shlex.quote(c) for c in cmd), "rc": None, "seconds": None, "error": None}
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        record["error"] = f"{cmd[0]}: not found"
        return record, ""
    except subprocess.TimeoutExpired as e:
        record["error"] = f"timed out after {timeout:.0f} s"
        tail = e.stderr or b""  # bytes even under text=True, on some Python versions
        record["stderr_tail"] = (tail.decode(errors="replace") if isinstance(tail, bytes) else tail)[-4000:]
        return record, ""
    record["seconds"] = round(time.monotonic() - start, 3)
    record["rc"] = done.returncode
    record["stderr_tail"] = done.stderr[-4000:]
    if done.returncode != 0:
        last = [l for l in done.stderr.strip().splitlines() if l.strip()]
        record["error"] = f"exit status {done.returncode}: " + (last[-1] if last else "no message")
    return record, done.stdout


def summary(samples):
    return {"samples": samples, "min": min(samples), "median": statistics.median(samples), "max": max(samples)}


# --- the copy peak -----------------------------------------------------------------------

def copy_peak_cudart(n_bytes=1 << 30, rounds=10):
    """The CUDA runtime through ctypes: no compiler and no PyTorch needed."""
    names = [ctypes.util.find_library("cudart"), "libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"):
        if os.path.isdir(d):
            names += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith("libcudart.so")]
    rt, tried = None, []
    for name in [n for n in names if n]:
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError as e:
            tried.append(str(e))
    if rt is None:
        raise RuntimeError("libcudart not found (" + "; ".join(tried[-2:]) + ")")

    def check(status, what):
        if status != 0:
            rt.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{what}: {rt.cudaGetErrorString(status).decode()} ({status})")

    count = ctypes.c_int(0)
    check(rt.cudaGetDeviceCount(ctypes.byref(count)), "cudaGetDeviceCount")
    if count.value == 0:
        raise RuntimeError("no CUDA device")
    src, dst = ctypes.c_void_p(), ctypes.c_void_p()
    check(rt.cudaMalloc(ctypes.byref(src), ctypes.c_size_t(n_bytes)), "cudaMalloc")
    check(rt.cudaMalloc(ctypes.byref(dst), ctypes.c_size_t(n_bytes)), "cudaMalloc")
    start, stop = ctypes.c_void_p(), ctypes.c_void_p()
    check(rt.cudaEventCreate(ctypes.byref(start)), "cudaEventCreate")
    check(rt.cudaEventCreate(ctypes.byref(stop)), "cudaEventCreate")
    device_to_device = 3
    copy = lambda: check(rt.cudaMemcpyAsync(dst, src, ctypes.c_size_t(n_bytes), device_to_device, None), "cudaMemcpyAsync")
    copy()  # warm-up
    check(rt.cudaEventRecord(start, None), "cudaEventRecord")
    for _ in range(rounds):
        copy()
    check(rt.cudaEventRecord(stop, None), "cudaEventRecord")
    check(rt.cudaEventSynchronize(stop), "cudaEventSynchronize")
    ms = ctypes.c_float(0)
    check(rt.cudaEventElapsedTime(ctypes.byref(ms), start, stop), "cudaEventElapsedTime")
    rt.cudaFree(src)
    rt.cudaFree(dst)
    return 2.0 * n_bytes * rounds / (ms.value * 1e-3) / 1e9


def copy_peak_torch(n_bytes=1 << 30, rounds=10):
    import torch  # only where the CUDA runtime cannot be loaded directly

    src = torch.empty(n_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(rounds):
        dst.copy_(src)
    stop.record()
    stop.synchronize()
    return 2.0 * n_bytes * rounds / (start.elapsed_time(stop) * 1e-3) / 1e9


def measure_copy_peak(repetitions):
    """Median of several 1 GiB device-to-device copies timed by CUDA events; bytes read + written."""
    errors = []
    for method, fn in (("cudart (ctypes) cudaMemcpyAsync device-to-device, 1 GiB x 10, read+write bytes", copy_peak_cudart),
                       ("torch Tensor.copy_ on cuda, 1 GiB x 10, read+write bytes", copy_peak_torch)):
        try:
            samples = [fn() for _ in range(repetitions)]
            return {"method": method, "gb_s": summary(samples), "error": None}
        except Exception as e:  # noqa: BLE001 - any failure is recorded, the other method tried
            errors.append(f"{fn.__name__}: {e}")
    return {"method": None, "gb_s": None, "error": "; ".join(errors)}


# --- the two runtimes ----------------------------------------------------------------------

def run_llama_bench(args, model, kv):
    name, ctk, _ = kv
    cmd = [args.llama_bench, "-m", model, "-fa", "1", "-ngl", "99", "-p", str(args.n_prompt), "-n", str(args.n_gen),
           "-ub", str(args.ubatch), "-d", ",".join(str(d) for d in args.depths), "-r", str(args.repetitions),
           "-ctk", ctk, "-ctv", ctk,
           "-o", "json"]
    record, stdout = run_command(cmd, args.timeout)
    record.update(runtime="llama.cpp", kv=name)
    results = []
    if record["error"] is None:
        try:
            raw = json.loads(stdout)
        except json.JSONDecodeError as e:
            record["error"] = f"llama-bench printed no JSON ({e})"
            record["stdout_tail"] = stdout[-4000:]
            return record, results
        record["raw"] = raw
        for t in raw:
            test = f"pp{t['n_prompt']}" if t["n_prompt"] > 0 else f"tg{t['n_gen']}"
            row = {"runtime": "llama.cpp", "kv": name, "test": test, "depth": t["n_depth"],
                   "tok_s": summary([float(x) for x in t["samples_ts"]])}
            if t["n_prompt"] > 0:
                # llama-bench times the prompt alone: its time is the time to the first token.
                row["ttft_ms"] = summary([float(ns) / 1e6 for ns in t["samples_ns"]])
            results.append(row)
        record["llama_cpp_build"] = {k: raw[0].get(k) for k in ("build_commit", "build_number", "gpu_info", "backends")} if raw else None
    return record, results


def run_edgerun(args, model, kv, depth):
    name, _, edgerun_kv = kv
    cmd = [args.edgerun, "bench", "-m", model, "--backend", args.backend, "--kv-type", edgerun_kv,
           "-p", str(args.n_prompt), "-n", str(args.n_gen), "-b", str(args.ubatch), "-d", str(depth),
           "-r", str(args.repetitions), "--json"]
    if args.backend_options:
        cmd += ["--backend-options", args.backend_options]
    record, stdout = run_command(cmd, args.timeout)
    record.update(runtime="edgerun", kv=name, depth=depth)
    results = []
    if record["error"] is None:
        try:
            raw = json.loads(stdout)
        except json.JSONDecodeError as e:
            record["error"] = f"edgerun bench printed no JSON ({e})"
            record["stdout_tail"] = stdout[-4000:]
            return record, results
        record["raw"] = raw
        base = {"runtime": "edgerun", "kv": name, "depth": depth}
        if args.n_prompt > 0:
            pp = raw.get("pp_tok_s_samples") or [raw["pp_tok_s"]]
            ttft = raw.get("ttft_ms_samples") or [raw["ttft_ms"]]
            results.append(dict(base, test=f"pp{args.n_prompt}", tok_s=summary(pp), ttft_ms=summary(ttft)))
        tg = raw.get("tg_tok_s_samples") or [raw["tg_tok_s"]]
        row = dict(base, test=f"tg{args.n_gen}", tok_s=summary(tg))
        for key in ("bytes_per_token", "achieved_gb_s", "kernels_per_token", "top_kernels"):
            if key in raw:
                row[key] = raw[key]
        results.append(row)
    return record, results


def synth_model(args, spec):
    preset, _, ftype = spec.partition(":")
    ftype = ftype or "Q4_K_M"
    path = os.path.join(args.model_dir, f"{preset}-{ftype}.gguf")
    record = {"command": None, "error": None, "path": path}
    if os.path.isfile(path):
        record["command"] = "(reused)"
        return record
    os.makedirs(args.model_dir, exist_ok=True)
    rec, _ = run_command([args.edgerun, "synth", "--preset", preset, "--type", ftype, "-o", path], args.timeout)
    rec["path"] = path
    return rec


def add_bandwidth(results, peak):
    """Every decode row gets its achieved GB/s as a fraction of the copy peak; llama.cpp's rows
    are given edgerun's bytes per token for the same model, KV type and depth (the same
    weights and cache must be read), at their own speed."""
    traffic = {(r["kv"], r["depth"]): r["bytes_per_token"] for r in results
               if r["runtime"] == "edgerun" and "bytes_per_token" in r}
    for r in results:
        if not r["test"].startswith("tg"):
            continue
        bpt = r.get("bytes_per_token") or traffic.get((r["kv"], r["depth"]))
        if not bpt:
            continue
        r["bytes_per_token"] = bpt
        r["achieved_gb_s"] = bpt * r["tok_s"]["median"] / 1e9
        if peak:
            r["fraction_of_peak"] = r["achieved_gb_s"] / peak


def device_info():
    info = {"host": platform.node()}
    try:
        fields = ("name", "driver_version", "memory.total", "clocks.max.memory")
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        values = [s.strip() for s in out.stdout.strip().splitlines()[0].split(",")] if out.stdout.strip() else []
        if out.returncode == 0 and len(values) == len(fields):
            info.update(zip(("name", "driver", "memory", "max_memory_clock"), values))
        elif out.returncode == 0:
            info["error"] = "nvidia-smi printed " + repr(out.stdout.strip()[:200])
        else:
            info["error"] = "nvidia-smi: " + (out.stderr.strip() or f"exit status {out.returncode}")
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        info["error"] = f"nvidia-smi: {e}"
    return info


def git_commit():
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
        return out.stdout.strip() if out.returncode == 0 else None
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None


# --- the table -------------------------------------------------------------------------------

def fmt(s):
    return "—" if s is None else f"{s['median']:.1f} ({s['min']:.1f}–{s['max']:.1f})"


def markdown_table(doc):
    """One table per model: rows test x depth x KV; llama.cpp and edgerun side by side."""
    dev = doc["device"].get("name", "unknown device")
    peak = doc["copy_peak"]["gb_s"]
    settings = doc.get("settings", {})
    options = settings.get("backend_options")
    edgerun = (f"edgerun {doc['commit']} (backend {settings.get('backend', '?')}, "
               + (f"options {options})" if options else "its default options)"))
    lines = [f"Device: {dev}; copy peak {peak['median']:.0f} GB/s (median); {edgerun}"
             if peak else f"Device: {dev}; copy peak not measured ({doc['copy_peak']['error']}); {edgerun}",
             "", "tok/s: median (min–max) over the repetitions; decode at context D: tg with D tokens cached.", ""]
    for m in doc["models"]:
        lines += [f"### {m['name']}", ""]
        failed = [r for r in m["runs"] if r.get("error")]
        by_key = {(r["runtime"], r["test"], r["depth"], r["kv"]): r for r in m["results"]}
        keys = sorted({(r["test"], r["depth"], r["kv"]) for r in m["results"]},
                      key=lambda k: (not k[0].startswith("pp"), k[1], k[2]))
        lines += ["| test | context | KV | llama.cpp tok/s | edgerun tok/s | edgerun / llama.cpp | GB/s llama.cpp | GB/s edgerun | TTFT ms llama.cpp | TTFT ms edgerun |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for test, depth, kv in keys:
            l, e = by_key.get(("llama.cpp", test, depth, kv)), by_key.get(("edgerun", test, depth, kv))
            ratio = f"{e['tok_s']['median'] / l['tok_s']['median']:.2f}" if l and e else "—"
            gbs = lambda r: f"{r['achieved_gb_s']:.0f} ({100 * r['fraction_of_peak']:.0f}%)" if r and "fraction_of_peak" in r else (
                f"{r['achieved_gb_s']:.0f}" if r and "achieved_gb_s" in r else "—")
            ttft = lambda r: f"{r['ttft_ms']['median']:.1f}" if r and "ttft_ms" in r else "—"
            lines.append(f"| {test} | {depth} | {kv} | {fmt(l and l['tok_s'])} | {fmt(e and e['tok_s'])} | {ratio} | "
                         f"{gbs(l)} | {gbs(e)} | {ttft(l)} | {ttft(e)} |")
        for r in failed:
            where = f"{r['runtime']}" + (f" {r['kv']}" if r.get("kv") else "") + (f" depth {r['depth']}" if "depth" in r else "")
            lines.append(f"\n{where} failed: {r['error']}")
        lines.append("")
    return "\n".join(lines)


def main(argv):
    args = parse_args(argv)
    doc = {"schema": SCHEMA, "models": []}
    if args.append and os.path.isfile(args.out):
        with open(args.out) as f:
            doc = json.load(f)
        had = doc.get("settings", {}).get("backend_options", "")
        if had != args.backend_options:
            print(f"compare: {args.out} was measured with backend options '{had}', not '{args.backend_options}': "
                  "one file, one set of options (write another --out)", file=sys.stderr)
            return 2
    doc.update(utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               command=" ".join(shlex.quote(a) for a in [sys.argv[0]] + argv),
               commit=args.commit or git_commit() or "unknown",
               device=device_info(),
               copy_peak=measure_copy_peak(args.repetitions),
               settings={"n_prompt": args.n_prompt, "n_gen": args.n_gen, "depths": args.depths,
                         "repetitions": args.repetitions, "backend": args.backend,
                         "backend_options": args.backend_options,
                         "ubatch": args.ubatch,
                         "llama_bench_flags": f"-fa 1 -ngl 99 -ub {args.ubatch} (-ctk q8_0 -ctv q8_0 for INT8 KV)"})
    peak = doc["copy_peak"]["gb_s"]["median"] if doc["copy_peak"]["gb_s"] else None
    print(f"compare: device {doc['device'].get('name', '?')}, copy peak "
          + (f"{peak:.0f} GB/s" if peak else f"not measured: {doc['copy_peak']['error']}"), file=sys.stderr)

    failures = 0
    models = [(os.path.basename(p), p, None) for p in args.model]
    for spec in args.synth:
        rec = synth_model(args, spec)
        models.append((os.path.basename(rec["path"]), rec["path"], rec))
    for name, path, synth in models:
        entry = {"name": name, "path": path, "bytes": os.path.getsize(path) if os.path.isfile(path) else None,
                 "synthesized": synth, "runs": [], "results": []}
        if synth and synth.get("error"):
            entry["runs"].append(dict(synth, runtime="edgerun synth"))
        elif not os.path.isfile(path):
            entry["runs"].append({"runtime": "-", "command": None, "error": f"{path}: no such model file"})
        else:
            for kv in args.kv_types:
                if args.only in ("both", "llama.cpp"):
                    rec, rows = run_llama_bench(args, path, kv)
                    entry["runs"].append(rec)
                    entry["results"] += rows
                    print(f"compare: {name} llama.cpp {kv[0]}: " + (rec["error"] or f"{rec['seconds']} s"), file=sys.stderr)
                if args.only in ("both", "edgerun"):
                    for depth in args.depths:
                        rec, rows = run_edgerun(args, path, kv, depth)
                        entry["runs"].append(rec)
                        entry["results"] += rows
                        print(f"compare: {name} edgerun {kv[0]} depth {depth}: " + (rec["error"] or f"{rec['seconds']} s"),
                              file=sys.stderr)
        add_bandwidth(entry["results"], peak)
        failures += sum(1 for r in entry["runs"] if r.get("error"))
        doc["models"] = [m for m in doc["models"] if m["name"] != name] + [entry]

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    table = os.path.splitext(args.out)[0] + ".md"
    with open(table, "w") as f:
        f.write(markdown_table(doc) + "\n")
    print(f"compare: wrote {args.out} and {table}" + (f"; {failures} run(s) failed (recorded there)" if failures else ""),
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
