"""Checks that a measured profile names ops as the predicted timeline does
(docs/Simulator.md, "Predicted and measured side by side").

Usage: check_op_names.py TIMELINE.json TRACE.json

TIMELINE.json is weftc's simulated timeline of a package, TRACE.json what
`weft-run --profile` wrote for it (one rank's, or the merged trace). Both
use the categories "op", "collective", "transfer" (and "compute", "wait" for
the simulation's intervals, "run" for a measured run); on every device, each
op the run measured is an op the timeline predicts, under the same name.
The predicted ones may be more: ops that codegen fuses into one loop nest
are predicted one by one and measured as one. A measured op named by its
kind (no ONNX node: e.g. the zeros a rank returns for an output another
stage produces) may be missing from the prediction, which prices it at 0.
"""
import collections
import json
import sys

predicted_path, measured_path = sys.argv[1:3]
predicted = json.load(open(predicted_path))["traceEvents"]
measured = json.load(open(measured_path))["traceEvents"]

predicted_names = collections.defaultdict(set)
for e in predicted:
    if e["ph"] != "X":
        continue
    if e["cat"] not in ("op", "compute", "collective", "transfer", "wait"):
        sys.exit(f"{predicted_path}: category {e['cat']!r} in {e}")
    if e["cat"] == "op":
        predicted_names[e["pid"]].add(e["name"])
measured_names = collections.defaultdict(set)
for e in measured:
    if e["ph"] != "X":
        continue
    if e["cat"] not in ("op", "collective", "transfer", "run"):
        sys.exit(f"{measured_path}: category {e['cat']!r} in {e}")
    if e["cat"] == "op":
        if "kind" not in e.get("args", {}):
            sys.exit(f"{measured_path}: no args.kind in {e}")
        if e["name"] != e["args"]["kind"]:
            measured_names[e["pid"]].add(e["name"])
if not measured_names:
    sys.exit(f"{measured_path}: no op events")
for pid, names in sorted(measured_names.items()):
    unknown = names - predicted_names[pid]
    if unknown:
        sys.exit(f"device {pid}: measured ops the timeline does not name: "
                 f"{sorted(unknown)[:5]}")
total = sum(len(n) for n in measured_names.values())
print(f"op names: {total} measured on {len(measured_names)} devices, "
      f"each named in the predicted timeline")
