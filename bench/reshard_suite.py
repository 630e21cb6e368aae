#!/usr/bin/env python3
"""The cross-mesh resharding microbenchmarks, planned (and run on CPUs).

The suite of the MLSys'23 paper "On Optimizing the Communication of Model
Parallelism" as Alpa defines it (benchmark/alpa/resharding/suite.py), in
weft-reshard's side syntax on its testbed, p3.8xlarge:5 (5 nodes of 4 V100,
one 10 Gb/s NIC each; 20 devices): source meshes on the first nodes,
destination meshes on the next ones.

  n-to-m  case1-case9 (Alpa's case8 repeats case7 exactly, so it is left
          out), a 1024x1024x512 f32 tensor (case6: 3072x1024x170)
  1-to-m  one device to an NxG mesh of nodes 1.. (device 4*(n+1)+g),
          replicated, a 2^28-element f32 tensor, for (N, G) in (1,1),
          (1,2), (1,3), (1,4), (2,2), (3,2), (4,2)

For every case, `weft-reshard plan --json --method all` gives each method's
predicted seconds and the lower bound: a markdown table with balanced/bound
and send-recv/balanced (the speed-up over the naive baseline the paper
reports).

--run also executes every case with `weft-reshard run --cluster cpu:20` (the
same mesh strings on 20 CPU processes) on a tensor 64 times smaller (the
first dimension divided by 64 for n-to-m, 2^22 elements for 1-to-m) with
the balanced method (--all-methods: all four), and reports whether every
element arrived bit for bit and every rank's bytes were as planned, with
the slowest rank's transfer wall time. Twenty processes on a few cores
measure the scheduler, not the network: those times say nothing about the
plan's quality. --cases picks cases by name (e.g. case1,1-to-m-4x2).

cpu:20 is one host, so the planner's plans for it are not p3.8xlarge:5's.
--run-cluster p3-like runs instead on a CPU replica of the testbed (a spec
file written to a temporary folder: 5 nodes of 4 processes, one 10 Gb/s NIC
per node, p3's NVLink figures between the processes of a node), whose plans
are the testbed's; --run-cluster also takes any CPU preset or spec file.

It is a report: it exits 1 when a plan or a run fails (the row says why)
and on bad options, never on a figure.

Usage: bench/reshard_suite.py [--weft-reshard build/bin/weft-reshard]
                              [--run] [--all-methods] [--cases A,B]
                              [--run-cluster cpu:20|p3-like|SPEC]
                              [--timeout 600]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compile_time import cpu_facts  # noqa: E402

CLUSTER = "p3.8xlarge:5"
RUN_CLUSTER = "cpu:20"
METHODS = ["send-recv", "send-recv-allgather", "broadcast", "balanced"]
SCALE = 64

# (name, from, to, full shape); Alpa's suite.py, case8 = case7.
N_TO_M = [
    ("case1", "2x4@0-7:[[0],[],[]]", "2x4@8-15:[[0],[],[]]", "1024x1024x512"),
    ("case2", "2x4@0-7:[[],[],[]]", "2x4@8-15:[[0],[],[]]", "1024x1024x512"),
    ("case3", "2x4@0-7:[[],[0],[]]", "2x4@8-15:[[0],[],[]]", "1024x1024x512"),
    ("case4", "2x4@0-7:[[],[0,1],[]]", "2x4@8-15:[[0,1],[],[]]",
     "1024x1024x512"),
    ("case5", "2x4@0-7:[[1],[],[]]", "2x4@8-15:[[0],[],[]]", "1024x1024x512"),
    ("case6", "2x4@0-7:[[0],[],[]]", "3x4@8-19:[[0],[],[]]", "3072x1024x170"),
    ("case7", "1x4@0-3:[[1],[],[]]", "2x4@4-11:[[],[],[]]", "1024x1024x512"),
    ("case9", "2x4@0-7:[[],[0],[]]", "2x4@8-15:[[],[],[0]]", "1024x1024x512"),
]
ONE_TO_M = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 2), (3, 2), (4, 2)]


def p3_like_spec():
    """Writes the CPU replica of p3.8xlarge:5 (lib/Plan/ClusterPresets.cpp's
    links and NICs, CPU processes for V100s); returns its path."""
    kind = {"name": "cpu-process", "backend": "cpu", "cores_per_device": 1,
            "flop_per_s": {"f32": 1e11}, "memory_bytes": 16 * 2**30,
            "memory_bandwidth_bytes_per_s": 1e10}
    nodes = [{"name": "n%d" % n, "cores": 4,
              "memory_bandwidth_bytes_per_s": 4e10,
              "rails": [{"bandwidth_bytes_per_s": 10e9 / 8}],
              "devices": [{"name": "d%d" % (4 * n + g), "kind": "cpu-process",
                           "rail": 0} for g in range(4)]}
             for n in range(5)]
    spec = {"name": "p3-like-cpu:5", "device_kinds": [kind], "nodes": nodes,
            "links": {"intra_node": {"bandwidth_bytes_per_s": 150e9,
                                     "latency_seconds": 2e-6},
                      "inter_node": {"bandwidth_bytes_per_s": 10e9 / 8,
                                     "latency_seconds": 25e-6}}}
    path = os.path.join(tempfile.mkdtemp(prefix="weft-reshard-suite-"),
                        "p3-like-cpu.json")
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return path


def cases():
    """(name, from, to, shape, scaled shape) of every case."""
    out = []
    for name, src, dst, shape in N_TO_M:
        dims = [int(d) for d in shape.split("x")]
        dims[0] //= SCALE
        out.append((name, src, dst, shape, "x".join(map(str, dims))))
    for n, g in ONE_TO_M:
        devices = ",".join(str(4 * (i + 1) + j) for i in range(n)
                           for j in range(g))
        out.append(("1-to-m-%dx%d" % (n, g), "1x1@0:[[]]",
                     "%dx%d@%s:[[]]" % (n, g, devices), str(1 << 28),
                     str(1 << 22)))
    return out


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


def ms(seconds):
    return "%.1f" % (seconds * 1e3)


def plan_table(args, selected):
    """Prints the predicted table; returns False when a plan failed."""
    print("\n## Predicted on %s (ms; weft-reshard plan --method all)\n" %
          CLUSTER)
    print("| case | tensor | " + " | ".join(METHODS) +
          " | lower bound | balanced/bound | send-recv/balanced |")
    print("|---|---|" + "---|" * (len(METHODS) + 3))
    ok = True
    for name, src, dst, shape, _ in selected:
        rc, _, text = run([args.weft_reshard, "plan", "--cluster", CLUSTER,
                           "--from", src, "--to", dst, "--shape", shape,
                           "--json", "--method", "all"], 120)
        if rc != 0:
            print("| %s | %s | plan failed (exit %s): %s |" % (
                name, shape, rc, text.strip().splitlines()[-1:]))
            ok = False
            continue
        plans = {p["method"]: p for p in json.loads(text)["plans"]}
        predicted = [plans[m]["predicted_seconds"] for m in METHODS]
        bound = plans["balanced"]["lower_bound_seconds"]
        balanced = plans["balanced"]["predicted_seconds"]
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, shape, " | ".join(ms(p) for p in predicted), ms(bound),
            "%.2f" % (balanced / bound) if bound > 0 else "-",
            "%.2f" % (plans["send-recv"]["predicted_seconds"] / balanced)
            if balanced > 0 else "-"))
        sys.stdout.flush()
    return ok


SECTION = re.compile(r"^run (\S+): (\d+) messages", re.M)
VERDICT = re.compile(r"^check (passed|FAILED): (.*)$", re.M)
WALL = re.compile(r"^transfer wall time: max ([0-9.]+) (s|ms|us|ns)", re.M)
UNITS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


def run_table(args, selected):
    """Runs every case on cpu:20; prints the table; False when one failed."""
    method = "all" if args.all_methods else "balanced"
    print("\n## Run on %s: the tensor / %d, %s (weft-reshard run)\n" % (
        args.run_cluster, SCALE, "all four methods" if args.all_methods
        else "the balanced method"))
    print("| case | tensor | method | messages | check | bytes as planned "
          "| max transfer ms (scheduler-bound) | command s |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for name, src, dst, _, shape in selected:
        rc, seconds, text = run([args.weft_reshard, "run", "--cluster",
                                 args.run_spec, "--from", src, "--to", dst,
                                 "--shape", shape, "--method", method,
                                 "--timeout", str(args.timeout)],
                                args.timeout + 60)
        sections = SECTION.findall(text)
        verdicts = VERDICT.findall(text)
        walls = WALL.findall(text)
        if rc not in (0, 2) or len(verdicts) != len(sections) or \
                not sections:
            last = text.strip().splitlines()[-1:] or ["no output"]
            print("| %s | %s | %s | - | run failed (exit %s): %s | - | - "
                  "| %.1f |" % (name, shape, method, rc, last[0], seconds))
            ok = False
            continue
        for i, (meth, messages) in enumerate(sections):
            passed, detail = verdicts[i]
            wall = float(walls[i][0]) * UNITS[walls[i][1]] \
                if i < len(walls) else float("nan")
            print("| %s | %s | %s | %s | %s | %s | %.1f | %s |" % (
                name, shape, meth, messages,
                "passed" if passed == "passed" else "FAILED: " + detail,
                "no" if "bytes differ" in detail else "yes", wall,
                "%.1f" % seconds if i == 0 else ""))
        ok = ok and rc == 0
        sys.stdout.flush()
    return ok


def memory_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weft-reshard",
                        default=os.path.join(ROOT, "build", "bin",
                                             "weft-reshard"))
    parser.add_argument("--run", action="store_true",
                        help="also run every case on cpu:20, scaled down")
    parser.add_argument("--all-methods", action="store_true",
                        help="with --run: all four methods, not balanced")
    parser.add_argument("--cases",
                        help="comma-separated case names (default: all)")
    parser.add_argument("--run-cluster", default=RUN_CLUSTER,
                        help="where --run runs: cpu:20 (default), p3-like "
                        "(a CPU replica of p3.8xlarge:5) or a CPU spec")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds per run (weft-reshard run --timeout)")
    args = parser.parse_args()
    selected = cases()
    if args.cases:
        wanted = args.cases.split(",")
        unknown = [c for c in wanted if c not in [s[0] for s in selected]]
        if unknown:
            parser.error("unknown case(s) %s; cases: %s" % (
                ", ".join(unknown), ", ".join(s[0] for s in selected)))
        selected = [s for s in selected if s[0] in wanted]
    if not os.access(args.weft_reshard, os.X_OK):
        parser.error("%s is not an executable (--weft-reshard)" %
                     args.weft_reshard)

    args.run_spec = p3_like_spec() if args.run_cluster == "p3-like" \
        else args.run_cluster

    cpu, _, cores = cpu_facts()
    print("CPU: %s; nproc %d; load average %s" % (
        cpu, cores, " ".join("%.2f" % x for x in os.getloadavg())))
    if args.run:
        print("memory available: %.1f GiB for 20 ranks (weft-reshard run "
              "refuses a run that needs more than 80%% of the machine's)" %
              (memory_available() / 2**30))
    ok = plan_table(args, selected)
    if args.run:
        ok = run_table(args, selected) and ok
        print("\nTransfer times are wall times of up to 20 processes sharing "
              "%d cores: they measure the scheduler, not the plan.%s" % (
                  cores, " cpu:20 is one host: its plans are not "
                  "p3.8xlarge:5's (--run-cluster p3-like runs those)."
                  if args.run_cluster == "cpu:20" else ""))
    print("load average after: %s" % " ".join("%.2f" % x
                                                for x in os.getloadavg()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
