#!/usr/bin/python3
"""Writes the seed corpus of the importer fuzz target into fuzz/corpus/import/.

One small model per op family and variant (attributes, optional inputs,
opsets), plus a few multi-op graphs. Weights are tiny: the fuzzer mutates
fields, not weight bytes, so seeds only need the structure. Run with Debian's
Python (it sees python3-onnx):

    /usr/bin/python3 fuzz/make_corpus.py

The .onnx files are committed; rerun this after changing it.
"""

import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus",
                   "import")
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def ints(name, values):
    return init(name, np.array(values, dtype=np.int64))


def rand(name, *shape):
    rng = np.random.default_rng(len(name) + sum(shape))
    return init(name, rng.standard_normal(shape).astype(np.float32))


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    model = helper.make_model(
        graph, producer_name="weft-make-corpus",
        opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data = model.SerializeToString()
    assert len(data) < 4096, (name, len(data))
    with open(os.path.join(OUT, name + ".onnx"), "wb") as f:
        f.write(data)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def unary(op, opset=17, **attrs):
    save("unary_" + op.lower(), [node(op, ["x"], ["y"], **attrs)],
         [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=opset)


def binary(op, out_elem=F, elem=F, opset=17, shapes=([2, 3], [3])):
    save("binary_" + op.lower(), [node(op, ["a", "b"], ["y"])],
         [vi("a", elem, shapes[0]), vi("b", elem, shapes[1])],
         [vi("y", out_elem, shapes[0])], opset=opset)


def core():
    value = helper.make_tensor("v", F, [2], [1.0, 2.0])
    save("constant_value", [node("Constant", [], ["c"], value=value),
                            node("Add", ["x", "c"], ["y"])],
         [vi("x", F, [2])], [vi("y", F, [2])])
    save("constant_value_ints", [node("Constant", [], ["c"], value_ints=[2, 3]),
                                 node("Reshape", ["x", "c"], ["y"])],
         [vi("x", F, [6])], [vi("y", F, [2, 3])], opset=13)
    save("constant_value_float", [node("Constant", [], ["c"], value_float=0.5),
                                  node("Mul", ["x", "c"], ["y"])],
         [vi("x", F, [4])], [vi("y", F, [4])])
    save("identity_dropout", [node("Identity", ["x"], ["t"]),
                              node("Dropout", ["t"], ["y"])],
         [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4])], opset=13)
    # An initializer above the inline limit becomes a weight.
    save("initializer_weight", [node("Add", ["x", "w"], ["y"])],
         [vi("x", F, [16, 20])], [vi("y", F, [16, 20])],
         [rand("w", 16, 20)])


def elementwise():
    for op in ["Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt",
               "Reciprocal", "Neg", "Abs", "Floor", "Sign", "Sin",
               "Softplus", "HardSwish"]:
        unary(op)
    unary("LeakyRelu", alpha=0.1)
    unary("Elu", alpha=0.5)
    unary("HardSigmoid", alpha=0.3, beta=0.4)
    unary("Gelu", opset=20, approximate="tanh")
    for op in ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"]:
        binary(op)
    binary("PRelu", shapes=([2, 3], [1]))
    binary("Mod", elem=I64, out_elem=I64)
    for op in ["Equal", "Less", "Greater", "GreaterOrEqual"]:
        binary(op, out_elem=TensorProto.BOOL)
    save("binary_and_not", [node("And", ["a", "b"], ["t"]),
                            node("Not", ["t"], ["y"])],
         [vi("a", TensorProto.BOOL, [4]), vi("b", TensorProto.BOOL, [4])],
         [vi("y", TensorProto.BOOL, [4])])
    save("where", [node("Where", ["c", "a", "b"], ["y"])],
         [vi("c", TensorProto.BOOL, [2, 1]), vi("a", F, [2, 3]),
          vi("b", F, [3])], [vi("y", F, [2, 3])])
    save("clip_inputs", [node("Clip", ["x", "lo", "hi"], ["y"])],
         [vi("x", F, [5])], [vi("y", F, [5])],
         [init("lo", np.float32(-1)), init("hi", np.float32(1))], opset=13)
    save("clip_attrs", [node("Clip", ["x"], ["y"], min=-1.0, max=1.0)],
         [vi("x", F, [5])], [vi("y", F, [5])], opset=7)
    save("cast", [node("Cast", ["x"], ["y"], to=TensorProto.INT64)],
         [vi("x", F, [3])], [vi("y", I64, [3])])
    save("sum_variadic", [node("Sum", ["a", "b", "c"], ["y"])],
         [vi("a", F, [2]), vi("b", F, [2]), vi("c", F, [1])],
         [vi("y", F, [2])])


