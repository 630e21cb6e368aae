#!/usr/bin/env python3
"""Writes the CPU benchmark's own models (issue #18), with reference outputs.

Each model lands in OUT/<name>/ in ONNX test-data layout (model.onnx,
test_data_set_0/input_*.pb, output_*.pb), the layout of ../shared/models, so
bench/compare.py and weft-run --inputs read it as they read the shared ones.
The reference outputs are torch's (eval mode, float32), computed before the
export; they are not onnxruntime's, so that both runtimes are checked against
a third party.

  gpt2_style   a 4-layer GPT-2-style decoder: hidden 256, 4 heads, vocabulary
               8192, 256 positions, sequence 64, batch 1, tied LM head,
               tanh-GELU and LayerNorm written out as elementwise ops (as
               exporters of hand-written models emit them), opset 17
  mobilenet_v2 torchvision's mobilenet_v2, 224x224, batch 1, opset 17
  crnn         a CRNN-style text recognizer at opset 9: a VGG-like stack of
               convolutions, BatchNorm, ReLU and pooling over a 32x128 grey
               image, then a recurrent-free sequence head (1-D convolutions
               over the width, a per-column linear classifier and
               log-softmax over 37 classes)

Weights are random with a fixed seed (torch.manual_seed(SEED)); BatchNorm
running statistics and the LayerNorm scales and shifts are set to
non-trivial values (not torch's ones and zeros, which an exporter or a
compiler could fold away) so that mis-applying them shows in the outputs. The same options write the same
files.

Usage: bench/models/make_bench_models.py OUT [--names a,b]
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
from torch import nn
import onnx
from onnx import numpy_helper

SEED = 0


class LayerNormByHand(nn.Module):
    """LayerNorm as ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div."""

    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        centered = x - mean
        var = centered.pow(2).mean(-1, keepdim=True)
        return centered / torch.sqrt(var + self.eps) * self.weight + self.bias


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class DecoderBlock(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = LayerNormByHand(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = LayerNormByHand(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)
        mask = torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, c = x.shape
        dh = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, dh).transpose(1, 2)
        k = k.view(b, t, self.heads, dh).transpose(1, 2)
        v = v.view(b, t, self.heads, dh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(gelu_tanh(self.fc(self.ln2(x))))


class GPT2Style(nn.Module):
    def __init__(self, layers=4, hidden=256, heads=4, vocab=8192,
                 positions=256, seq=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(
            [DecoderBlock(hidden, heads, positions) for _ in range(layers)])
        self.ln_f = LayerNormByHand(hidden)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        # Tied LM head: the token embedding's transpose.
        return self.ln_f(x) @ self.wte.weight.t()


class CRNN(nn.Module):
    def __init__(self, classes=37):
        super().__init__()

        def block(cin, cout, pool):
            layers = [nn.Conv2d(cin, cout, 3, padding=1),
                      nn.BatchNorm2d(cout), nn.ReLU()]
            if pool:
                layers.append(nn.MaxPool2d(pool))
            return layers

        self.features = nn.Sequential(
            *block(1, 64, (2, 2)), *block(64, 128, (2, 2)),
            *block(128, 256, None), *block(256, 256, (2, 1)),
            *block(256, 256, None), *block(256, 256, (2, 1)),
            nn.Conv2d(256, 256, (2, 1)), nn.BatchNorm2d(256), nn.ReLU())
        # Sequence head without recurrence: 1-D convolutions over the width.
        self.sequence = nn.Sequential(
            nn.Conv1d(256, 256, 3, padding=1), nn.ReLU(),
            nn.Conv1d(256, 256, 3, padding=1), nn.ReLU())
        self.classifier = nn.Linear(256, classes)

    def forward(self, image):
        f = self.features(image)            # [b, 256, 1, w]
        f = f.squeeze(2)                     # [b, 256, w]
        f = self.sequence(f).permute(0, 2, 1)  # [b, w, 256]
        return torch.log_softmax(self.classifier(f), dim=-1)


def randomize_batch_norm(model, gen):
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)


def randomize_layer_norm(model, gen):
    for m in model.modules():
        if isinstance(m, LayerNormByHand):
            n = m.weight.numel()
            m.weight.data.copy_(1.0 + 0.1 * torch.randn(n, generator=gen))
            m.bias.data.copy_(0.1 * torch.randn(n, generator=gen))


def build(name):
    gen = torch.Generator().manual_seed(SEED + 1)
    if name == "gpt2_style":
        model = GPT2Style()
        randomize_layer_norm(model, gen)
        inputs = {"input_ids": torch.randint(0, 8192, (1, 64), generator=gen)}
        return model, inputs, ["logits"], 17
    if name == "mobilenet_v2":
        import torchvision
        model = torchvision.models.mobilenet_v2(weights=None)
        randomize_batch_norm(model, gen)
        inputs = {"input": torch.randn(1, 3, 224, 224, generator=gen)}
        return model, inputs, ["output"], 17
    if name == "crnn":
        model = CRNN()
        randomize_batch_norm(model, gen)
        inputs = {"image": torch.randn(1, 1, 32, 128, generator=gen)}
        return model, inputs, ["log_probs"], 9
    raise SystemExit(f"make_bench_models: unknown model '{name}' "
                     "(known: gpt2_style, mobilenet_v2, crnn)")


def write(out_dir, name):
    torch.manual_seed(SEED)
    model, inputs, output_names, opset = build(name)
    model.eval()
    args = tuple(inputs.values())
    with torch.no_grad():
        expected = model(*args)
    folder = os.path.join(out_dir, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, args, path, input_names=list(inputs),
                      output_names=output_names, opset_version=opset,
                      do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    for i, (input_name, value) in enumerate(inputs.items()):
        t = numpy_helper.from_array(value.numpy(), input_name)
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    t = numpy_helper.from_array(expected.numpy().astype(np.float32),
                                output_names[0])
    with open(os.path.join(data, "output_0.pb"), "wb") as f:
        f.write(t.SerializeToString())
    print(f"make_bench_models: wrote {folder}")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--names", default="gpt2_style,mobilenet_v2,crnn")
    args = ap.parse_args()
    torch.set_num_threads(1)
    for name in args.names.split(","):
        write(args.out, name)


if __name__ == "__main__":
    sys.exit(main())
