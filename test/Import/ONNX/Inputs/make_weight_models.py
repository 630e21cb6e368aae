#!/usr/bin/env python3
"""Writes models whose weights live in the model file or in external-data
files, good and bad, for weights.test.

Usage: make_weight_models.py OUTDIR
Writes OUTDIR/*.onnx, the external data files, and OUTDIR/expected.check with
the byte offsets that weft.weight must report.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model_with(init, name):
    graph = helper.make_graph(
        [helper.make_node("Identity", [init.name], ["y"], name="id")], name, [],
        [helper.make_tensor_value_info("y", init.data_type, list(init.dims))],
        [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def external(name, location, offset=None, length=None, shape=(300,)):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset),
                       ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
    return t


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "sub"), exist_ok=True)
    data = np.arange(300, dtype=np.float32)
    checks = []

    # Raw data inside the model file, referred to in place.
    raw = numpy_helper.from_array(data, "w")
    path = os.path.join(out, "in_model.onnx")
    onnx.save(model_with(raw, "in_model"), path)
    blob = open(path, "rb").read()
    offset = blob.find(data.tobytes())
    checks.append('IN-MODEL: weft.weight "w" from "in_model.onnx" offset %d '
                  'size 1200 checksum "{{[0-9a-f]+}}" : tensor<300xf32>'
                  % offset)

    # Packed float_data (not raw_data) is contiguous too.
    packed = helper.make_tensor("w", TensorProto.FLOAT, [300], data.tolist())
    path = os.path.join(out, "packed.onnx")
    onnx.save(model_with(packed, "packed"), path)
    blob = open(path, "rb").read()
    checks.append('PACKED: weft.weight "w" from "packed.onnx" offset %d size 1200'
                  % blob.find(data.tobytes()))

    # External data: 16 bytes of padding, then the tensor, in a subfolder.
    with open(os.path.join(out, "sub", "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + data.tobytes())
    onnx.save(model_with(external("w", "sub/weights.bin", 16, 1200), "ext"),
              os.path.join(out, "external.onnx"))
    checks.append('EXTERNAL: weft.weight "w" from "sub/weights.bin" offset 16 '
                  'size 1200')
    # A small external tensor is read into the IR.
    onnx.save(model_with(external("w", "sub/weights.bin", 16, 8, shape=(2,)),
                         "small"), os.path.join(out, "external_small.onnx"))
    checks.append('SMALL: weft.constant dense<[0.000000e+00, 1.000000e+00]> '
                  ': tensor<2xf32>')

    # Untrusted external data.
    bad = {
        "absolute": external("w", os.path.abspath(os.path.join(out, "sub",
                                                               "weights.bin"))),
        "dotdot": external("w", "../weights.bin"),
        "missing": external("w", "sub/nope.bin"),
        "past_end": external("w", "sub/weights.bin", 100000, 1200),
        "too_long": external("w", "sub/weights.bin", 16, 2400),
        "wrong_size": external("w", "sub/weights.bin", 0, 1216),
        "no_location": external("w", ""),
        "bad_offset": external("w", "sub/weights.bin", "-4", 1200),
        "escape_link": external("w", "link/weights.bin", 16, 1200),
    }
    outside = os.path.join(out, "..", os.path.basename(out) + "-outside")
    os.makedirs(outside, exist_ok=True)
    with open(os.path.join(outside, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + data.tobytes())
    link = os.path.join(out, "link")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(outside), link)
    for name, tensor in bad.items():
        onnx.save(model_with(tensor, name), os.path.join(out, name + ".onnx"))

    with open(os.path.join(out, "expected.check"), "w") as f:
        f.write("\n".join(checks) + "\n")


if __name__ == "__main__":
    main()
