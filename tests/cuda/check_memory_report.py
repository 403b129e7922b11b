#!/usr/bin/env python3
"""cuda_orin's device memory report adds up, on the emulated device.

    check_memory_report.py EDGERUN PLUGIN_DIR MODEL

At a plan's end cuda_orin logs the device memory taken since before the CUDA context
against what it predicted, the prediction broken into its parts:

    device memory taken since before the CUDA context T MiB, predicted P MiB
    (CUDA context C + GEMM G + weights W + KV cache K + scratch S): R x

Runs MODEL on cuda_orin_emu with a CUDA context share set (EDGERUN_EMU_CONTEXT_MIB), with
and without the emulated GEMM (EDGERUN_EMU_NO_GEMM), and checks: P is the sum of its parts;
C is the context set; G is the GEMM's workspace when the GEMM is present and 0 when not;
W, K and S are the figures the host prints from the backend's memory stats; R is T / P;
and T equals P, since on the emulation nothing but the backend allocates (on a GPU the
driver's launch resources come on top). Then a device too small for the model: the
refusal's free figure is the total less the context and the workspace it names. Last,
widen_kv=1's scratch (the INT8 cache widened to halves for the tiled attention) is
optional: on a device with room for all else but not for it, the run goes on without it,
with one warning line, and its scratch is the one without the option.
"""
import os
import re
import subprocess
import sys

CONTEXT_MIB = 24
EMULATED_WORKSPACE_MIB = 1.0  # tests/cuda/emu/emulated_device.cpp
# Each part is printed to 0.1 MiB, so a sum of six printed figures is within 0.3 of the
# printed total. Taken and predicted may differ by the 256-byte rounding of each emulated
# allocation and by the plan's own overestimate of its scratch, far below the smallest
# part a missing term would remove (the 1 MiB workspace).
PRINT_SLACK = 0.3
TAKEN_SLACK = 0.5

MIB = r"([0-9]+\.[0-9])"
REPORT = re.compile(
    rf"device memory taken since before the CUDA context {MIB} MiB, predicted {MIB} MiB "
    rf"\(CUDA context {MIB} \+ GEMM {MIB} \+ weights {MIB} \+ KV cache {MIB} \+ scratch {MIB}\): "
    r"([0-9]+\.[0-9]+)x(.*)")
STATS = re.compile(rf"cuda_orin_emu: weights {MIB} MiB, KV cache {MIB} MiB, scratch {MIB} MiB")
REFUSAL = re.compile(rf"{MIB} MiB free \(of {MIB} MiB; taken at open: CUDA context {MIB} MiB, GEMM {MIB} MiB\)")


def fail(message, output=""):
    print(output)
    print("FAIL: " + message)
    sys.exit(1)


