#!/usr/bin/python3
"""Weft's predictions against measured times on this machine (issue #17).

For every model and plan it compiles a package with weftc against a cluster
spec that weft-calibrate measured on this machine, reads the prediction
from the plan's plan.json, runs the package with weft-run, and prints one
table of predicted against measured milliseconds.

Calibration: `weft-calibrate -o WORK/specs/cpu2.json --devices 2`, once,
cached in the work folder: a spec that is there is used again (delete it
to calibrate again). Every plan is compiled against this one spec (the
one-device plan on a mesh of its first device), so that plans are ranked
under one cost model and not against two calibrations' noise. --quick
calibrates with `weft-calibrate --quick` into cpu2-quick.json, which a full
run never uses.

Plans, each compiled with `--cluster SPEC`, run with one thread per rank
(`--threads 1 --fixed-threads`, as the cost model prices one core per
device) and `--quiet`:

  cpu:1                   one device (`--mesh 1`). A one-device package has
                          no plan.json, so the prediction comes from a
                          second compile with --emit=plan:
                          totals.predicted_seconds.
  cpu:2 tp                one mesh of 2, --sharding=tp:
                          totals.predicted_seconds (one run).
  cpu:2 dp (batch 2)      one mesh of 2, --sharding=dp, at batch 2 (dp
                          splits the batch): the model's test inputs stacked
                          twice along dimension 0, --input-shape at batch 2.
                          A model that declares batch 1 is refused by weftc
                          (exit 1); the row is skipped with weftc's reason.
  cpu:2 2 stages          --stages=2, one request (weft-run --bench):
                          schedule.predicted_latency_seconds.
  cpu:2 2 stages, stream  the same package, --requests requests back to
                          back (weft-run --stream): ms per request, 1000 /
                          schedule.predicted_throughput_per_s predicted and
                          1000 / the measured requests/s.

The second prediction, "simulated", is plan.json's `simulated` object (the
event simulator of docs/Simulator.md): latency_seconds for one run or
request, 1 / throughput_per_s for a stream; "-" where plan.json has none.

Measured: `weft-run PKG --inputs DATA --bench N --warmup K --threads 1
--fixed-threads` (median of N runs; for a mesh or a pipeline weft-run
starts mpirun, and a run lasts until its slowest rank ends), or `--stream N
--warmup K` (requests/s). Every row is measured --repeats times, the rows
taking turns; "measured" is the median of the repeats' figures and
"spread" the min-max of them. "judged" is yes when the plan's ranks fit
the cores of this machine (the physical cores weft-calibrate counts, at
most the CPUs this process may use); a plan with more ranks than cores is
"reported" only, and "within 20%" (predicted within 0.8-1.2 x measured) is
given for judged rows only.

Models (--models): the shared bert_tiny and resnet18 (--shared, default
../shared/models; one that is missing is skipped with a note) and the
repo's own gpt2_style and mobilenet_v2, which bench/models/
make_bench_models.py writes into --bench-models (default
build/bench-models) when missing (bench/compare.py's ensure_bench_models).
Input shapes come from each model's test_data_set_0.

Errors: a failing weft-calibrate, weft-run, or weftc (other than the
refusal of a dp or pipeline plan, exit 1, which is printed as skipped with
weftc's reason) stops the run with one line naming the model, the plan and
the command, exit 1.

With --write the table replaces the section "## Predicted against measured
(bench/predict_vs_measured.py)" of docs/benchmarks.md (appended when
missing); everything else in the file stays byte for byte.

Usage: bench/predict_vs_measured.py [--models a,b] [--iters 50]
         [--repeats 5] [--warmup 10] [--requests 200] [--work DIR]
         [--quick] [--write]
Trying it: bench/predict_vs_measured.py --quick --models bert_tiny
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import textwrap

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (its helpers: models, shapes, machine)

ROOT = compare.ROOT
DEFAULT_MODELS = "bert_tiny,resnet18,gpt2_style,mobilenet_v2"
SECTION = "## Predicted against measured (bench/predict_vs_measured.py)"
TOLERANCE = 0.20

BENCH = re.compile(r"median ([0-9.e+-]+) ms\s+min ([0-9.e+-]+) ms")
STREAM = re.compile(r"throughput: ([0-9.e+-]+) requests/s \((\d+) requests,")


def fail(message):
    print(f"predict_vs_measured: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def note(message):
    print(f"predict_vs_measured: {message}", flush=True)


def run_cmd(what, cmd, refusal_ok=False):
    """Runs cmd; stops on failure with one line naming what and cmd. With
    refusal_ok, exit 1 (weftc: bad model or options) returns the error line
    instead."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        fail(f"{what}: did not start: {shlex.join(cmd)}: {e}")
    if out.returncode == 1 and refusal_ok:
        lines = [l.strip() for l in out.stderr.splitlines()
                 if "error:" in l] or [compare.last_line(out.stderr)]
        return None, lines[0]
    if out.returncode != 0:
        compare.show_output(out)
        fail(f"{what}: failed (exit {out.returncode}): {shlex.join(cmd)}: "
             f"{compare.last_line(out.stderr or out.stdout)}")
    return out, None


