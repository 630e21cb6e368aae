#!/usr/bin/env python3
"""Prints each stage of a pipeline's plan.json: its first and last node,
its peak memory per device, and whether that is within the stage's memory
budget ("fits") or not ("over").

Usage: stage_memory.py plan.json
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    for k, stage in enumerate(plan["stages"]):
        peak = stage["peak_memory_bytes_per_device"]
        fits = "fits" if peak <= stage["memory_budget_bytes"] else "over"
        print("stage %d %s .. %s %d bytes %s"
              % (k, stage["first_node"], stage["last_node"], peak, fits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
