#!/usr/bin/python3
"""Writes the seed corpora of the reader fuzz targets into fuzz/corpus/<name>/.

One folder per target: cluster-spec, sharding-file, manifest, tensor-pb and
tensor-npy. Each holds small valid inputs (every field and variant the reader
knows) and tricky ones (each a different refusal). The seeds are named
seed-*; regression inputs of bugs the fuzzers found (regress-*) are written
by hand and kept. Run with Debian's Python (it sees python3-onnx):

    /usr/bin/python3 fuzz/make_reader_corpus.py

The files are committed; rerun this after changing it.
"""

import io
import json
import os
import struct

import numpy as np
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")
EXAMPLES = os.path.join(ROOT, "..", "examples", "clusters")


class Corpus:
    """The seed-* files of one folder: old ones removed, new ones written."""

    def __init__(self, name):
        self.dir = os.path.join(CORPUS, name)
        os.makedirs(self.dir, exist_ok=True)
        for old in os.listdir(self.dir):
            if old.startswith("seed-"):
                os.remove(os.path.join(self.dir, old))
        self.count = 0

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode()
        assert len(data) < 8192, (name, len(data))
        with open(os.path.join(self.dir, "seed-" + name), "wb") as f:
            f.write(data)
        self.count += 1

    def json(self, name, value):
        self.add(name + ".json", json.dumps(value, indent=1))


# --- Cluster specs (lib/Plan/ClusterSpec.cpp) --------------------------------

def cpu_kind(name="cpu-core", **extra):
    kind = {"name": name, "backend": "cpu", "cores_per_device": 1,
            "flop_per_s": {"f32": 3.2e10}, "memory_bytes": 8e9,
            "memory_bandwidth_bytes_per_s": 1e10}
    kind.update(extra)
    return kind


def link(bandwidth=1e10, latency=1e-6):
    return {"bandwidth_bytes_per_s": bandwidth, "latency_seconds": latency}


def one_node(devices=2, **extra):
    spec = {"name": "one-node", "device_kinds": [cpu_kind()],
            "nodes": [{"name": "n0", "cores": 2,
                       "memory_bandwidth_bytes_per_s": 2e10,
                       "devices": [{"name": "p%d" % i, "kind": "cpu-core"}
                                   for i in range(devices)]}],
            "links": {"intra_node": link()}}
    spec.update(extra)
    return spec


def cluster_specs():
    c = Corpus("cluster-spec")
    for name in sorted(os.listdir(EXAMPLES)):
        with open(os.path.join(EXAMPLES, name)) as f:
            c.add("example-" + name, f.read())
    c.json("one-device", {"device_kinds": [cpu_kind()],
                          "nodes": [{"name": "n", "devices": [
                              {"name": "d", "kind": "cpu-core"}]}]})
    c.json("one-node", one_node())
    c.json("mesh-2x2", one_node(4, meshes=[
        {"name": "mesh", "shape": [2, 2]},
        {"name": "row", "shape": [2], "devices": ["p2", "p3"]}]))
    c.json("mesh-0d", one_node(1, meshes=[{"name": "m", "shape": []}]))
    c.json("every-dtype", {"device_kinds": [cpu_kind(flop_per_s={
        "f32": 1e10, "f16": 2e10, "bf16": 2e10, "f64": 5e9, "i8": 4e10,
        "i32": 1e10, "i64": 5e9, "bool": 1e10})],
        "nodes": [{"name": "n", "devices": [{"name": "d", "kind": "cpu-core"}]}]})
    gpu = {"name": "v100", "backend": "cuda", "flop_per_s": {"f16": 1.25e14},
           "memory_bytes": 1.6e10, "memory_bandwidth_bytes_per_s": 9e11,
           "targetable": False, "planning_only_reason": "too old"}
    c.json("planning-only-rails", {
        "device_kinds": [gpu],
        "nodes": [{"name": "n%d" % n,
                   "rails": [{"bandwidth_bytes_per_s": 1.25e10}],
                   "intra_node_link": link(3e11, 2e-6),
                   "devices": [{"name": "g%d%d" % (n, i), "kind": "v100",
                                "rail": 0} for i in range(2)]}
                  for n in range(2)],
        "links": {"intra_node": link(1e11), "inter_node": link(1e10, 1e-5)}})
    # Tricky: each one is refused for a different reason.
    c.add("repeated-key.json", '{"name": "a", "name": "b"}')
    c.add("repeated-nested-key.json",
          json.dumps(one_node()).replace('"cores": 2', '"cores": 2, "cores": 3'))
    c.json("zero-bandwidth", one_node(links={"intra_node": link(0, 0)}))
    c.json("huge-numbers", one_node(device_kinds=[cpu_kind(
        memory_bytes=1e308, cores_per_device=2147483647)]))
    c.json("negative-latency", one_node(links={"intra_node": link(1e10, -1)}))
    c.json("huge-mesh", one_node(meshes=[
        {"name": "m", "shape": [4294967296, 4294967296]}]))
    c.json("mesh-shape-zero", one_node(meshes=[{"name": "m", "shape": [0, 2]}]))
    c.json("mesh-repeated-device", one_node(meshes=[
        {"name": "m", "shape": [2], "devices": ["p0", "p0"]}]))
    c.json("unknown-kind", {"device_kinds": [cpu_kind()], "nodes": [
        {"name": "n", "devices": [{"name": "d", "kind": "gpu"}]}]})
    c.json("rail-out-of-range", {"device_kinds": [cpu_kind()], "nodes": [
        {"name": "n", "rails": [{"bandwidth_bytes_per_s": 1e9}],
         "devices": [{"name": "d", "kind": "cpu-core", "rail": 3}]}]})
    c.add("not-an-object.json", "[1, 2, 3]")
    c.add("empty.json", "")
    c.add("unicode-names.json", json.dumps(one_node(name="\u00e9\u4e2d\U0001f600"),
                                           ensure_ascii=False))
    c.add("escaped-quote-key.json", '{"na\\"me": 1, "device_kinds": []}')
    return c


