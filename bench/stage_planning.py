#!/usr/bin/env python3
"""What `weftc --stages=auto` plans, how long it takes, and how it compares.

Generates GPT-style models with test/E2E/make_gpt.py (f16, hidden 1024, 16
heads, sequence 1024, batch 1, vocabulary 50257, zero weights in a sparse
external data file: generated in well under a second), times (wall clock,
median of --repeat runs)

  weftc MODEL -o OUT --emit=plan --cluster C --stages=auto --objective=O
        [--microbatches M]

and reads the stage planner's report on stdout into three markdown
sections:

1. Planning time (throughput) for --time-layers x --time-clusters and the
   --extra runs, against the issue's targets (48 layers: under 60 s on
   p3.16xlarge:8, under 10 s on dgx-h100x8; 96 layers: under 120 s on
   p3.16xlarge:8; a ResNet-50 from test/E2E/make_resnet.py, a model of
   unequal layers: under 5 minutes on p3.16xlarge:8), with the planner's
   layers, prices, DP states, whether
   the search finished, the stages and the slowest cycle.
2. Against Megatron-style plans, for --megatron-layers x
   --megatron-clusters under both objectives: the automatic plan beside the
   best tp x pp x dp plan weftc prices, and the margin on the objective's
   figure. An automatic plan worse than it (beyond 1e-9 relative, on the
   printed figures) is a search bug: the row says WORSE and the exit is 1.
3. Unequal devices, --hetero-layers on --hetero-clusters: each stage's
   device kind, sub-mesh, layers, compute and cycle, and the slowest cycle
   against the same sub-meshes with the layers split evenly. The name
   `fast-slow` is a spec this script writes to its work folder: two nodes
   of four cuda devices, one kind twice the other's flop/s and memory
   bandwidth, the same memory.

A report, not a test: it exits 1 on bad options, when a model cannot be
generated or planned (the row says why), or on a WORSE row; else 0.

Usage: bench/stage_planning.py [--time-layers 12,24,48] [--time-clusters C,..]
           [--extra LAYERS@CLUSTER ...] [--megatron-layers 12,24,48]
           [--megatron-clusters C,..] [--hetero-layers 24]
           [--hetero-clusters hetero-a100-v100,fast-slow] [--microbatches 1]
           [--batch 1] [--repeat 1] [--timeout 900] [--build DIR]
           [--weftc PATH] [--work DIR] [--keep] [--out FILE] [--quick]

Examples:
  bench/stage_planning.py --out stage-planning.md
  bench/stage_planning.py --quick --weftc /tmp/weftc   # 12 layers only
  bench/stage_planning.py --time-layers 48 --time-clusters p3.16xlarge:8 \\
      --extra '' --megatron-layers 24 --hetero-layers 12 --repeat 3
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compile_time import cpu_facts  # noqa: E402
from planning_scaling import log, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_GPT = os.path.join(ROOT, "test", "E2E", "make_gpt.py")
PROG = "stage_planning.py"
# (layers, cluster) -> seconds: the planning-time targets.
TARGETS = {(48, "p3.16xlarge:8"): 60.0, (48, "dgx-h100x8"): 10.0,
           (96, "p3.16xlarge:8"): 120.0, ("resnet50", "p3.16xlarge:8"): 300.0}
MAKE_RESNET = os.path.join(ROOT, "test", "E2E", "make_resnet.py")
FAST_SLOW = "fast-slow"
T = r"([0-9.]+ (?:ms|us|s))"  # a time as the planner prints it
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
HEAD_RE = re.compile(r"stage planner: (\d+) layers, \d+ sub-mesh shapes, "
                     r"(\d+) stage prices \((\d+) solved, (\d+) shared\); "
                     r"DP (\d+) states")
STAGE_RE = re.compile(r"^\s*stage \d+: layers (\d+)\.\.(\d+) on \d+ device"
                      r"\(s\) \((\d+x\d+) ?([^),]*)(?:, mesh ([0-9x]+))?\), "
                      r"compute " + T +
                      r", transfer in " + T + r", cycle " + T, re.M)
SLOWEST_RE = re.compile(r"slowest cycle " + T + r"; lower bound .* over "
                        r"(\d+) devices")
OUTPUTS_RE = re.compile(r"outputs to the collector: " + T)
LATENCY_RE = re.compile(r"\d+ microbatch\(es\): latency " + T)
EVEN_RE = re.compile(r"the same sub-meshes with the layers split evenly "
                     r"\([^)]*\): (?:slowest cycle " + T + "|(.*))")
MEGA_RE = re.compile(r"Megatron-style plans \(.*?\): (?:.*the best tp (\d+) "
                     r"x pp (\d+) x dp (\d+): slowest cycle " + T +
                     r", latency " + T + "|(.*))")


def secs(text):
    """'1.303 ms' -> 0.001303."""
    value, unit = text.split()
    return float(value) * UNITS[unit]


def fmt_time(seconds):
    """Seconds as the planner prints them: ms from 1 ms, else us."""
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return "%.3f ms" % (seconds * 1e3)
    return "%.3f us" % (seconds * 1e6)


def load():
    return " ".join("%.2f" % x for x in os.getloadavg())


def write_fast_slow(path):
    """Writes the fast-slow spec: node 'fast-node' of 4 devices with
    A100-40GB figures, node 'slow-node' of 4 at half their flop/s and
    memory bandwidth (same memory); links like hetero-a100-v100's."""
    def kind(name, f):
        rates = {"f32": 1.95e13, "f64": 1.95e13, "f16": 3.12e14,
                 "bf16": 3.12e14, "i8": 6.24e14}
        return {"name": name, "backend": "cuda", "memory_bytes": 4.0e10,
                "flop_per_s": {k: v * f for k, v in rates.items()},
                "memory_bandwidth_bytes_per_s": 1.555e12 * f}

    def node(name, prefix, nvlink):
        return {"name": name + "-node", "rails": [
            {"bandwidth_bytes_per_s": 1.25e10}], "intra_node_link": {
                "bandwidth_bytes_per_s": nvlink, "latency_seconds": 2e-6},
            "devices": [{"name": prefix + str(i), "kind": name}
                        for i in range(4)]}

    spec = {"name": FAST_SLOW, "device_kinds": [kind("fast", 1.0),
                                                 kind("slow", 0.5)],
            "nodes": [node("fast", "f", 3e11), node("slow", "s", 1.5e11)],
            "links": {"intra_node": {"bandwidth_bytes_per_s": 1.5e11,
                                     "latency_seconds": 2e-6},
                      "inter_node": {"bandwidth_bytes_per_s": 1.25e10,
                                     "latency_seconds": 1e-5}},
            "meshes": [{"name": "mesh", "shape": [2, 4]}]}
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)


