#!/usr/bin/env python3
"""Latency of multi-device packages on one host, and the planner's forecast.

For each model (default: the shared mlp and bert_tiny) it compiles

  cpu:1             one process, measured with --threads 1 and 2
  cpu:N --mesh M    one process per device (mpirun) for every mesh M of
                    --meshes (default 1x2 and 2x2, N its device count),
                    once per sharding (default tp and auto), measured
                    with the defaults a user gets (no --threads: weft-run
                    splits the cores between the ranks) and with
                    --threads 1

at the input shapes of the model's test_data_set_0, checks each package
against that folder's outputs (rtol 1e-3, atol 1e-4; bert_tiny's come from
onnxruntime), then times it with `weft-run PKG --inputs DATA --bench N`
(the median and minimum rank 0 prints) and reads the total predicted
seconds from PKG/plan.json. It prints a markdown table: measured median,
the plan's prediction and their ratio, and the speed-up over cpu:1 with 2
threads (the same two cores as cpu:2 with one thread per rank).

It is a report, not a test: figures on a shared machine vary, so it never
fails on a figure. It exits 1 when a model cannot be compiled, checked or
timed (the row says why), and on bad options.

Usage: bench/multi_device.py [--models DIR] [--names mlp,bert_tiny]
                             [--shardings tp,auto] [--meshes 1x2,2x2]
                             [--iters 200] [--warmup 20] [--build DIR]
                             [--weftc PATH] [--weft-run PATH] [--work DIR]
                             [--out FILE]

Examples:
  bench/multi_device.py
  bench/multi_device.py --names bert_tiny --iters 50 --out /tmp/multi.md
"""

import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1e-3, 1e-4
COMPILE_TIMEOUT = 600
RUN_TIMEOUT = 300


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, timeout):
    """(exit code or a word saying why there is none, seconds, output)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out", time.monotonic() - start, ""
    except OSError as err:
        return "could not start (%s)" % err.strerror, 0.0, ""
    return (proc.returncode, time.monotonic() - start,
            proc.stdout.decode(errors="replace"))


def input_shape_flags(data_dir):
    import onnx
    flags = []
    for name in sorted(os.listdir(data_dir)):
        if re.fullmatch(r"input_\d+\.pb", name):
            t = onnx.load_tensor(os.path.join(data_dir, name))
            flags.append("--input-shape=%s=%s" %
                         (t.name, "x".join(str(d) for d in t.dims)))
    return flags


def predicted_ms(pkg):
    """The plan's total predicted time in ms, or None without a plan."""
    try:
        with open(os.path.join(pkg, "plan.json")) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    for keys in (("totals", "predicted_seconds"), ("totals", "seconds"),
                 ("predicted_seconds",)):
        value = plan
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            return 1e3 * value
    return None


class Row:
    def __init__(self, model, config, sharding, threads):
        self.model, self.config = model, config
        self.sharding, self.threads = sharding, threads
        self.median = self.minimum = self.predicted = None
        self.compile_s = None
        self.error = None


def measure(args, row, pkg, data):
    """Checks the package on DATA, then times it; fills the row."""
    # threads None: what a user gets without --threads.
    base = [args.weft_run, pkg, "--inputs", data, "--quiet"]
    if row.threads:
        base += ["--threads", str(row.threads)]
    rc, _, text = run(base + ["--check", data, "--rtol", str(RTOL),
                              "--atol", str(ATOL)], RUN_TIMEOUT)
    if rc != 0:
        row.error = "check: %s" % ("exit %d" % rc if isinstance(rc, int)
                                   else rc)
        log("%s %s: weft-run --check failed (%s):\n%s" %
            (row.model, row.config, row.error, text))
        return
    rc, _, text = run(base + ["--bench", str(args.iters), "--warmup",
                              str(args.warmup)], RUN_TIMEOUT)
    m = re.search(r"median ([0-9.eE+-]+) ms\s+min ([0-9.eE+-]+) ms", text)
    if rc != 0 or not m:
        row.error = "bench: %s" % ("exit %d" % rc if isinstance(rc, int)
                                   else rc if rc != 0 else "no median")
        log("%s %s: weft-run --bench failed (%s):\n%s" %
            (row.model, row.config, row.error, text))
        return
    row.median, row.minimum = float(m.group(1)), float(m.group(2))
    row.predicted = predicted_ms(pkg)


