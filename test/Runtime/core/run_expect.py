#!/usr/bin/python3
"""Runs a command and checks its exit code and output, for ctest.

usage: run_expect.py --exit N [--stdout RE]... [--stderr RE]...
                     [--no-stdout RE]... [--json-trace FILE]
                     [--tensors DIR:FORMAT:EXPECTED_DIR] -- COMMAND...

--json-trace checks that FILE is a Chrome trace naming the test program's
ops; --tensors that DIR holds output_<i>.<FORMAT> files equal to the
output_<i>.pb files of EXPECTED_DIR (read with onnx / numpy).
"""

import argparse
import json
import os
import re
import subprocess
import sys


def fail(message, result=None):
    print("FAIL:", message)
    if result is not None:
        print("exit code:", result.returncode)
        print("--- stdout ---\n" + result.stdout)
        print("--- stderr ---\n" + result.stderr)
    sys.exit(1)


def check_trace(path):
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    names = {e["name"] for e in events}
    for name in ("scale x", "add w0", "increment", "run 0"):
        if name not in names:
            fail(f"trace {path} has no event '{name}': {sorted(names)}")
    for e in events:
        for key in ("name", "cat", "ts", "dur", "pid", "tid"):
            if key not in e:
                fail(f"trace event {e} lacks '{key}'")
        if e["dur"] < 0:
            fail(f"negative duration in {e}")


def check_tensors(spec):
    import numpy as np
    from onnx import TensorProto, numpy_helper
    folder, fmt, expected_dir = spec.split(":")
    for i in range(2):
        with open(os.path.join(expected_dir, f"output_{i}.pb"), "rb") as f:
            expected = TensorProto()
            expected.ParseFromString(f.read())
        path = os.path.join(folder, f"output_{i}.{fmt}")
        if fmt == "npy":
            actual = np.load(path)
        else:
            with open(path, "rb") as f:
                proto = TensorProto()
                proto.ParseFromString(f.read())
            if proto.name != expected.name:
                fail(f"{path} is named '{proto.name}', not '{expected.name}'")
            actual = numpy_helper.to_array(proto)
        want = numpy_helper.to_array(expected)
        if actual.dtype != want.dtype or actual.shape != want.shape or \
                not np.array_equal(actual, want):
            fail(f"{path} holds {actual!r}, expected {want!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", type=int, required=True)
    parser.add_argument("--stdout", action="append", default=[])
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--no-stdout", action="append", default=[])
    parser.add_argument("--json-trace")
    parser.add_argument("--tensors")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120)
    except subprocess.TimeoutExpired:
        fail("timed out: " + " ".join(command))
    if result.returncode != args.exit:
        fail(f"expected exit code {args.exit}", result)
    for pattern in args.stdout:
        if not re.search(pattern, result.stdout, re.M):
            fail(f"stdout does not match /{pattern}/", result)
    for pattern in args.no_stdout:
        if re.search(pattern, result.stdout, re.M):
            fail(f"stdout matches /{pattern}/", result)
    for pattern in args.stderr:
        if not re.search(pattern, result.stderr, re.M):
            fail(f"stderr does not match /{pattern}/", result)
    if args.json_trace:
        check_trace(args.json_trace)
    if args.tensors:
        check_tensors(args.tensors)
    print("ok:", " ".join(command))


if __name__ == "__main__":
    main()