# ---------------------------------------------------------------- machine

def usable_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def calibrate(args, devices):
    """The cached spec for cpu:devices, calibrated when missing."""
    folder = os.path.join(args.work, "specs")
    os.makedirs(folder, exist_ok=True)
    spec = os.path.join(folder, f"cpu{devices}"
                        f"{'-quick' if args.quick else ''}.json")
    if os.path.exists(spec):
        when = datetime.datetime.fromtimestamp(os.path.getmtime(spec))
        note(f"using the cached spec {spec} (calibrated "
             f"{when:%Y-%m-%d %H:%M}; delete it to calibrate again)")
    else:
        cmd = [os.path.join(args.build, "bin", "weft-calibrate"), "-o", spec,
               "--devices", str(devices)] + (["--quick"] if args.quick else [])
        note(f"calibrating cpu:{devices}: {shlex.join(cmd)}")
        run_cmd(f"calibration for {devices} device(s)", cmd)
    with open(spec) as f:
        return spec, json.load(f)


def spec_summary(data):
    kind, node = data["device_kinds"][0], data["nodes"][0]
    link = data.get("links", {}).get("intra_node", {})
    parts = [f"f32 {kind['flop_per_s']['f32'] / 1e9:.1f} GFLOP/s per device",
             f"memory {kind['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s "
             "per device",
             f"node {node['memory_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s "
             f"shared, {node['cores']} cores"]
    if link:
        parts.append(f"link {link['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s, "
                     f"{link['latency_seconds'] * 1e6:.2f} us")
    return "; ".join(parts)


# ---------------------------------------------------------------- models

def resolve_models(args):
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in DEFAULT_MODELS.split(",")]
    if unknown:
        fail(f"unknown model(s) {', '.join(unknown)}; known: "
             f"{DEFAULT_MODELS}")
    return compare.find_models(names, args.bench_models, args.shared, note)


def batch2_data(args, name, data):
    """A test-data folder whose inputs have batch >= 2 (dimension 0): the
    model's own when they have, else its inputs stacked twice; (folder,
    None), or (None, reason) when an input has no dimension 0."""
    files = sorted(f for f in os.listdir(data)
                   if re.fullmatch(r"input_\d+\.pb", f))
    tensors = [onnx.load_tensor(os.path.join(data, f)) for f in files]
    for t in tensors:
        if not t.dims:
            return None, f"input '{t.name}' is a scalar: no batch to split"
    if all(t.dims[0] >= 2 for t in tensors):
        return data, None
    folder = os.path.join(args.work, "data", f"{name}-batch2")
    os.makedirs(folder, exist_ok=True)
    for f, t in zip(files, tensors):
        a = numpy_helper.to_array(t)
        a = np.concatenate([a] * 2, axis=0) if a.shape[0] == 1 else a
        with open(os.path.join(folder, f), "wb") as out:
            out.write(numpy_helper.from_array(a, t.name).SerializeToString())
    return folder, None


# ---------------------------------------------------------------- plans

class Row:
    def __init__(self, model, plan, kind, pkg, data, ranks, predicted_ms,
                 simulated_ms):
        self.model, self.plan, self.kind = model, plan, kind
        self.pkg, self.data, self.ranks = pkg, data, ranks
        self.predicted_ms, self.simulated_ms = predicted_ms, simulated_ms
        self.measured = []   # ms, one per repeat


def ranking_summary(rows, cores):
    """Issue #17's ranking check: for each model, every pair of judged plans
    whose measured medians differ by more than twice the larger of their
    spreads (min-max over the repeats) must be predicted in the same order.
    One-request and stream rows are both ms per request, so all pairs
    count."""
    pairs, misranked = 0, []
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a.model != b.model or a.ranks > cores or b.ranks > cores:
                continue
            ma, mb = statistics.median(a.measured), statistics.median(b.measured)
            spread = max(max(a.measured) - min(a.measured),
                         max(b.measured) - min(b.measured))
            if abs(ma - mb) <= 2 * spread:
                continue
            pairs += 1
            if (a.predicted_ms < b.predicted_ms) != (ma < mb):
                misranked.append(f"{a.model} {a.plan} / {b.plan}")
    text = (f"Ranking: {pairs - len(misranked)} of {pairs} pairs of plans "
            "whose medians differ by more than twice their spread are "
            "predicted in the measured order")
    return text + (f" (misranked: {'; '.join(misranked)})." if misranked
                   else ".")


