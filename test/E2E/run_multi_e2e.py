#!/usr/bin/env python3
"""Checks that multi-device packages compute what one device computes.

For every model (small in-repo ones: make_models.py's mlp, transformer and
cnn, and a tiny GPT from make_gpt.py):

  1. The model is compiled for one device (weftc's default, cpu:1) and run
     on its test case with `weft-run --check` against the PyTorch/NumPy
     float64 reference; its outputs (--output-dir) are the baseline.
  2. For every mesh ({cpu:2 1x2, cpu:4 2x2, cpu:4 1x4}) and every sharding:
       auto      --sharding=auto
       dp        --sharding=dp
       tp        --sharding=tp
       mixed     --sharding=auto --sharding-file F: the input's batch and two
                 chained weights forced (see mixed_sharding())
       auto-mem  --sharding=auto --device-memory B with
                 B = 0.6 x the single-device weight bytes + its arena bytes:
                 replicated weights fit only next to split activations
       vocab-mem --sharding=auto --device-memory 0.6 x the weight bytes (no
                 arena): for the tied GPT-2 (gpt2-tied), whose embedding
                 table is most of the weights, this fits only with the table
                 split by rows (the model runs only these pairs)
       replicate --sharding=replicate (not in the default list)
     it compiles `weftc MODEL -o PKG --cluster C --mesh M ...` and runs
     `weft-run PKG --inputs DATA --check BASELINE --rtol 1e-3 --atol 1e-4
     --output-dir PKG/outputs --threads 1`. The written outputs are also
     compared with the baseline here (NumPy), so a fault in Weft's own
     comparison cannot hide a wrong result.
  3. It reads PKG/manifest.json and PKG/plan.json and checks: the mesh and
     the number of devices; every device's weights file against the
     plan's weight bytes; and that sharding pays off:
       tp        weights and FLOPs per device at most 1/N + (1 - 1/N) / 2 of
                 the single device's (halfway from replicated to 1/N)
       dp        FLOPs per device as tp; weights replicated (>= 90%)
       auto-mem  the plan's memory per device (weights file + arena) within
                 the budget, and, where the whole weights alone exceed it,
                 weights per device below 90% of the single device's
       vocab-mem as auto-mem, and plan.json splits the table's rows
       mixed     weights per device reduced by the forced weight's split
       replicate weights and FLOPs per device >= 90% of the single device's
     (auto is only reported.)
  4. Self-checks, so that the test can fail: a multi-device package checked
     against a perturbed baseline must exit 2; a rank that exits at start-up
     and a rank that hangs must each end weft-run with exit 4 (within
     --timeout); weftc must refuse a mesh that does not match the cluster,
     an unknown sharding, and a memory budget no plan fits (exit 1).

Identical compilations run once (keyed by the whole command line, the model
files' SHA-256 and weftc itself); with --reuse, packages from an earlier run
with the same key are kept.

Prints a table (model, cluster, mesh, sharding, result, weight bytes and
FLOPs per device as a fraction of one device's, compile and run seconds).
Exit codes: 0 all passed, 1 a failure (or bad options), 77 PyTorch or ONNX
missing.

Usage: run_multi_e2e.py --weftc PATH [--weft-run PATH] --work DIR
                        [--models mlp,transformer,gpt,cnn]
                        [--configs 1x2,2x2,1x4]
                        [--shardings auto,dp,tp,mixed,auto-mem,replicate]
                        [--quick] [--jobs N] [--reuse] [--no-self-check]

Examples:
  run_multi_e2e.py --weftc build/bin/weftc --work /tmp/multi
  run_multi_e2e.py --weftc build/bin/weftc --work /tmp/multi --quick
  run_multi_e2e.py --weftc build/bin/weftc --work /tmp/multi --models gpt \\
                   --configs 2x2 --shardings tp,mixed --reuse
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import re
import shutil
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_e2e import compare_outputs, describe_rc, perturb, run  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from weft_package import write_manifest  # noqa: E402

SKIP = 77
RTOL, ATOL = 1e-3, 1e-4
COMPILE_TIMEOUT = 300
# weft-run's own limit; the script waits RUN_SLACK seconds more before it
# calls a run hung.
RUN_TIMEOUT = 120
RUN_SLACK = 30
FAULT_TIMEOUT = 10

# mesh -> cluster preset
CONFIGS = {"1x2": "cpu:2", "2x2": "cpu:4", "1x4": "cpu:4"}
SHARDINGS = ["auto", "dp", "tp", "mixed", "auto-mem", "vocab-mem",
             "replicate"]
DEFAULT_SHARDINGS = ["auto", "dp", "tp", "mixed", "auto-mem", "vocab-mem"]
# The budget of auto-mem: this fraction of the single-device weight bytes,
# plus the single-device arena (activations).
MEMORY_FRACTION = 0.6

# name -> where the model comes from and which test case is used. Batches
# are odd or smaller than the mesh so that splits are uneven or empty.
MODELS = {
    "mlp": {"source": "make_models", "case": "b7"},
    "transformer": {"source": "make_models", "case": "b3_s32"},
    "gpt": {"source": "make_gpt", "case": "b3",
            "args": ["--layers", "2", "--hidden", "64", "--heads", "4",
                     "--seq", "16", "--batch", "3", "--vocab", "100",
                     "--seed", "7"]},
    # A CNN's data parallelism is its batch alone (convolutions split batch
    # and channels, not pixels), and a loop is never split over more
    # devices than its size: dp cannot use more than 3 devices here.
    "cnn": {"source": "make_models", "case": "b3_16x16", "dp_devices": 3},
    # GPT-2's tied embedding: the table (vocabulary 16384 x hidden 128) is
    # 73% of the weights and feeds both the lookup and the LM head. At 60%
    # of the weights per device (vocab-mem) it fits only split by rows (the
    # vocabulary-parallel embedding). Only the vocab-mem pairs run.
    "gpt2-tied": {"source": "make_gpt", "case": "b1",
                  "args": ["--layers", "4", "--hidden", "128", "--heads", "4",
                           "--seq", "8", "--batch", "1", "--vocab", "16384",
                           "--tied", "--seed", "11"],
                  "pairs": [("1x2", "vocab-mem"), ("2x2", "vocab-mem")],
                  "table": "wte"},
}
DEFAULT_MODELS = ["mlp", "transformer", "gpt", "cnn", "gpt2-tied"]

# --quick (ctest e2e-multi-device): every mesh with tp and auto-mem (the
# issue's acceptance pairs), the other shardings on one mesh each.
QUICK_MODELS = ["mlp", "transformer", "gpt", "gpt2-tied"]
QUICK = [("1x2", "tp"), ("1x2", "auto-mem"), ("1x2", "auto"),
         ("2x2", "tp"), ("2x2", "auto-mem"), ("2x2", "dp"), ("2x2", "mixed"),
         ("1x4", "tp"), ("1x4", "auto-mem")]

# Where plan.json keeps what is checked: the first key found is used. One
# place to change if the format moves.
PLAN_DEVICE_KEYS = {
    "weights": ("weight_bytes", "weights_bytes"),
    "memory": ("memory_bytes", "peak_memory_bytes"),
    "flops": ("flops", "flop"),
}
PLAN_TOTAL_SECONDS = (("totals", "predicted_seconds"),
                      ("totals", "seconds"), ("predicted_seconds",))


def log(msg):
    print(msg, flush=True)


# --- plan.json and manifest.json


class PlanError(Exception):
    pass


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as err:
        raise PlanError("cannot read %s %s: %s" % (what, path, err.strerror))
    except ValueError as err:
        raise PlanError("%s %s is not JSON: %s" % (what, path, err))


def plan_devices(plan, path):
    """Per-device {weights, memory, flops} from a plan.json."""
    devices = plan.get("devices") if isinstance(plan, dict) else None
    if not isinstance(devices, list) or not devices:
        raise PlanError("%s has no \"devices\" list" % path)
    out = []
    for i, dev in enumerate(devices):
        row = {}
        for field, keys in PLAN_DEVICE_KEYS.items():
            key = next((k for k in keys if k in dev), None)
            value = dev.get(key) if key else None
            if not isinstance(value, (int, float)) or value < 0:
                raise PlanError("%s: devices[%d] has no %s (looked for %s)"
                                % (path, i, field, ", ".join(keys)))
            row[field] = value
        out.append(row)
    return out


def plan_seconds(plan):
    """The plan's total predicted seconds, or None."""
    for keys in PLAN_TOTAL_SECONDS:
        value = plan
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            return float(value)
    return None