def model_path(args, layers):
    """Writes the model once; returns its path or None (logged)."""
    if layers in args.models:
        return args.models[layers]
    if isinstance(layers, str):  # "resnet50": a bottleneck ResNet
        path = os.path.join(args.work, "%s-b%d.onnx" % (layers, args.batch))
        cmd = [sys.executable, MAKE_RESNET, "--out", path, "--depth",
               layers[len("resnet"):], "--batch", str(args.batch)]
    else:
        path = os.path.join(args.work, "gpt-l%d-b%d.onnx" % (layers,
                                                            args.batch))
        cmd = [sys.executable, MAKE_GPT, "--out", path, "--layers",
               str(layers), "--hidden", "1024", "--heads", "16", "--seq",
               "1024", "--batch", str(args.batch), "--vocab", "50257",
               "--dtype", "f16", "--zero-weights", "--external-data"]
    rc, _, text = run(cmd, 600)
    if rc != 0:
        log("%s: make_gpt.py failed (%s):\n  $ %s\n%s" % (
            PROG, rc, " ".join(cmd), text))
        path = None
    else:
        log(text.strip())
    args.models[layers] = path
    return path


def parse_report(text, microbatches):
    """The stage planner's report as a dict; None without one."""
    head, slowest = HEAD_RE.search(text), SLOWEST_RE.search(text)
    if not head or not slowest:
        return None
    r = {"dp_layers": int(head.group(1)), "prices": int(head.group(2)),
         "solved": int(head.group(3)), "shared": int(head.group(4)),
         "states": int(head.group(5)), "cycle": secs(slowest.group(1)),
         "devices": int(slowest.group(2)),
         "complete": "the search stopped at its limit" not in text,
         "stages": [{"first": int(m.group(1)), "last": int(m.group(2)),
                     "shape": m.group(3), "kind": m.group(4) or "-",
                     "mesh": m.group(5) or m.group(3),
                     "compute": secs(m.group(6)),
                     "transfer": secs(m.group(7)), "cycle": secs(m.group(8))}
                    for m in STAGE_RE.finditer(text)]}
    latency, outputs = LATENCY_RE.search(text), OUTPUTS_RE.search(text)
    # Some builds leave the latency out of latency runs of one microbatch:
    # the planner's formula then (every stage's compute and transfer in,
    # the collection, and a cycle for each further microbatch).
    r["latency"] = secs(latency.group(1)) if latency else (
        sum(s["compute"] + s["transfer"] for s in r["stages"]) +
        (secs(outputs.group(1)) if outputs else 0.0) +
        (microbatches - 1) * r["cycle"])
    # The even split: its slowest cycle, or why there is none (None: one
    # stage); the best Megatron-style plan, or why there is none.
    even, mega = EVEN_RE.search(text), MEGA_RE.search(text)
    r["even"] = even and (secs(even.group(1)) if even.group(1)
                          else even.group(2).strip())
    if not mega:
        r["megatron"] = "not reported"
    elif mega.group(6) is not None:
        r["megatron"] = mega.group(6).strip()
    else:
        r["megatron"] = {"tp": int(mega.group(1)), "pp": int(mega.group(2)),
                         "dp": int(mega.group(3)),
                         "cycle": secs(mega.group(4)),
                         "latency": secs(mega.group(5))}
    return r


