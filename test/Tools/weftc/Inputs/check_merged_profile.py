"""Checks weft-run's merged profile (pipeline-profile.test).

Usage: check_merged_profile.py TRACE.json MEASURED.svg RANKS [SKEW_US]

The trace has a process_name per rank and op events on every rank, each
rank's own (.rank<k>) events shifted onto one clock: the earliest event is
at 0 and none is negative; measured.svg has a row per rank and, where
rsvg-convert is installed, renders without a word on stderr.

With SKEW_US (the run had WEFT_TEST_CLOCK_SKEW_US_PER_RANK=SKEW_US: rank k's
clock SKEW_US x k ahead, as if on a host of its own), the merged trace is on
rank 0's clock: each rank's estimated offset is within its uncertainty of
-SKEW_US x k, and every rank's events lie within one run's time of the
others' (unaligned, they would be SKEW_US apart).
"""
import json
import os
import shutil
import subprocess
import sys

trace_path, svg_path, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
skew = float(sys.argv[4]) if len(sys.argv) > 4 else None
trace = json.load(open(trace_path))
events = trace["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
if sorted(names) != list(range(ranks)):
    sys.exit(f"{trace_path}: process names for {sorted(names)}")
ops = [e for e in events if e["ph"] == "X" and e["cat"] != "run"]
if {e["pid"] for e in ops} != set(range(ranks)):
    sys.exit(f"{trace_path}: op events on {sorted({e['pid'] for e in ops})}")
first = min(e["ts"] for e in events if e["ph"] == "X")
if first != 0 or any(e["ts"] < 0 for e in events if e["ph"] == "X"):
    sys.exit(f"{trace_path}: events start at {first}")
if trace.get("otherData", {}).get("ranks") != ranks:
    sys.exit(f"{trace_path}: otherData {trace.get('otherData')}")
for k in range(ranks):
    rank_file = trace_path[:-len(".json")] + f".rank{k}.json"
    if not os.path.isfile(rank_file):
        sys.exit(f"{rank_file}: missing (the per-rank traces stay)")
if skew is not None:
    offsets = trace["otherData"].get("clock_offsets")
    if not isinstance(offsets, dict):
        sys.exit(f"{trace_path}: no clock offsets: {offsets}")
    for entry in offsets["ranks"]:
        expected = -skew * entry["rank"]
        for key in ("start_offset_us", "end_offset_us"):
            if abs(entry[key] - expected) > entry["uncertainty_us"] + 1:
                sys.exit(f"{trace_path}: rank {entry['rank']} {key} "
                         f"{entry[key]}, expected {expected} within "
                         f"{entry['uncertainty_us']}")
    last = max(e["ts"] + e["dur"] for e in events if e["ph"] == "X")
    if last > skew / 2:
        sys.exit(f"{trace_path}: events span {last} us: not aligned")
svg = open(svg_path).read()
for k in range(ranks):
    if f">rank {k}<" not in svg:
        sys.exit(f"{svg_path}: no row for rank {k}")
if shutil.which("rsvg-convert"):
    png = svg_path + ".png"
    run = subprocess.run(["rsvg-convert", svg_path, "-o", png],
                         capture_output=True, text=True)
    if run.returncode != 0 or run.stderr or os.path.getsize(png) < 1000:
        sys.exit(f"{svg_path}: rsvg-convert failed: {run.stderr}")
print(f"merged: {ranks} ranks, events on each, first at 0"
      + ("" if skew is None else ", clocks aligned"))