def package_facts(pkg):
    """Reads a package: its manifest, the size of every device's weights
    file and, when there is one, its plan."""
    manifest = load_json(os.path.join(pkg, "manifest.json"), "manifest")
    devices = manifest.get("devices")
    if not isinstance(devices, list) or not devices:
        raise PlanError("%s/manifest.json has no devices" % pkg)
    weights = []
    for i, dev in enumerate(devices):
        rel = dev.get("weights") if isinstance(dev, dict) else None
        if not isinstance(rel, str):
            raise PlanError("%s/manifest.json: devices[%d] names no weights "
                            "file" % (pkg, i))
        path = os.path.join(pkg, rel)
        weights.append(os.path.getsize(path) if os.path.exists(path) else 0)
    facts = {"manifest": manifest, "weight_files": weights,
             "arena": max(int(d.get("arena_bytes", 0)) for d in devices)}
    plan_path = os.path.join(pkg, "plan.json")
    if os.path.exists(plan_path):
        facts["plan"] = load_json(plan_path, "plan")
        facts["plan_devices"] = plan_devices(facts["plan"], plan_path)
    return facts


# --- Models


def weight_ops(model):
    """(node, initializer name, output dim, input dim) of every MatMul,
    Gemm and Conv whose weight is an initializer, in graph order."""
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm", "Conv") or \
                len(node.input) < 2 or node.input[1] not in inits:
            continue
        dims = inits[node.input[1]]
        if node.op_type == "Conv":
            found.append((node, node.input[1], 0, 1))
            continue
        if len(dims) != 2:
            continue
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        found.append((node, node.input[1], 0 if trans_b else 1,
                      1 if trans_b else 0))
    return found, inits


