#!/usr/bin/env python3
"""Builds the end-to-end test models and their reference outputs.

Three small models are defined in PyTorch with fixed seeds and exported with
torch.onnx.export, with symbolic batch (and sequence or image) dimensions:

  mlp             Gemm + Relu, opset 13, symbolic batch
  cnn             Conv + BatchNormalization + Relu + MaxPool, two residual
                  blocks (one strided, with a 1x1 projection), global average
                  pool and a fully connected layer; opset 15, symbolic batch,
                  height and width
  transformer     token and position embeddings (Gather, Range), two encoder
                  layers: multi-head attention with a padding mask (Equal,
                  Where), softmax, LayerNormalization, exact GELU (Erf),
                  residuals; a tanh pooler on the first token. Opset 17,
                  symbolic batch and sequence
  transformer_op14  the same network at opset 14, where layer norm is
                  exported as ReduceMean/Sub/Pow/Sqrt/Div
  mobile          MobileNetV2-style: a strided stem, inverted residual blocks
                  (1x1 expansion, 3x3 depthwise with stride 1 and 2, 1x1
                  projection; the last one's 1x1 weights whole panels of 32
                  output channels) with BatchNormalization and ReLU6 (Clip),
                  residual adds, global average pool, a classifier; opset 13,
                  symbolic batch, height and width. Exported in eval mode,
                  so the exporter folds BatchNormalization into the
                  convolutions and each ReLU6 follows its convolution (the
                  fused clamp of the CPU kernels)
  decoder         a GPT-2-style decoder written out by hand: LayerNorm as
                  ReduceMean/Sub/Pow/Sqrt/Div with its scale and shift, tanh
                  GELU as Mul/Pow/Add/Tanh, a causal mask; opset 17, batch
                  and sequence symbolic. Its large case gives loops big
                  enough to run on several threads.
  column          ResNet blocks of 16 and 32 channels and a CRNN-style
                  column (max and average pools between 3x3 convolutions, a
                  2x1 kernel, 1-D convolutions over the width): the tensors
                  weft-conv-blocked stores channel-blocked; opset 13,
                  symbolic batch and width, exported in eval mode (batch
                  norms folded into the convolutions)

For every shape a model is tested with there is a folder in ONNX's test-data
layout (input_<i>.pb, output_<i>.pb). The reference outputs come from PyTorch
evaluating a float64 copy of the same module (cast to float32 at the end):
an implementation independent of Weft, and more precise than the float32 one
under test. The BatchNormalization nodes are kept in the graph (the export
uses TrainingMode.PRESERVE on a module in eval mode) so that Weft, not the
exporter, has to fold them.

OUT/cases.json lists every case for run_e2e.py: the model, the test-data
folder, the input shapes (for weftc --input-shape) and the tolerances.

Usage: make_models.py OUT [--only NAME ...]

Examples:
  make_models.py build/test/E2E/models
  make_models.py /tmp/e2e --only transformer
"""

import argparse
import copy
import json
import math
import os
import sys
import warnings

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
    import torch
except ImportError as err:  # Reported by run_e2e.py as a skipped test.
    print("make_models.py: missing Python module: %s" % err, file=sys.stderr)
    sys.exit(77)

RTOL = 1e-3
ATOL = 1e-4


class Mlp(torch.nn.Module):
    """Three Linear layers (Gemm) with Relu between them."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(48, 64)
        self.fc2 = torch.nn.Linear(64, 32)
        self.fc3 = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def conv_bn(cin, cout, kernel, stride):
    """A bias-free convolution and its batch norm, ResNet style."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, kernel, stride=stride,
                        padding=kernel // 2, bias=False),
        torch.nn.BatchNorm2d(cout))