# --- Sharding files (tools/weftc/ShardingFile.cpp) ---------------------------
# The fuzz target's fixed model has the tensors x [4,8], w1 [8,6], b1 [6],
# h, h_bias, r, r_alias (= r), w2 [6,4], z [4,4], target_shape (a shape),
# y [2,8], unused_weight (no user) and dead (no output depends on it), on a
# 2x2 mesh.

def sharding_files():
    c = Corpus("sharding-file")
    c.json("input-rows", {"x": {"dims": [[0], []]}})
    c.json("weight-cols", {"w1": {"dims": [[], [1]]}})
    c.json("both-axes", {"x": {"dims": [[0, 1], []]},
                         "w2": {"dims": [[1], [0]]}})
    c.json("megatron", {"w1": {"dims": [[], [1]]}, "b1": {"dims": [[1]]},
                        "w2": {"dims": [[1], []]}})
    c.json("alias-same", {"r": {"dims": [[0], []]},
                          "r_alias": {"dims": [[0], []]}})
    c.json("alias-different", {"r": {"dims": [[0], []]},
                               "r_alias": {"dims": [[], [0]]}})
    c.json("output", {"y": {"dims": [[0], [1]]}, "z": {"dims": [[], []]}})
    c.json("shape-tensor", {"target_shape": {"dims": [[0]]}})
    c.json("unused", {"unused_weight": {"dims": [[]]}})
    c.json("dead", {"dead": {"dims": [[0], []]}})
    c.json("typo", {"w_1": {"dims": [[], [1]]}})
    c.json("empty", {})
    c.add("repeated-key.json",
          '{"x": {"dims": [[0], []]}, "x": {"dims": [[], [0]]}}')
    c.json("axis-out-of-range", {"x": {"dims": [[2], []]}})
    c.json("axis-negative", {"x": {"dims": [[-1], []]}})
    c.json("axis-twice", {"x": {"dims": [[0], [0]]}})
    c.json("axis-not-integer", {"x": {"dims": [[0.5], []]}})
    c.json("axis-huge", {"x": {"dims": [[9223372036854775807], []]}})
    c.json("wrong-rank", {"x": {"dims": [[0]]}})
    c.json("no-dims", {"x": {}})
    c.json("extra-key", {"x": {"dims": [[0], []], "mesh": "m"}})
    c.json("dims-not-list", {"x": {"dims": 0}})
    c.json("entry-not-object", {"x": [[0], []]})
    c.add("root-array.json", "[]")
    c.add("not-json.json", "{x: 1}")
    c.add("escaped-name.json", '{"\\u0078": {"dims": [[0], []]}, '
                               '"a\\"b": {"dims": []}}')
    return c


# --- Package manifests (tools/weft-run/Manifest.cpp) -------------------------
# The fuzz target writes manifest.json.sha256 beside each input, so that the
# reader gets past its digest check to the manifest's contents.