def mixed_sharding(onnx_path, mesh):
    """The --sharding-file of the 'mixed' plans, and the bytes of the forced
    weight it splits: on a mesh with two real axes, the first graph input's
    dim 0 over axis 0 (data parallel), the first weight over 1 KiB's output
    dimension over axis 1 (column parallel) and the next weight its output
    feeds its input dimension over axis 1 (row parallel). On a 1xN mesh the input and
    the first weight are split over the same axis and the next weight is
    forced replicated, so data has to move between them.

    The file maps ONNX tensor names to {"dims": [[mesh axes] per dim]}, the
    dims of the #weft.sharding attribute."""
    import onnx
    model = onnx.load(onnx_path, load_external_data=False)
    ops, inits = weight_ops(model)
    inputs = [i for i in model.graph.input if i.name not in inits]
    last = len(mesh) - 1
    two_d = len(mesh) == 2 and mesh[0] > 1
    spec = {}
    rank = len(inputs[0].type.tensor_type.shape.dim)
    spec[inputs[0].name] = {"dims": [[0] if two_d else [last]] +
                            [[] for _ in range(rank - 1)]}
    if not ops:
        return spec, 0, 1
    # The first weight big enough to be one (weftc writes initializers of
    # at most 1 KiB into the program as constants, outside the weights
    # file, so splitting those saves nothing there).
    dtype_bytes = {1: 4, 10: 2, 11: 8, 16: 2}
    protos = {i.name: i for i in model.graph.initializer}

    def init_bytes(name):
        return math.prod(inits[name]) * dtype_bytes.get(
            protos[name].data_type, 4)
    big = [op for op in ops if init_bytes(op[1]) > 1024]
    node, w1, out_dim, _ = (big or ops)[0]
    dims = [[] for _ in inits[w1]]
    dims[out_dim] = [last]
    spec[w1] = {"dims": dims}
    # The next weight on the data path from the first one.
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    by_node = {id(op[0]): op for op in ops}
    frontier, seen, nxt = list(node.output), set(), None
    while frontier and nxt is None:
        value = frontier.pop(0)
        for n in consumers.get(value, []):
            if id(n) in seen:
                continue
            seen.add(id(n))
            if id(n) in by_node and n is not node:
                nxt = by_node[id(n)]
                break
            frontier += list(n.output)
    if nxt is not None:
        _, w2, _, in_dim = nxt
        dims = [[] for _ in inits[w2]]
        if two_d:
            dims[in_dim] = [last]
        spec[w2] = {"dims": dims}
    w1_bytes = init_bytes(w1) if init_bytes(w1) > 1024 else 0
    return spec, w1_bytes, mesh[last]


def generate(work, names):
    """Builds the models; returns name -> {onnx, data, shapes} or an exit
    code."""
    models_dir = os.path.join(work, "models")
    os.makedirs(models_dir, exist_ok=True)
    out = {}
    from_torch = [n for n in names if MODELS[n]["source"] == "make_models"]
    if from_torch:
        cmd = [sys.executable, os.path.join(HERE, "make_models.py"),
               models_dir, "--only"] + from_torch
        rc, secs, text = run(cmd, 600)
        if rc == SKIP:
            log(text.strip() + "\nrun_multi_e2e.py: skipped (install "
                "python3-torch and python3-onnx)")
            return SKIP
        if rc != 0:
            log("%s\nrun_multi_e2e.py: make_models.py failed (%s)" %
                (text, describe_rc(rc)))
            return 1
        log("%s (%.1f s)" % (text.strip(), secs))
        cases = load_json(os.path.join(models_dir, "cases.json"), "cases")
        for name in from_torch:
            case = next((c for c in cases if c["model"] == name and
                         c["case"] == MODELS[name]["case"]), None)
            if case is None:
                log("run_multi_e2e.py: make_models.py wrote no case %s/%s" %
                    (name, MODELS[name]["case"]))
                return 1
            out[name] = {"onnx": os.path.join(models_dir, case["onnx"]),
                         "data": os.path.join(models_dir, case["data"]),
                         "shapes": case["shapes"]}
    for name in names:
        spec = MODELS[name]
        if spec["source"] != "make_gpt":
            continue
        folder = os.path.join(models_dir, name)
        onnx_path = os.path.join(folder, "model.onnx")
        data = os.path.join(folder, spec["case"])
        cmd = [sys.executable, os.path.join(HERE, "make_gpt.py"), "--out",
               onnx_path, "--test-data", data] + spec["args"]
        rc, secs, text = run(cmd, 600)
        if rc == SKIP:
            log(text.strip() + "\nrun_multi_e2e.py: skipped")
            return SKIP
        if rc != 0:
            log("%s\nrun_multi_e2e.py: make_gpt.py failed (%s)" %
                (text, describe_rc(rc)))
            return 1
        log(text.strip())
        out[name] = {"onnx": onnx_path, "data": data, "shapes": {}}
    return out


