#!/usr/bin/python3
"""Latency when the machine is not idle: weft and onnxruntime beside load.

For each model (default: the shared resnet18 and bert_tiny) it compiles a
one-device package at the shapes of test_data_set_0 and measures, in one
run and on the same inputs, the median latency of

  weft 1 thread, weft 2 threads, onnxruntime 1 thread, onnxruntime 2 threads

under three loads:

  idle     nothing else running
  busy     one process spinning on one core (a plain busy loop)
  mesh     a 1x2 weft mesh package of the same model streaming beside it
           (weft-run with default flags, --bench many runs)

and prints, for each load, each engine's 2-thread time over its own
1-thread time under that load (the issue's figure: at most 1.1 for `busy`,
1.5 for `mesh`), with the CPU model, its flags and the load average.
onnxruntime is the peer (onnxruntime-node, ../shared/bench/ort_bench.js
with NODE_PATH=/tmp/ort/node_modules); it is skipped when not installed.

It is a report: it never fails on a figure, only when a model cannot be
compiled or run.

Usage: bench/busy_core.py [--models DIR] [--names resnet18,bert_tiny]
                          [--iters 100] [--loads idle,busy,mesh]
                          [--build DIR] [--out FILE]
"""

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from multi_device import input_shape_flags  # noqa: E402


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cpu_description():
    model, flags = platform.processor(), ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not model.strip():
                    model = line.split(":", 1)[1].strip()
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    flags = " ".join(f for f in ("avx2", "fma", "avx512f",
                                                 "avx512bw", "avx512_vnni",
                                                 "amx_tile") if f in have)
                    break
    except OSError:
        pass
    return "%s (%s), %d cores" % (model, flags, os.cpu_count())


class Load:
    """A background load: started on enter, stopped on exit."""

    def __init__(self, kind, mesh_cmd):
        self.kind, self.mesh_cmd, self.proc = kind, mesh_cmd, None

    def __enter__(self):
        if self.kind == "busy":
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "while True: pass"])
        elif self.kind == "mesh":
            self.proc = subprocess.Popen(self.mesh_cmd,
                                         stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        if self.proc:
            time.sleep(2.0)  # Let it reach its steady state.
            if self.proc.poll() is not None:
                raise RuntimeError("the %s load ended at once" % self.kind)
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def weft_median(args, pkg, data, threads):
    out = subprocess.run(
        [args.weft_run, pkg, "--inputs", data, "--threads", str(threads),
         "--quiet", "--bench", str(args.iters), "--warmup", "10"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=900)
    m = re.search(r"median ([0-9.]+) ms", out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("weft-run failed:\n" + out.stdout)
    return float(m.group(1))


def ort_median(args, model, data, threads):
    env = dict(os.environ, NODE_PATH=args.ort_node_path)
    out = subprocess.run(
        ["node", args.ort_bench, model, str(threads), str(args.iters),
         "--warmup", "10", "--inputs", data, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=env, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return float(json.loads(line)["median_ms"])
    raise RuntimeError("ort_bench failed:\n" + out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=os.path.join(ROOT, "..", "shared",
                                                         "models"))
    parser.add_argument("--names", default="resnet18,bert_tiny")
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--loads", default="idle,busy,mesh")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ort-bench", default=os.path.join(
        ROOT, "..", "shared", "bench", "ort_bench.js"))
    parser.add_argument("--ort-node-path", default="/tmp/ort/node_modules")
    parser.add_argument("--out")
    args = parser.parse_args()
    args.weftc = os.path.join(args.build, "bin", "weftc")
    args.weft_run = os.path.join(args.build, "bin", "weft-run")
    have_ort = (shutil.which("node") and os.path.isfile(args.ort_bench) and
                os.path.isdir(os.path.join(args.ort_node_path,
                                           "onnxruntime-node")))
    work = tempfile.mkdtemp(prefix="weft-busy-")
    lines = ["CPU: " + cpu_description(), "",
             "| model | load | weft 1T (ms) | weft 2T (ms) | weft 2T/1T | "
             "ort 1T (ms) | ort 2T (ms) | ort 2T/1T | load avg |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    failed = False
    for name in args.names.split(","):
        model = os.path.join(args.models, name, "model.onnx")
        data = os.path.join(args.models, name, "test_data_set_0")
        shapes = input_shape_flags(data)
        pkg = os.path.join(work, name)
        mesh = os.path.join(work, name + "-mesh")
        try:
            for out, flags in ((pkg, []), (mesh, ["--cluster", "cpu:2",
                                                  "--mesh", "1x2"])):
                subprocess.run([args.weftc, model, "-o", out, "--quiet"] +
                               flags + shapes, check=True,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=900)
        except (subprocess.SubprocessError, OSError) as err:
            log("%s: cannot compile: %s" % (name, err))
            failed = True
            continue
        mesh_cmd = [args.weft_run, "--timeout", "0", mesh, "--inputs", data,
                    "--quiet", "--bench", "100000000"]
        for load in args.loads.split(","):
            try:
                with Load(load, mesh_cmd):
                    w1 = weft_median(args, pkg, data, 1)
                    w2 = weft_median(args, pkg, data, 2)
                    o1 = ort_median(args, model, data, 1) if have_ort else None
                    o2 = ort_median(args, model, data, 2) if have_ort else None
                    avg = os.getloadavg()[0]
            except (RuntimeError, subprocess.SubprocessError, OSError) as err:
                log("%s %s: %s" % (name, load, err))
                failed = True
                continue
            fmt = lambda v: "-" if v is None else "%.3f" % v
            ratio = lambda a, b: "-" if a is None else "%.2f" % (a / b)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %.2f |" % (
                name, load, fmt(w1), fmt(w2), ratio(w2, w1), fmt(o1),
                fmt(o2), ratio(o2, o1) if o1 else "-", avg))
            log(lines[-1])
    shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
