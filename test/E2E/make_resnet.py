#!/usr/bin/env python3
"""Writes a ResNet with bottleneck blocks as ONNX, for the stage planner.

The network is torchvision's ResNet with its Bottleneck block (1x1 reduce,
3x3, 1x1 expand, a projected shortcut where the shape changes), seeded and
exported with torch.onnx.export at opset 17 in eval mode, so the exporter
folds every BatchNormalization into its convolution (as in
../shared/models/resnet18). Shapes are static: input "input"
f32[batch, 3, image, image], output "logits" f32[batch, 1000].

  --depth 50    blocks 3,4,6,3 (torchvision's resnet50, 25.6 M parameters)
  --depth 101   blocks 3,4,23,3
  --depth 26    blocks 2,2,2,2

--width-scale multiplies every channel count (the stem's 64, each stage's
bottleneck width and so its 4x expansion), rounded, at least 1; 1.0 gives
torchvision's model exactly.

Usage: make_resnet.py --out PATH [--depth 50|101|26] [--batch B]
                      [--image S] [--width-scale F] [--seed N]

Examples:
  make_resnet.py --out /tmp/resnet50.onnx
  make_resnet.py --out /tmp/r26.onnx --depth 26 --width-scale 0.25 --image 64

Prints one line: nodes, parameters and file size.
Exit codes: 0 written, 1 bad options or a file that cannot be written,
77 PyTorch, torchvision or ONNX missing.
"""

import argparse
import math
import os
import sys
import warnings

try:
    import onnx
    import torch
    from torchvision.models.resnet import Bottleneck, ResNet
except ImportError as err:
    print("make_resnet.py: missing Python module: %s" % err, file=sys.stderr)
    sys.exit(77)

OPSET = 17
BLOCKS = {26: [2, 2, 2, 2], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3]}


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


class ScaledResNet(ResNet):
    """torchvision's ResNet with every channel count times `scale`."""

    def __init__(self, blocks, scale):
        super().__init__(Bottleneck, blocks)
        if scale == 1.0:
            return
        width = [max(1, round(c * scale)) for c in (64, 128, 256, 512)]
        # Rebuild what depends on the widths, as ResNet.__init__ does.
        self.inplanes = width[0]
        self.conv1 = torch.nn.Conv2d(3, width[0], 7, stride=2, padding=3,
                                     bias=False)
        self.bn1 = torch.nn.BatchNorm2d(width[0])
        self.layer1 = self._make_layer(Bottleneck, width[0], blocks[0])
        self.layer2 = self._make_layer(Bottleneck, width[1], blocks[1],
                                       stride=2)
        self.layer3 = self._make_layer(Bottleneck, width[2], blocks[2],
                                       stride=2)
        self.layer4 = self._make_layer(Bottleneck, width[3], blocks[3],
                                       stride=2)
        self.fc = torch.nn.Linear(width[3] * Bottleneck.expansion, 1000)
        for m in self.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_out",
                                              nonlinearity="relu")


def randomize_norms(model):
    """Gives every BatchNorm its own statistics and affine parameters (as
    make_models.py does). With torchvision's initial ones every folded bias
    is zero, and the exporter shares equal initializers through Identity
    nodes."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n) * 0.2)
            m.running_var.copy_(torch.rand(n) + 0.5)
            m.weight.copy_(torch.rand(n) + 0.5)
            m.bias.copy_(torch.randn(n) * 0.2)


def main():
    parser = ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    parser.add_argument("--depth", type=int, default=50,
                        choices=sorted(BLOCKS))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--image", type=int, default=224,
                        help="input height and width (default 224)")
    parser.add_argument("--width-scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.batch < 1:
        parser.error("--batch must be at least 1, got %d" % args.batch)
    if args.image < 32:
        # Five stride-2 steps; smaller images end in an empty feature map.
        parser.error("--image must be at least 32, got %d" % args.image)
    if not args.width_scale > 0:
        parser.error("--width-scale must be positive, got %g" %
                     args.width_scale)

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = ScaledResNet(BLOCKS[args.depth], args.width_scale).eval()
    with torch.no_grad():
        randomize_norms(model)
    x = torch.randn(args.batch, 3, args.image, args.image)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), args.out, opset_version=OPSET,
                              input_names=["input"], output_names=["logits"],
                              do_constant_folding=True,
                              training=torch.onnx.TrainingMode.EVAL)
    except OSError as err:
        print("make_resnet.py: cannot write %s: %s" % (args.out, err),
              file=sys.stderr)
        return 1
    proto = onnx.load(args.out)
    onnx.checker.check_model(proto)
    # Weights as stored: BatchNormalization folded into conv biases.
    params = sum(math.prod(t.dims) for t in proto.graph.initializer)
    print("make_resnet.py: %s: resnet%d, %d nodes, %d parameters, %d bytes" %
          (args.out, args.depth, len(proto.graph.node), params,
           os.path.getsize(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
