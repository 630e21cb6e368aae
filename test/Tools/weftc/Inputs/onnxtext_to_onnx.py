#!/usr/bin/env python3
"""Writes an ONNX textual model as a binary .onnx, so that weftc stores its
large initializers as weft.weight (referring to the file) rather than as
constants, as it does for real models.

Usage: onnxtext_to_onnx.py IN.onnxtext OUT.onnx
"""
import sys

import onnx
import onnx.parser


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    with open(sys.argv[1]) as f:
        model = onnx.parser.parse_model(f.read())
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
