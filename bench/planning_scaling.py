#!/usr/bin/env python3
"""How planning time and the ILP's size grow with layers and devices.

Generates GPT-style models with test/E2E/make_gpt.py (f16, hidden 1024, 16
heads, sequence 1024, batch 1; 12, 24 and 48 layers; zero weights in a
sparse external data file, so generation takes well under a second and no
disk space), then times

  weftc MODEL -o PLAN.json --emit=plan --cluster C [--mesh M]

for C in dgx-h100x8 (8 GPUs), p3.16xlarge:2 (16) and p3.16xlarge:8 (64),
and prints a markdown table: wall-clock planning seconds (the median of
--repeat runs) and, from plan.json's "ilp" object, the ILP's variables,
constraints, solve seconds and branch-and-bound nodes, plus the plan's
total predicted seconds. The issue's targets (24 layers: under 30 s on
dgx-h100x8 and under 60 s on p3.16xlarge:8) are marked.

A report, not a test: it exits 1 only when a model cannot be generated or
planned (the row says why), or on bad options.

Usage: bench/planning_scaling.py [--layers 12,24,48]
                                 [--clusters dgx-h100x8,p3.16xlarge:2,...]
                                 [--mesh CLUSTER=SHAPE ...] [--hidden 1024]
                                 [--heads 16] [--seq 1024] [--batch 1]
                                 [--vocab 50257] [--objective latency]
                                 [--repeat 1] [--timeout 600]
                                 [--build DIR] [--weftc PATH] [--work DIR]
                                 [--out FILE]

Examples:
  bench/planning_scaling.py
  bench/planning_scaling.py --layers 24 --clusters dgx-h100x8 --repeat 3
  bench/planning_scaling.py --mesh p3.16xlarge:8=8x8 --mesh dgx-h100x8=1x8
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_GPT = os.path.join(ROOT, "test", "E2E", "make_gpt.py")
# (layers, cluster) -> seconds: the planning-time targets.
TARGETS = {(24, "dgx-h100x8"): 30.0, (24, "p3.16xlarge:8"): 60.0}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, timeout):
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out after %d s" % timeout, time.monotonic() - start, ""
    except OSError as err:
        return "could not start (%s)" % err.strerror, 0.0, ""
    return (proc.returncode, time.monotonic() - start,
            proc.stdout.decode(errors="replace"))


def generate(args, layers):
    """Writes the model; returns its path or None (logged)."""
    path = os.path.join(args.work, "gpt-l%d-h%d-s%d-b%d.onnx" % (
        layers, args.hidden, args.seq, args.batch))
    cmd = [sys.executable, MAKE_GPT, "--out", path, "--layers", str(layers),
           "--hidden", str(args.hidden), "--heads", str(args.heads),
           "--seq", str(args.seq), "--batch", str(args.batch),
           "--vocab", str(args.vocab), "--dtype", "f16", "--zero-weights",
           "--external-data"]
    rc, secs, text = run(cmd, 600)
    if rc != 0:
        log("planning_scaling.py: make_gpt.py failed (%s):\n  $ %s\n%s" %
            (rc, " ".join(cmd), text))
        return None
    log(text.strip())
    return path


def ilp_field(plan, key):
    ilp = plan.get("ilp") if isinstance(plan, dict) else None
    value = ilp.get(key) if isinstance(ilp, dict) else None
    return value if isinstance(value, (int, float)) else None


def plan_model(args, layers, model, cluster):
    """Plans one model onto one cluster --repeat times; returns a row."""
    row = {"layers": layers, "cluster": cluster, "error": None}
    out = os.path.join(args.work, "plan-l%d-%s.json" % (
        layers, re.sub(r"[^A-Za-z0-9.]", "_", cluster)))
    # Not --quiet: the ILP's solve time is in the summary, not in plan.json
    # (packages are byte-reproducible).
    cmd = [args.weftc, model, "-o", out, "--emit=plan", "--cluster", cluster]
    if cluster in args.meshes:
        cmd += ["--mesh", args.meshes[cluster]]
    if args.objective:
        cmd.append("--objective=" + args.objective)
    times = []
    for _ in range(args.repeat):
        if os.path.exists(out):
            os.remove(out)
        rc, secs, text = run(cmd, args.timeout)
        if rc != 0:
            row["error"] = "weftc %s" % ("exit %d" % rc
                                         if isinstance(rc, int) else rc)
            log("%d layers on %s: %s\n  $ %s\n%s" % (
                layers, cluster, row["error"], " ".join(cmd), text))
            return row
        times.append(secs)
    row["seconds"] = statistics.median(times)
    try:
        with open(out) as f:
            plan = json.load(f)
    except (OSError, ValueError) as err:
        row["error"] = "cannot read %s: %s" % (out, err)
        return row
    devices = plan.get("devices") if isinstance(plan, dict) else None
    row["devices"] = len(devices) if isinstance(devices, list) else None
    for key in ("variables", "constraints", "nodes", "gap"):
        row[key] = ilp_field(plan, key)
    solved = re.search(r"solved in ([0-9.]+) s", text)
    row["solve_seconds"] = float(solved.group(1)) if solved else None
    totals = plan.get("totals") if isinstance(plan, dict) else None
    row["predicted"] = (totals.get("predicted_seconds")
                        if isinstance(totals, dict) else None)
    target = TARGETS.get((layers, cluster))
    row["target"] = target
    log("%d layers on %s: %.2f s%s" % (
        layers, cluster, row["seconds"],
        "" if row["variables"] is None else ", ILP %s variables, %s "
        "constraints" % (row["variables"], row["constraints"])))
    return row


def fmt(value, spec):
    return "-" if value is None else spec % value


def table(args, rows):
    lines = ["| layers | cluster | devices | planning (s) | target | "
             "ILP variables | ILP constraints | ILP solve (s) | graph nodes | "
             "gap | predicted (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
             "--- |"]
    for r in rows:
        if r["error"]:
            lines.append("| %d | %s | - | FAILED: %s | %s | - | - | - | - | "
                         "- | - |" % (r["layers"], r["cluster"], r["error"],
                                      fmt(TARGETS.get((r["layers"],
                                                       r["cluster"])),
                                          "< %g s")))
            continue
        target = "-"
        if r["target"] is not None:
            target = "< %g s: %s" % (r["target"], "met" if r["seconds"] <
                                     r["target"] else "MISSED")
        lines.append("| %d | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | "
                     "%s |" % (
                         r["layers"], r["cluster"], fmt(r["devices"], "%d"),
                         r["seconds"], target, fmt(r["variables"], "%d"),
                         fmt(r["constraints"], "%d"),
                         fmt(r["solve_seconds"], "%.2f"),
                         fmt(r["nodes"], "%d"), fmt(r["gap"], "%.3g"),
                         fmt(r["predicted"], "%.4g")))
    head = ("Planning time of `weftc --emit=plan` (wall clock, median of %d) "
            "on GPT-style models: f16, hidden %d, %d heads, sequence %d, "
            "batch %d, vocabulary %d, zero weights; %s, %d cores, load "
            "average %s at the end." % (
                args.repeat, args.hidden, args.heads, args.seq, args.batch,
                args.vocab, datetime.date.today(), os.cpu_count(),
                " ".join("%.1f" % x for x in os.getloadavg())))
    return head + "\n\n" + "\n".join(lines) + "\n"


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


def main():
    ap = ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="12,24,48")
    ap.add_argument("--clusters",
                    default="dgx-h100x8,p3.16xlarge:2,p3.16xlarge:8")
    ap.add_argument("--mesh", action="append", default=[],
                    metavar="CLUSTER=SHAPE",
                    help="mesh for one cluster (default: the preset's)")
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--objective", choices=("latency", "throughput"),
                    help="passed to weftc (default: weftc's)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds one planning may take")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--weftc", help="default BUILD/bin/weftc")
    ap.add_argument("--work", help="where models and plans go (default: a "
                    "temporary folder, removed at the end)")
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args()

    args.weftc = args.weftc or os.path.join(args.build, "bin", "weftc")
    if not os.access(args.weftc, os.X_OK):
        log("planning_scaling.py: %s is not an executable" % args.weftc)
        return 1
    try:
        layers = [int(x) for x in args.layers.split(",") if x]
    except ValueError:
        log("planning_scaling.py: --layers %r is not a list of numbers" %
            args.layers)
        return 1
    clusters = [c for c in args.clusters.split(",") if c]
    args.meshes = {}
    for item in args.mesh:
        cluster, _, shape = item.partition("=")
        if not re.fullmatch(r"\d+(x\d+)*", shape):
            log("planning_scaling.py: --mesh %r is not CLUSTER=SHAPE "
                "(like p3.16xlarge:8=8x8)" % item)
            return 1
        args.meshes[cluster] = shape
    if not layers or min(layers) < 1 or args.repeat < 1 or \
            args.timeout < 1 or not clusters:
        log("planning_scaling.py: --layers, --clusters, --repeat and "
            "--timeout need positive values")
        return 1

    temp = args.work is None
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(
        prefix="weft-planning-"))
    os.makedirs(args.work, exist_ok=True)
    rows = []
    try:
        for n in layers:
            model = generate(args, n)
            for cluster in clusters:
                if model is None:
                    rows.append({"layers": n, "cluster": cluster,
                                 "error": "model generation failed"})
                    continue
                rows.append(plan_model(args, n, model, cluster))
    finally:
        if temp:
            shutil.rmtree(args.work, ignore_errors=True)
    text = table(args, rows)
    print(text)
    if args.out:
        try:
            with open(args.out, "w") as f:
                f.write(text)
        except OSError as err:
            log("planning_scaling.py: cannot write %s: %s" % (args.out,
                                                              err.strerror))
            return 1
    return 1 if any(r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
