#!/usr/bin/env python3
"""cuda_orin's launch count and option profile=1, on the emulated device.

Runs `edgerun` on a model of --layers layers: with profile=1 (a few tokens; the defaults,
and also with activations=f32, with activations=q8,stage_x=1, with fuse=0, with
attention_merge=last_block and with that and rope_append=gemv) and without (one token),
and checks what the plan logs when it ends:
  - the profile's tables: every launch kind's total time > 0, its time per step and share
    consistent with the total, the launches per kind adding up to the "launches per step"
    line, and the counts the graph implies (per layer one split attention launch of two
    kernels, in decode and prefill steps alike; one embed; in decode steps one prepare per
    GEMV with the default 8-bit x, made once for all of a launch's blocks, and none where x
    of these widths (multiples of 32) is read in place: as floats (activations=f32), or
    quantized by each GEMV as it stages it (stage_x=1, GemvLaunch::quantize_x));
  - the fusions (plugins/cuda_orin/fusion.hpp) of a decode step: per layer one
    rope_append and no kv_append, RoPE, RMSNorm or elementwise launch, so 7 launches per
    layer (Q/K/V, rope_append, split attention and its merge, O, gate/up, down) plus the
    embedding and the logits, and the prepares; 6 with attention_merge=last_block
    (no merge kernel), 5 with rope_append=gemv too (the Q/K/V GEMV, labelled
    "+ rope_append", does its work); with fuse=0 one kv_append per layer and no rope_append;
    with prepare=gemv a prepare only for the first Q/K/V and each O projection (the other
    GEMVs' x made by the GEMV before them);
  - the bytes each launch must move (GEMVs and attention; other kinds show "-"): the rows'
    MB per step add up to the "bytes per step" line, and a decode step's GEMVs move the
    model's weights once, plus x and y (the model's embedding is tied, so every weight but
    the norm vectors is a GEMV matrix: between 0.99 and 1.05 times the weights' bytes);
  - the replay line: with profile=1 every step launched plainly and none replayed; without
    it the decode steps replayed, at the same launches per step as the profiled ones.
"""
import argparse
import re
import subprocess
import sys

TABLE = re.compile(r"cuda_orin: launch profile of (\d+) (decode|prefill) steps")
ROW = re.compile(r"cuda_orin:   (.+?)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+|-)\s+([0-9.]+|-)$")
TOTAL = re.compile(r"cuda_orin: launches per step: ([0-9.]+)$")
BYTES = re.compile(r"cuda_orin: bytes per step: ([0-9.]+|-) MB counted")
WEIGHTS = re.compile(r"cuda_orin: weights on the device: (\d+) bytes")
SPLIT_ATTENTION = ("attention (split + merge)", "attention (split on mma + merge)",  # CUDA cores, tensor cores
                   "attention (split)", "attention (split on mma)")  # merged in their last blocks
COUNTED = ("gemv ", *SPLIT_ATTENTION)  # the launch kinds whose bytes are counted
REPLAY = re.compile(r"cuda_orin: (\d+) steps replayed from a CUDA Graph, (\d+) launched plainly; (.*)$")
GENERATED = re.compile(r"^generate: (\d+) tokens", re.M)
PROMPT = re.compile(r"^prompt: (\d+) tokens", re.M)


def fail(message, output=""):
    print(output)
    print("FAIL: " + message)
    sys.exit(1)


def run(args, options, n_tokens):
    cmd = [args.edgerun, "--plugin-dir", args.plugin_dir, "--backend", "cuda_orin_emu", "--log-level", "info",
           "-m", args.model, "-p", "hi", "-n", str(n_tokens), "-c", "64", "--temp", "0"]
    if options:
        cmd[5:5] = ["--backend-options", options]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        fail(f"exit {done.returncode}: {' '.join(cmd)}", output)
    return output


def megabytes(text):
    return None if text == "-" else float(text)


def parse_tables(output):
    """The profile's tables: [(kind, steps, {label: (launches, total_ms, ms_per_step, share, MB_per_step)},
    total, MB_per_step)]."""
    tables = []
    for line in output.splitlines():
        if m := TABLE.search(line):
            tables.append([m.group(2), int(m.group(1)), {}, None, None])
        elif tables and (m := TOTAL.search(line)):
            tables[-1][3] = float(m.group(1))
        elif tables and (m := BYTES.search(line)):
            tables[-1][4] = megabytes(m.group(1))
        elif tables and tables[-1][3] is None and (m := ROW.search(line)) and m.group(1).strip() != "launch":
            tables[-1][2][m.group(1).strip()] = tuple(float(m.group(k)) for k in range(2, 6)) + (megabytes(m.group(6)),)
    return tables


