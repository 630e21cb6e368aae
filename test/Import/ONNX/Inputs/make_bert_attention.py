#!/usr/bin/python3
"""Writes a BERT-style self-attention block as torch.onnx.export emits it.

The graph (opset 17) has symbolic batch and sequence dimensions and the run-
time shape arithmetic of an exported Hugging Face BertSelfAttention with its
embeddings and extended attention mask:

- position ids: Range(0, seq, 1), Unsqueeze, then Expand to [batch, seq]
  with the shape built the way torch exports `expand(batch, -1)`
  (ConstantOfShape, Mul by -1, Equal, Where), and a Gather of the position
  embeddings;
- the attention mask: Unsqueeze to [batch, 1, 1, seq], Expand to
  [batch, 1, seq, seq] (shape from Shape, Gather, Unsqueeze and Concat),
  Cast, Sub from 1, Cast to bool and Where with the lowest float;
- query, key and value: MatMul and Add, split into heads with Shape ->
  Gather -> Unsqueeze -> Concat -> Reshape and Transpose;
- scores: MatMul, Div by sqrt(head size), Add of the mask, Softmax;
- the context: MatMul, Transpose and Reshape back to [batch, seq, hidden]
  with a shape from Shape -> Slice -> Concat.

Only onnx.helper and numpy are used (no torch). Usage:
  make_bert_attention.py OUTPUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 64
HEADS = 4
HEAD_SIZE = HIDDEN // HEADS
MAX_POSITIONS = 32


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = np.random.default_rng(0)
    nodes = []
    inits = []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, outputs=None, **attrs):
        outputs = outputs or ["%s_%d" % (op.lower(), len(nodes))]
        nodes.append(helper.make_node(op, inputs, outputs,
                                      name=outputs[0], **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    scalar64 = lambda v: np.array(v, dtype=np.int64)  # noqa: E731

    def weight(name, *shape):
        return const(name, (rng.standard_normal(shape) * 0.05)
                     .astype(np.float32))

    zero = const("zero", scalar64(0))
    one = const("one", scalar64(1))
    axis0 = const("axis0", i64(0))

    # Dimensions of the hidden states, as exporters compute them.
    hs_shape = node("Shape", ["hidden_states"])
    batch = node("Gather", [hs_shape, zero], axis=0)
    seq = node("Gather", [hs_shape, one], axis=0)
    batch1 = node("Unsqueeze", [batch, axis0])
    seq1 = node("Unsqueeze", [seq, axis0])

    # position_ids = arange(seq).unsqueeze(0).expand(batch, -1)
    positions = node("Range", [zero, seq, one])
    positions = node("Unsqueeze", [positions, axis0])
    minus_one = const("minus_one", i64(-1))
    size = node("Concat", [batch1, minus_one], axis=0)
    size_shape = node("Shape", [size])
    ones = node("ConstantOfShape", [size_shape],
                value=helper.make_tensor("v", TensorProto.INT64, [1], [1]))
    neg_ones = node("Mul", [ones, const("neg", scalar64(-1))])
    is_free = node("Equal", [size, neg_ones])
    size = node("Where", [is_free, ones, size])
    position_ids = node("Expand", [positions, size])
    pos_emb = node("Gather", [weight("position_embeddings", MAX_POSITIONS,
                                     HIDDEN), position_ids], axis=0)
    x = node("Add", ["hidden_states", pos_emb])

    # Extended attention mask: [batch, 1, seq, seq] of 0 or the lowest float.
    mask = node("Unsqueeze", ["attention_mask", const("axes12", i64(1, 2))])
    mask_size = node("Concat", [batch1, const("one1", i64(1)), seq1, seq1],
                     axis=0)
    mask = node("Expand", [mask, mask_size])
    mask = node("Cast", [mask], to=TensorProto.FLOAT)
    inverted = node("Sub", [const("onef", np.array(1.0, np.float32)), mask])
    masked = node("Cast", [inverted], to=TensorProto.BOOL)
    lowest = const("lowest", np.array(np.finfo(np.float32).min, np.float32))
    mask = node("Where", [masked, lowest, inverted])

    def heads(name, perm):
        y = node("MatMul", [x, weight(name + ".weight", HIDDEN, HIDDEN)])
        y = node("Add", [y, weight(name + ".bias", HIDDEN)])
        shape = node("Shape", [y])
        b = node("Unsqueeze", [node("Gather", [shape, zero], axis=0), axis0])
        s = node("Unsqueeze", [node("Gather", [shape, one], axis=0), axis0])
        new_shape = node("Concat", [b, s, const(name + ".heads", i64(HEADS)),
                                    const(name + ".size", i64(HEAD_SIZE))],
                         axis=0)
        y = node("Reshape", [y, new_shape])
        return node("Transpose", [y], perm=perm)

    query = heads("query", [0, 2, 1, 3])
    key = heads("key", [0, 2, 3, 1])
    value = heads("value", [0, 2, 1, 3])

    scores = node("MatMul", [query, key])
    scores = node("Div", [scores, const("scale", np.array(
        np.sqrt(HEAD_SIZE), np.float32))])
    scores = node("Add", [scores, mask])
    probs = node("Softmax", [scores], axis=-1)
    context = node("MatMul", [probs, value])
    context = node("Transpose", [context], perm=[0, 2, 1, 3])
    ctx_shape = node("Shape", [context])
    leading = node("Slice", [ctx_shape, const("s0", i64(0)),
                             const("s2", i64(-2)), axis0])
    out_shape = node("Concat", [leading, const("hidden", i64(HIDDEN))],
                     axis=0)
    node("Reshape", [context, out_shape], ["context"])

    graph = helper.make_graph(
        nodes, "bert_attention",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT,
                                       ["batch", "seq", HIDDEN]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                       ["batch", "seq"])],
        [helper.make_tensor_value_info("context", TensorProto.FLOAT,
                                       ["batch", "seq", HIDDEN])],
        inits)
    model = helper.make_model(graph, producer_name="make_bert_attention",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