def plan_run(args, layers, cluster, objective):
    """Plans one model onto one cluster --repeat times (once per
    (layers, cluster, objective) in a session); returns a row: the parsed
    report, 'wall', or 'error' saying why not."""
    key = (layers, cluster, objective)
    if key in args.runs:
        return args.runs[key]
    row = args.runs[key] = {"error": None}
    model = model_path(args, layers)
    if model is None:
        row["error"] = "model generation failed"
        return row
    spec = args.fast_slow if cluster == FAST_SLOW else cluster
    out = os.path.join(args.work, "plan-l%s-%s-%s" % (
        layers, re.sub(r"[^A-Za-z0-9.]", "_", cluster), objective))
    cmd = [args.weftc, model, "-o", out, "--emit=plan", "--cluster", spec,
           "--stages=auto", "--objective=" + objective]
    if args.microbatches != 1:
        cmd.append("--microbatches=%d" % args.microbatches)
    times, text = [], ""
    for _ in range(args.repeat):
        shutil.rmtree(out, ignore_errors=True)
        rc, wall, text = run(cmd, args.timeout)
        if rc != 0:
            why = re.search(r"^weftc: error: (.*)$", text, re.M)
            row["error"] = "weftc " + (
                "exit %d" % rc if isinstance(rc, int) else rc)
            if why:  # weftc's own words, as a table cell
                row["error"] += ": " + why.group(1)[:200].replace("|", "\\|")
            log("%s layers on %s (%s): %s\n  $ %s\n%s" % (
                layers, cluster, objective, row["error"], " ".join(cmd),
                text))
            return row
        times.append(wall)
    report = parse_report(text, args.microbatches)
    if report is None:
        row["error"] = "no stage planner report on stdout"
        log("%s layers on %s (%s): %s\n%s" % (layers, cluster, objective,
                                             row["error"], text))
        return row
    row.update(report)
    row["wall"] = statistics.median(times)
    log("%s layers on %s (%s): %.2f s, %d stage(s), cycle %s" % (
        layers, cluster, objective, row["wall"], len(row["stages"]),
        fmt_time(row["cycle"])))
    return row


def table(columns, rows):
    """A markdown table of rows of cells (strings)."""
    return "\n".join(["| %s |" % " | ".join(columns),
                      "|" + " --- |" * len(columns)] +
                     ["| %s |" % " | ".join(row) for row in rows]) + "\n"


def section(args, title, what, body):
    """A section: its title, the one-line header saying what and when
    (date, CPU, cores, load average before and after), then body()'s
    text."""
    before = load()
    text = body()
    flag = (" --microbatches=%d" % args.microbatches
            if args.microbatches != 1 else "")
    return "## %s\n\n%s; %s, %s, %d cores, load average %s before, %s " \
        "after.\n\n%s" % (title, what.replace("FLAGS", flag),
                           datetime.date.today(), cpu_facts()[0],
                           os.cpu_count(), before, load(), text)


def time_rows(args, runs):
    """Section 1's table: planning time against the targets."""
    rows = []
    for layers, cluster in runs:
        r = plan_run(args, layers, cluster, "throughput")
        limit = TARGETS.get((layers, cluster))
        target = "-" if limit is None else "< %g s" % limit
        if r["error"]:
            rows.append([str(layers), cluster, "-", "FAILED: " + r["error"],
                         target] + ["-"] * 6)
            continue
        if limit is not None:
            target += ": " + ("met" if r["wall"] < limit else "missed")
        rows.append([str(layers), cluster, str(r["devices"]),
                     "%.2f" % r["wall"], target, str(r["dp_layers"]),
                     "%d (%d/%d)" % (r["prices"], r["solved"], r["shared"]),
                     str(r["states"]), "yes" if r["complete"] else "no",
                     str(len(r["stages"])), fmt_time(r["cycle"])])
    return table(["layers", "cluster", "devices", "wall s", "target",
                  "DP layers", "stage prices (solved/shared)", "DP states",
                  "search complete", "stages", "slowest cycle"], rows)