def linalg():
    save("matmul", [node("MatMul", ["a", "b"], ["y"])],
         [vi("a", F, ["N", 4, 8])], [vi("y", F, ["N", 4, 2])],
         [rand("b", 8, 2)])
    save("matmul_vec", [node("MatMul", ["a", "b"], ["y"])],
         [vi("a", F, [8]), vi("b", F, [8, 3])], [vi("y", F, [3])])
    save("gemm", [node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5,
                       beta=2.0)],
         [vi("a", F, [2, 4])], [vi("y", F, [2, 3])],
         [rand("b", 3, 4), rand("c", 3)], opset=13)
    save("gemm_transa", [node("Gemm", ["a", "b"], ["y"], transA=1)],
         [vi("a", F, [4, 2]), vi("b", F, [4, 3])], [vi("y", F, [2, 3])],
         opset=11)
    save("einsum", [node("Einsum", ["a", "b"], ["y"],
                         equation="bij,bjk->bik")],
         [vi("a", F, [2, 3, 4]), vi("b", F, [2, 4, 5])],
         [vi("y", F, [2, 3, 5])], opset=12)


def conv_pool_norm():
    save("conv", [node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                       pads=[1, 1, 1, 1], strides=[2, 2])],
         [vi("x", F, [1, 2, 8, 8])], [vi("y", F, [1, 4, 4, 4])],
         [rand("w", 4, 2, 3, 3), rand("b", 4)])
    save("conv_group_dilated", [node("Conv", ["x", "w"], ["y"], group=2,
                                     dilations=[2], auto_pad="SAME_UPPER")],
         [vi("x", F, [1, 4, 10])], [vi("y", F, [1, 4, 10])],
         [rand("w", 4, 2, 3)])
    save("conv_transpose", [node("ConvTranspose", ["x", "w"], ["y"],
                                 strides=[2, 2])],
         [vi("x", F, [1, 2, 3, 3])], [vi("y", F, [1, 1, 7, 7])],
         [rand("w", 2, 1, 3, 3)])
    save("maxpool", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2],
                          strides=[2, 2], ceil_mode=1)],
         [vi("x", F, [1, 1, 5, 5])], [vi("y", F, [1, 1, 3, 3])], opset=12)
    save("avgpool", [node("AveragePool", ["x"], ["y"], kernel_shape=[3],
                          pads=[1, 1], count_include_pad=1)],
         [vi("x", F, [1, 2, 6])], [vi("y", F, [1, 2, 6])])
    save("global_avgpool", [node("GlobalAveragePool", ["x"], ["y"])],
         [vi("x", F, [1, 3, 4, 4])], [vi("y", F, [1, 3, 1, 1])])
    save("batchnorm", [node("BatchNormalization",
                            ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])],
         [rand("s", 3), rand("b", 3), rand("m", 3),
          init("v", np.ones(3, np.float32))], opset=15)
    save("layernorm", [node("LayerNormalization", ["x", "s", "b"], ["y"],
                            axis=-1, epsilon=1e-5)],
         [vi("x", F, [2, 5, 8])], [vi("y", F, [2, 5, 8])],
         [rand("s", 8), rand("b", 8)], opset=17)
    save("instancenorm", [node("InstanceNormalization", ["x", "s", "b"],
                               ["y"])],
         [vi("x", F, [1, 3, 4])], [vi("y", F, [1, 3, 4])],
         [rand("s", 3), rand("b", 3)])


def reduce():
    save("reducesum_axes_input", [node("ReduceSum", ["x", "axes"], ["y"],
                                       keepdims=0)],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [2])], [ints("axes", [1, -1])],
         opset=13)
    save("reducemean_attr", [node("ReduceMean", ["x"], ["y"], axes=[1])],
         [vi("x", F, [2, 3])], [vi("y", F, [2, 1])], opset=13)
    save("reducemax_opset18", [node("ReduceMax", ["x", "axes"], ["y"])],
         [vi("x", F, [2, 3])], [vi("y", F, [1, 3])], [ints("axes", [0])],
         opset=18)
    save("reducel2_noop", [node("ReduceL2", ["x"], ["y"],
                                noop_with_empty_axes=1)],
         [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=18)
    save("argmax", [node("ArgMax", ["x"], ["y"], axis=1, keepdims=0,
                         select_last_index=1)],
         [vi("x", F, [2, 5])], [vi("y", I64, [2])])
    save("softmax", [node("Softmax", ["x"], ["y"], axis=-1)],
         [vi("x", F, [2, 5])], [vi("y", F, [2, 5])], opset=13)
    save("logsoftmax_opset11", [node("LogSoftmax", ["x"], ["y"], axis=1)],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 4])], opset=11)


