#!/usr/bin/env python3
"""Does weftc --stages=auto pick the faster plan? Measured on cpu:2.

For each model, with --device-memory at 90% of its one-device weights (so
that no single device holds it whole) and --objective=throughput, weftc
compiles three packages on cpu:2:

  auto   --stages=auto (the stage planner chooses)
  tp     one mesh, --sharding=tp
  pipe2  --stages=2 (the balanced rule)

and streams the same requests through each (weft-run --stream N, one thread
per rank, --threads 1 --fixed-threads), alternating the packages, --runs
times; the table gives each package's median requests/s, the planner's
predicted cycle for it, and whether the automatic plan is within 10% of
the better of tp and pipe2. A package that does not fit the budget is
reported as such.

Models: the in-repo GPT (test/E2E/make_gpt.py, as bench/pipeline.py builds
it) and, with --shared, bert_tiny. The CPU model, its flags and the load
average are printed with the table.

Usage: stage_planner.py --weftc build/bin/weftc --weft-run build/bin/weft-run
                        [--shared ../shared/models] [--requests 300]
                        [--runs 5] [--work DIR]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compile_time import cpu_facts  # noqa: E402
from pipeline import THROUGHPUT, models  # noqa: E402

CONFIGS = {
    "auto": ["--stages=auto"],
    "tp": ["--sharding=tp"],
    "pipe2": ["--stages=2"],
}
CYCLE = re.compile(r"stage \d+ the slowest \(([0-9.]+) ms a cycle\)")
PREDICTED = re.compile(r"predicted: ([0-9.]+) ms per run")


def run(cmd, timeout=900):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, proc.stdout.decode(errors="replace")


def weights_bytes(pkg):
    with open(os.path.join(pkg, "manifest.json")) as f:
        manifest = json.load(f)
    return sum(w["bytes"] for w in manifest["weights"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weftc", required=True)
    parser.add_argument("--weft-run", required=True)
    parser.add_argument("--shared")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="weft-stage-planner-")
    cpu, flags, cores = cpu_facts()
    print("CPU: %s (%d cores; %s); load average %s" % (
        cpu, cores, " ".join(flags),
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("cpu:2, --objective=throughput, --device-memory 90%% of the "
          "weights; %d requests per run, medians of %d alternating runs" %
          (args.requests, args.runs))
    print("| model | plan | stages | predicted cycle ms | requests/s "
          "(median) | runs |")
    print("|---|---|---|---|---|---|")
    verdicts = []
    for name, (onnx, shapes, data) in models(args, work).items():
        one = os.path.join(work, name, "one-device")
        rc, text = run([args.weftc, onnx, "-o", one, "--quiet"] + shapes)
        if rc != 0:
            print("%s: one-device compile failed:\n%s" % (name, text))
            return 1
        budget = int(0.9 * weights_bytes(one))
        pkgs, facts = {}, {}
        for config, extra in CONFIGS.items():
            pkg = os.path.join(work, name, config)
            rc, text = run([args.weftc, onnx, "-o", pkg, "--cluster", "cpu:2",
                            "--objective=throughput",
                            "--device-memory=%d" % budget] + shapes + extra)
            if rc != 0:
                facts[config] = ("-", "does not fit", "")
                continue
            cycle = CYCLE.search(text) or PREDICTED.search(text)
            stages = re.search(r"as (\d+) stage\(s\)", text)
            facts[config] = (stages.group(1) if stages else "1",
                             cycle.group(1) if cycle else "?", "")
            pkgs[config] = pkg
        rates = {config: [] for config in pkgs}
        for _ in range(args.runs):
            for config, pkg in pkgs.items():
                rc, text = run([args.weft_run, pkg, "--inputs", data,
                                "--threads", "1", "--fixed-threads",
                                "--quiet", "--stream", str(args.requests),
                                "--warmup", "10"])
                m = THROUGHPUT.search(text)
                if rc != 0 or not m:
                    print("%s %s: weft-run failed:\n%s" % (name, config,
                                                           text))
                    return 1
                rates[config].append(float(m.group(1)))
        medians = {c: statistics.median(r) for c, r in rates.items()}
        for config in CONFIGS:
            stages, cycle, _ = facts[config]
            if config in medians:
                print("| %s | %s | %s | %s | %.1f | %s |" % (
                    name, config, stages, cycle, medians[config],
                    " ".join("%.0f" % r for r in rates[config])))
            else:
                print("| %s | %s | - | - | does not fit | |" % (name,
                                                                config))
        others = [medians[c] for c in ("tp", "pipe2") if c in medians]
        if "auto" in medians and others:
            best = max(others)
            verdicts.append("%s: auto %.1f, the better of tp and pipe2 %.1f "
                            "(%.2f of it; tp and pipe2 differ by %.0f%%)" % (
                                name, medians["auto"], best,
                                medians["auto"] / best,
                                100 * (max(others) / min(others) - 1)))
        sys.stdout.flush()
    for line in verdicts:
        print(line)
    print("load average after: %s" % " ".join("%.2f" % x
                                                for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