class Block(torch.nn.Module):
    """A ResNet basic block; a strided one projects its shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = conv_bn(cin, cout, 1, stride)

    def forward(self, x):
        y = self.b(torch.relu(self.a(x)))
        shortcut = x if self.proj is None else self.proj(x)
        return torch.relu(y + shortcut)


class Cnn(torch.nn.Module):
    """A tiny ResNet: stem, max pool, two blocks, global pool, classifier."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 8, 3, 1)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.block1 = Block(8, 8, 1)
        self.block2 = Block(8, 16, 2)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.stem(x)))
        x = self.block2(self.block1(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class Column(torch.nn.Module):
    """ResNet blocks and a CRNN-style column of 16-multiple channels, the
    tensors that weft-conv-blocked stores channel-blocked: residual blocks
    (one strided, with a 1x1 projection; the last one's shortcut is a
    blocked tensor, the others' are not), max and average pools between
    3x3 convolutions, a 2x1 kernel, then 1-D convolutions over the width."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 1)
        self.pool = torch.nn.MaxPool2d(2, stride=2)
        self.block1 = Block(16, 16, 1)
        self.block2 = Block(16, 32, 2)
        self.block3 = Block(32, 32, 1)
        self.conv = conv_bn(32, 32, 3, 1)
        self.pool_rows = torch.nn.MaxPool2d((2, 1), stride=(2, 1))
        self.average_rows = torch.nn.AvgPool2d((2, 1), stride=(2, 1))
        self.rows = torch.nn.Conv2d(32, 32, (2, 1))
        self.sequence = torch.nn.Sequential(
            torch.nn.Conv1d(32, 32, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv1d(32, 16, 3, padding=1))

    def forward(self, x):
        x = self.pool(torch.relu(self.stem(x)))
        x = self.block3(self.block2(self.block1(x)))
        x = self.pool_rows(torch.relu(self.conv(x)))
        x = torch.relu(self.rows(self.average_rows(x)))
        x = torch.mean(x, dim=2)
        return self.sequence(x)


class Attention(torch.nn.Module):
    """Multi-head self-attention; masked keys get -1e9 before the softmax."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.ModuleList(
            [torch.nn.Linear(dim, dim) for _ in range(3)])
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, s, d = x.shape
        dh = d // self.heads
        q, k, v = [
            lin(x).view(b, s, self.heads, dh).transpose(1, 2)
            for lin in self.qkv
        ]
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(mask[:, None, None, :] == 0, -1e9)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(ctx.transpose(1, 2).reshape(b, s, d))


class EncoderLayer(torch.nn.Module):
    """Post-norm encoder layer: attention and a GELU feed-forward."""

    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attn = Attention(dim, heads)
        self.norm1 = torch.nn.LayerNorm(dim)
        self.ff1 = torch.nn.Linear(dim, hidden)
        self.ff2 = torch.nn.Linear(hidden, dim)
        self.norm2 = torch.nn.LayerNorm(dim)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        h = self.ff2(torch.nn.functional.gelu(self.ff1(x)))
        return self.norm2(x + h)


class Encoder(torch.nn.Module):
    """A BERT-like encoder returning hidden states and a pooled vector."""

    def __init__(self, vocab=64, max_len=64, dim=32, heads=4, hidden=64,
                 layers=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_len, dim)
        self.norm = torch.nn.LayerNorm(dim)
        self.layers = torch.nn.ModuleList(
            [EncoderLayer(dim, heads, hidden) for _ in range(layers)])
        self.pool = torch.nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.norm(self.tok(input_ids) + self.pos(positions)[None])
        for layer in self.layers:
            x = layer(x, attention_mask)
        return x, torch.tanh(self.pool(x[:, 0]))


def conv_bn_relu6(cin, cout, kernel, stride, groups=1):
    """A bias-free convolution, its batch norm and ReLU6 (ONNX Clip)."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, kernel, stride=stride,
                        padding=kernel // 2, groups=groups, bias=False),
        torch.nn.BatchNorm2d(cout), torch.nn.ReLU6())


class InvertedResidual(torch.nn.Module):
    """MobileNetV2's block: expand, depthwise, project; a residual add when
    the shape is kept."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        self.body = torch.nn.Sequential(
            conv_bn_relu6(cin, mid, 1, 1),
            conv_bn_relu6(mid, mid, 3, stride, groups=mid),
            torch.nn.Conv2d(mid, cout, 1, bias=False),
            torch.nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class Mobile(torch.nn.Module):
    """A small MobileNetV2."""

    def __init__(self):
        super().__init__()
        self.stem = conv_bn_relu6(3, 16, 3, 2)
        # The last block's 1x1 convolutions have 96 and 32 output
        # channels, whole panels: between channels-last tensors (planes of
        # at most 1024 pixels) weftc packs their weights.
        self.blocks = torch.nn.Sequential(
            InvertedResidual(16, 16, 1, 4), InvertedResidual(16, 24, 2, 6),
            InvertedResidual(24, 24, 1, 6), InvertedResidual(24, 32, 1, 4))
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class WrittenOutLayerNorm(torch.nn.Module):
    """LayerNorm op by op, as exporters of hand-written models emit it."""

    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(dim) + 0.5)
        self.bias = torch.nn.Parameter(torch.randn(dim) * 0.2)

    def forward(self, x):
        d = x - x.mean(-1, keepdim=True)
        var = d.pow(2).mean(-1, keepdim=True)
        return d / torch.sqrt(var + 1e-5) * self.weight + self.bias