def shape():
    save("reshape", [node("Reshape", ["x", "s"], ["y"])],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [6, 4])],
         [ints("s", [-1, 4])], opset=14)
    save("reshape_zero", [node("Reshape", ["x", "s"], ["y"], allowzero=0)],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 12])],
         [ints("s", [0, -1])], opset=14)
    save("flatten", [node("Flatten", ["x"], ["y"], axis=2)],
         [vi("x", F, [2, 3, 4, 5])], [vi("y", F, [6, 20])])
    save("squeeze_unsqueeze", [node("Squeeze", ["x", "a"], ["t"]),
                               node("Unsqueeze", ["t", "b"], ["y"])],
         [vi("x", F, [1, 3, 1])], [vi("y", F, [3, 1, 1])],
         [ints("a", [0, 2]), ints("b", [1, 2])], opset=13)
    save("unsqueeze_opset11", [node("Unsqueeze", ["x"], ["y"], axes=[0])],
         [vi("x", F, [3])], [vi("y", F, [1, 3])], opset=11)
    save("transpose", [node("Transpose", ["x"], ["y"], perm=[2, 0, 1])],
         [vi("x", F, [2, 3, 4])], [vi("y", F, [4, 2, 3])])
    save("concat", [node("Concat", ["a", "b"], ["y"], axis=-1)],
         [vi("a", F, [2, 3]), vi("b", F, [2, 2])], [vi("y", F, [2, 5])])
    save("split_input", [node("Split", ["x", "s"], ["y0", "y1"], axis=1)],
         [vi("x", F, [2, 5])], [vi("y0", F, [2, 2]), vi("y1", F, [2, 3])],
         [ints("s", [2, 3])], opset=13)
    save("split_num_outputs", [node("Split", ["x"], ["y0", "y1"], axis=0,
                                    num_outputs=2)],
         [vi("x", F, [4])], [vi("y0", F, [2]), vi("y1", F, [2])], opset=18)
    save("slice", [node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])],
         [vi("x", F, [4, 6])], [vi("y", F, [2, 3])],
         [ints("st", [1, 0]), ints("en", [3, 6]), ints("ax", [0, 1]),
          ints("sp", [1, 2])], opset=13)
    save("slice_opset9", [node("Slice", ["x"], ["y"], starts=[1], ends=[-1],
                               axes=[0])],
         [vi("x", F, [5])], [vi("y", F, [3])], opset=9)
    save("gather", [node("Gather", ["x", "i"], ["y"], axis=0)],
         [vi("x", F, [5, 3])], [vi("y", F, [2, 3])], [ints("i", [4, -1])])
    save("gather_elements", [node("GatherElements", ["x", "i"], ["y"],
                                  axis=1)],
         [vi("x", F, [2, 3]), vi("i", I64, [2, 2])], [vi("y", F, [2, 2])])
    save("expand", [node("Expand", ["x", "s"], ["y"])],
         [vi("x", F, [3, 1])], [vi("y", F, [2, 3, 4])],
         [ints("s", [2, 1, 4])])
    save("pad", [node("Pad", ["x", "p", "v"], ["y"], mode="constant")],
         [vi("x", F, [2, 3])], [vi("y", F, [4, 4])],
         [ints("p", [1, 0, 1, 1]), init("v", np.float32(0.5))])
    save("pad_reflect", [node("Pad", ["x", "p"], ["y"], mode="reflect")],
         [vi("x", F, [4])], [vi("y", F, [6])], [ints("p", [1, 1])])
    save("tile", [node("Tile", ["x", "r"], ["y"])],
         [vi("x", F, [2, 3])], [vi("y", F, [4, 3])], [ints("r", [2, 1])])
    save("trilu", [node("Trilu", ["x", "k"], ["y"], upper=0)],
         [vi("x", F, [3, 3])], [vi("y", F, [3, 3])], [ints("k", [1])])
    save("shape_size", [node("Shape", ["x"], ["s"], start=1),
                        node("Size", ["x"], ["n"])],
         [vi("x", F, ["N", 3, 4])], [vi("s", I64, [2]), vi("n", I64, [])],
         opset=15)
    save("constant_of_shape", [node("ConstantOfShape", ["s"], ["y"],
                                    value=helper.make_tensor("v", F, [1],
                                                             [3.0]))],
         [], [vi("y", F, [2, 3])], [ints("s", [2, 3])])
    save("range", [node("Range", ["a", "b", "d"], ["y"])],
         [], [vi("y", I64, [4])],
         [init("a", np.int64(0)), init("b", np.int64(8)),
          init("d", np.int64(2))])