# --- Compilation, cached by command line


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Compiler:
    """Runs weftc; identical command lines compile once. A package folder
    is named after the hash of its key (command line, model and weftc), so
    --reuse can keep the packages of an earlier run."""

    def __init__(self, weftc, work, reuse):
        self.weftc = weftc
        self.root = os.path.join(work, "pkg")
        self.reuse = reuse
        st = os.stat(weftc)
        self.tool_key = "%s:%d:%d" % (weftc, st.st_size, st.st_mtime_ns)
        self.model_keys = {}
        self.results = {}

    def key(self, onnx_path, flags):
        if onnx_path not in self.model_keys:
            files = [onnx_path] + ([onnx_path + ".data"]
                                   if os.path.exists(onnx_path + ".data")
                                   else [])
            self.model_keys[onnx_path] = ",".join(sha256_of(f) for f in files)
        text = json.dumps([self.tool_key, self.model_keys[onnx_path],
                           onnx_path, flags])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def request(self, label, onnx_path, flags, sidecar=None):
        """Returns the key of this compilation; sidecar (name, text) is a
        file the flags refer to (as @SIDECAR), written into the package's
        folder before weftc runs."""
        flags = list(flags)
        key = self.key(onnx_path, flags + [sidecar or ""])
        if key not in self.results:
            self.results[key] = {"label": label, "onnx": onnx_path,
                                 "flags": flags, "sidecar": sidecar,
                                 "pkg": os.path.join(self.root, label + "-" +
                                                     key)}
        return key

    def compile_one(self, key):
        job = self.results[key]
        pkg = job["pkg"]
        stamp = os.path.join(self.root, "%s.ok" % os.path.basename(pkg))
        if self.reuse and os.path.exists(stamp) and os.path.isdir(pkg):
            job.update(rc=0, secs=0.0, text="(reused)", cached=True,
                       cmd=[self.weftc, "..."])
            return
        shutil.rmtree(pkg, ignore_errors=True)
        if os.path.exists(stamp):
            os.remove(stamp)
        os.makedirs(self.root, exist_ok=True)
        flags = job["flags"]
        if job["sidecar"]:
            side = pkg + "." + job["sidecar"][0]
            with open(side, "w") as f:
                f.write(job["sidecar"][1])
            flags = [f.replace("@SIDECAR", side) for f in flags]
        cmd = [self.weftc, job["onnx"], "-o", pkg, "--quiet"] + flags
        rc, secs, text = run(cmd, COMPILE_TIMEOUT)
        job.update(rc=rc, secs=secs, text=text, cmd=cmd, cached=False)
        if rc == 0:
            open(stamp, "w").close()

    def compile_all(self, jobs):
        todo = [k for k, j in self.results.items() if "rc" not in j]
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            list(pool.map(self.compile_one, todo))


# --- The checks


def check_run(weft_run, pkg, data, expected, output_dir, extra=(),
              timeout=RUN_TIMEOUT):
    cmd = [weft_run, pkg, "--inputs", data, "--check", expected,
           "--rtol", str(RTOL), "--atol", str(ATOL), "--threads", "1",
           "--timeout", str(timeout), "--quiet"] + list(extra)
    if output_dir:
        shutil.rmtree(output_dir, ignore_errors=True)
        cmd += ["--output-dir", output_dir]
    return run(cmd, timeout + RUN_SLACK), cmd


def fail(row, why, cmd=None, text=""):
    row["status"] = "FAIL"
    row["why"] = row.get("why", []) + [why]
    log("FAIL %s %s %s: %s%s%s" % (
        row["model"], row["mesh"], row["sharding"], why,
        "\n  $ " + " ".join(cmd) if cmd else "",
        "\n" + text.rstrip() if text.strip() else ""))


def expect_drop(row, what, value, single, n, at_most=None, at_least=None):
    """Fails the row unless value/single lies within the bounds given as
    fractions of the single-device figure."""
    frac = value / single if single else float("inf")
    if at_most is not None and frac > at_most + 1e-9:
        fail(row, "%s per device is %.3f of one device's (%d of %d), want "
              "<= %.3f with %d devices" % (what, frac, value, single, at_most,
                                           n))
    if at_least is not None and frac < at_least - 1e-9:
        fail(row, "%s per device is %.3f of one device's (%d of %d), want "
              ">= %.3f" % (what, frac, value, single, at_least))