def manifest(devices=1, mesh=None, **extra):
    """A manifest as lib/Codegen/Package.cpp writes it."""
    value = {
        "format": "weft-package", "version": 1, "weft_version": "0.1.0",
        "model": "model.onnx",
        "target": {"backend": "cpu", "mcpu": "x86-64-v3", "mattr": ""},
        "devices": [{"id": i, "executable": "bin/dev0",
                     "weights": "weights/dev%d.bin" % i}
                    for i in range(devices)],
        "inputs": [{"name": "x", "dtype": "f32", "shape": [2, 3]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": [2, 3]}],
        "weights": [{"file": "weights/dev%d.bin" % i, "bytes": 64,
                     "sha256": "ab" * 32} for i in range(devices)],
        "files": [{"path": "bin/dev0", "bytes": 4096, "sha256": "cd" * 32}]
        + [{"path": "weights/dev%d.bin" % i, "bytes": 64, "sha256": "ab" * 32}
           for i in range(devices)],
        "runtime_libraries": ["libopenblas.so.0", "libdnnl.so.2",
                              "libgomp.so.1"]}
    if mesh is not None:
        value["mesh"] = {"shape": mesh}
    value.update(extra)
    return value


def manifests():
    c = Corpus("manifest")
    c.json("one-device", manifest())
    c.json("mesh-2", manifest(2, [2]))
    c.json("mesh-2x2", manifest(4, [2, 2]))
    c.json("two-devices-no-mesh", manifest(2))
    c.json("mesh-mismatch", manifest(2, [3]))
    c.json("mesh-huge", manifest(2, [9223372036854775807, 2]))
    c.json("mesh-zero", manifest(1, [0]))
    c.json("mesh-empty", manifest(1, []))
    bad = manifest(2, [2])
    bad["devices"][1]["id"] = 0
    c.json("repeated-id", bad)
    bad = manifest(2, [2])
    del bad["devices"][0]["id"]
    del bad["devices"][1]["id"]
    c.json("ids-by-position", bad)
    bad = manifest()
    bad["devices"][0]["executable"] = "../../bin/sh"
    c.json("path-leaves", bad)
    bad = manifest()
    bad["devices"][0]["weights"] = "/etc/passwd"
    c.json("path-absolute", bad)
    bad = manifest()
    bad["weights"][0]["bytes"] = -1
    c.json("negative-bytes", bad)
    bad = manifest()
    bad["weights"] = []
    c.json("no-weights-entry", bad)
    bad = manifest()
    bad["devices"][0] = {"id": 0, "library": "lib/libmodel.so"}
    c.json("library", bad)
    bad = manifest()
    del bad["files"]
    c.json("no-files", bad)
    bad = manifest()
    bad["files"][0]["sha256"] = "XYZ"
    c.json("bad-file-sha", bad)
    bad = manifest()
    bad["files"] = bad["files"][1:]
    c.json("executable-unlisted", bad)
    c.json("version-2", manifest(version=2))
    c.json("other-format", manifest(format="onnx"))
    c.json("no-devices", manifest(0))
    c.add("not-an-object.json", "[]")
    c.add("empty.json", "")
    c.add("truncated.json", json.dumps(manifest())[:40])
    return c


# --- Tensor files (runtime/core) ---------------------------------------------

def pb_tensors():
    c = Corpus("tensor-pb")
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
        "f64": np.array([1.5, -2.0, np.inf], dtype=np.float64),
        "f16": np.array([[0.5, -1.0], [65504, 6e-8]], dtype=np.float16),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u8": np.array([0, 255], dtype=np.uint8),
        "i32": np.array([-(2 ** 31), 2 ** 31 - 1], dtype=np.int32),
        "i64": np.array([3, 0, 41], dtype=np.int64),
        "bool": np.array([True, False, True]),
        "scalar": np.array(7.0, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    for name, array in arrays.items():
        tensor = numpy_helper.from_array(array, "t_" + name)
        c.add("raw-%s.pb" % name, tensor.SerializeToString())
    # Values in the typed fields, as some writers store them.
    typed = [
        ("float-data", helper.make_tensor("f", TensorProto.FLOAT, [2],
                                          [1.0, -1.0])),
        ("double-data", helper.make_tensor("d", TensorProto.DOUBLE, [1],
                                           [2.0])),
        ("int64-data", helper.make_tensor("n", TensorProto.INT64, [3],
                                          [1, -1, 2 ** 40])),
        ("int32-data-i8", helper.make_tensor("s", TensorProto.INT8, [2],
                                             [-5, 5])),
        ("int32-data-bool", helper.make_tensor("b", TensorProto.BOOL, [2],
                                               [1, 0])),
        ("int32-data-f16", helper.make_tensor("h", TensorProto.FLOAT16, [1],
                                              np.array([1.0], np.float16))),
        ("bf16", helper.make_tensor("bf", TensorProto.BFLOAT16, [2],
                                    [1.0, -2.0])),
    ]
    for name, tensor in typed:
        c.add(name + ".pb", tensor.SerializeToString())
    # Tricky ones.
    t = numpy_helper.from_array(np.ones(3, np.float32), "doc")
    t.doc_string = "skipped by the reader"
    c.add("doc-string.pb", t.SerializeToString())
    t = numpy_helper.from_array(np.ones(4, np.float32), "short")
    t.raw_data = t.raw_data[:-1]
    c.add("short-raw.pb", t.SerializeToString())
    t = numpy_helper.from_array(np.ones(2, np.float32), "ext")
    t.data_location = TensorProto.EXTERNAL
    c.add("external.pb", t.SerializeToString())
    c.add("string.pb", helper.make_tensor("s", TensorProto.STRING, [1],
                                          [b"x"]).SerializeToString())
    c.add("complex.pb", helper.make_tensor("c", TensorProto.COMPLEX64, [1],
                                           [1 + 2j]).SerializeToString())
    t = numpy_helper.from_array(np.ones(2, np.float32), "two")
    t.float_data.extend([1.0, 1.0])
    c.add("two-sources.pb", t.SerializeToString())
    t = TensorProto(name="neg", data_type=TensorProto.FLOAT, dims=[-1])
    c.add("negative-dim.pb", t.SerializeToString())
    t = TensorProto(name="big", data_type=TensorProto.FLOAT,
                    dims=[2 ** 62, 2 ** 62, 0])
    c.add("overflowing-dims.pb", t.SerializeToString())
    t = TensorProto(name="\u00e9\x00\xff", data_type=TensorProto.BOOL,
                    dims=[1], raw_data=b"\x02")
    c.add("bad-bool.pb", t.SerializeToString())
    # dims=[2], data_type=FLOAT packed, raw_data of 8 bytes, by hand.
    c.add("packed-dims.pb", bytes([0x0a, 0x01, 0x02, 0x10, 0x01, 0x4a, 0x08])
          + struct.pack("<2f", 1.0, 2.0))
    c.add("field-zero.pb", b"\x00\x01")
    c.add("group.pb", b"\x0b\x0c")
    c.add("long-varint.pb", b"\x10" + b"\xff" * 10 + b"\x01")
    c.add("empty.pb", b"")
    return c


def npy_bytes(array, version=None):
    out = io.BytesIO()
    if version is None:
        np.save(out, array, allow_pickle=False)
    else:
        np.lib.format.write_array(out, array, version=version,
                                  allow_pickle=False)
    return out.getvalue()


def npy_header(text, data=b"", version=1):
    header = text.encode("latin1")
    length = struct.pack("<H", len(header)) if version == 1 else \
        struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header + data


def npy_tensors():
    c = Corpus("tensor-npy")
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64": np.array([1.5, np.nan]),
        "f16": np.array([1, 2, 3], dtype=np.float16),
        "i8": np.array([-1, 1], dtype=np.int8),
        "u8": np.array([[1], [2]], dtype=np.uint8),
        "i32": np.array([7], dtype=np.int32),
        "i64": np.arange(4, dtype=np.int64).reshape(2, 1, 2),
        "bool": np.array([True, False]),
        "scalar": np.array(3, dtype=np.int64),
        "empty": np.zeros((2, 0), dtype=np.float32),
    }
    for name, array in arrays.items():
        c.add(name + ".npy", npy_bytes(array))
    c.add("version-2.npy", npy_bytes(np.ones(2, np.float32), (2, 0)))
    c.add("version-3.npy", npy_bytes(np.ones(2, np.float32), (3, 0)))
    c.add("fortran.npy", npy_bytes(np.asfortranarray(np.ones((2, 3)))))
    c.add("big-endian.npy", npy_bytes(np.ones(2, dtype=">f4")))
    c.add("python2-long.npy", npy_header(
        "{'descr': '<i8', 'fortran_order': False, 'shape': (2L,), }\n",
        struct.pack("<2q", 1, 2)))
    c.add("double-quotes.npy", npy_header(
        '{"descr": "<f4", "fortran_order": False, "shape": (1,)}\n',
        struct.pack("<f", 1.0)))
    c.add("key-twice.npy", npy_header(
        "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, "
        "'shape': (), }\n", b"\0" * 4))
    c.add("structured.npy", npy_bytes(np.zeros(1, dtype=[("a", "<f4")])))
    c.add("overflowing-shape.npy", npy_header(
        "{'descr': '<f4', 'fortran_order': False, "
        "'shape': (4294967296, 4294967296, 0), }\n"))
    c.add("huge-dim.npy", npy_header(
        "{'descr': '<f4', 'fortran_order': False, "
        "'shape': (99999999999999999999,), }\n"))
    c.add("bad-bool.npy", npy_header(
        "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }\n",
        b"\x07"))
    c.add("truncated-data.npy", npy_bytes(np.ones(8, np.float32))[:-3])
    c.add("header-too-long.npy", b"\x93NUMPY\x01\x00\xff\xff{")
    c.add("unknown-version.npy", b"\x93NUMPY\x04\x00\x00\x00")
    c.add("magic-only.npy", b"\x93NUMPY")
    return c


def main():
    corpora = [cluster_specs(), sharding_files(), manifests(), pb_tensors(),
               npy_tensors()]
    for corpus in corpora:
        print(f"wrote {corpus.count} seeds to {corpus.dir}")


if __name__ == "__main__":
    main()
