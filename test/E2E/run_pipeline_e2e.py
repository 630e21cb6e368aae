#!/usr/bin/env python3
"""Checks that pipelines compute what one device computes.

For every model (the in-repo mlp, transformer, cnn and gpt of
run_multi_e2e.py, plus the shared mlp, bert_tiny and resnet18 when
--shared DIR holds them):

  1. The model is compiled for one device and run on its test case; its
     outputs (--output-dir) are the baseline (one-device equivalence is the
     oracle), and the baseline itself is checked against the reference.
  2. A pairwise-covering set of pipeline runs over
       stages   2, 3, 4
       devices  cpu:2 .. cpu:8 (at least one per stage)
       sharding replicate, tp, auto (inside every stage)
       plan     balanced (--stages=N) or file (--pipeline-file with
                unequal sub-meshes: 1x2, 2x1, 1, 2x2, ... and cuts at
                tensors spread over the model)
     covers every pair of values of (model, stages, devices, sharding,
     plan) at least once. Each run compiles the pipeline, runs it with
     `weft-run --check BASELINE --threads 1`, compares the written outputs
     here too (NumPy), and reads manifest.json and plan.json: the meshes
     hold every rank once, every rank's weights file holds only its stage's
     weights (its size is what plan.json says), and the stage table has
     the keys scripts read.
  3. Memory: a model whose weights exceed --device-memory on every single
     device must be refused on one device and run as a pipeline (each
     rank's arena + weights within the budget, read from the manifest).
  4. The stage planner: every model with `--stages=auto
     --objective=throughput` and --device-memory at 0.75 x what one device
     needs (weights and arena) on cpu:4 and cpu:8 (cpu:4 alone with
     --quick): the plan must run and give the one-device outputs.
  5. Self-checks, so that the test can fail: a pipeline checked against a
     perturbed baseline must exit 2; a pipeline file naming a tensor the
     model lacks must exit 1.

Prints a table (model, cluster, stages, meshes, sharding, plan, result,
compile and run seconds). Exit codes: 0 all passed, 1 a failure, 77 PyTorch
or ONNX missing.

Usage: run_pipeline_e2e.py --weftc PATH --weft-run PATH --work DIR
                           [--shared DIR] [--quick] [--jobs N]
"""

import argparse
import itertools
import json
import os
import random
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_e2e import compare_outputs, describe_rc, perturb, run  # noqa: E402
import run_multi_e2e as multi  # noqa: E402

SKIP = 77
RTOL, ATOL = 1e-3, 1e-4
COMPILE_TIMEOUT = 300
RUN_TIMEOUT = 180

IN_REPO = ["mlp", "transformer", "cnn", "gpt"]
# The shared models (their input shapes come from meta.json: the first
# shape of each input, test_data_set_0's).
SHARED = ["mlp", "bert_tiny", "resnet18"]
STAGES = [2, 3, 4]
DEVICES = [2, 3, 4, 5, 6, 8]
SHARDINGS = ["replicate", "tp", "auto"]
PLANS = ["balanced", "file"]
# Node types whose outputs make good cuts (the simplifier keeps them).
CUT_TYPES = {"MatMul", "Gemm", "Relu", "Conv", "LayerNormalization",
             "Softmax", "Tanh", "Add", "MaxPool", "GlobalAveragePool",
             "Gelu", "Erf", "Mul"}


def log(msg):
    print(msg, flush=True)


def pairwise(factors, allowed, seed=1):
    """A small list of rows (dicts) in which every pair of values of every
    two factors appears at least once (greedy; `allowed(row)` filters)."""
    names = list(factors)
    uncovered = set()
    for a, b in itertools.combinations(range(len(names)), 2):
        for va in factors[names[a]]:
            for vb in factors[names[b]]:
                uncovered.add((a, va, b, vb))
    rng = random.Random(seed)
    rows = []

    def pairs_of(row):
        return {(a, row[names[a]], b, row[names[b]])
                for a, b in itertools.combinations(range(len(names)), 2)}

    everything = [dict(zip(names, values))
                  for values in itertools.product(*factors.values())]
    everything = [r for r in everything if allowed(r)]
    # Pairs no allowed row can cover are dropped.
    possible = set()
    for r in everything:
        possible |= pairs_of(r)
    uncovered &= possible
    while uncovered:
        rng.shuffle(everything)
        best = max(everything, key=lambda r: len(pairs_of(r) & uncovered))
        rows.append(best)
        uncovered -= pairs_of(best)
    return rows