def check_package(row, pkg, mesh, sharding, base, budget, forced):
    """Checks the manifest and the plan of a multi-device package against
    the single-device baseline; fills the row's figures."""
    try:
        facts = package_facts(pkg)
    except PlanError as err:
        fail(row, str(err))
        return
    n = math.prod(mesh)
    manifest = facts["manifest"]
    if len(manifest["devices"]) != n:
        fail(row, "manifest.json lists %d devices, the mesh has %d" %
             (len(manifest["devices"]), n))
        return
    shape = (manifest.get("mesh") or {}).get("shape")
    if shape != list(mesh):
        fail(row, "manifest.json mesh shape is %s, want %s" % (shape,
                                                               list(mesh)))
    if "plan" not in facts:
        fail(row, "the package has no plan.json")
        return
    devs = facts["plan_devices"]
    if len(devs) != n:
        fail(row, "plan.json lists %d devices, the mesh has %d" %
             (len(devs), n))
        return
    for k, (dev, size) in enumerate(zip(devs, facts["weight_files"])):
        # Files may pad each tensor; the plan counts the tensors.
        if size < dev["weights"] or size > dev["weights"] * 1.1 + 4096:
            fail(row, "device %d: weights file holds %d bytes, plan.json "
                 "says %d" % (k, size, dev["weights"]))
    weights = max(facts["weight_files"])
    flops = max(d["flops"] for d in devs)
    memory = max(d["memory"] for d in devs)
    row["weights"] = weights / base["weights"] if base["weights"] else None
    row["flops"] = flops / base["flops"] if base.get("flops") else None
    row["weight_bytes"], row["flop_count"] = weights, flops
    row["predicted"] = plan_seconds(facts["plan"])
    if row["predicted"] is None or row["predicted"] <= 0:
        fail(row, "plan.json has no positive total predicted seconds")
    halfway = 1.0 / n + (1 - 1.0 / n) / 2
    if base.get("flops") is None:
        fail(row, "no single-device FLOPs to compare with (the baseline "
             "has no plan.json)")
        return
    if sharding == "tp":
        expect_drop(row, "weight bytes", weights, base["weights"], n,
                    at_most=halfway)
        expect_drop(row, "FLOPs", flops, base["flops"], n, at_most=halfway)
    elif sharding == "dp":
        if n <= MODELS[row["model"]].get("dp_devices", n):
            expect_drop(row, "FLOPs", flops, base["flops"], n,
                        at_most=halfway)
        expect_drop(row, "weight bytes", weights, base["weights"], n,
                    at_least=0.9)
    elif sharding in ("auto-mem", "vocab-mem"):
        # Whole weights alone over the budget: they must be split. (When
        # activations outweigh the weights, as in the CNN, splitting the
        # activations may be enough; the budget is what is checked.)
        if base["weights"] > budget:
            expect_drop(row, "weight bytes", weights, base["weights"], n,
                        at_most=0.9)
        if memory > budget:
            fail(row, "plan.json memory per device %d exceeds the budget %d"
                 % (memory, budget))
        if sharding == "vocab-mem":
            check_rows_split(row, facts["plan"], MODELS[row["model"]]["table"])
    elif sharding == "mixed" and forced:
        w1_bytes, parts = forced
        saved = w1_bytes * (1 - 1.0 / parts)
        expect_drop(row, "weight bytes", weights, base["weights"], n,
                    at_most=1 - 0.9 * saved / base["weights"])
    elif sharding == "replicate":
        expect_drop(row, "weight bytes", weights, base["weights"], n,
                    at_least=0.9)
        expect_drop(row, "FLOPs", flops, base["flops"], n, at_least=0.9)


def check_rows_split(row, plan, table):
    """plan.json gives the weight `table` a sharding that splits its rows
    (dimension 0: the vocabulary)."""
    shardings = [r for op in plan.get("ops", [])
                 if op.get("op") == "weft.weight" and op.get("name") == table
                 for r in op.get("results", [])]
    if not shardings:
        fail(row, "plan.json has no weight %s" % table)
        return
    # '#weft.sharding<@mesh, [[0], []]>': the first dimension's axes.
    m = re.search(r"\[\[([0-9, ]*)\]", shardings[0])
    if not m or not m.group(1).strip():
        fail(row, "plan.json does not split the rows of %s: %s" %
             (table, shardings[0]))


def shape_flags(shapes):
    return ["--input-shape=%s=%s" % (k, "x".join(map(str, v)))
            for k, v in shapes.items()]


def sharding_flags(sharding, budget):
    if sharding == "mixed":
        return ["--sharding=auto", "--sharding-file=@SIDECAR"]
    if sharding in ("auto-mem", "vocab-mem"):
        return ["--sharding=auto", "--device-memory=%d" % budget]
    return ["--sharding=" + sharding]