def run(edgerun, plugin_dir, model, env, expect_exit=0, args=("-p", "hi", "-c", "64")):
    cmd = [edgerun, "--plugin-dir", plugin_dir, "--backend", "cuda_orin_emu", "--log-level", "info",
           "-m", model, "-n", "2", "--temp", "0", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    output = done.stdout + done.stderr
    if (done.returncode == 0) != (expect_exit == 0):
        fail(f"exit {done.returncode} (expected {'0' if expect_exit == 0 else 'an error'}): {' '.join(cmd)} "
             f"with {env}", output)
    return output


def check_report(output, label, workspace_mib):
    reports = [m for m in REPORT.finditer(output)]
    stats = STATS.findall(output)
    if not reports:
        fail(f"{label}: no memory report line", output)
    if len(stats) != 1:
        fail(f"{label}: {len(stats)} memory stats lines from the host, not 1", output)
    weights_stat, kv_stat, scratch_stat = map(float, stats[0])
    for m in reports:
        taken, predicted, context, workspace, weights, kv, scratch, ratio = map(float, m.groups()[:8])
        line = m.group(0)
        print(f"{label}: {line}")
        if m.group(9).strip():
            fail(f"{label}: the emulated context is measured, yet the line says '{m.group(9)}'", output)
        parts = context + workspace + weights + kv + scratch
        if abs(predicted - parts) > PRINT_SLACK:
            fail(f"{label}: predicted {predicted} MiB is not the sum of its parts ({parts:.1f} MiB)", output)
        if context != CONTEXT_MIB:
            fail(f"{label}: CUDA context {context} MiB, the emulated device took {CONTEXT_MIB}", output)
        if workspace != workspace_mib:
            fail(f"{label}: GEMM {workspace} MiB, expected {workspace_mib}", output)
        if (weights, kv) != (weights_stat, kv_stat) or scratch > scratch_stat:
            fail(f"{label}: weights {weights}, KV cache {kv}, scratch {scratch} MiB differ from the backend's "
                 f"memory stats ({weights_stat}, {kv_stat}, {scratch_stat})", output)
        if min(weights, kv, scratch) <= 0:
            fail(f"{label}: a part of the prediction is zero", output)
        if abs(taken - predicted) > TAKEN_SLACK:
            fail(f"{label}: taken {taken} MiB against {predicted} MiB predicted: on the emulated device the "
                 f"backend's own figures must account for all of it", output)
        if abs(ratio - taken / predicted) > 0.002:
            fail(f"{label}: ratio {ratio} is not {taken} / {predicted}", output)


def main():
    if len(sys.argv) != 4:
        fail("usage: check_memory_report.py EDGERUN PLUGIN_DIR MODEL")
    edgerun, plugin_dir, model = sys.argv[1:]
    context = {"EDGERUN_EMU_CONTEXT_MIB": str(CONTEXT_MIB)}

    check_report(run(edgerun, plugin_dir, model, context), "with the GEMM", EMULATED_WORKSPACE_MIB)
    check_report(run(edgerun, plugin_dir, model, {**context, "EDGERUN_EMU_NO_GEMM": "1"}), "without a GEMM", 0.0)

    # A device the context and the workspace leave too little of: the refusal names both,
    # and the free figure it gives is what they left.
    device_mib = CONTEXT_MIB + 4
    output = run(edgerun, plugin_dir, model, {**context, "EDGERUN_EMU_DEVICE_MIB": str(device_mib)}, expect_exit=1)
    refusals = REFUSAL.findall(output)
    if len(refusals) != 1:
        fail(f"{len(refusals)} refusals naming the device's own memory, not 1", output)
    free, total, context_mib, workspace = map(float, refusals[0])
    print(f"refusal: {free} MiB free of {total}, context {context_mib}, workspace {workspace}")
    if (total, context_mib, workspace) != (device_mib, CONTEXT_MIB, EMULATED_WORKSPACE_MIB):
        fail(f"refusal names total {total}, context {context_mib}, workspace {workspace} MiB; expected "
             f"{device_mib}, {CONTEXT_MIB}, {EMULATED_WORKSPACE_MIB}", output)
    if abs(free - (total - context_mib - workspace)) > 0.15:
        fail(f"{free} MiB free is not the total less the context and the workspace", output)

    # widen_kv=1 over an INT8 cache of 4096 positions, every prompt step tiled.
    prompt = ("-p", "hello there, how are you today", "-c", "4096", "--kv-type", "q8")
    widened = ("--backend-options", "widen_kv=1,tiled_attention=2") + prompt
    plain = ("--backend-options", "tiled_attention=2") + prompt
    sizes = {}
    for label, args in (("widened", widened), ("plain", plain)):
        stats = STATS.findall(run(edgerun, plugin_dir, model, context, args=args))
        if len(stats) != 1:
            fail(f"{label}: {len(stats)} memory stats lines, not 1")
        sizes[label] = tuple(map(float, stats[0]))
    weights, kv, scratch = sizes["plain"]
    widening = sizes["widened"][2] - scratch
    if widening < 1.0:
        fail(f"widen_kv=1 took {widening:.1f} MiB of scratch more, not a layer's K and V as halves (3 MiB)")
    device_mib = int(CONTEXT_MIB + EMULATED_WORKSPACE_MIB + weights + kv + scratch + widening / 2)
    output = run(edgerun, plugin_dir, model, {**context, "EDGERUN_EMU_DEVICE_MIB": str(device_mib)}, args=widened)
    warnings = re.findall(r"option widen_kv=1 ignored: its ([0-9.]+) MiB of scratch do not fit", output)
    stats = STATS.findall(output)
    print(f"widen_kv=1 on {device_mib} MiB: {len(warnings)} warning(s), {warnings}; stats {stats}")
    if len(warnings) != 1 or abs(float(warnings[0]) - widening) > 0.15:
        fail(f"{len(warnings)} warnings naming the widening's {widening:.1f} MiB, not 1", output)
    if len(stats) != 1 or tuple(map(float, stats[0])) != sizes["plain"]:
        fail(f"the squeezed run's memory {stats} is not the plain run's {sizes['plain']}", output)
    print("PASS")


if __name__ == "__main__":
    main()
