#!/usr/bin/env python3
"""Writes small models whose ops mix or bake in the batch, for
microbatch-errors.test: OUT/<name>.onnx for each case below. x is [8, 6]."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(name, nodes, outputs, inits=(), inputs=None):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                      [8, 6])]
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def out(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    w = numpy_helper.from_array(np.ones((6, 4), np.float32), "w")
    cases = {
        # Softmax over the batch: every row depends on every other.
        "softmax0": model("softmax0", [
            helper.make_node("Softmax", ["x"], ["y"], name="batch_softmax",
                             axis=0)], [out("y", [8, 6])]),
        # A sum over the batch rows.
        "reduce0": model("reduce0", [
            helper.make_node("ReduceSum", ["x", "axes"], ["y"],
                             name="sum_rows", keepdims=1)],
            [out("y", [1, 6])],
            [numpy_helper.from_array(np.array([0], np.int64), "axes")]),
        # A reshape with the batch baked in: [8, 6] -> [8, 2, 3] by a
        # constant shape.
        "baked": model("baked", [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Reshape", ["h", "shape"], ["y"],
                             name="baked_reshape")],
            [out("y", [8, 2, 2])],
            [w, numpy_helper.from_array(np.array([8, 2, 2], np.int64),
                                        "shape")]),
        # The batch moved to dimension 1 of the output.
        "transposed": model("transposed", [
            helper.make_node("Transpose", ["x"], ["y"], name="swap",
                             perm=[1, 0])], [out("y", [6, 8])]),
        # The batch split over two dimensions by a reshape.
        "split": model("split", [
            helper.make_node("Reshape", ["x", "shape"], ["y"],
                             name="split_rows")],
            [out("y", [2, 24])],
            [numpy_helper.from_array(np.array([2, 24], np.int64), "shape")]),
        # Legal, sequence first: the batch inside [seq x batch] rows, as
        # PyTorch's attention lays it out, then back in front.
        "seqfirst": model("seqfirst", [
            helper.make_node("Reshape", ["x", "s3"], ["x3"], name="to3"),
            helper.make_node("Transpose", ["x3"], ["t"], name="seq_first",
                             perm=[1, 0, 2]),
            helper.make_node("Reshape", ["t", "rows"], ["r"], name="merge"),
            helper.make_node("MatMul", ["r", "w3"], ["m"], name="mm"),
            helper.make_node("Reshape", ["m", "back"], ["b"], name="unmerge"),
            helper.make_node("Transpose", ["b"], ["y"], name="batch_first",
                             perm=[1, 0, 2])],
            [out("y", [8, 2, 4])],
            [numpy_helper.from_array(np.array([0, 2, 3], np.int64), "s3"),
             numpy_helper.from_array(np.array([-1, 3], np.int64), "rows"),
             numpy_helper.from_array(np.ones((3, 4), np.float32), "w3"),
             numpy_helper.from_array(np.array([2, -1, 4], np.int64),
                                     "back")]),
        # A legal one: MatMul + Relu, rows apart.
        "rows": model("rows", [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Relu", ["h"], ["y"], name="relu")],
            [out("y", [8, 4])], [w]),
    }
    for name, m in cases.items():
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(folder, name + ".onnx"))


if __name__ == "__main__":
    main()