def baseline(args, compiler, name, model, key):
    """Checks the compiled single-device package (compiler key `key`);
    returns its row and {pkg, outputs, weights, flops, arena}, or None when
    it failed (reported in the row)."""
    row = {"model": name, "mesh": "1", "sharding": "single", "status": "ok",
           "cluster": "cpu:1"}
    job = compiler.results[key]
    row["compile"] = None if job.get("cached") else job["secs"]
    if job["rc"] != 0:
        fail(row, "weftc " + describe_rc(job["rc"]), job["cmd"], job["text"])
        return row, None
    pkg = job["pkg"]
    outputs = os.path.join(pkg, "outputs")
    (rc, secs, text), cmd = check_run(args.weft_run, pkg, model["data"],
                                      model["data"], outputs)
    row["run"] = secs
    problems = []
    if rc in (0, 2):
        problems = compare_outputs(outputs, model["data"], RTOL, ATOL)[0]
    if rc != 0 or problems:
        fail(row, "single device against the reference: weft-run %s" %
             describe_rc(rc), cmd, text + "\n".join(problems))
        return row, None
    try:
        facts = package_facts(pkg)
    except PlanError as err:
        fail(row, str(err))
        return row, None
    weights = facts["weight_files"][0]
    flops = None
    if "plan_devices" in facts:
        flops = facts["plan_devices"][0]["flops"]
    else:
        # An older weftc writes no plan.json for one device: ask for one.
        plan_path = pkg + "-plan.json"
        cmd = [args.weftc, model["onnx"], "-o", plan_path, "--quiet",
               "--cluster", "cpu:1", "--emit=plan"] + \
            shape_flags(model["shapes"])
        rc, _, text = run(cmd, COMPILE_TIMEOUT)
        if rc == 0:
            try:
                plan = load_json(plan_path, "plan")
                flops = plan_devices(plan, plan_path)[0]["flops"]
            except PlanError as err:
                fail(row, str(err))
        else:
            fail(row, "weftc --cluster cpu:1 --emit=plan " + describe_rc(rc),
                 cmd, text)
    row.update(weights=1.0, flops=1.0 if flops else None,
               weight_bytes=weights, flop_count=flops)
    return row, {"pkg": pkg, "outputs": outputs, "weights": weights,
                 "flops": flops, "arena": facts["arena"]}


def self_checks(args, compiler, pkg, model, base, name):
    """Tests that can only pass if the checks can fail. Returns rows."""
    rows = []

    def row_for(what):
        r = {"model": name, "mesh": "-", "sharding": what, "status": "ok",
             "cluster": "-"}
        rows.append(r)
        return r

    # 1. A perturbed baseline is a mismatch, for weft-run and for numpy.
    r = row_for("self-check: perturbed")
    bad = os.path.join(args.work, "perturbed-" + name)
    perturb(base["outputs"], bad)
    (rc, secs, text), cmd = check_run(args.weft_run, pkg, model["data"], bad,
                                      None)
    r["run"] = secs
    if rc != 2:
        fail(r, "weft-run against a perturbed baseline gave %s, want exit 2"
             % describe_rc(rc), cmd, text)
    if not compare_outputs(os.path.join(pkg, "outputs"), bad, RTOL, ATOL)[0]:
        fail(r, "compare_outputs missed the perturbation")

    # 2. A rank that dies and a rank that hangs end the run with exit 4.
    for what, script in (("dies", "#!/bin/sh\nexit 5\n"),
                         ("hangs", "#!/bin/sh\nexec sleep %d\n" %
                          (FAULT_TIMEOUT + 60))):
        r = row_for("self-check: rank " + what)
        faulty = os.path.join(args.work, "faulty-" + name)
        shutil.rmtree(faulty, ignore_errors=True)
        shutil.copytree(pkg, faulty, symlinks=True)
        manifest_path = os.path.join(faulty, "manifest.json")
        manifest = load_json(manifest_path, "manifest")
        exe = os.path.join(faulty, "bin", "fault")
        with open(exe, "w") as f:
            f.write(script)
        os.chmod(exe, os.stat(exe).st_mode | stat.S_IXUSR | stat.S_IXGRP |
                 stat.S_IXOTH)
        manifest["devices"][-1]["executable"] = "bin/fault"
        # With fresh checksums, which weft-run checks before a launch.
        manifest.pop("files", None)
        write_manifest(faulty, manifest)
        (rc, secs, text), cmd = check_run(
            args.weft_run, faulty, model["data"], base["outputs"], None,
            timeout=FAULT_TIMEOUT)
        r["run"] = secs
        if rc != 4:
            fail(r, "weft-run with a rank that %s gave %s, want exit 4" %
                 (what, describe_rc(rc)), cmd, text)
        elif secs > FAULT_TIMEOUT + RUN_SLACK / 2:
            fail(r, "weft-run took %.1f s with --timeout %d" %
                 (secs, FAULT_TIMEOUT), cmd, text)

    # 3. weftc refuses impossible requests with exit 1 and a message.
    for what, flags in (
            ("mesh 3x3 on cpu:4", ["--cluster", "cpu:4", "--mesh", "3x3"]),
            ("unknown sharding", ["--cluster", "cpu:2", "--mesh", "1x2",
                                  "--sharding=diagonal"]),
            ("1-byte memory", ["--cluster", "cpu:2", "--mesh", "1x2",
                               "--sharding=auto", "--device-memory=1"])):
        r = row_for("self-check: " + what)
        out = os.path.join(args.work, "refused-" + name)
        shutil.rmtree(out, ignore_errors=True)
        cmd = [args.weftc, model["onnx"], "-o", out] + flags + \
            shape_flags(model["shapes"])
        rc, secs, text = run(cmd, COMPILE_TIMEOUT)
        r["compile"] = secs
        if rc != 1 or "error" not in text:
            fail(r, "weftc gave %s%s, want exit 1 with an error message" %
                 (describe_rc(rc), "" if "error" in text else
                  " and no message"), cmd, text)
    return rows