def graphs():
    # MLP: MatMul + Add + Relu, twice.
    save("mlp", [node("MatMul", ["x", "w1"], ["h"]),
                 node("Add", ["h", "b1"], ["ha"]),
                 node("Relu", ["ha"], ["hr"]),
                 node("Gemm", ["hr", "w2", "b2"], ["y"])],
         [vi("x", F, ["batch", 8])], [vi("y", F, ["batch", 3])],
         [rand("w1", 8, 6), rand("b1", 6), rand("w2", 6, 3), rand("b2", 3)])
    # Attention-like: QK^T, scale, softmax, times V, heads reshaped.
    save("attention", [
        node("Reshape", ["x", "s4"], ["q"]),
        node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
        node("Transpose", ["qt"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["qt", "kt"], ["sc"]),
        node("Div", ["sc", "scale"], ["sd"]),
        node("Softmax", ["sd"], ["p"], axis=-1),
        node("MatMul", ["p", "qt"], ["o"]),
        node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ot", "s3"], ["y"])],
        [vi("x", F, [1, 4, 8])], [vi("y", F, [1, 4, 8])],
        [ints("s4", [1, 4, 2, 4]), ints("s3", [1, 4, 8]),
         init("scale", np.float32(2.0))], opset=14)
    # Conv net: Conv, BatchNorm, Relu, MaxPool, Flatten, Gemm.
    save("convnet", [
        node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
             pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
        node("Relu", ["n"], ["r"]),
        node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Flatten", ["p"], ["f"]),
        node("Gemm", ["f", "fw"], ["y"], transB=1)],
        [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 2])],
        [rand("w", 2, 1, 3, 3), rand("b", 2), rand("s", 2), rand("bb", 2),
         rand("m", 2), init("v", np.ones(2, np.float32)), rand("fw", 2, 8)])
    # Shape arithmetic on a dynamic input: Shape, Gather, Concat, Reshape.
    save("dynamic_reshape", [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "i0"], ["d0"], axis=0),
        node("Unsqueeze", ["d0", "ax"], ["d0u"]),
        node("Concat", ["d0u", "m1"], ["ns"], axis=0),
        node("Reshape", ["x", "ns"], ["y"])],
        [vi("x", F, ["N", 3, 4])], [vi("y", F, ["N", 12])],
        [init("i0", np.int64(0)), ints("ax", [0]), ints("m1", [-1])],
        opset=13)
    # Layer norm decomposed: ReduceMean, Sub, Pow, Sqrt, Div.
    save("layernorm_decomposed", [
        node("ReduceMean", ["x"], ["mu"], axes=[-1]),
        node("Sub", ["x", "mu"], ["d"]),
        node("Pow", ["d", "two"], ["d2"]),
        node("ReduceMean", ["d2"], ["var"], axes=[-1]),
        node("Add", ["var", "eps"], ["ve"]),
        node("Sqrt", ["ve"], ["sd"]),
        node("Div", ["d", "sd"], ["y"])],
        [vi("x", F, [2, 8])], [vi("y", F, [2, 8])],
        [init("two", np.float32(2)), init("eps", np.float32(1e-5))],
        opset=13)
    # Opsets at both ends of what weft supports.
    save("opset7_add", [node("Add", ["a", "b"], ["y"])],
         [vi("a", F, [3]), vi("b", F, [3])], [vi("y", F, [3])], opset=7)
    save("opset22_mlp", [node("MatMul", ["x", "w"], ["h"]),
                         node("Relu", ["h"], ["y"])],
         [vi("x", F, [2, 4])], [vi("y", F, [2, 3])], [rand("w", 4, 3)],
         opset=22)


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".onnx"):
            os.remove(os.path.join(OUT, old))
    core()
    elementwise()
    linalg()
    conv_pool_norm()
    reduce()
    shape()
    graphs()
    files = [f for f in os.listdir(OUT) if f.endswith(".onnx")]
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in files)
    print(f"wrote {len(files)} models ({total} bytes) to {OUT}")


if __name__ == "__main__":
    main()
