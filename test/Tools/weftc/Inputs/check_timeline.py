"""Checks a package's simulated timeline (pipeline-timeline.test,
mesh-timeline.test).

Usage: check_timeline.py PLAN.json TRACE.json TIMELINE.svg OUT_DIR

plan.json's `simulated` object has positive figures and a latency within
0.5-2 x the GPipe schedule's; the Chrome trace has one X event per compute
interval (plan.json's `compute_intervals`), each on a device of the plan,
labelled with that device's stage and a microbatch of the schedule, inside
the simulated latency, and its "op" events inside them; the SVG has one
compute bar per compute event and,
where rsvg-convert is installed, renders without a word on stderr.
"""
import json
import os
import shutil
import subprocess
import sys

plan_path, trace_path, svg_path, out_dir = sys.argv[1:5]
plan = json.load(open(plan_path))
sim = plan.get("simulated")
if sim is None:
    sys.exit(f"{plan_path}: no 'simulated'")
for key in ("latency_seconds", "throughput_per_s"):
    if not sim.get(key, 0) > 0:
        sys.exit(f"{plan_path}: simulated.{key} is {sim.get(key)}")
if not 0 <= sim["bubble_fraction"] < 1:
    sys.exit(f"{plan_path}: bubble_fraction {sim['bubble_fraction']}")
if not sim.get("bottleneck"):
    sys.exit(f"{plan_path}: no bottleneck")
latency = sim["latency_seconds"]
schedule = plan["schedule"]["predicted_latency_seconds"]
ratio = latency / schedule
if not 0.5 <= ratio <= 2:
    sys.exit(f"{plan_path}: simulated latency {latency} against the "
             f"schedule's {schedule}")

# A pipeline's devices name their cluster device and stage; a mesh's are
# its positions on the stages' one stage (plan["stages"][0]["devices"]).
if "stages" in plan and all("cluster_device" in d for d in plan["devices"]):
    stage_of = {d["cluster_device"]: d["stage"] for d in plan["devices"]}
else:
    stage_of = {device: 0 for device in plan["stages"][0]["devices"]}
microbatches = plan["schedule"]["microbatches"]
trace = json.load(open(trace_path))
events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
compute = [e for e in events if e["cat"] == "compute"]
if len(compute) != sim["compute_intervals"]:
    sys.exit(f"{trace_path}: {len(compute)} compute events, plan.json says "
             f"{sim['compute_intervals']}")
for e in events:
    if e["pid"] not in stage_of:
        sys.exit(f"{trace_path}: event on device {e['pid']}, not in the plan")
    if e["dur"] < 0 or e["ts"] + e["dur"] > latency * 1e6 * (1 + 1e-9):
        sys.exit(f"{trace_path}: event {e} outside [0, {latency * 1e6}] us")
for e in compute:
    if e["args"]["stage"] != stage_of[e["pid"]]:
        sys.exit(f"{trace_path}: {e} is not device {e['pid']}'s stage")
    if not 0 <= e["args"]["microbatch"] < microbatches:
        sys.exit(f"{trace_path}: {e} has a microbatch out of range")
# Every stage computes; a device whose results no one uses (a replicated
# stage's rank that does not return the outputs) may compute nothing, as
# codegen erases its dead ops.
busy = {e["pid"] for e in compute}
if not busy <= set(stage_of) or \
        {stage_of[d] for d in busy} != set(stage_of.values()):
    sys.exit(f"{trace_path}: devices {sorted(busy)} compute, the plan has "
             f"{sorted(stage_of)}")
# A compute interval's ops ("op" events) lie end to end inside it.
ops = [e for e in events if e["cat"] == "op"]
for e in ops:
    inside = [c for c in compute if c["pid"] == e["pid"] and
              c["ts"] - 1e-6 <= e["ts"] and
              e["ts"] + e["dur"] <= c["ts"] + c["dur"] + 1e-6]
    if not inside:
        sys.exit(f"{trace_path}: op event {e} lies in no compute interval")

svg = open(svg_path).read()
bars = svg.count('<rect class="compute"')
if bars != len(compute):
    sys.exit(f"{svg_path}: {bars} compute bars for {len(compute)} events")
if shutil.which("rsvg-convert"):
    png = os.path.join(out_dir, os.path.basename(svg_path) + ".png")
    run = subprocess.run(["rsvg-convert", svg_path, "-o", png],
                         capture_output=True, text=True)
    if run.returncode != 0 or run.stderr or os.path.getsize(png) < 1000:
        sys.exit(f"{svg_path}: rsvg-convert failed: {run.stderr}")

print(f"timeline: {len(compute)} compute intervals on {len(busy)} devices, "
      f"simulated latency within 0.5-2 x the schedule's")
print(f"simulated {latency * 1e6:.3f} us, schedule {schedule * 1e6:.3f} us, "
      f"ratio {ratio:.2f}", file=sys.stderr)