def onnx_cut_candidates(path):
    """The model's node outputs in graph order that make good cuts."""
    import onnx
    model = onnx.load(path, load_external_data=False)
    graph_outputs = {o.name for o in model.graph.output}
    names = []
    for node in model.graph.node:
        if node.op_type in CUT_TYPES and node.output and \
                node.output[0] not in graph_outputs:
            names.append(node.output[0])
    return names


def mesh_shapes_for(size, variant):
    if size == 1:
        return [1]
    if size == 2:
        return [1, 2] if variant % 2 == 0 else [2, 1]
    if size == 4 and variant % 2 == 0:
        return [2, 2]
    return [size]


def pipeline_file(path, stages, devices, cuts, variant):
    """Unequal sub-meshes: the first stage gets the extra devices in turn
    (2, then 1, ...), contiguous in device order; cuts at `cuts`."""
    sizes = [1] * stages
    for k in range(devices - stages):
        sizes[(k + variant) % stages] += 1
    spec, next_device = [], 0
    for k, size in enumerate(sizes):
        stage = {"devices": list(range(next_device, next_device + size)),
                 "mesh_shape": mesh_shapes_for(size, k + variant)}
        next_device += size
        if k + 1 < stages:
            stage["ends"] = [cuts[k]]
        spec.append(stage)
    with open(path, "w") as f:
        json.dump({"stages": spec}, f)
    return ["x".join(map(str, s["mesh_shape"])) for s in spec]