class DecoderLayer(torch.nn.Module):
    """Pre-norm causal self-attention and a tanh-GELU feed-forward."""

    def __init__(self, dim, heads, max_len):
        super().__init__()
        self.heads = heads
        self.norm1 = WrittenOutLayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = WrittenOutLayerNorm(dim)
        self.ff1 = torch.nn.Linear(dim, 4 * dim)
        self.ff2 = torch.nn.Linear(4 * dim, dim)
        self.register_buffer(
            "causal", torch.tril(torch.ones(max_len, max_len)) == 0)

    def forward(self, x):
        b, s, d = x.shape
        dh = d // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
        q, k, v = [t.view(b, s, self.heads, dh).transpose(1, 2)
                   for t in (q, k, v)]
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(self.causal[:s, :s], -1e9)
        y = torch.matmul(torch.softmax(att, dim=-1), v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        h = self.ff1(self.norm2(x))
        h = 0.5 * h * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.ff2(h)


class Decoder(torch.nn.Module):
    """A GPT-2-style decoder with a tied LM head."""

    def __init__(self, vocab=64, max_len=64, dim=64, heads=4, layers=2):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(max_len, dim)
        self.layers = torch.nn.ModuleList(
            [DecoderLayer(dim, heads, max_len) for _ in range(layers)])
        self.norm = WrittenOutLayerNorm(dim)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.tok(input_ids) + self.pos(positions)[None]
        for layer in self.layers:
            x = layer(x)
        return torch.matmul(self.norm(x), self.tok.weight.t())


def randomize_norms(module, gen):
    """Gives every norm layer non-trivial statistics and affine parameters,
    so that a kernel ignoring one of them gives wrong outputs."""
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.2)
            m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
        if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.bias.shape, generator=gen) * 0.2)


def token_inputs(shape, gen):
    """Token ids and a padding mask: row r keeps s - r * s // 4 tokens (at
    least one), the rest are padding (id 0, mask 0)."""
    b, s = shape
    ids = torch.randint(1, 64, (b, s), generator=gen, dtype=torch.int64)
    mask = torch.ones(b, s, dtype=torch.int64)
    for r in range(b):
        keep = max(1, s - r * (s // 4))
        mask[r, keep:] = 0
        ids[r, keep:] = 0
    return [ids, mask]


# name -> (module factory, opset, input names, output names, dynamic axes,
#          input maker, shapes to test (one per input, first input's shape
#          given; the maker derives the others))
MODELS = {
    "mlp": dict(
        make=Mlp, opset=13, inputs=["x"], outputs=["logits"],
        dynamic={"x": {0: "batch"}, "logits": {0: "batch"}},
        cases={"b1": [(1, 48)], "b3": [(3, 48)], "b7": [(7, 48)],
               "b8": [(8, 48)]},
    ),
    "cnn": dict(
        make=Cnn, opset=15, inputs=["image"], outputs=["logits"],
        dynamic={"image": {0: "batch", 2: "height", 3: "width"},
                 "logits": {0: "batch"}},
        cases={"b1_16x16": [(1, 3, 16, 16)], "b3_16x16": [(3, 3, 16, 16)],
               "b2_21x19": [(2, 3, 21, 19)], "b8_16x16": [(8, 3, 16, 16)]},
    ),
    "transformer": dict(
        make=Encoder, opset=17, inputs=["input_ids", "attention_mask"],
        outputs=["hidden", "pooled"],
        dynamic={"input_ids": {0: "batch", 1: "seq"},
                 "attention_mask": {0: "batch", 1: "seq"},
                 "hidden": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}},
        cases={"b1_s8": [(1, 8), (1, 8)], "b3_s32": [(3, 32), (3, 32)],
               "b8_s16": [(8, 16), (8, 16)]},
    ),
    "transformer_op14": dict(
        make=Encoder, opset=14, inputs=["input_ids", "attention_mask"],
        outputs=["hidden", "pooled"],
        dynamic={"input_ids": {0: "batch", 1: "seq"},
                 "attention_mask": {0: "batch", 1: "seq"},
                 "hidden": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}},
        cases={"b2_s13": [(2, 13), (2, 13)]},
    ),
    "mobile": dict(
        make=Mobile, opset=13, inputs=["image"], outputs=["logits"],
        training=torch.onnx.TrainingMode.EVAL,
        dynamic={"image": {0: "batch", 2: "height", 3: "width"},
                 "logits": {0: "batch"}},
        cases={"b1_32x32": [(1, 3, 32, 32)], "b2_29x31": [(2, 3, 29, 31)],
               "b1_96x96": [(1, 3, 96, 96)]},
    ),
    "decoder": dict(
        make=Decoder, opset=17, inputs=["input_ids"], outputs=["logits"],
        dynamic={"input_ids": {0: "batch", 1: "seq"},
                 "logits": {0: "batch", 1: "seq"}},
        cases={"b1_s7": [(1, 7)], "b4_s64": [(4, 64)]},
    ),
    "column": dict(
        make=Column, opset=13, inputs=["image"], outputs=["features"],
        training=torch.onnx.TrainingMode.EVAL,
        dynamic={"image": {0: "batch", 3: "width"},
                 "features": {0: "batch", 2: "width"}},
        cases={"b1_32x64": [(1, 3, 32, 64)], "b2_32x36": [(2, 3, 32, 36)]},
    ),
}


