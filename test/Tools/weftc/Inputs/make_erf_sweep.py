#!/usr/bin/env python3
"""Writes an ONNX model of one Erf over a 1-D f32 tensor, and a test-data
folder whose input sweeps [-10, 10] (200,001 points) plus the special values
(+-0, tiny values, the boundaries of the clamped range, +-inf, NaN) and
whose expected output is erf in double precision (math.erf), rounded to f32.

Usage: make_erf_sweep.py OUT_DIR   (writes OUT_DIR/model.onnx and
OUT_DIR/test_data_set_0/{input_0,output_0}.pb)
"""

import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-8, 1e-4, 0.7, 3.999, 4.0, 4.001,
               9.0, 30.0, -30.0, math.inf, -math.inf, math.nan]
    x = np.concatenate([np.linspace(-10, 10, 200001),
                        special]).astype(np.float32)
    y = np.array([math.erf(float(v)) for v in x],
                 dtype=np.float64).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Erf", ["x"], ["y"])], "erf_sweep",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(x)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(x)])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, os.path.join(out, "model.onnx"))
    for name, tensor, value in (("input_0", "x", x), ("output_0", "y", y)):
        with open(os.path.join(out, "test_data_set_0", name + ".pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(value, tensor).SerializeToString())


if __name__ == "__main__":
    main()