def run_all(args):
    models = generate(args.work, args.models)
    if not isinstance(models, dict):
        return models
    compiler = Compiler(args.weftc, args.work, args.reuse)
    rows, bases = [], {}
    keys = {name: compiler.request(name + "-single", models[name]["onnx"],
                                   shape_flags(models[name]["shapes"]))
            for name in args.models}
    compiler.compile_all(args.jobs)
    for name in args.models:
        row, base = baseline(args, compiler, name, models[name], keys[name])
        rows.append(row)
        if base:
            bases[name] = base

    # Every multi-device compilation first (in parallel with --jobs), then
    # the runs one at a time: they take every core.
    cases = []
    for name in args.models:
        if name not in bases:
            continue
        base = bases[name]
        budget = int(MEMORY_FRACTION * base["weights"] + base["arena"])
        spec = MODELS[name]
        # vocab-mem is for models with a table that must be split.
        pairs = [p for p in spec["pairs"] if p[1] in args.shardings] \
            if "pairs" in spec else \
            [p for p in args.pairs if p[1] != "vocab-mem" or "table" in spec]
        for mesh_name, sharding in pairs:
            mesh = [int(d) for d in mesh_name.split("x")]
            cluster = CONFIGS[mesh_name]
            row = {"model": name, "mesh": mesh_name, "cluster": cluster,
                   "sharding": sharding, "status": "ok"}
            sidecar, forced = None, None
            if sharding == "mixed":
                spec, w1_bytes, parts = mixed_sharding(models[name]["onnx"],
                                                       mesh)
                sidecar = ("sharding.json", json.dumps(spec, indent=1))
                forced = (w1_bytes, parts) if w1_bytes else None
            if sharding == "vocab-mem":
                budget = int(MEMORY_FRACTION * base["weights"])
            flags = ["--cluster", cluster, "--mesh", mesh_name] + \
                sharding_flags(sharding, budget) + \
                shape_flags(models[name]["shapes"])
            key = compiler.request("%s-%s-%s" % (name, mesh_name, sharding),
                                   models[name]["onnx"], flags, sidecar)
            cases.append((row, key, mesh, sharding, budget, forced))
            rows.append(row)
    compiler.compile_all(args.jobs)

    first_ok = None
    for row, key, mesh, sharding, budget, forced in cases:
        job = compiler.results[key]
        name = row["model"]
        row["compile"] = None if job.get("cached") else job["secs"]
        if job["rc"] != 0:
            fail(row, "weftc " + describe_rc(job["rc"]), job["cmd"],
                 job["text"])
            continue
        pkg = job["pkg"]
        outputs = os.path.join(pkg, "outputs")
        (rc, secs, text), cmd = check_run(args.weft_run, pkg,
                                          models[name]["data"],
                                          bases[name]["outputs"], outputs)
        row["run"] = secs
        problems = []
        if rc in (0, 2):
            problems, row["abs"], _ = compare_outputs(
                outputs, bases[name]["outputs"], RTOL, ATOL)
        if rc != 0:
            fail(row, "weft-run --check " + describe_rc(rc) +
                 (" (mismatch)" if rc == 2 else ""), cmd,
                 text + "\n".join(problems))
        elif problems:
            fail(row, "outputs differ (weft-run said they match)", cmd,
                 text + "\n".join(problems))
        check_package(row, pkg, mesh, sharding, bases[name], budget, forced)
        if row["status"] == "ok" and first_ok is None:
            first_ok = (pkg, name)

    if args.self_check:
        if first_ok is None:
            rows.append({"model": "-", "mesh": "-", "cluster": "-",
                         "sharding": "self-check", "status": "FAIL",
                         "why": ["no multi-device package passed to run "
                                 "the self-checks on"]})
        else:
            pkg, name = first_ok
            rows += self_checks(args, compiler, pkg, models[name],
                                bases[name], name)

    print_table(rows)
    failed = [r for r in rows if r["status"] != "ok"]
    log("%d/%d rows passed (load average %s)" % (
        len(rows) - len(failed), len(rows),
        " ".join("%.1f" % x for x in os.getloadavg())))
    return 1 if failed else 0


