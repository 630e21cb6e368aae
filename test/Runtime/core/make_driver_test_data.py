#!/usr/bin/python3
"""Writes the data of the driver's end-to-end tests into OUT.

OUT/pkg is the package of DriverTestProgram (bin/dev0 is built there by
CMake): this adds weights/dev0.bin and manifest.json. OUT/pkg-* are broken
variants for weft-run, OUT/data/<case>/ ONNX test-data folders written with
onnx.numpy_helper, so that the runtime's own protobuf decoder is checked
against the reference encoder.

usage: make_driver_test_data.py OUT
"""

import hashlib
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "lib"))
from weft_package import write_manifest  # noqa: E402
from onnx import helper, numpy_helper, TensorProto

X = np.array([[1.0, -2.0, 3.5], [0.0, 4.25, -1.5]], dtype=np.float32)
N = np.array([3, 0, 41], dtype=np.int64)
W0 = np.float32(0.5)


def outputs(x, n):
    return (x * np.float32(2) + W0).astype(np.float32), n + 1


def save(path, array, name=None):
    tensor = numpy_helper.from_array(array, name) if name else \
        numpy_helper.from_array(array)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def write_case(root, case, x, n, y=None, z=None, names=True,
               input_names=("x", "n"), output_names=("y", "n plus 1")):
    folder = os.path.join(root, "data", case)
    os.makedirs(folder, exist_ok=True)
    ey, ez = outputs(x, n)
    y = ey if y is None else y
    z = ez if z is None else z
    for i, (array, name) in enumerate(zip((x, n), input_names)):
        save(os.path.join(folder, f"input_{i}.pb"), array,
             name if names else None)
    for i, (array, name) in enumerate(zip((y, z), output_names)):
        save(os.path.join(folder, f"output_{i}.pb"), array,
             name if names else None)
    return folder


def write_package(root, name, devices=1, weights_bytes=None, sha=None):
    pkg = os.path.join(root, name)
    os.makedirs(os.path.join(pkg, "weights"), exist_ok=True)
    weights = np.zeros(16, dtype=np.float32)
    weights[0] = W0
    blob = weights.tobytes()
    with open(os.path.join(pkg, "weights", "dev0.bin"), "wb") as f:
        f.write(blob)
    if name != "pkg":
        # Variants share the test program's executable.
        link = os.path.join(pkg, "bin")
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", "pkg", "bin"), link)
    device = {"id": 0, "backend": "cpu", "executable": "bin/dev0",
              "weights": "weights/dev0.bin", "arena_bytes": 256}
    manifest = {
        "format": "weft-package", "version": 1, "weft_version": "0.1.0",
        "model": "driver_test.onnx",
        "target": {"backend": "cpu", "mcpu": "x86-64-v3", "mattr": ""},
        "devices": [dict(device, id=k) for k in range(devices)],
        "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]},
                   {"name": "n", "dtype": "i64", "shape": [3]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": [2, 3]},
                    {"name": "n plus 1", "dtype": "i64", "shape": [3]}],
        "weights": [{"file": "weights/dev0.bin",
                     "bytes": len(blob) if weights_bytes is None
                     else weights_bytes,
                     "sha256": sha or hashlib.sha256(blob).hexdigest()}],
        "runtime_libraries": ["libopenblas.so.0", "libdnnl.so.2",
                              "libgomp.so.1"],
    }
    write_manifest(pkg, manifest)


def main():
    root = sys.argv[1]
    shutil.rmtree(os.path.join(root, "data"), ignore_errors=True)
    write_package(root, "pkg")
    write_package(root, "pkg-two-devices", devices=2)
    write_package(root, "pkg-bad-size", weights_bytes=60)
    write_package(root, "pkg-bad-sha", sha="0" * 64)
    # An executable cut short after the manifest was written (an
    # interrupted copy): a real copy, not the shared symlinked bin/.
    pkg = os.path.join(root, "pkg-truncated")
    write_package(root, "pkg-truncated")
    bin_dir = os.path.join(pkg, "bin")
    if os.path.islink(bin_dir):
        os.remove(bin_dir)
    else:
        shutil.rmtree(bin_dir)
    os.makedirs(bin_dir)
    exe = os.path.join(pkg, "bin", "dev0")
    shutil.copy2(os.path.join(root, "pkg", "bin", "dev0"), exe)
    write_package(root, "pkg-truncated")
    with open(exe, "r+b") as f:
        f.truncate(os.path.getsize(exe) // 2)

    y, z = outputs(X, N)
    write_case(root, "ok", X, N)
    write_case(root, "positional", X, N, names=False)
    write_case(root, "unknown-name", X, N, input_names=("data_0", "n"))
    bad_y = y.copy()
    bad_y[1, 2] += 0.01
    write_case(root, "mismatch", X, N, y=bad_y)
    write_case(root, "within-tolerance", X, N, y=y * np.float32(1 + 1e-4))
    write_case(root, "int-mismatch", X, N, z=z + np.array([0, 1, 0]))
    write_case(root, "shape-mismatch", X, N, y=y.reshape(3, 2))
    x_nan = X.copy()
    x_nan[0, 1] = np.nan
    write_case(root, "nan", x_nan, N)
    write_case(root, "nan-mismatch", x_nan, N,
               y=np.nan_to_num(outputs(x_nan, N)[0]))
    write_case(root, "bad-shape", X.reshape(3, 2), N)
    write_case(root, "bad-dtype", X.astype(np.float64), N)
    write_case(root, "kernel-error", X, np.array([-1, 0, 0], np.int64))
    write_case(root, "internal-error", X, np.array([-7, 0, 0], np.int64))
    write_case(root, "crash", X, np.array([-11, 0, 0], np.int64))

    folder = write_case(root, "missing-input", X, N)
    os.remove(os.path.join(folder, "input_1.pb"))
    folder = write_case(root, "truncated", X, N)
    path = os.path.join(folder, "input_0.pb")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:len(data) - 5])
    folder = write_case(root, "garbage", X, N)
    open(os.path.join(folder, "input_1.pb"), "wb").write(b"\xff" * 13)

    # Values in the typed fields (float_data, int64_data) instead of raw_data.
    folder = write_case(root, "typed", X, N)
    for i, (array, name, dtype) in enumerate(
            ((X, "x", TensorProto.FLOAT), (N, "n", TensorProto.INT64))):
        tensor = helper.make_tensor(name, dtype, array.shape,
                                    array.flatten().tolist())
        with open(os.path.join(folder, f"input_{i}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())

    # --stream: five distinct requests, each folder with its expected
    # outputs; the same with request 2 missing; expected outputs shifted by
    # one request.
    for r in range(5):
        x = X + np.float32(r)
        n = N + r
        write_case(root, f"requests/request_{r}", x, n)
        if r != 1:
            write_case(root, f"requests-gap/request_{r}", x, n)
        nx, nn = X + np.float32((r + 1) % 5), N + (r + 1) % 5
        write_case(root, f"requests-shifted/request_{r}", x, n,
                   *outputs(nx, nn))

    npy = os.path.join(root, "data", "npy")
    os.makedirs(npy, exist_ok=True)
    np.save(os.path.join(npy, "x.npy"), X)
    np.save(os.path.join(npy, "n.npy"), N)
    np.save(os.path.join(npy, "x_fortran.npy"), np.asfortranarray(X))
    with open(os.path.join(root, "data", "short-weights.bin"), "wb") as f:
        f.write(b"\0" * 32)


if __name__ == "__main__":
    main()
