#!/usr/bin/env python3
"""Plots and the table from bench/compare_llamacpp_gpu.py's JSON.

  bench/plot_results.py RESULTS.json [--kernels CUDA_ORIN_BENCH.json] [--out-dir DIR]

writes, next to RESULTS.json (or into DIR):
  <name>-context.png    decode tok/s against the context already cached, one panel per
                        model, one line per runtime and KV type (median; bars: min to max)
  <name>-roofline.png   achieved GB/s against the bytes moved, with the copy peak measured
                        in the same run as the ceiling: each whole decode step of each
                        runtime, and each kernel when kernel figures are given (a "kernels"
                        list in RESULTS.json, or bench/cuda_orin_bench's JSON via --kernels)
  <name>.md             the table (the same text compare_llamacpp_gpu.py writes)
matplotlib comes from the project's environment (scripts/requirements-test.txt).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_llamacpp_gpu import markdown_table  # noqa: E402 - one home for the table

RUNTIME_COLOURS = {"llama.cpp": "tab:orange", "edgerun": "tab:blue"}
KV_STYLES = {"f16": "-", "q8_0": "--"}


def load(path):
    with open(path) as f:
        doc = json.load(f)
    for key in ("device", "commit", "copy_peak", "models"):
        if key not in doc:
            raise ValueError(f"{path}: not a compare_llamacpp_gpu.py result (no '{key}')")
    return doc


def decode_rows(model):
    return [r for r in model["results"] if r["test"].startswith("tg")]


def plot_context(doc, path, plt):
    models = [m for m in doc["models"] if decode_rows(m)]
    if not models:
        raise ValueError("no decode figures in the results: nothing to plot")
    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 4.2), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = decode_rows(model)
        depths = sorted({r["depth"] for r in rows})
        x_of = {d: i for i, d in enumerate(depths)}
        for runtime in ("llama.cpp", "edgerun"):
            for kv in KV_STYLES:
                series = sorted((r for r in rows if r["runtime"] == runtime and r["kv"] == kv), key=lambda r: r["depth"])
                if not series:
                    continue
                xs = [x_of[r["depth"]] for r in series]
                med = [r["tok_s"]["median"] for r in series]
                err = [[m - r["tok_s"]["min"] for m, r in zip(med, series)], [r["tok_s"]["max"] - m for m, r in zip(med, series)]]
                ax.errorbar(xs, med, yerr=err, color=RUNTIME_COLOURS[runtime], linestyle=KV_STYLES[kv], marker="o",
                            capsize=3, label=f"{runtime}, KV {kv}")
        ax.set_xticks(range(len(depths)), [f"{d // 1024}k" if d >= 1024 else str(d) for d in depths])
        ax.set_xlabel("context already cached (tokens)")
        ax.set_ylabel(f"decode tok/s ({rows[0]['test']})")
        ax.set_title(model["name"], fontsize=10)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Decode speed against context: {doc['device'].get('name', 'unknown device')}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def kernel_points(doc, kernels_file):
    """(label, bytes, GB/s) of each kernel: from the results' own "kernels" list and/or
    bench/cuda_orin_bench's JSON (results: kernel, shape, bytes, GBps, and for GEMVs the
    input's form, activations f32, q8 or q8-prepared, which the label names: the bench
    times each)."""
    points = [(f"{k['runtime']} {k['kernel']}", k["bytes"], k["gb_s"]) for k in doc.get("kernels", [])]
    if kernels_file:
        with open(kernels_file) as f:
            bench = json.load(f)
        for r in bench.get("results", []):
            if not r.get("bytes"):
                continue
            form = f"x {r['activations']}" if r.get("activations") else ""
            in_flight = f"{r['tasks_in_flight']} tasks in flight" if r.get("tasks_in_flight", 1) > 1 else ""
            warps = f"{r['warps_per_row']} warps a row" if r.get("warps_per_row", 0) > 0 else ""
            # rows_in_pairs: since 2026-11-28; 0 on a GEMV row is the form before pairs.
            one_row = "a row at a time" if r.get("activations") and r.get("rows_in_pairs") == 0 else ""
            ring = f"a ring {r['ring_depth']} deep" if r.get("ring_depth", 0) > 0 else ""  # since 2026-11-28
            label = " ".join(part for part in ("cuda_orin", r["kernel"], r.get("shape", ""), form, in_flight, warps,
                                               one_row, ring) if part)
            points.append((label, r["bytes"], r["GBps"]))
    return points


def plot_roofline(doc, path, plt, kernels_file):
    peak = doc["copy_peak"]["gb_s"]["median"] if doc["copy_peak"].get("gb_s") else None
    fig, ax = plt.subplots(figsize=(8, 5))
    plotted = 0
    for model in doc["models"]:
        for runtime in ("llama.cpp", "edgerun"):
            rows = [r for r in decode_rows(model) if r["runtime"] == runtime and "achieved_gb_s" in r]
            if rows:
                ax.scatter([r["bytes_per_token"] for r in rows], [r["achieved_gb_s"] for r in rows],
                           color=RUNTIME_COLOURS[runtime], marker="o" if runtime == "edgerun" else "s", s=30,
                           label=f"{runtime} decode step" if plotted < 2 else None)
                plotted += 1
    points = kernel_points(doc, kernels_file)
    if points:
        ax.scatter([p[1] for p in points], [p[2] for p in points], color="tab:green", marker="^", s=24,
                   label="kernels")
        top = sorted(points, key=lambda p: -p[1])[:8]  # name the largest: the rest would overlap
        for label, b, g in top:
            ax.annotate(label, (b, g), fontsize=6, xytext=(3, 3), textcoords="offset points")
    if plotted == 0 and not points:
        raise ValueError("no achieved GB/s in the results (no bytes per token and no kernels): nothing to plot")
    if peak:
        ax.axhline(peak, color="black", linewidth=1)
        ax.annotate(f"copy peak {peak:.0f} GB/s (same run)", (0.01, peak), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("bytes moved per call (decode step: per token)")
    ax.set_ylabel("achieved GB/s")
    ax.set_ylim(bottom=0, top=(peak or ax.get_ylim()[1]) * 1.12)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")
    ax.set_title(f"Achieved bandwidth against the copy peak: {doc['device'].get('name', 'unknown device')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("results", help="compare_llamacpp_gpu.py's JSON")
    p.add_argument("--kernels", help="bench/cuda_orin_bench's JSON: its kernels go on the roofline plot")
    p.add_argument("--out-dir", help="where the PNGs and the table go (default: next to RESULTS)")
    args = p.parse_args(argv)
    try:
        doc = load(args.results)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results))
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.join(out_dir, os.path.splitext(os.path.basename(args.results))[0])
        plot_context(doc, stem + "-context.png", plt)
        plot_roofline(doc, stem + "-roofline.png", plt, args.kernels)
        with open(stem + ".md", "w") as f:
            f.write(markdown_table(doc) + "\n")
    except (OSError, ValueError, KeyError, TypeError) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        print(f"plot_results: {args.results}: {detail}", file=sys.stderr)
        return 1
    print(f"plot_results: wrote {stem}-context.png, {stem}-roofline.png and {stem}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