def fmt(value, spec):
    return "-" if value is None else spec % value


def print_table(rows):
    head = ("model", "cluster", "mesh", "sharding", "weights/dev",
            "flops/dev", "compile s", "run s", "result")
    lines = [head]
    for r in rows:
        wb = "-" if r.get("weight_bytes") is None else "%d (%.2f)" % (
            r["weight_bytes"], r["weights"])
        fl = "-" if r.get("flop_count") is None else "%.3g%s" % (
            r["flop_count"], " (%.2f)" % r["flops"] if r.get("flops")
            is not None else "")
        lines.append((r["model"], r.get("cluster", "-"), r["mesh"],
                      r["sharding"], wb, fl, fmt(r.get("compile"), "%.2f"),
                      fmt(r.get("run"), "%.2f"),
                      "ok" if r["status"] == "ok" else
                      "FAIL: " + "; ".join(r["why"])[:200]))
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    log("")
    for n, line in enumerate(lines):
        log("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
        if n == 0:
            log("  ".join("-" * w for w in widths))
    log("weights/dev: the largest device's weights file in bytes (and as a "
        "fraction of one device's); flops/dev: plan.json's largest "
        "per-device FLOPs (fraction)")


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


def split_list(parser, text, known, what):
    items = [s for s in text.split(",") if s]
    bad = [s for s in items if s not in known]
    if bad or not items:
        parser.error("unknown %s %s (known: %s)" % (
            what, ", ".join(bad) or "(none given)", ", ".join(known)))
    return items


def main():
    parser = ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weftc", required=True, help="the weftc to test")
    parser.add_argument("--weft-run", metavar="PATH",
                        help="the weft-run to use (default: next to weftc)")
    parser.add_argument("--work", required=True, metavar="DIR",
                        help="work folder: models, packages (created)")
    parser.add_argument("--models", help="comma-separated subset of %s" %
                        ",".join(MODELS))
    parser.add_argument("--configs", help="comma-separated meshes of %s" %
                        ",".join(CONFIGS))
    parser.add_argument("--shardings", help="comma-separated subset of %s" %
                        ",".join(SHARDINGS))
    parser.add_argument("--quick", action="store_true",
                        help="the ctest subset: models %s and the pairs %s" %
                        (",".join(QUICK_MODELS),
                         " ".join("%s/%s" % p for p in QUICK)))
    parser.add_argument("--jobs", type=int, default=1,
                        help="parallel compilations (runs are one at a time)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep packages an earlier run compiled with the "
                        "same command line, model and weftc")
    parser.add_argument("--no-self-check", dest="self_check",
                        action="store_false",
                        help="skip the perturbed-baseline, failing-rank and "
                        "refused-compilation checks")
    args = parser.parse_args()
    args.models = split_list(parser, args.models, list(MODELS), "model") \
        if args.models else (QUICK_MODELS if args.quick else DEFAULT_MODELS)
    configs = split_list(parser, args.configs, list(CONFIGS), "mesh") \
        if args.configs else list(CONFIGS)
    shardings = split_list(parser, args.shardings, SHARDINGS, "sharding") \
        if args.shardings else DEFAULT_SHARDINGS
    if args.jobs < 1:
        log("run_multi_e2e.py: --jobs must be at least 1")
        return 1
    pairs = [(m, s) for m in configs for s in shardings]
    if args.quick:
        pairs = [p for p in QUICK if p in pairs]
    args.pairs = pairs
    args.shardings = shardings
    if not pairs:
        log("run_multi_e2e.py: no mesh and sharding left to test")
        return 1
    if not os.access(args.weftc, os.X_OK):
        log("run_multi_e2e.py: --weftc %s is not an executable" % args.weftc)
        return 1
    args.weftc = os.path.abspath(args.weftc)
    if args.weft_run is None:
        args.weft_run = os.path.join(os.path.dirname(args.weftc), "weft-run")
    if not os.access(args.weft_run, os.X_OK):
        log("run_multi_e2e.py: --weft-run %s is not an executable" %
            args.weft_run)
        return 1
    args.weft_run = os.path.abspath(args.weft_run)
    rc, _, text = run([args.weftc, "--help"], 60)
    if "--cluster" not in text or "--sharding" not in text:
        log("run_multi_e2e.py: %s --help lists no --cluster or --sharding: "
            "this weftc cannot compile for several devices" % args.weftc)
        return 1
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    return run_all(args)


if __name__ == "__main__":
    sys.exit(main())