def spread_cuts(candidates, stages, shift):
    n = len(candidates)
    picks = []
    for k in range(1, stages):
        i = min(n - 1, max(0, (k * n) // stages + shift))
        picks.append(candidates[i])
    # Distinct and in order.
    out = []
    for p in picks:
        if p not in out:
            out.append(p)
    return out if len(out) == stages - 1 else None


def shape_flags(shapes):
    return ["--input-shape=%s=%s" % (k, "x".join(map(str, v)))
            for k, v in shapes.items()]


def load(path):
    with open(path) as f:
        return json.load(f)


def check_package(pkg, stages):
    """Problems with the package's manifest and plan.json."""
    problems = []
    manifest = load(os.path.join(pkg, "manifest.json"))
    plan = load(os.path.join(pkg, "plan.json"))
    if manifest.get("version") != 2:
        problems.append("manifest version %r, not 2" % manifest.get("version"))
    meshes = manifest.get("meshes", [])
    ranks = sorted(d for m in meshes for d in m["devices"])
    if ranks != list(range(len(manifest["devices"]))):
        problems.append("meshes hold ranks %s" % ranks)
    if len(plan.get("stages", [])) != stages:
        problems.append("plan.json has %d stages, not %d" %
                        (len(plan.get("stages", [])), stages))
    for s in plan.get("stages", []):
        for key in ("devices", "mesh_shape", "first_node", "last_node", "ops",
                    "weights_bytes_per_device",
                    "peak_memory_bytes_per_device", "predicted_seconds"):
            if key not in s:
                problems.append("a stage has no %r" % key)
    for t in plan.get("transfers", []):
        for key in ("tensor", "from_stage", "to_stage", "bytes", "method",
                    "predicted_seconds"):
            if key not in t:
                problems.append("a transfer has no %r" % key)
    if "predicted_seconds" not in plan.get("totals", {}):
        problems.append("plan.json has no totals.predicted_seconds")
    for d, entry in zip(plan.get("devices", []), manifest["weights"]):
        size = os.path.getsize(os.path.join(pkg, entry["file"]))
        if size != d["weight_bytes"]:
            problems.append("%s has %d bytes, plan.json says %d" %
                            (entry["file"], size, d["weight_bytes"]))
    return problems, manifest, plan


class Runner:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.failed = 0

    def compile(self, model, pkg, flags):
        cmd = [self.args.weftc, model["onnx"], "-o", pkg, "--quiet"] + \
            shape_flags(model["shapes"]) + flags
        shutil.rmtree(pkg, ignore_errors=True)
        rc, secs, text = run(cmd, COMPILE_TIMEOUT)
        return rc, secs, text, cmd

    def check(self, pkg, data, expected, outputs, extra=()):
        shutil.rmtree(outputs, ignore_errors=True)
        cmd = [self.args.weft_run, pkg, "--inputs", data, "--check", expected,
               "--rtol", str(RTOL), "--atol", str(ATOL), "--threads", "1",
               "--timeout", str(RUN_TIMEOUT), "--quiet", "--output-dir",
               outputs] + list(extra)
        rc, secs, text = run(cmd, RUN_TIMEOUT + 30)
        return rc, secs, text, cmd

    def report(self, row, ok, why="", cmd=None, text=""):
        row["result"] = "ok" if ok else "FAIL"
        self.rows.append(row)
        if not ok:
            self.failed += 1
            log("FAIL %s: %s" % (row_label(row), why))
            if cmd:
                log("  $ " + " ".join(cmd))
            if text:
                log("  " + text.strip().replace("\n", "\n  ")[-3000:])


def row_label(row):
    return "%s %s stages=%s %s %s" % (row["model"], row["cluster"],
                                      row["stages"], row["sharding"],
                                      row["plan"])


def baseline(runner, name, model, work):
    pkg = os.path.join(work, "base", name)
    rc, secs, text, cmd = runner.compile(model, pkg, [])
    if rc != 0:
        log("FAIL %s one device: weftc %s\n%s" % (name, describe_rc(rc), text))
        return None
    outputs = os.path.join(pkg, "outputs")
    rc, rsecs, text, cmd = runner.check(pkg, model["data"], model["data"],
                                        outputs)
    if rc != 0:
        log("FAIL %s one device against the reference: weft-run %s\n%s" %
            (name, describe_rc(rc), text))
        return None
    manifest = load(os.path.join(pkg, "manifest.json"))
    return {"pkg": pkg, "outputs": outputs,
            "weights": manifest["weights"][0]["bytes"],
            "arena": manifest["devices"][0]["arena_bytes"]}


def pipeline_run(runner, name, model, base, row, work):
    stages, devices = row["stages"], row["devices"]
    pkg = os.path.join(work, "pipe", "%s-%s-d%d-%s-%s" % (
        name, stages, devices, row["sharding"], row["plan"]))
    flags = ["--cluster", "cpu:%d" % devices, "--sharding", row["sharding"]]
    label = dict(row, model=name, cluster="cpu:%d" % devices)
    if row["plan"] == "balanced":
        flags.append("--stages=%d" % stages)
        label["meshes"] = "balanced"
        rc, secs, text, cmd = runner.compile(model, pkg, flags)
    else:
        candidates = onnx_cut_candidates(model["onnx"])
        rc, text, cmd, secs = 1, "no cut candidates", None, 0
        for shift in (0, 1, -1, 2):
            cuts = spread_cuts(candidates, stages, shift)
            if not cuts:
                continue
            spec = pkg + ".json"
            os.makedirs(os.path.dirname(spec), exist_ok=True)
            meshes = pipeline_file(spec, stages, devices, cuts,
                                   variant=stages + devices)
            label["meshes"] = ",".join(meshes)
            rc, secs, text, cmd = runner.compile(
                model, pkg, flags + ["--pipeline-file=" + spec])
            if rc == 0 or "merged the ops" not in text:
                break
    label["compile"] = secs
    if rc != 0:
        runner.report(label, False, "weftc " + describe_rc(rc), cmd, text)
        return None
    outputs = os.path.join(pkg, "outputs")
    rc, rsecs, text, cmd = runner.check(pkg, model["data"], base["outputs"],
                                        outputs)
    label["run"] = rsecs
    problems = []
    if rc in (0, 2):
        problems = compare_outputs(outputs, base["outputs"], RTOL, ATOL)[0]
    if rc != 0 or problems:
        runner.report(label, False, "against one device: weft-run %s" %
                      describe_rc(rc), cmd, text + "\n".join(problems))
        return None
    problems, manifest, plan = check_package(pkg, stages)
    if problems:
        runner.report(label, False, "; ".join(problems))
        return None
    label["transfers"] = len(plan.get("transfers", []))
    runner.report(label, True)
    return pkg


def memory_case(runner, name, model, base, work):
    """Weights over every device's memory: one device refused, a pipeline
    of replicated stages fits."""
    # Below the weights alone: no single device can hold the model.
    budget = int(0.75 * base["weights"])
    label = {"model": name, "cluster": "cpu:4", "stages": "2-4",
             "sharding": "replicate", "plan": "memory", "meshes": "balanced",
             "devices": 4}
    pkg = os.path.join(work, "mem", name + "-one")
    rc, secs, text, cmd = runner.compile(
        model, pkg, ["--device-memory=%d" % budget])
    if rc != 1:
        runner.report(label, False, "one device with --device-memory=%d "
                      "(weights %d bytes): weftc %s, expected exit 1" %
                      (budget, base["weights"], describe_rc(rc)), cmd, text)
        return
    # Replicated stages first; a single weight larger than the budget needs
    # splitting inside its stage (auto).
    for sharding, stages in itertools.product(("replicate", "auto"),
                                              (2, 3, 4)):
        pkg = os.path.join(work, "mem", "%s-%s-%d" % (name, sharding, stages))
        rc, secs, text, cmd = runner.compile(
            model, pkg, ["--cluster", "cpu:4", "--stages=%d" % stages,
                         "--sharding=" + sharding,
                         "--device-memory=%d" % budget])
        if rc == 0:
            break
    label["stages"], label["compile"] = stages, secs
    label["sharding"] = sharding
    if rc != 0:
        runner.report(label, False, "no pipeline of 2-4 stages, replicated "
                      "or auto, fits %d bytes" % budget, cmd, text)
        return
    manifest = load(os.path.join(pkg, "manifest.json"))
    for device, weights in zip(manifest["devices"], manifest["weights"]):
        need = device["arena_bytes"] + weights["bytes"]
        if need > budget:
            runner.report(label, False, "rank %d needs %d bytes, over the "
                          "budget %d" % (device["id"], need, budget))
            return
    outputs = os.path.join(pkg, "outputs")
    rc, rsecs, text, cmd = runner.check(pkg, model["data"], base["outputs"],
                                        outputs)
    label["run"] = rsecs
    label["meshes"] = "budget %d B, weights %d B" % (budget, base["weights"])
    runner.report(label, rc == 0, "weft-run " + describe_rc(rc), cmd, text)


def auto_cases(runner, name, model, base, work, clusters):
    """--stages=auto under a memory budget below what one device needs (its
    weights and arena): the stage planner's plan runs and gives the
    one-device outputs."""
    budget = int(0.75 * (base["weights"] + base["arena"]))
    for devices in clusters:
        cluster = "cpu:%d" % devices
        pkg = os.path.join(work, "auto", "%s-%s" % (name, devices))
        label = {"model": name, "cluster": cluster, "stages": "auto",
                 "sharding": "auto", "plan": "auto", "devices": devices,
                 "meshes": "budget %d B" % budget}
        rc, secs, text, cmd = runner.compile(
            model, pkg, ["--cluster", cluster, "--stages=auto",
                         "--objective=throughput",
                         "--device-memory=%d" % budget])
        label["compile"] = secs
        if rc != 0:
            runner.report(label, False, "weftc " + describe_rc(rc), cmd, text)
            continue
        manifest = load(os.path.join(pkg, "manifest.json"))
        label["meshes"] = "%d stage(s), budget %d B" % (
            len(manifest.get("pipeline", {}).get("stages", [])) or
            len(load(os.path.join(pkg, "plan.json")).get("stages", [])),
            budget)
        outputs = os.path.join(pkg, "outputs")
        rc, rsecs, text, cmd = runner.check(pkg, model["data"],
                                            base["outputs"], outputs)
        label["run"] = rsecs
        problems = []
        if rc in (0, 2):
            problems = compare_outputs(outputs, base["outputs"], RTOL,
                                       ATOL)[0]
        runner.report(label, rc == 0 and not problems,
                      "against one device: weft-run %s" % describe_rc(rc),
                      cmd, text + "\n".join(problems))


def self_checks(runner, name, model, base, work, pkg):
    label = {"model": name, "cluster": "-", "stages": "-", "sharding": "-",
             "plan": "self-check", "meshes": "perturbed baseline",
             "devices": 0}
    wrong = os.path.join(work, "self", "wrong")
    perturb(base["outputs"], wrong)
    rc, secs, text, cmd = runner.check(pkg, model["data"], wrong,
                                       os.path.join(work, "self", "out"))
    runner.report(dict(label), rc == 2, "a perturbed baseline gave weft-run "
                  "%s, expected exit 2" % describe_rc(rc), cmd, text)
    spec = os.path.join(work, "self", "bad.json")
    with open(spec, "w") as f:
        json.dump({"stages": [{"devices": [0], "ends": ["no_such_tensor"]},
                              {"devices": [1]}]}, f)
    rc, secs, text, cmd = runner.compile(
        model, os.path.join(work, "self", "bad"),
        ["--cluster", "cpu:2", "--pipeline-file=" + spec])
    runner.report(dict(label, meshes="unknown cut tensor"),
                  rc == 1 and "no_such_tensor" in text,
                  "an unknown cut tensor gave weftc %s" % describe_rc(rc),
                  cmd, text)


def print_table(rows):
    head = ("model", "cluster", "stages", "meshes", "sharding", "plan",
            "result", "compile s", "run s")
    table = [head]
    for r in rows:
        table.append((r["model"], r["cluster"], str(r["stages"]),
                      r.get("meshes", ""), r["sharding"], r["plan"],
                      r["result"],
                      "%.2f" % r["compile"] if r.get("compile") else "-",
                      "%.2f" % r["run"] if r.get("run") else "-"))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        log("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weftc", required=True)
    parser.add_argument("--weft-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--shared", help="folder of the shared models")
    parser.add_argument("--quick", action="store_true",
                        help="a dozen runs (ctest)")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        log("run_pipeline_e2e.py: skipped (install python3-onnx)")
        return SKIP
    os.makedirs(args.work, exist_ok=True)
    names = ["mlp", "transformer", "gpt"] if args.quick else IN_REPO
    models = multi.generate(args.work, names)
    if models == SKIP:
        return SKIP
    if not isinstance(models, dict):
        return 1
    if args.shared and not args.quick:
        for folder in SHARED:
            path = os.path.join(args.shared, folder, "model.onnx")
            meta = os.path.join(args.shared, folder, "meta.json")
            if os.path.exists(path) and os.path.exists(meta):
                shapes = {name: dims[0] for name, dims in
                          load(meta).get("inputs", {}).items()}
                models["shared-" + folder] = {
                    "onnx": path, "shapes": shapes,
                    "data": os.path.join(args.shared, folder,
                                         "test_data_set_0")}
    runner = Runner(args)
    bases = {}
    for name, model in models.items():
        base = baseline(runner, name, model, args.work)
        if base is None:
            runner.failed += 1
            continue
        bases[name] = base
    factors = {"model": sorted(bases), "stages": STAGES, "devices": DEVICES,
               "sharding": SHARDINGS, "plan": PLANS}
    if args.quick:
        factors["devices"] = [2, 3, 4]
        factors["stages"] = [2, 3]
    allowed = (lambda r: r["stages"] <= r["devices"])
    rows = pairwise(factors, allowed, seed=1)
    if not args.quick:
        # Two covering sets: every pair twice, about 60 runs.
        rows += [r for r in pairwise(factors, allowed, seed=2)
                 if r not in rows]
    log("run_pipeline_e2e.py: %d pipeline runs over %d models" %
        (len(rows), len(bases)))
    last_pkg = {}
    for row in rows:
        name = row["model"]
        pkg = pipeline_run(runner, name, models[name], bases[name], dict(row),
                           args.work)
        if pkg:
            last_pkg[name] = pkg
    # The stage planner, on every model, cpu:4 and cpu:8.
    for name in sorted(bases):
        auto_cases(runner, name, models[name], bases[name], args.work,
                   [4] if args.quick else [4, 8])
    # The model whose weights outweigh its activations most: the case is
    # about weights that no single device holds.
    memory_model = max(sorted(bases), key=lambda n: bases[n]["weights"] /
                       max(1, bases[n]["arena"]))
    memory_case(runner, memory_model, models[memory_model],
                bases[memory_model], args.work)
    if last_pkg:
        name = sorted(last_pkg)[0]
        self_checks(runner, name, models[name], bases[name], args.work,
                    last_pkg[name])
    print_table(runner.rows)
    log("run_pipeline_e2e.py: %d of %d passed" %
        (len(runner.rows) - runner.failed, len(runner.rows)))
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
