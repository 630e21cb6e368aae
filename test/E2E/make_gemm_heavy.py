#!/usr/bin/env python3
"""Writes a GEMM-heavy MLP as ONNX, with reference outputs, for GPU benchmarks.

    x f32[batch, io]
      -> MatMul [io, width] + Add bias -> Relu
      -> LAYERS x (MatMul [width, width] + Add bias -> Relu)
      -> MatMul [width, io] + Add bias
      -> y f32[batch, io]

At a batch of 512 or more its square GEMMs (batch x width x width, 2048 by
default) are compute-bound on any current GPU, so the model's FLOP/s can be
measured against cuBLAS on the same shapes (scripts/gpu-run.sh). The input and
output are narrow (64 wide) so that copying them between host and device,
which a package's run includes, stays small against the arithmetic.

Weights are seeded and drawn from 15 levels (q * scale, q an integer in
[-7, 7], He-scaled): the GEMMs cost the same as with any other values, and a
package's weights compress about 6x with xz, so that the model travels to a
GPU machine in a small archive. Biases are seeded normals.

OUT/model.onnx has a symbolic batch. For each --batches entry i there is
OUT/test_data_set_<i>/ (ONNX test-data layout: input_0.pb, output_0.pb); the
reference outputs are computed by NumPy in float64 from the same arrays, then
stored as float32. OUT/meta.json lists the input shapes per test set
("inputs", as ../shared/models/*/meta.json does), the GEMM of every layer
("gemms": [K, N] per layer; M is the batch), the tolerances to check with and
the weights' size.

Usage: make_gemm_heavy.py OUT [--width W] [--layers L] [--io N]
                          [--batches B0,B1,...] [--seed S]

Examples:
  make_gemm_heavy.py build/gemm_heavy                     # 2048 wide, 3+2 layers
  make_gemm_heavy.py /tmp/g --width 512 --layers 1 --batches 1,8

Exit codes: 0 written, 1 bad options or a file that cannot be written,
77 ONNX or NumPy missing.
"""

import argparse
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as err:
    print("make_gemm_heavy.py: missing Python module: %s" % err,
          file=sys.stderr)
    sys.exit(77)

OPSET = 17
LEVELS = 7  # weights are q * scale, q in [-LEVELS, LEVELS]
# fp32 sums of 2048 products on a GPU against a float64 reference: a few
# 1e-6 relative; these leave room for any summation order.
RTOL = 1e-3
ATOL = 1e-4


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


def batch_list(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "'%s' is not a comma-separated list of integers" % text)
    if not values or any(v < 1 or v > 1 << 16 for v in values):
        raise argparse.ArgumentTypeError(
            "batches must be between 1 and 65536, got '%s'" % text)
    return values


def quantized_weight(rng, fan_in, fan_out):
    """He-scaled weights on 2 * LEVELS + 1 levels (see the module doc)."""
    q = rng.integers(-LEVELS, LEVELS + 1, size=(fan_in, fan_out))
    variance = (2 * LEVELS + 1) ** 2 / 12.0 - 1.0 / 12.0
    scale = np.sqrt(2.0 / (fan_in * variance))
    return (q * scale).astype(np.float32)


def make_params(width, layers, io, seed):
    """Returns [(weight [K, N], bias [N])] per layer, all float32."""
    rng = np.random.default_rng(seed)
    dims = [io] + [width] * (layers + 1) + [io]
    params = []
    for k, n in zip(dims[:-1], dims[1:]):
        w = quantized_weight(rng, k, n)
        b = (rng.standard_normal(n) * 0.1).astype(np.float32)
        params.append((w, b))
    return params


def make_model(params):
    nodes, inits = [], []
    x = "x"
    for i, (w, b) in enumerate(params):
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        inits.append(numpy_helper.from_array(b, "b%d" % i))
        last = i == len(params) - 1
        mm, add = "mm%d" % i, "y" if last else "add%d" % i
        nodes.append(helper.make_node("MatMul", [x, "w%d" % i], [mm]))
        nodes.append(helper.make_node("Add", [mm, "b%d" % i], [add]))
        if last:
            break
        x = "relu%d" % i
        nodes.append(helper.make_node("Relu", [add], [x]))
    io_in, io_out = params[0][0].shape[0], params[-1][0].shape[1]
    graph = helper.make_graph(
        nodes, "gemm_heavy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["batch", io_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       ["batch", io_out])],
        inits)
    model = helper.make_model(graph, producer_name="weft make_gemm_heavy.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference(params, x):
    """The network in float64, cast to float32 at the end."""
    h = x.astype(np.float64)
    for i, (w, b) in enumerate(params):
        h = h @ w.astype(np.float64) + b.astype(np.float64)
        if i != len(params) - 1:
            h = np.maximum(h, 0.0)
    return h.astype(np.float32)


def write_tensor(path, name, array):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def main():
    parser = ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="output folder (created)")
    parser.add_argument("--width", type=int, default=2048,
                        help="hidden width (default 2048)")
    parser.add_argument("--layers", type=int, default=3,
                        help="width x width layers (default 3)")
    parser.add_argument("--io", type=int, default=64,
                        help="input and output width (default 64)")
    parser.add_argument("--batches", type=batch_list, default=[1, 512, 2048],
                        help="a test set per batch (default 1,512,2048)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for name in ("width", "io"):
        if not 1 <= getattr(args, name) <= 16384:
            parser.error("--%s must be between 1 and 16384" % name)
    if not 0 <= args.layers <= 64:
        parser.error("--layers must be between 0 and 64")

    params = make_params(args.width, args.layers, args.io, args.seed)
    model = make_model(params)
    try:
        os.makedirs(args.out, exist_ok=True)
        onnx.save(model, os.path.join(args.out, "model.onnx"))
        rng = np.random.default_rng(args.seed + 1)
        shapes = []
        for i, batch in enumerate(args.batches):
            x = rng.standard_normal((batch, args.io)).astype(np.float32)
            folder = os.path.join(args.out, "test_data_set_%d" % i)
            os.makedirs(folder, exist_ok=True)
            write_tensor(os.path.join(folder, "input_0.pb"), "x", x)
            write_tensor(os.path.join(folder, "output_0.pb"), "y",
                         reference(params, x))
            shapes.append([batch, args.io])
        meta = {
            "name": "gemm_heavy",
            "source": "test/E2E/make_gemm_heavy.py --width %d --layers %d "
                      "--io %d --seed %d" % (args.width, args.layers, args.io,
                                             args.seed),
            "inputs": {"x": shapes},
            "outputs": ["y"],
            "gemms": [list(w.shape) for w, _ in params],
            "weight_bytes": sum(w.nbytes + b.nbytes for w, b in params),
            "rtol": RTOL,
            "atol": ATOL,
        }
        with open(os.path.join(args.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
    except OSError as err:
        print("make_gemm_heavy.py: error: cannot write %s: %s" %
              (err.filename or args.out, err.strerror), file=sys.stderr)
        return 1
    print("make_gemm_heavy.py: %d layers, %.1f MB of weights, %d test sets "
          "in %s" % (len(params), meta["weight_bytes"] / 1e6,
                     len(args.batches), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
