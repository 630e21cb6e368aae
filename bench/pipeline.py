#!/usr/bin/env python3
"""Throughput of pipelines against one device, tp and dp (weft-run --stream).

For each model, in one run and with the same inputs and one thread per rank
(--threads 1 --fixed-threads):

  one    one device
  pipe2  cpu:2 as 2 stages (weftc --stages=2)
  pipe2-direct  the same package with WEFT_STAGED_RECEIVES=0: receives
         straight into their buffers, not double-buffered through staging
         buffers (the next request's message then waits for the receiver's
         RECV instead of arriving while it computes)
  tp2    cpu:2, one mesh, --sharding=tp
  dp2    cpu:2, one mesh, --sharding=dp

each package streams --requests requests after --warmup untimed ones
(weft-run --stream N --warmup K) and its throughput line is read. For pipe2 the stages' own compute is measured too:
a --bench run with --profile gives every rank's op times per run without
its sends and receives, and the slowest stage's time T bounds the
pipeline's throughput at 1/T. #14's targets: pipe2 at least 1.6x one and at
least 0.85 x 1/T.

Models: bert_tiny from --shared (its first test shape) and the in-repo GPT
(test/E2E/make_gpt.py, batch 1). Then one batch-8 GPT request's latency:
one device against 2 stages with 1, 4 and 8 microbatches (and 4 without
staged receives). The CPU model, its flags and the load average are
printed with the tables.

Usage: pipeline.py --weftc build/bin/weftc --weft-run build/bin/weft-run
                   [--shared ../shared/models] [--requests 1000] [--warmup 20]
                   [--latency-runs 40] [--work DIR]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compile_time import cpu_facts  # noqa: E402

THROUGHPUT = re.compile(r"throughput: ([0-9.e+]+) requests/s \((\d+) requests,"
                        r" p50 ([0-9.e+]+) ms, p99 ([0-9.e+]+) ms\)")
CONFIGS = {
    "one": [],
    "pipe2": ["--cluster", "cpu:2", "--stages=2"],
    "pipe2-direct": ["--cluster", "cpu:2", "--stages=2"],
    "tp2": ["--cluster", "cpu:2", "--sharding=tp"],
    "dp2": ["--cluster", "cpu:2", "--sharding=dp"],
}
GPT_ARGS = ["--layers", "4", "--hidden", "256", "--heads", "4", "--seq", "64",
            "--batch", "1", "--vocab", "512", "--seed", "3"]


def run(cmd, timeout=900, env=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, env=env)
    text = proc.stdout.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd),
                                                     proc.returncode, text))
    return text


def models(args, work):
    out = {}
    if args.shared:
        folder = os.path.join(args.shared, "bert_tiny")
        meta = os.path.join(folder, "meta.json")
        if os.path.exists(meta):
            with open(meta) as f:
                inputs = json.load(f)["inputs"]
            shapes = ["--input-shape=%s=%s" % (k, "x".join(map(str, v[0])))
                      for k, v in inputs.items()]
            out["bert_tiny"] = (os.path.join(folder, "model.onnx"), shapes,
                                os.path.join(folder, "test_data_set_0"))
    gpt = os.path.join(work, "gpt", "model.onnx")
    data = os.path.join(work, "gpt", "data")
    if not os.path.exists(gpt):
        run([sys.executable, os.path.join(HERE, "..", "test", "E2E",
                                          "make_gpt.py"), "--out", gpt,
             "--test-data", data] + GPT_ARGS)
    out["gpt"] = (gpt, [], data)
    return out


MEDIAN = re.compile(r"median ([0-9.e+]+) ms")
# One batch-8 request, split into microbatches (weftc --microbatches):
# (name, weftc flags, environment).
LATENCY_CONFIGS = [
    ("one", [], {}),
    ("pipe2 M=1", ["--cluster", "cpu:2", "--stages=2"], {}),
    ("pipe2 M=4", ["--cluster", "cpu:2", "--stages=2", "--microbatches=4"],
     {}),
    ("pipe2 M=4 direct", ["--cluster", "cpu:2", "--stages=2",
                          "--microbatches=4"], {"WEFT_STAGED_RECEIVES": "0"}),
    ("pipe2 M=8", ["--cluster", "cpu:2", "--stages=2", "--microbatches=8"],
     {}),
]


def latency_table(args, work):
    """Median latency of one batch-8 GPT request, one device against a
    2-stage pipeline with and without microbatches."""
    folder = os.path.join(work, "gpt-b8")
    onnx = os.path.join(folder, "model.onnx")
    data = os.path.join(folder, "data")
    if not os.path.exists(onnx):
        gpt_args = list(GPT_ARGS)
        gpt_args[gpt_args.index("--batch") + 1] = "8"
        run([sys.executable, os.path.join(HERE, "..", "test", "E2E",
                                          "make_gpt.py"), "--out", onnx,
             "--test-data", data] + gpt_args)
    print()
    print("One batch-8 gpt request (weft-run --bench %d --warmup 5, median)"
          % args.latency_runs)
    print("| config | median ms | vs one | predicted ms (plan.json) |")
    print("|---|---|---|---|")
    one = None
    for name, flags, extra_env in LATENCY_CONFIGS:
        pkg = os.path.join(folder, name.replace(" ", "-").replace("=", ""))
        if not os.path.exists(os.path.join(pkg, "manifest.json")):
            run([args.weftc, onnx, "-o", pkg, "--quiet"] + flags)
        env = dict(os.environ)
        env.update(extra_env)
        text = run([args.weft_run, pkg, "--inputs", data, "--threads", "1",
                    "--fixed-threads", "--quiet", "--bench",
                    str(args.latency_runs), "--warmup", "5"], env=env)
        median = float(MEDIAN.search(text).group(1))
        one = one or median
        predicted = ""
        plan = os.path.join(pkg, "plan.json")
        if os.path.exists(plan):
            with open(plan) as f:
                schedule = json.load(f).get("schedule", {})
            if "predicted_latency_seconds" in schedule:
                predicted = "%.2f" % (schedule["predicted_latency_seconds"] *
                                      1000)
        print("| %s | %.2f | %.2fx | %s |" % (name, median, one / median,
                                              predicted))
        sys.stdout.flush()


def stage_compute_ms(trace_files, runs):
    """Per rank: milliseconds of ops per run, sends and receives left out."""
    per_rank = {}
    for path in trace_files:
        with open(path) as f:
            events = json.load(f)
        if isinstance(events, dict):
            events = events.get("traceEvents", [])
        total = sum(e.get("dur", 0) for e in events
                    if e.get("ph") == "X" and e.get("cat") not in
                    ("run", "transfer"))
        rank = re.search(r"rank(\d+)", os.path.basename(path))
        per_rank[int(rank.group(1)) if rank else 0] = total / 1000.0 / runs
    return per_rank


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weftc", required=True)
    parser.add_argument("--weft-run", required=True)
    parser.add_argument("--shared")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--latency-runs", type=int, default=40)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="weft-pipeline-bench-")
    cpu, flags, cores = cpu_facts()
    print("CPU: %s (%d cores; %s); load average %s" % (
        cpu, cores, " ".join(flags),
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("%d requests per run after %d warm-up requests, one thread per "
          "rank (--threads 1 --fixed-threads)" % (args.requests, args.warmup))
    print("| model | config | requests/s | p50 ms | p99 ms | vs one | "
          "slowest stage ms | of 1/slowest |")
    print("|---|---|---|---|---|---|---|---|")
    results = {}
    for name, (onnx, shapes, data) in models(args, work).items():
        one = None
        for config, flags in CONFIGS.items():
            pkg = os.path.join(work, name, config)
            run([args.weftc, onnx, "-o", pkg, "--quiet"] + shapes + flags)
            common = [args.weft_run, pkg, "--inputs", data, "--threads", "1",
                      "--fixed-threads", "--quiet"]
            env = dict(os.environ)
            if config == "pipe2-direct":
                env["WEFT_STAGED_RECEIVES"] = "0"
            text = run(common + ["--stream", str(args.requests), "--warmup",
                                  str(args.warmup)], env=env)
            m = THROUGHPUT.search(text)
            rate, p50, p99 = float(m.group(1)), float(m.group(3)), \
                float(m.group(4))
            if config == "one":
                one = rate
            slowest, bound = "", ""
            if config == "pipe2":
                trace = os.path.join(pkg, "trace.json")
                for old in glob.glob(os.path.join(pkg, "trace*.json")):
                    os.remove(old)
                runs = 30
                run(common + ["--bench", str(runs), "--warmup", "3",
                              "--profile", trace])
                per_rank = stage_compute_ms(
                    glob.glob(os.path.join(pkg, "trace.rank*.json")), runs)
                worst = max(per_rank.values())
                slowest = "%.3f" % worst
                bound = "%.2f" % (rate / (1000.0 / worst))
                results[name] = {"vs_one": rate / one,
                                 "of_bound": rate / (1000.0 / worst)}
            print("| %s | %s | %.1f | %.3f | %.3f | %.2fx | %s | %s |" % (
                name, config, rate, p50, p99, rate / one, slowest, bound))
            sys.stdout.flush()
    latency_table(args, work)
    print("load average after: %s" % " ".join("%.2f" % x
                                                for x in os.getloadavg()))
    ok = all(r["vs_one"] >= 1.6 and r["of_bound"] >= 0.85
             for r in results.values())
    print("targets (pipe2 >= 1.6x one and >= 0.85 of 1/slowest stage): %s" %
          ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