def shapes_text(stages):
    """'7: 1x2, 1x4': the stage count and the distinct sub-mesh shapes."""
    def size(shape):
        nodes, per_node = shape.split("x")
        return int(nodes) * int(per_node), shape
    shapes = sorted({s["shape"] for s in stages}, key=size)
    return "%d: %s" % (len(stages), ", ".join(shapes))


def megatron_rows(args):
    """Section 2's table: the automatic plan against the best
    Megatron-style one; sets args.worse on a row where it is worse."""
    rows = []
    for layers in args.megatron_layers:
        for cluster in args.megatron_clusters:
            for objective in ("throughput", "latency"):
                r = plan_run(args, layers, cluster, objective)
                if r["error"]:
                    rows.append([str(layers), cluster, objective,
                                 "FAILED: " + r["error"]] + ["-"] * 6)
                    continue
                row = [str(layers), cluster, objective, fmt_time(r["cycle"]),
                       fmt_time(r["latency"]), shapes_text(r["stages"])]
                m = r["megatron"]
                if not isinstance(m, dict):
                    rows.append(row + [m, "-", "-", "-"])
                    continue
                figure = "cycle" if objective == "throughput" else "latency"
                margin = "%.2fx" % (r[figure] / m[figure])
                if r[figure] > m[figure] * (1 + 1e-9):
                    margin += " WORSE"
                    args.worse = True
                rows.append(row + ["%d x %d x %d" % (m["tp"], m["pp"],
                                                     m["dp"]),
                                   fmt_time(m["cycle"]),
                                   fmt_time(m["latency"]), margin])
    return table(["layers", "cluster", "objective", "auto cycle",
                  "auto latency", "auto stages",
                  "best Megatron (tp x pp x dp)", "its cycle", "its latency",
                  "margin"], rows)


def hetero_text(args):
    """Section 3: per cluster, the stages on unequal devices and the
    slowest cycle against an even split of the layers."""
    parts = []
    for cluster in args.hetero_clusters:
        r = plan_run(args, args.hetero_layers, cluster, "throughput")
        title = "### %s%s, %d layers\n\n" % (
            cluster, " (the spec this script writes)"
            if cluster == FAST_SLOW else "", args.hetero_layers)
        if r["error"]:
            parts.append(title + "FAILED: %s\n" % r["error"])
            continue
        even = r["even"] or "not reported (one stage)"
        if isinstance(even, float):
            even = "%s, ratio %.2f" % (fmt_time(even), r["cycle"] / even)
        parts.append(title + table(
            ["stage", "device kind", "sub-mesh (mesh)", "layers", "compute",
             "cycle"],
            [[str(k), s["kind"], "%s (%s)" % (s["shape"], s["mesh"]),
              "%d..%d (%d)" % (
                s["first"], s["last"], s["last"] - s["first"] + 1),
              fmt_time(s["compute"]), fmt_time(s["cycle"])]
             for k, s in enumerate(r["stages"])]) +
            "\nslowest cycle %s; the same sub-meshes with the layers split "
            "evenly: %s\n" % (fmt_time(r["cycle"]), even))
    return "\n".join(parts)


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


