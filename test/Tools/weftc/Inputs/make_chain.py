#!/usr/bin/env python3
"""Writes a textual ONNX model of N MatMul -> Relu layers over one square
input, with no weights: a model that takes weftc a few seconds to compile
while staying small on disk.

Usage: make_chain.py N > chain.onnxtext
"""
import sys


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    layers = int(sys.argv[1])
    lines = ['<ir_version: 8, opset_import: ["" : 17]>',
             "chain (float[32, 32] x) => (float[32, 32] y) {"]
    previous = "x"
    for i in range(layers):
        out = "y" if i == layers - 1 else "r%d" % i
        lines.append("  m%d = MatMul(%s, x)" % (i, previous))
        lines.append("  %s = Relu(m%d)" % (out, i))
        previous = out
    lines.append("}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
