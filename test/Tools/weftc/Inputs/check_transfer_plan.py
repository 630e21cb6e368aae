"""Checks how plan.json's first transfer was planned (pipeline-reshard-plan.test):
the method, every key, predicted within 1.35 x the bound, send-recv slower."""
import json
import sys

plan = json.load(open(sys.argv[1]))
t = plan["transfers"][0]
name = t["tensor"]
if t["method"] != sys.argv[2]:
    sys.exit(f"{name}: method {t['method']}, expected {sys.argv[2]}")
for key in ("tiles", "messages", "bytes", "bytes_moved",
            "predicted_seconds", "lower_bound_seconds", "send_recv_seconds",
            "links"):
    if key not in t:
        sys.exit(f"{name}: no {key}")
if sum(link["bytes"] for link in t["links"]) != t["bytes_moved"]:
    sys.exit(f"{name}: the links' bytes do not add up to bytes_moved")
predicted, bound = t["predicted_seconds"], t["lower_bound_seconds"]
if not 0 < bound <= predicted <= 1.35 * bound:
    sys.exit(f"{name}: predicted {predicted} against bound {bound}")
if t["send_recv_seconds"] < 3 * predicted:
    sys.exit(f"{name}: send-recv {t['send_recv_seconds']} against {predicted}")
print(f"{name} {t['method']}: predicted <= 1.35 x bound, "
      "send-recv >= 3 x predicted")