def weftc(args, what, model, out, flags, refusal_ok=False):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [os.path.join(args.build, "bin", "weftc"), model, "-o", out,
           "--quiet"] + flags
    _, refusal = run_cmd(f"{what}: weftc", cmd, refusal_ok)
    return refusal


def read_plan(what, path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{what}: cannot read {path}: {e}")


def ranks_of(what, pkg):
    manifest = read_plan(what, os.path.join(pkg, "manifest.json"))
    return len(manifest["devices"])


def plan_rows(args, specs, name, model, data):
    """The rows of one model, compiled; and the skipped plans with reasons."""
    rows, skipped = [], []
    shapes = compare.input_shape_flags(data)
    base = os.path.join(args.work, "packages", name)
    spec2 = specs[2][0]

    # cpu:1: the package, and its prediction from --emit=plan.
    what = f"{name} cpu:1"
    pkg = os.path.join(base, "cpu1")
    one = ["--cluster", spec2, "--mesh", "1"]
    weftc(args, what, model, pkg, one + shapes)
    plan_path = os.path.join(pkg, "plan.json")
    if not os.path.exists(plan_path):
        plan_dir = os.path.join(base, "cpu1-plan")
        weftc(args, what + " (--emit=plan)", model, plan_dir,
              ["--emit=plan"] + one + shapes)
        plan_path = os.path.join(plan_dir, "plan.json")
    plan = read_plan(what, plan_path)
    sim = plan.get("simulated", {})
    rows.append(Row(name, "cpu:1", "bench", pkg, data, ranks_of(what, pkg),
                    plan["totals"]["predicted_seconds"] * 1e3,
                    sim.get("latency_seconds", 0) * 1e3 or None))

    # cpu:2, one mesh: tp at the model's batch, dp at batch 2.
    dp_data, dp_reason = batch2_data(args, name, data)
    for label, sharding, mesh_data in (("cpu:2 tp", "tp", data),
                                       ("cpu:2 dp (batch 2)", "dp", dp_data)):
        what = f"{name} {label}"
        if mesh_data is None:
            skipped.append((name, label, dp_reason))
            note(f"skipped {what}: {dp_reason}")
            continue
        pkg = os.path.join(base, f"cpu2-{sharding}")
        refusal = weftc(args, what, model, pkg,
                        ["--cluster", spec2, f"--sharding={sharding}"] +
                        compare.input_shape_flags(mesh_data),
                        refusal_ok=sharding == "dp")
        if refusal:
            skipped.append((name, label, refusal))
            note(f"skipped {what}: weftc refuses it: {refusal}")
            continue
        plan = read_plan(what, os.path.join(pkg, "plan.json"))
        sim = plan.get("simulated", {})
        rows.append(Row(name, label, "bench", pkg, mesh_data,
                        ranks_of(what, pkg),
                        plan["totals"]["predicted_seconds"] * 1e3,
                        sim.get("latency_seconds", 0) * 1e3 or None))

    # cpu:2 as 2 stages: one request, and a stream.
    what = f"{name} cpu:2 2 stages"
    pkg = os.path.join(base, "cpu2-stages2")
    refusal = weftc(args, what, model, pkg,
                    ["--cluster", spec2, "--stages=2"] + shapes,
                    refusal_ok=True)
    if refusal:
        for label in ("cpu:2 2 stages", "cpu:2 2 stages, stream"):
            skipped.append((name, label, refusal))
        note(f"skipped {what}: weftc refuses it: {refusal}")
        return rows, skipped
    plan = read_plan(what, os.path.join(pkg, "plan.json"))
    schedule, sim = plan["schedule"], plan.get("simulated", {})
    ranks = ranks_of(what, pkg)
    latency = schedule.get("predicted_latency_seconds",
                           plan["totals"]["predicted_seconds"])
    rows.append(Row(name, "cpu:2 2 stages", "bench", pkg, data, ranks,
                    latency * 1e3,
                    sim.get("latency_seconds", 0) * 1e3 or None))
    sim_rate = sim.get("throughput_per_s")
    rows.append(Row(name, "cpu:2 2 stages, stream", "stream", pkg, data,
                    ranks, 1e3 / schedule["predicted_throughput_per_s"],
                    1e3 / sim_rate if sim_rate else None))
    return rows, skipped


# ---------------------------------------------------------------- runs

def measure(args, row):
    """One repeat of a row: ms (a run's median, or ms per request)."""
    cmd = [os.path.join(args.build, "bin", "weft-run"), row.pkg, "--inputs",
           row.data, "--threads", "1", "--fixed-threads", "--quiet"]
    if row.kind == "bench":
        cmd += ["--bench", str(args.iters), "--warmup", str(args.warmup)]
    else:
        cmd += ["--stream", str(args.requests), "--warmup", str(args.warmup)]
    out, _ = run_cmd(f"{row.model} {row.plan}: weft-run", cmd)
    text = out.stdout + out.stderr
    if row.kind == "bench":
        m = BENCH.search(text)
        if m:
            return float(m.group(1))
    else:
        m = STREAM.search(text)
        if m:
            return 1e3 / float(m.group(1))
    fail(f"{row.model} {row.plan}: no {'median' if row.kind == 'bench' else 'throughput'} "
         f"in the output of {shlex.join(cmd)}")


# ---------------------------------------------------------------- report

def ms(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x >= 1 else f"{x:.4f}"


def table(rows, cores, repeats):
    spread = (f"spread ms (min-max of {repeats} repeats' figures)"
              if repeats > 1 else "spread ms (one repeat: none)")
    lines = ["| model | cluster/plan | ranks | predicted ms | simulated ms | "
             f"measured ms (median) | {spread} | predicted / measured | "
             "judged | within 20% |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    judged = within = 0
    for r in rows:
        med = statistics.median(r.measured)
        ratio = r.predicted_ms / med
        is_judged = r.ranks <= cores
        ok = abs(ratio - 1) <= TOLERANCE
        judged += is_judged
        within += is_judged and ok
        spread_text = (f"{ms(min(r.measured))}-{ms(max(r.measured))}"
                       if len(r.measured) > 1 else "-")
        lines.append(
            f"| {r.model} | {r.plan} | {r.ranks} | {ms(r.predicted_ms)} | "
            f"{ms(r.simulated_ms)} | {ms(med)} | {spread_text} | "
            f"{ratio:.2f} | {'yes' if is_judged else 'reported'} | "
            f"{('yes' if ok else 'no') if is_judged else '-'} |")
    return lines, judged, within


def paragraph(text):
    return textwrap.fill(" ".join(text.split()), width=76)


def doc_text(args, machine, cores, specs, lines, summary, skipped, missing,
             before, after):
    quick = (" This was a `--quick` run (calibration and runs shortened): "
             "not a measurement." if args.quick else "")
    times = "once" if args.repeats == 1 else f"{args.repeats} times"
    out = [SECTION, "", paragraph(f"""
        Written by `bench/predict_vs_measured.py --write` on
        {datetime.date.today()}: each plan compiled by weftc against a spec
        that `weft-calibrate` measured on this machine, its prediction read
        from plan.json (`totals.predicted_seconds` for one mesh,
        `schedule.predicted_latency_seconds` for one request through 2
        stages, 1 / `schedule.predicted_throughput_per_s` per request of a
        stream; "simulated" is plan.json's event-simulator figure), against
        `weft-run` with one thread per rank (`--threads 1
        --fixed-threads`): the median of {args.iters} runs after
        {args.warmup} warm-up runs (`--bench`), or ms per request of a
        stream of {args.requests} requests (`--stream`). Each row was
        measured {times}, the rows taking turns; "measured" is the median
        of the repeats and "spread" their min-max. dp runs at
        batch 2 (the test inputs stacked twice).{quick}"""), "",
        paragraph(f"""
        Machine: {machine['cpu']}; {machine['flags']}; {cores} cores. A row
        is judged (within 20%: predicted within 0.8-1.2 x measured) when
        its ranks fit the cores; other rows are reported only. Load
        average {before} before, {after} after."""), ""]
    for n, (path, data) in sorted(specs.items()):
        out.append(f"- spec cpu:{n} (every plan; cpu:1 on its first "
                   f"device): {spec_summary(data)}")
    out += [""] + lines + ["", summary]
    if skipped:
        out += [""] + [f"- skipped {m} {p}: {why}" for m, p, why in skipped]
    if missing:
        out += ["", f"Not present: {', '.join(missing)}."]
    out += ["", paragraph("""
        Reproduce: `bench/predict_vs_measured.py --write` on a quiet
        machine (builds nothing; the specs are cached in
        `build/predict-vs-measured/specs`; delete them to calibrate
        again).""")]
    return "\n".join(out) + "\n"


def replace_section(path, text):
    """Replaces SECTION (its heading line up to the next "## " line) by
    text, or appends it; the rest stays byte for byte; temp file + rename."""
    with open(path, "rb") as f:
        old = f.read()
    body = text.rstrip("\n").encode() + b"\n"
    head = re.search(rb"^" + re.escape(SECTION.encode()) + rb"[ \t]*\r?$",
                     old, re.MULTILINE)
    if head:
        nxt = re.search(rb"^## ", old[head.end():], re.MULTILINE)
        if nxt:
            new = old[:head.start()] + body + b"\n" + \
                old[head.end() + nxt.start():]
        else:
            new = old[:head.start()] + body
    else:
        sep = b"" if old.endswith(b"\n\n") or not old else \
            b"\n" if old.endswith(b"\n") else b"\n\n"
        new = old + sep + body
    compare.write_file_atomically(path, new)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help=f"comma-separated (default {DEFAULT_MODELS})")
    ap.add_argument("--iters", type=int,
                    help="timed runs per --bench (default 50; --quick 5)")
    ap.add_argument("--repeats", type=int,
                    help="measurements per row (default 5; --quick 2)")
    ap.add_argument("--warmup", type=int,
                    help="untimed runs or requests first (default 10; "
                         "--quick 2)")
    ap.add_argument("--requests", type=int,
                    help="requests per --stream (default 200; --quick 10)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build",
                                                   "predict-vs-measured"),
                    help="specs, packages and data (default "
                         "build/predict-vs-measured)")
    ap.add_argument("--quick", action="store_true",
                    help="weft-calibrate --quick and tiny runs, for trying "
                         "the script; not a measurement")
    ap.add_argument("--write", action="store_true",
                    help="replace this script's section of "
                         "docs/benchmarks.md")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared",
                                                     "models"),
                    help="the shared models (default ../shared/models)")
    ap.add_argument("--bench-models",
                    default=os.path.join(ROOT, "build", "bench-models"),
                    help="where the repo's own models are generated "
                         "(default build/bench-models)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs",
                                                  "benchmarks.md"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    for key, full, quick in (("iters", 50, 5), ("repeats", 5, 2),
                             ("warmup", 10, 2), ("requests", 200, 10)):
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
        if getattr(args, key) < (0 if key == "warmup" else 1):
            ap.error(f"--{key} must be at least "
                     f"{0 if key == 'warmup' else 1}")
    args.work = os.path.abspath(args.work)
    for tool in ("weftc", "weft-run", "weft-calibrate"):
        if not os.access(os.path.join(args.build, "bin", tool), os.X_OK):
            fail(f"no {os.path.join(args.build, 'bin', tool)}: build weft "
                 "first")

    machine = compare.machine_info()
    before = compare.load_averages()
    print(f"CPU: {machine['cpu']}; {machine['flags']}; {machine['cores']} "
          f"hardware threads, {usable_cpus()} usable; load average "
          f"{before}", flush=True)
    models, missing = resolve_models(args)

    specs = {2: calibrate(args, 2)}
    cores = min(specs[2][1]["nodes"][0]["cores"], usable_cpus())
    for n, (path, data) in specs.items():
        print(f"spec cpu:{n} ({path}): {spec_summary(data)}", flush=True)
    print(f"cores for judging: {cores} (the spec's physical cores, at most "
          "the CPUs this process may use)", flush=True)

    rows, skipped = [], []
    for name, model, data in models:
        r, s = plan_rows(args, specs, name, model, data)
        rows += r
        skipped += s
        note(f"{name}: compiled {len(r)} row(s)")

    for i in range(1, args.repeats + 1):
        print(f"repeat {i} of {args.repeats} (load average "
              f"{compare.load_averages()})", flush=True)
        for row in rows:
            row.measured.append(measure(args, row))
            print(f"  {row.model:12s} {row.plan:24s} "
                  f"{ms(row.measured[-1]):>9s} ms "
                  f"(predicted {ms(row.predicted_ms)})", flush=True)
    after = compare.load_averages()

    lines, judged, within = table(rows, cores, args.repeats)
    summary = (f"Judged rows within 20%: {within} of {judged}"
               + (f" ({len(rows) - judged} reported only)"
                  if judged < len(rows) else "") + ". " +
               ranking_summary(rows, cores))
    print("\n" + "\n".join(lines + ["", summary]))
    for m, p, why in skipped:
        print(f"skipped {m} {p}: {why}")
    print(f"load average {before} before, {after} after", flush=True)

    if args.write:
        replace_section(args.doc, doc_text(args, machine, cores, specs, lines,
                                           summary, skipped, missing, before,
                                           after))
        note(f"wrote the section '{SECTION[3:]}' of {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
