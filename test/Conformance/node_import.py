#!/usr/bin/env python3
"""Imports every ONNX node conformance test with weft-translate.

Each test in ONNX's node test data (libonnx-testdata) is imported with the
input shapes of its test_data_set_0. A test whose ops and data types are all
in weft's supported list is "eligible" and must import and verify; every other
one must be refused with a clean diagnostic (exit code 1, an "error:" line).
A crash, a signal, a hang or any other exit code is always a failure.

The list of eligible tests that import today is kept in
node_import_expected.txt: a test on it that stops importing is a regression
(fails), a test not on it that starts importing is reported so the list can
be updated (--update writes it).

Usage: node_import.py --weft-translate PATH [--data DIR] [--jobs N]
                      [--expected FILE] [--update] [--verbose]
"""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import numpy_helper  # noqa: F401  (imported for TensorProto parsing)

# The ops and data types that issue #2 lists for weft's dialect.
SUPPORTED_OPS = set("""
Relu Sigmoid Tanh Erf Exp Log Sqrt Reciprocal Neg Abs Floor Ceil Sign Sin Cos
Clip LeakyRelu PRelu Elu Selu Celu ThresholdedRelu HardSigmoid HardSwish
Softplus Softsign Gelu Not Cast CastLike Identity Dropout
Add Sub Mul Div Mod Pow Max Min Mean Sum Equal Less LessOrEqual Greater
GreaterOrEqual And Or Xor Where
MatMul Gemm Einsum Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool
BatchNormalization LayerNormalization InstanceNormalization Softmax LogSoftmax
ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2
ReduceLogSumExp ReduceSumSquare ArgMax ArgMin
Reshape Transpose Flatten Squeeze Unsqueeze Concat Split Slice Gather
GatherElements Expand Pad Tile Trilu Shape Size ConstantOfShape Range Constant
""".split())

SUPPORTED_DTYPES = {
    onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE, onnx.TensorProto.BOOL, onnx.TensorProto.INT8,
    onnx.TensorProto.UINT8, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
}

TIMEOUT_S = 60


def tensor_dtypes(model):
    """Every element type a model's graph mentions."""
    g = model.graph
    types = set()
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.HasField("tensor_type"):
            types.add(vi.type.tensor_type.elem_type)
        else:
            types.add(-1)  # sequences, maps, optionals
    for init in g.initializer:
        types.add(init.data_type)
    for node in g.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                types.add(attr.t.data_type)
            if attr.name == "to":  # Cast's target type
                types.add(attr.i)
            if attr.type in (onnx.AttributeProto.STRING,
                             onnx.AttributeProto.STRINGS) and \
                    node.op_type == "Constant":
                types.add(onnx.TensorProto.STRING)
    return types


def is_eligible(model):
    ops_ok = all(n.domain in ("", "ai.onnx") and n.op_type in SUPPORTED_OPS
                 for n in model.graph.node)
    return ops_ok and tensor_dtypes(model) <= SUPPORTED_DTYPES


def input_shapes(test_dir, model):
    """--input-shape flags from test_data_set_0, for inputs with unknown dims."""
    data_dir = os.path.join(test_dir, "test_data_set_0")
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    flags = []
    for idx, vi in enumerate(inputs):
        path = os.path.join(data_dir, "input_%d.pb" % idx)
        if not os.path.exists(path):
            continue
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if not vi.type.HasField("tensor_type"):
            continue
        shape = vi.type.tensor_type.shape
        static = vi.type.tensor_type.HasField("shape") and all(
            d.HasField("dim_value") for d in shape.dim)
        if static:
            continue
        dims = "x".join(str(d) for d in t.dims)
        flags.append("--input-shape=%s=%s" % (vi.name, dims))
    return flags


def run_one(weft_translate, test_dir):
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    try:
        model = onnx.load(model_path, load_external_data=False)
    except Exception as e:  # noqa: BLE001 - report, don't die
        return name, None, "skip", "python onnx cannot load: %s" % e
    eligible = is_eligible(model)
    cmd = [weft_translate, "--import-onnx", model_path, "-o", os.devnull]
    cmd += input_shapes(test_dir, model)
    start = time.time()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=TIMEOUT_S, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return name, eligible, "hang", "timed out after %d s" % TIMEOUT_S
    elapsed = time.time() - start
    err = proc.stderr.strip()
    if proc.returncode == 0:
        return name, eligible, "imported", "%.2f s" % elapsed
    if proc.returncode == 1 and "error:" in err:
        first = next((l for l in err.splitlines() if "error:" in l), err)
        return name, eligible, "refused", first + (
            " [...]" if err.count("\n") else "")
    return name, eligible, "crash", "exit %d: %s" % (proc.returncode, err[-2000:])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weft-translate", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--expected", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "node_import_expected.txt"))
    ap.add_argument("--update", action="store_true",
                    help="rewrite the expected list with today's imports")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    if not os.path.isdir(args.data):
        print("node-import: no ONNX test data at %s (install libonnx-testdata)"
              % args.data, file=sys.stderr)
        return 1
    tests = sorted(os.path.join(args.data, d) for d in os.listdir(args.data)
                   if os.path.isfile(os.path.join(args.data, d, "model.onnx")))
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda t: run_one(args.weft_translate, t), tests))

    expected = set()
    if os.path.exists(args.expected):
        with open(args.expected) as f:
            expected = {l.strip() for l in f if l.strip() and not l.startswith("#")}

    counts = {}
    crashes, regressions, new_passes, eligible_refused = [], [], [], []
    for name, eligible, status, detail in results:
        counts[(eligible, status)] = counts.get((eligible, status), 0) + 1
        if status in ("crash", "hang"):
            crashes.append((name, status, detail))
        if status != "imported" and name in expected:
            regressions.append((name, detail))
        if status == "imported" and eligible and name not in expected:
            new_passes.append(name)
        if eligible and status != "imported":
            eligible_refused.append((name, detail))
        if args.verbose:
            print("%-60s %-8s %s" % (name, status, detail))

    total = len(results)
    n_eligible = sum(v for (e, s), v in counts.items() if e)
    n_elig_ok = counts.get((True, "imported"), 0)
    n_inel = sum(v for (e, s), v in counts.items() if e is False)
    print("node-import: %d tests in %.0f s" % (total, time.time() - start))
    print("  eligible (only supported ops and dtypes): %d; imported %d, refused %d"
          % (n_eligible, n_elig_ok, n_eligible - n_elig_ok))
    print("  others: %d; refused cleanly %d, imported %d" % (
        n_inel, counts.get((False, "refused"), 0),
        counts.get((False, "imported"), 0)))
    print("  crashes or hangs: %d" % len(crashes))
    for name, detail in eligible_refused:
        print("  eligible but refused: %s: %s" % (name, detail))
    for name, status, detail in crashes:
        print("  CRASH %s (%s): %s" % (name, status, detail))
    for name, detail in regressions:
        print("  REGRESSION %s no longer imports: %s" % (name, detail))
    for name in new_passes:
        print("  new: %s imports (not yet in %s)" % (
            name, os.path.basename(args.expected)))

    if args.update:
        with open(args.expected, "w") as f:
            f.write("# ONNX node tests (libonnx-testdata) that weft-translate\n"
                    "# imports and verifies. Regenerate with node_import.py --update.\n")
            for name, eligible, status, _ in results:
                if status == "imported" and eligible:
                    f.write(name + "\n")
        print("node-import: wrote %s" % args.expected)

    failed = len(crashes) + len(regressions)
    print("%d passed, %d failed" % (total - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
