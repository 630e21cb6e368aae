#!/usr/bin/env python3
"""Checks that plan.json's collectives are the ones device 0 performs.

Usage: check_plan_collectives.py PLAN.json DEV0.mlir

DEV0.mlir is `weftc --emit=mlir`'s partitioned program of device 0. Every
collective op in it (all_reduce, all_gather, reduce_scatter, all_to_all,
local_slice), in program order, must match plan.json's "collectives" entry
at the same position: kind, mesh axes, input and output bytes. Prints the
number checked; exits 1 naming the first difference.
"""

import json
import re
import sys

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1,
                 "i32": 4, "i64": 8}
OP = re.compile(r"weft\.(all_reduce|all_gather|reduce_scatter|all_to_all|"
                r"local_slice) %\S+ on @\S+ over \[([0-9, ]*)\].*?: (.*)$")
TENSOR = re.compile(r"tensor<([0-9x]*?)x?([a-z]+[0-9]+)>")


def tensor_bytes(text):
    match = TENSOR.search(text)
    if not match:
        raise ValueError("no tensor type in '%s'" % text)
    dims, element = match.groups()
    count = 1
    for d in filter(None, dims.split("x")):
        count *= int(d)
    return count * ELEMENT_BYTES[element]


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 1
    plan = json.load(open(sys.argv[1]))["collectives"]
    performed = []
    for line in open(sys.argv[2]):
        match = OP.search(line)
        if not match:
            continue
        kind, axes, types = match.groups()
        parts = types.split("->")
        in_bytes = tensor_bytes(parts[0])
        out_bytes = tensor_bytes(parts[-1])
        performed.append({"kind": kind,
                          "axes": [int(a) for a in axes.split(",") if a.strip()],
                          "input_bytes": in_bytes, "output_bytes": out_bytes})
    if len(performed) != len(plan):
        print("plan.json lists %d collectives, device 0 performs %d" %
              (len(plan), len(performed)))
        return 1
    for i, (want, have) in enumerate(zip(plan, performed)):
        for key in ("kind", "axes", "input_bytes", "output_bytes"):
            if want[key] != have[key]:
                print("collective %d: plan.json says %s %s, device 0 does %s"
                      % (i, key, want[key], have[key]))
                return 1
    print("%d collectives match" % len(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