def check_bytes(kind, rows, step_mb, weight_bytes, output):
    where = f"{kind} table"
    for label, row in rows.items():
        counted = label.startswith(COUNTED)
        if counted != (row[4] is not None and row[4] > 0):
            fail(f"{where}: '{label}' shows {row[4]} MB per step; bytes are counted for {COUNTED} only", output)
    rows_mb = sum(r[4] for r in rows.values() if r[4] is not None)
    if step_mb is None or abs(step_mb - rows_mb) > 0.001 * len(rows) + 0.001:
        fail(f"{where}: the rows' {rows_mb:.3f} MB per step are not the 'bytes per step' line's {step_mb}", output)
    if kind == "decode":
        gemv_mb = sum(r[4] for label, r in rows.items() if label.startswith("gemv "))
        ratio = gemv_mb * 1e6 / weight_bytes
        if not 0.99 <= ratio <= 1.05:
            fail(f"{where}: the GEMVs move {gemv_mb:.3f} MB per decode step, {ratio:.3f} x the weights' "
                 f"{weight_bytes} bytes (each matrix once, plus x and y)", output)


def check_table(kind, steps, rows, total, step_mb, layers, prepared, fused, output, merge_kernel=True,
                rope_in_gemv=False, prepare_in_gemv=False):
    where = f"{kind} table"
    if total is None or not rows:
        fail(f"{where}: no rows or no 'launches per step' line", output)
    if abs(sum(r[0] for r in rows.values()) - total) > 0.05 * len(rows):
        fail(f"{where}: launches per kind add up to {sum(r[0] for r in rows.values())}, not {total}", output)
    weights = WEIGHTS.search(output)
    if not weights:
        fail("no 'weights on the device' line", output)
    check_bytes(kind, rows, step_mb, int(weights.group(1)), output)
    for label, (launches, total_ms, per_step, share, _) in rows.items():
        if launches <= 0 or total_ms <= 0 or per_step <= 0:
            fail(f"{where}: '{label}' has no launches or no time", output)
        if abs(per_step * steps - total_ms) > 0.01 * total_ms + 0.002 * steps:
            fail(f"{where}: '{label}': {per_step} ms per step over {steps} steps is not {total_ms} ms", output)
    if abs(sum(r[3] for r in rows.values()) - 100) > 0.1 * len(rows) + 0.1:
        fail(f"{where}: shares add up to {sum(r[3] for r in rows.values())}%", output)
    times = [r[1] for r in rows.values()]
    if times != sorted(times, reverse=True):
        fail(f"{where}: not sorted by time", output)

    gemv = {label: r[0] for label, r in rows.items() if label.startswith("gemv ")}
    count = lambda label: rows.get(label, (0,))[0]
    if not gemv:
        fail(f"{where}: no gemv launches", output)
    decode_fused = kind == "decode" and fused
    rope_appends = layers if decode_fused and not rope_in_gemv else 0
    in_gemv = layers if decode_fused and rope_in_gemv else 0
    appends = {"kv_append": 0 if decode_fused else layers, "rope_append": rope_appends}
    for label, expected in appends.items():
        if count(label) != expected:
            fail(f"{where}: {count(label)} {label} launches per step for {layers} layers, expected {expected} "
                 f"({'fused' if fused else 'fuse=0'})", output)
    gemv_appends = sum(n for label, n in gemv.items() if label.endswith(" + rope_append"))
    if gemv_appends != in_gemv:
        fail(f"{where}: {gemv_appends} Q/K/V GEMVs doing rope_append per step for {layers} layers, "
             f"expected {in_gemv}", output)
    if decode_fused:
        unfused = {label: count(label) for label in ("rms_norm", "rope_rows", "elementwise") if count(label)}
        if unfused:
            fail(f"{where}: launches a fused decode step should not make: {unfused}", output)
        per_layer = 5 + merge_kernel + (not rope_in_gemv)
        if total != per_layer * layers + 2 + count("prepare"):
            fail(f"{where}: {total} launches per fused decode step, not {per_layer} per layer + 2 "
                 f"+ {count('prepare')} prepares", output)
    # Every step's attention takes the split kernel (head dim 128, F16 cache), on tensor
    # cores by default (mma_attention), and its merge kernel unless the split kernel's last
    # blocks merge (attention_merge=last_block).
    attention = sum(count(label) for label in SPLIT_ATTENTION)
    if attention != (2 if merge_kernel else 1) * layers or count("attention_rows"):
        fail(f"{where}: {attention} split attention kernels per step for {layers} layers "
             f"(and {count('attention_rows')} of the row kernel)", output)
    if kind == "decode":
        if count("embed") != 1:
            fail(f"{where}: {count('embed')} embed launches per step, not 1", output)
        # Every GEMV of this model has 32 outputs or more and quantized weights: all read 8-bit x.
        # With prepare=gemv the GEMV writing a GEMV's x makes it; the attention's output
        # (for O) and the embedding (for the first Q/K/V) still take a prepare.
        expected = (layers + 1 if prepare_in_gemv else sum(gemv.values())) if prepared else 0
        if count("prepare") != expected:
            fail(f"{where}: {count('prepare')} prepare launches per step for {sum(gemv.values())} GEMVs "
                 f"with {'8-bit x prepared' if prepared else 'x read in place'}; expected {expected}", output)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("edgerun")
    ap.add_argument("plugin_dir")
    ap.add_argument("model")
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--tokens", type=int, default=2)
    args = ap.parse_args()

    for options, prepared, fused, merge_kernel, rope_in_gemv, prepare_in_gemv in (
            ("profile=1,activations=f32", False, True, True, False, False),
            ("profile=1,activations=q8,stage_x=1", False, True, True, False, False),
            ("profile=1,fuse=0", True, False, True, False, False),
            ("profile=1,attention_merge=last_block", True, True, False, False, False),
            ("profile=1,rope_append=gemv,attention_merge=last_block", True, True, False, True, False),
            ("profile=1,prepare=gemv", True, True, True, False, True)):
        other = run(args, options, args.tokens)
        if not any(t[0] == "decode" for t in parse_tables(other)):
            fail(f"no decode table in the profiled run's output with {options}", other)
        for table in parse_tables(other):
            check_table(*table, args.layers, prepared, fused, other, merge_kernel, rope_in_gemv, prepare_in_gemv)

    output = run(args, "profile=1", args.tokens)
    tables = parse_tables(output)
    decode = [t for t in tables if t[0] == "decode"]
    if not decode:
        fail("no decode table in the profiled run's output", output)
    for table in tables:
        check_table(*table, args.layers, True, True, output)
    # The decode steps: the prompt's when it is one token, then one per generated token after the first.
    prompt = int(PROMPT.search(output).group(1))
    generated = int(GENERATED.search(output).group(1))
    expected_steps = (prompt == 1) + generated - 1
    if sum(t[1] for t in decode) != expected_steps:
        fail(f"{sum(t[1] for t in decode)} decode steps profiled, the run made {expected_steps}", output)
    decode_launches = {t[3] for t in decode}
    replays = [REPLAY.search(line) for line in output.splitlines() if REPLAY.search(line)]
    if not replays or any(int(m.group(1)) != 0 for m in replays):
        fail("a profiled run replayed captured steps (or logged no replay line)", output)
    if sum(int(m.group(2)) for m in replays) != sum(t[1] for t in tables):
        fail("the replay lines' plain steps are not the tables' steps", output)

    plain = run(args, "", 1)
    if TABLE.search(plain):
        fail("a launch profile without profile=1", plain)
    replays = [REPLAY.search(line) for line in plain.splitlines() if REPLAY.search(line)]
    if not replays or sum(int(m.group(1)) for m in replays) < 1:
        fail("no decode step replayed without profile=1", plain)
    for m in replays:
        n = re.fullmatch(r"([0-9.]+) launches per step", m.group(3))
        if not n or float(n.group(1)) not in decode_launches:
            fail(f"without profile=1: '{m.group(3)}', profiled decode steps: {sorted(decode_launches)}", plain)
    print(f"ok: {sorted(decode_launches)} launches per decode step with and without profile=1; "
          f"{sum(t[1] for t in decode)} decode steps profiled")
    for kind, steps, rows, total, _ in tables:
        top = sorted(rows.items(), key=lambda r: -r[1][1])[:3]
        print(f"{kind}: " + ", ".join(f"{label} {r[3]:.1f}%" for label, r in top))


if __name__ == "__main__":
    main()