def parse_args():
    """The options, checked; exits 1 on a bad one."""
    ap = ArgumentParser(description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-layers", default="12,24,48")
    ap.add_argument("--time-clusters",
                    default="dgx-h100x8,dgx-h100x8:2,p3.16xlarge:8")
    ap.add_argument("--extra", action="append", metavar="LAYERS@CLUSTER",
                    help="one more planning-time run, LAYERS a GPT's "
                    "layers or resnet26|50|101 (default 96@p3.16xlarge:8 "
                    "and resnet50@p3.16xlarge:8; --extra '' for none)")
    ap.add_argument("--megatron-layers", default="12,24,48")
    ap.add_argument("--megatron-clusters",
                    default="dgx-h100x8:2,dgx-h100x8:4,p3.16xlarge:8")
    ap.add_argument("--hetero-layers", type=int, default=24)
    ap.add_argument("--hetero-clusters", default="hetero-a100-v100," +
                    FAST_SLOW)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1,
                    help="the models' batch (a multiple of --microbatches)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900,
                    help="seconds one planning may take")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--weftc", help="default BUILD/bin/weftc")
    ap.add_argument("--work", help="where models and plans go (default: a "
                    "temporary folder, removed at the end unless --keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--quick", action="store_true",
                    help="12 layers everywhere, no --extra runs")
    args = ap.parse_args()

    args.weftc = args.weftc or os.path.join(args.build, "bin", "weftc")
    if not os.access(args.weftc, os.X_OK):
        ap.error("%s is not an executable" % args.weftc)
    for name in ("time_layers", "megatron_layers"):
        text = getattr(args, name)
        if not re.fullmatch(r"0*[1-9]\d*(,0*[1-9]\d*)*", text):
            ap.error("--%s %r is not a list of positive numbers" % (
                name.replace("_", "-"), text))
        setattr(args, name, [int(x) for x in text.split(",")])
    for name in ("time_clusters", "megatron_clusters", "hetero_clusters"):
        setattr(args, name, [c for c in getattr(args, name).split(",") if c])
    args.extra_runs = []
    default_extra = ["96@p3.16xlarge:8", "resnet50@p3.16xlarge:8"]
    for item in default_extra if args.extra is None else args.extra:
        if not item:
            continue
        layers, _, cluster = item.partition("@")
        if re.fullmatch(r"resnet(26|50|101)", layers) and cluster:
            args.extra_runs.append((layers, cluster))
            continue
        if not re.fullmatch(r"0*[1-9]\d*", layers) or not cluster:
            ap.error("--extra %r is not LAYERS@CLUSTER (like "
                     "96@p3.16xlarge:8 or resnet50@p3.16xlarge:8)" % item)
        args.extra_runs.append((int(layers), cluster))
    if min(args.hetero_layers, args.repeat, args.timeout, args.microbatches,
           args.batch) < 1:
        ap.error("--hetero-layers, --repeat, --timeout, --microbatches and "
                 "--batch need positive values")
    if args.batch % args.microbatches:
        ap.error("--batch %d is not a multiple of --microbatches %d" % (
            args.batch, args.microbatches))
    if not (args.time_clusters and args.megatron_clusters and
            args.hetero_clusters):
        ap.error("--time-clusters, --megatron-clusters and --hetero-clusters "
                 "need at least one cluster")
    if args.quick:
        args.time_layers = args.megatron_layers = [12]
        args.hetero_layers = 12
        args.extra_runs = []
    return args


def main():
    args = parse_args()
    temp = args.work is None
    args.work = os.path.abspath(args.work or tempfile.mkdtemp(
        prefix="weft-stage-planning-"))
    os.makedirs(args.work, exist_ok=True)
    args.fast_slow = os.path.join(args.work, FAST_SLOW + ".json")
    args.models, args.runs, args.worse = {}, {}, False
    try:
        write_fast_slow(args.fast_slow)
        runs = [(n, c) for n in args.time_layers for c in args.time_clusters]
        runs += [r for r in args.extra_runs if r not in runs]
        model = ("GPT f16 hidden 1024, 16 heads, sequence 1024, batch %d"
                 % args.batch)
        sections = [
            section(args, "Planning time", "`weftc --emit=plan "
                    "--stages=auto --objective=throughputFLAGS`, wall clock "
                    "(median of %d), %s" % (args.repeat, model),
                    lambda: time_rows(args, runs)),
            section(args, "Against Megatron-style plans", "`weftc "
                    "--emit=plan --stages=autoFLAGS` under both objectives "
                    "against the best Megatron-style plan weftc prices (tp "
                    "inside a node x pp even stages x dp), %s; margin: auto "
                    "/ Megatron on the objective's figure (the cycle for "
                    "throughput, the latency for latency), below 1 is "
                    "better" % model, lambda: megatron_rows(args)),
            section(args, "Unequal devices", "`weftc --emit=plan "
                    "--stages=auto --objective=throughputFLAGS` on clusters "
                    "of unequal devices, %s" % model,
                    lambda: hetero_text(args))]
    finally:
        if temp and not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
        elif temp:
            log("%s: kept %s" % (PROG, args.work))
    text = "\n".join(sections)
    print(text)
    if args.out:
        try:
            with open(args.out, "w") as f:
                f.write(text)
        except OSError as err:
            log("%s: cannot write %s: %s" % (PROG, args.out, err.strerror))
            return 1
    if args.worse:
        log("%s: the automatic plan is worse than a Megatron-style plan "
            "(rows marked WORSE): a search bug" % PROG)
    failed = any(r["error"] for r in args.runs.values())
    return 1 if args.worse or failed else 0


if __name__ == "__main__":
    sys.exit(main())
