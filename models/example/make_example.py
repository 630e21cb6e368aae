#!/usr/bin/env python3
"""Writes the bundled example model: a small image classifier.

    input f32[batch, 1, 28, 28]
      -> Conv 3x3 (8 channels, pad 1) -> Relu -> MaxPool 2x2
      -> Conv 3x3 (16 channels, pad 1) -> Relu -> MaxPool 2x2
      -> Flatten -> Gemm (784 -> 64) -> Relu -> Gemm (64 -> 10) -> Softmax
      -> probabilities f32[batch, 10]

The batch dimension is symbolic, as exporters write it. Weights are seeded
random numbers, so the file is reproducible byte for byte.

Usage: /usr/bin/python3 make_example.py [OUT.onnx]
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model():
    rng = np.random.default_rng(2026)

    def weight(name, *shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        data = rng.standard_normal(shape).astype(np.float32) / np.sqrt(fan_in)
        return numpy_helper.from_array(data, name)

    inits = [
        weight("conv1.weight", 8, 1, 3, 3), weight("conv1.bias", 8),
        weight("conv2.weight", 16, 8, 3, 3), weight("conv2.bias", 16),
        # Gemm with transB=1 takes [out, in] weights, as torch exports them.
        weight("fc1.weight", 64, 784), weight("fc1.bias", 64),
        weight("fc2.weight", 10, 64), weight("fc2.bias", 10),
    ]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    nodes = [
        helper.make_node("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"],
                         name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"],
                         name="conv2", **conv),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["h"],
                         name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="relu3"),
        helper.make_node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["logits"],
                         name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"],
                         name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "weft_example_classifier",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["batch", 10])],
        inits)
    model = helper.make_model(graph, producer_name="weft-example",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "classifier.onnx")
    onnx.save(make_model(), out)
    print("wrote", out)


if __name__ == "__main__":
    main()