def bench_model(args, name, rows):
    model = os.path.join(args.models, name, "model.onnx")
    data = os.path.join(args.models, name, "test_data_set_0")
    if not os.path.isfile(model) or not os.path.isdir(data):
        row = Row(name, "-", "-", 0)
        row.error = "no %s or %s" % (model, data)
        rows.append(row)
        return
    shapes = input_shape_flags(data)
    configs = [("cpu:1", None, [], [1, 2])]
    for mesh in args.meshes:
        devices = 1
        for d in mesh.split("x"):
            devices *= int(d)
        for sharding in args.shardings:
            configs.append(("cpu:%d" % devices, sharding,
                            ["--cluster", "cpu:%d" % devices, "--mesh", mesh,
                             "--sharding=" + sharding], [None, 1]))
    for cluster, sharding, flags, thread_counts in configs:
        pkg = os.path.join(args.work, "%s-%s-%s-%s" % (
            name, cluster.replace(":", ""), sharding or "single",
            flags[flags.index("--mesh") + 1] if flags else "1"))
        shutil.rmtree(pkg, ignore_errors=True)
        cmd = [args.weftc, model, "-o", pkg, "--quiet"] + flags + shapes
        rc, secs, text = run(cmd, COMPILE_TIMEOUT)
        for threads in thread_counts:
            config = cluster if cluster == "cpu:1" else "%s %s" % (
                cluster, flags[flags.index("--mesh") + 1])
            row = Row(name, config, sharding or "-", threads)
            row.compile_s = secs
            rows.append(row)
            if rc != 0:
                row.error = "weftc %s" % ("exit %d" % rc if isinstance(rc, int)
                                          else rc)
                log("%s %s: %s\n  $ %s\n%s" % (name, config, row.error,
                                                " ".join(cmd), text))
                continue
            measure(args, row, pkg, data)
            log("%s %s %s threads %s: %s" % (
                name, config, row.sharding, threads or "default",
                row.error or "median %.4f ms" % row.median))


def fmt(value, spec="%.4f"):
    return "-" if value is None else spec % value


def table(args, rows):
    lines = ["| model | cluster | sharding | threads/rank | median (ms) | "
             "min (ms) | predicted (ms) | predicted / measured | "
             "speed-up vs cpu:1, 2 threads |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        ref = next((x for x in rows if x.model == r.model and
                    x.config == "cpu:1" and x.threads == 2), None)
        speedup = (ref.median / r.median if ref and ref.median and r.median
                   else None)
        ratio = (r.predicted / r.median if r.predicted is not None and
                 r.median else None)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.model, r.config, r.sharding, r.threads or "default",
            fmt(r.median) if not r.error else "FAILED: " + r.error,
            fmt(r.minimum), fmt(r.predicted), fmt(ratio, "%.2f"),
            fmt(speedup, "%.2f")))
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f
                       if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    head = ("Multi-device latency on one host, %s: `weft-run --bench %d "
            "--warmup %d` median and minimum of the run call (rank 0's "
            "figures for cpu:2), each package checked first against "
            "test_data_set_0 (rtol %g, atol %g). %s, %d cores, load average "
            "%s at the end. `predicted` is plan.json's total predicted time "
            "(none: the package has no plan)." % (
                datetime.date.today(), args.iters, args.warmup, RTOL, ATOL,
                cpu, os.cpu_count(),
                " ".join("%.1f" % x for x in os.getloadavg())))
    if args.load_at_start > 0.5 * (os.cpu_count() or 1):
        head += (" WARNING: the load average was %.1f when the benchmark "
                 "started: other processes shared the cores, so these "
                 "figures are noisy (OpenMP threads that wait for a busy "
                 "core can be 10x slower)." % args.load_at_start)
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
    ap.add_argument("--models",
                    default=os.path.join(ROOT, "..", "shared", "models"),
                    help="folder of NAME/model.onnx + NAME/test_data_set_0")
    ap.add_argument("--names", default="mlp,bert_tiny")
    ap.add_argument("--shardings", default="tp,auto",
                    help="plans for cpu:2 (comma-separated)")
    ap.add_argument("--meshes", default="1x2,2x2",
                    help="meshes to compile for, each on cpu:<devices>")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build folder whose bin/ has weftc and weft-run")
    ap.add_argument("--weftc", help="default BUILD/bin/weftc")
    ap.add_argument("--weft-run", help="default BUILD/bin/weft-run")
    ap.add_argument("--work", help="where packages go (default: a "
                    "temporary folder, removed at the end)")
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args()
    args.weftc = args.weftc or os.path.join(args.build, "bin", "weftc")
    args.weft_run = args.weft_run or os.path.join(args.build, "bin",
                                                  "weft-run")
    for tool in (args.weftc, args.weft_run):
        if not os.access(tool, os.X_OK):
            log("multi_device.py: %s is not an executable (build first, or "
                "pass --build / --weftc / --weft-run)" % tool)
            return 1
    if args.iters < 1 or args.warmup < 0:
        log("multi_device.py: --iters must be >= 1 and --warmup >= 0")
        return 1
    args.meshes = [m for m in args.meshes.split(",") if m]
    for mesh in args.meshes:
        if not re.fullmatch(r"\d+(x\d+)*", mesh):
            log("multi_device.py: --meshes entry %r is not like 1x2" % mesh)
            return 1
    args.shardings = [s for s in args.shardings.split(",") if s]
    if importlib.util.find_spec("onnx") is None:
        log("multi_device.py: needs python3-onnx (use /usr/bin/python3)")
        return 1
    args.load_at_start = os.getloadavg()[0]
    temp = args.work is None
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(
        prefix="weft-multi-bench-"))
    os.makedirs(args.work, exist_ok=True)
    rows = []
    try:
        for name in [n for n in args.names.split(",") if n]:
            bench_model(args, name, rows)
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
            log("multi_device.py: cannot write %s: %s" % (args.out,
                                                          err.strerror))
            return 1
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