def make_inputs(name, shapes, gen):
    if name.startswith("transformer"):
        return token_inputs(shapes[0], gen)
    if name == "decoder":
        return [torch.randint(0, 64, shapes[0], generator=gen,
                              dtype=torch.int64)]
    return [torch.randn(s, generator=gen) for s in shapes]


def write_tensors(folder, prefix, names, tensors):
    os.makedirs(folder, exist_ok=True)
    for i, (n, t) in enumerate(zip(names, tensors)):
        proto = numpy_helper.from_array(t.detach().cpu().numpy(), name=n)
        with open(os.path.join(folder, "%s_%d.pb" % (prefix, i)), "wb") as f:
            f.write(proto.SerializeToString())


def reference(module, inputs):
    """Outputs of a float64 copy of `module`, cast to float32."""
    ref = copy.deepcopy(module).double().eval()
    args = [t.double() if t.is_floating_point() else t for t in inputs]
    with torch.no_grad():
        out = ref(*args)
    if not isinstance(out, tuple):
        out = (out,)
    return [o.float() for o in out]


def build(name, spec, out_dir, seed):
    """Exports one model and writes its test-data folders; returns cases."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    module = spec["make"]()
    with torch.no_grad():
        randomize_norms(module, gen)
    module.eval()

    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    onnx_path = os.path.join(folder, "model.onnx")
    first = make_inputs(name, next(iter(spec["cases"].values())), gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, tuple(first), onnx_path, opset_version=spec["opset"],
            input_names=spec["inputs"], output_names=spec["outputs"],
            dynamic_axes=spec["dynamic"],
            training=spec.get("training", torch.onnx.TrainingMode.PRESERVE))
    onnx.checker.check_model(onnx.load(onnx_path))

    cases = []
    for case, shapes in spec["cases"].items():
        inputs = make_inputs(name, shapes, gen)
        outputs = reference(module, inputs)
        data = os.path.join(folder, case)
        write_tensors(data, "input", spec["inputs"], inputs)
        write_tensors(data, "output", spec["outputs"], outputs)
        cases.append({
            "model": name,
            "case": case,
            "onnx": os.path.relpath(onnx_path, out_dir),
            "data": os.path.relpath(data, out_dir),
            "opset": spec["opset"],
            "shapes": {n: list(t.shape)
                       for n, t in zip(spec["inputs"], inputs)},
            "rtol": RTOL,
            "atol": ATOL,
        })
    return cases


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="output folder (created)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        choices=sorted(MODELS), help="build only these models")
    args = parser.parse_args()

    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    cases = []
    # Each model has its own seed, so building a subset gives the same files.
    for seed, (name, spec) in enumerate(MODELS.items(), start=1000):
        if args.only and name not in args.only:
            continue
        cases += build(name, spec, args.out, seed)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    print("make_models.py: %d models, %d cases in %s" %
          (len({c["model"] for c in cases}), len(cases), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
