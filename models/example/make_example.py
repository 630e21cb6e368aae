#!/usr/bin/env python3
"""Writes the bundled example model: a small image classifier.

    input f32[batch, 1, 28, 28]
      -> Conv 3x3 (8 channels, pad 1) -> Relu -> MaxPool 2x2
      -> Conv 3x3 (16 channels, pad 1) -> Relu -> MaxPool 2x2
      -> Flatten -> Gemm (784 -> 64) -> Relu -> Gemm (64 -> 10) -> Softmax
      -> probabilities f32[batch, 10]

The batch dimension is symbolic, as exporters write it. Weights are seeded
random numbers, so the file is reproducible byte for byte.

Next to the model it writes test_data_set_0/ (ONNX test-data layout): a batch
of two synthetic 28x28 "digits" and the probabilities a plain numpy
implementation of the network computes for them (independent of weft), so
that the demo can check the compiled model's answer.

Usage: /usr/bin/python3 make_example.py [OUT_DIR]
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


def reference(model, x):
    """The network in plain numpy, float64: the demo's expected answer."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64)
         for t in model.graph.initializer}

    def conv3x3(x, weight, bias):
        n, c, h, wd = x.shape
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, weight.shape[0], h, wd))
        for i in range(3):
            for j in range(3):
                patch = padded[:, :, i:i + h, j:j + wd]
                out += np.einsum("nchw,oc->nohw", patch, weight[:, :, i, j])
        return out + bias[None, :, None, None]

    def maxpool2(x):
        n, c, h, wd = x.shape
        return x.reshape(n, c, h // 2, 2, wd // 2, 2).max(axis=(3, 5))

    x = x.astype(np.float64)
    x = maxpool2(np.maximum(conv3x3(x, w["conv1.weight"], w["conv1.bias"]), 0))
    x = maxpool2(np.maximum(conv3x3(x, w["conv2.weight"], w["conv2.bias"]), 0))
    x = x.reshape(x.shape[0], -1)
    x = np.maximum(x @ w["fc1.weight"].T + w["fc1.bias"], 0)
    x = x @ w["fc2.weight"].T + w["fc2.bias"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def digits():
    """Two 28x28 images: a ring (a zero) and a vertical bar (a one)."""
    yy, xx = np.mgrid[0:28, 0:28]
    ring = np.abs(np.hypot(yy - 13.5, xx - 13.5) - 8) < 2
    bar = (np.abs(xx - 14) < 2) & (yy > 4) & (yy < 24)
    return np.stack([ring, bar]).astype(np.float32)[:, None, :, :]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    model = make_model()
    path = os.path.join(out_dir, "classifier.onnx")
    onnx.save(model, path)
    data = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    x = digits()
    y = reference(model, x).astype(np.float32)
    for name, tensor in [("input_0.pb", numpy_helper.from_array(x, "input")),
                         ("output_0.pb",
                          numpy_helper.from_array(y, "probabilities"))]:
        with open(os.path.join(data, name), "wb") as f:
            f.write(tensor.SerializeToString())
    print("wrote", path, "and", data)


if __name__ == "__main__":
    main()
