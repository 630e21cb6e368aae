#!/usr/bin/python3
"""Writes the data of the mesh driver's end-to-end tests into OUT.

OUT/pkg2 and OUT/pkg4 are the packages of MeshTestProgram.cpp on the meshes
[2] and [2,2] (CMake builds bin/dev0 in each; every device runs it): this
adds weights/dev<k>.bin (w[0] = 1 + k/2) and manifest.json. OUT/pkg2-
noweights is a copy of pkg2 without weights/dev1.bin, OUT/pkg2-bad-mesh a
manifest whose mesh disagrees with its devices, OUT/pkg2-exit5 one whose
device 1 is a script that exits with 5. OUT/pipe is the two-stage
pipeline of PipelineTestProgram.cpp (CMake builds bin/stage0 and
bin/stage1): this adds weights/dev<k>.bin of its 3 world ranks. OUT/data
holds the input and the expected outputs of each mesh and of the pipeline
(data/pipe), written with onnx.numpy_helper.

usage: make_mesh_test_data.py OUT
"""

import hashlib
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "lib"))
from weft_package import refresh_manifest, write_manifest  # noqa: E402
from onnx import numpy_helper

X = np.arange(24, dtype=np.float32).reshape(4, 6) / np.float32(4) - 2
COLS = 6


def weight(k):
    return np.float32(1 + 0.5 * k)


def group_rank(mesh, rank):
    """The group rank over the program's axes: [0] on [2], [1, 0] on [2,2]."""
    if mesh == [2]:
        return rank
    c0, c1 = divmod(rank, 2)
    return c1 * 2 + c0


def expected(mesh):
    devices = int(np.prod(mesh))
    chunk = -(-COLS // devices)
    y = X.copy()
    for rank in range(devices):
        g = group_rank(mesh, rank)
        start, end = g * chunk, min(COLS, (g + 1) * chunk)
        y[:, start:end] = X[:, start:end] * weight(rank)
    return y, y.sum(axis=1, dtype=np.float32)


def save(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def write_case(root, case, y, total):
    folder = os.path.join(root, "data", case)
    os.makedirs(folder, exist_ok=True)
    save(os.path.join(folder, "input_0.pb"), X, "x")
    save(os.path.join(folder, "output_0.pb"), y, "y")
    save(os.path.join(folder, "output_1.pb"), total, "total")


def write_package(root, name, mesh, skip_weights=(), shape=None):
    pkg = os.path.join(root, name)
    devices = int(np.prod(mesh))
    os.makedirs(os.path.join(pkg, "weights"), exist_ok=True)
    entries = []
    for k in range(devices):
        blob = np.array([weight(k)] + [0] * 15, dtype=np.float32).tobytes()
        path = os.path.join(pkg, "weights", f"dev{k}.bin")
        if k in skip_weights:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "wb") as f:
                f.write(blob)
        entries.append({"file": f"weights/dev{k}.bin", "bytes": len(blob),
                        "sha256": hashlib.sha256(blob).hexdigest()})
    manifest = {
        "format": "weft-package", "version": 1, "weft_version": "0.1.0",
        "model": "mesh_test.onnx", "kind": "executable",
        "target": {"backend": "cpu", "mcpu": "x86-64-v3", "mattr": ""},
        "mesh": {"shape": shape if shape is not None else mesh},
        "devices": [{"id": k, "backend": "cpu", "executable": "bin/dev0",
                     "weights": f"weights/dev{k}.bin", "arena_bytes": 448}
                    for k in range(devices)],
        "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 6]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": [4, 6]},
                    {"name": "total", "dtype": "f32", "shape": [4]}],
        "weights": entries,
        "runtime_libraries": ["libopenblas.so.0", "libdnnl.so.2",
                              "libgomp.so.1", "libmpi.so.40"],
    }
    write_manifest(pkg, manifest)
    return pkg


def copy_executable(root, source, target):
    """A real copy: the driver finds its weights next to /proc/self/exe."""
    os.makedirs(os.path.join(root, target, "bin"), exist_ok=True)
    shutil.copy2(os.path.join(root, source, "bin", "dev0"),
                 os.path.join(root, target, "bin", "dev0"))
    # The manifest was written before the copy: list the copy's checksum.
    refresh_manifest(os.path.join(root, target))


def write_pipeline(root):
    """Weights of world ranks 0-2 (w[0] = 1 + k/2), the input and y."""
    os.makedirs(os.path.join(root, "pipe", "weights"), exist_ok=True)
    for k in range(3):
        blob = np.array([weight(k)] + [0] * 15, dtype=np.float32).tobytes()
        with open(os.path.join(root, "pipe", "weights", f"dev{k}.bin"),
                  "wb") as f:
            f.write(blob)
    x = np.array([0.5, 1, 1.5, 2], dtype=np.float32)
    # Both devices of stage 0 send the same sum s = x w0 + x w1; stage 1
    # gives (s + s) w2 + x = 11 x with w = 1, 1.5, 2.
    s = x * weight(0) + x * weight(1)
    y = (s + s) * weight(2) + x
    folder = os.path.join(root, "data", "pipe")
    os.makedirs(folder, exist_ok=True)
    save(os.path.join(folder, "input_0.pb"), x, "x")
    save(os.path.join(folder, "output_0.pb"), y, "y")


def main():
    root = sys.argv[1]
    shutil.rmtree(os.path.join(root, "data"), ignore_errors=True)
    write_package(root, "pkg2", [2])
    write_package(root, "pkg4", [2, 2])
    write_package(root, "pkg2-noweights", [2], skip_weights=(1,))
    copy_executable(root, "pkg2", "pkg2-noweights")
    write_package(root, "pkg2-bad-mesh", [2], shape=[3])
    copy_executable(root, "pkg2", "pkg2-bad-mesh")
    # Device 1 is a script that exits at once with a code no device
    # program returns (as a rank that dies before MPI starts).
    pkg = write_package(root, "pkg2-exit5", [2])
    copy_executable(root, "pkg2", "pkg2-exit5")
    script = os.path.join(pkg, "bin", "fault")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 5\n")
    os.chmod(script, 0o755)
    manifest_path = os.path.join(pkg, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["devices"][1]["executable"] = "bin/fault"
    manifest.pop("files")
    write_manifest(pkg, manifest)
    # A copy whose executable was cut short after weftc wrote the manifest
    # (an interrupted copy): the manifest's checksum still names the whole.
    pkg = write_package(root, "pkg2-truncated", [2])
    copy_executable(root, "pkg2", "pkg2-truncated")
    exe = os.path.join(pkg, "bin", "dev0")
    with open(exe, "r+b") as f:
        f.truncate(os.path.getsize(exe) // 2)
    # A manifest edited after weftc wrote it (its digest no longer matches).
    pkg = write_package(root, "pkg2-edited", [2])
    copy_executable(root, "pkg2", "pkg2-edited")
    manifest_path = os.path.join(pkg, "manifest.json")
    with open(manifest_path) as f:
        text = f.read()
    with open(manifest_path, "w") as f:
        f.write(text.replace('"arena_bytes": 448', '"arena_bytes": 449'))
    for mesh, suffix in (([2], "2"), ([2, 2], "4")):
        y, total = expected(mesh)
        write_case(root, "expect" + suffix, y, total)
        bad = y.copy()
        bad[2, 5] += 0.5
        write_case(root, "mismatch" + suffix, bad, total)
    write_pipeline(root)


if __name__ == "__main__":
    main()
