#!/usr/bin/env python3
"""Latency of weft against onnxruntime on the same models, inputs and threads.

Compiles each model with weftc (input shapes from its test_data_set_0), then,
for every thread count, times weft (`weft-run PKG --bench N --threads T`: the
run call only, inputs already loaded) and onnxruntime on the CPU
(../shared/bench/ort_bench.js: session.run only) on the same inputs, one
right after the other, and prints a table of medians. With --write it also
writes the table to docs/benchmarks.md. It prints figures; it is not a test.

onnxruntime-node is installed into a cache folder when missing
(~/.cache/weft/ort, with `npm install onnxruntime-node@1.30.0`; needs npm and
the npm registry).

Usage: bench/compare.py [--models DIR] [--threads 1,2] [--iters 100]
                        [--warmup 10] [--build DIR] [--write]
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_VERSION = "1.30.0"


def ensure_ort(cache):
    modules = os.path.join(cache, "node_modules")
    if os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        return modules
    if not shutil.which("npm"):
        sys.exit("bench: npm is missing; install Debian's npm, or put "
                 f"onnxruntime-node@{ORT_VERSION} into {modules}")
    os.makedirs(cache, exist_ok=True)
    print(f"bench: installing onnxruntime-node@{ORT_VERSION} into {cache}",
          flush=True)
    subprocess.run(["npm", "init", "-y"], cwd=cache, check=True,
                   stdout=subprocess.DEVNULL)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    subprocess.run(["npm", "install", f"onnxruntime-node@{ORT_VERSION}"],
                   cwd=cache, env=env, check=True)
    return modules


def input_shape_flags(data_dir):
    flags = []
    for name in sorted(os.listdir(data_dir)):
        if re.fullmatch(r"input_\d+\.pb", name):
            t = onnx.load_tensor(os.path.join(data_dir, name))
            flags.append(f"--input-shape={t.name}=" +
                         "x".join(str(d) for d in t.dims))
    return flags


def weft_median(build, pkg, data, threads, iters, warmup):
    out = subprocess.run(
        [os.path.join(build, "bin", "weft-run"), pkg, "--inputs", data,
         "--bench", str(iters), "--warmup", str(warmup), "--threads",
         str(threads)], capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms\s+min ([0-9.]+) ms", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit(f"bench: weft-run failed on {pkg}:\n{out.stdout}{out.stderr}")
    return float(m.group(1))


def ort_median(modules, model, data, threads, iters, warmup):
    env = dict(os.environ, NODE_PATH=modules)
    script = os.path.join(ROOT, "..", "shared", "bench", "ort_bench.js")
    out = subprocess.run(
        ["node", script, model, str(threads), str(iters), "--warmup",
         str(warmup), "--inputs", data, "--json"],
        capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"bench: ort_bench.js failed on {model}:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--names", default="mlp,resnet18,bert_tiny")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ort-cache",
                    default=os.path.expanduser("~/.cache/weft/ort"))
    ap.add_argument("--write", action="store_true",
                    help="write the table to docs/benchmarks.md")
    args = ap.parse_args()

    modules = ensure_ort(args.ort_cache)
    threads = [int(t) for t in args.threads.split(",")]
    work = tempfile.mkdtemp(prefix="weft-bench-")
    rows = []
    try:
        for name in args.names.split(","):
            model = os.path.join(args.models, name, "model.onnx")
            data = os.path.join(args.models, name, "test_data_set_0")
            pkg = os.path.join(work, name)
            cmd = [os.path.join(args.build, "bin", "weftc"), model, "-o", pkg,
                   "--quiet"] + input_shape_flags(data)
            subprocess.run(cmd, check=True)
            for t in threads:
                w = weft_median(args.build, pkg, data, t, args.iters, args.warmup)
                o = ort_median(modules, model, data, t, args.iters, args.warmup)
                rows.append((name, t, w, o))
                print(f"{name:10s} threads {t}: weft {w:8.3f} ms  "
                      f"onnxruntime {o:8.3f} ms  ratio {w / o:5.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = ["| model | threads | weft median (ms) | onnxruntime median (ms) | weft / ort |",
             "| --- | --- | --- | --- | --- |"]
    for name, t, w, o in rows:
        lines.append(f"| {name} | {t} | {w:.3f} | {o:.3f} | {w / o:.2f} |")
    summary = []
    for t in threads:
        ratios = [w / o for _, tt, w, o in rows if tt == t]
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        summary.append(f"geometric mean of weft/onnxruntime at {t} thread(s): {geo:.2f}")
    print("\n".join(lines + [""] + summary))

    if args.write:
        cpu = platform.processor()
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next(l.split(":", 1)[1].strip() for l in f
                           if l.startswith("model name"))
        except Exception:
            pass
        text = f"""# Benchmarks

Written by `bench/compare.py --write` on {datetime.date.today()}: median
latency of one inference (the run call only, inputs already loaded) over
{args.iters} runs after {args.warmup} warm-up runs, weft and onnxruntime
{ORT_VERSION} (CPU execution provider, all graph optimizations) measured one
right after the other on the same inputs (each model's test_data_set_0) and
thread counts. Machine: {cpu}, {os.cpu_count()} cores. weft packages are
compiled for the default CPU (x86-64-v3).

{chr(10).join(lines)}

{chr(10).join('- ' + s for s in summary)}

Reproduce: `bench/compare.py --write` (builds nothing: run it after
`scripts/test.sh` or a build into `build/`).
"""
        with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
            f.write(text)
        print("bench: wrote docs/benchmarks.md")


if __name__ == "__main__":
    main()
