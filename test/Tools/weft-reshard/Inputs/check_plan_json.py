"""Checks weft-reshard plan --json output read from stdin.

Usage: check_plan_json.py one|all

Every plan object must have exactly the documented keys, its transfers,
messages and devices theirs, and the numbers must agree with each other
(message indices in range, dependences on earlier messages, per-device bytes
summing to the bytes moved, the ratio of predicted to bound, a broadcast
call's group holding exactly its devices). Prints one line per plan, "plan
METHOD transfers=T messages=M devices=D calls=C", for FileCheck.
"""

import json
import math
import sys

PLAN_KEYS = {
    "method", "cluster", "predicted_seconds", "lower_bound_seconds",
    "bound_reason", "ratio", "bytes", "tensor", "from", "to", "reduction",
    "in_mesh", "in_mesh_steps", "note", "transfers", "messages", "devices",
}
TRANSFER_KEYS = {"kind", "tile", "source", "destinations", "chunks", "bytes",
                 "broadcast_call", "group", "start_seconds", "end_seconds"}
MESSAGE_KEYS = {"from", "to", "tile", "box", "bytes", "depends_on",
                "transfer", "start_seconds", "end_seconds"}
DEVICE_KEYS = {"device", "bytes_sent", "bytes_received"}


def fail(message):
    print("error: " + message)
    sys.exit(1)


def expect_keys(what, obj, keys):
    if set(obj) != keys:
        fail("%s has keys %s, expected %s" % (what, sorted(obj), sorted(keys)))


def check_box(what, box, rank):
    expect_keys(what, box, {"offsets", "sizes"})
    if len(box["offsets"]) != rank or len(box["sizes"]) != rank:
        fail("%s does not have rank %d" % (what, rank))


def check_call(i, transfer, groups):
    """A broadcast call runs over a group of exactly its devices, or over
    the world (group null); other transfers name no group."""
    group = transfer["group"]
    if not transfer["broadcast_call"]:
        if group is not None:
            fail("transfers[%d] is no broadcast call but has a group" % i)
        return 0
    if transfer["kind"] != "broadcast":
        fail("transfers[%d] is a call of kind %s" % (i, transfer["kind"]))
    if group is not None:
        devices = sorted([transfer["source"]] + transfer["destinations"])
        if not 0 <= group < len(groups) or groups[group] != devices:
            fail("transfers[%d] runs over group %r, which is not its devices %s"
                 % (i, group, devices))
    return 1


def check_plan(plan, groups):
    expect_keys("plan", plan, PLAN_KEYS)
    expect_keys("tensor", plan["tensor"], {"shape", "dtype", "bytes"})
    rank = len(plan["tensor"]["shape"])
    transfers, messages = plan["transfers"], plan["messages"]
    calls = 0
    for i, transfer in enumerate(transfers):
        expect_keys("transfers[%d]" % i, transfer, TRANSFER_KEYS)
        calls += check_call(i, transfer, groups)
        check_box("transfers[%d].tile" % i, transfer["tile"], rank)
        if transfer["start_seconds"] > transfer["end_seconds"]:
            fail("transfers[%d] ends before it starts" % i)
    for i, message in enumerate(messages):
        expect_keys("messages[%d]" % i, message, MESSAGE_KEYS)
        check_box("messages[%d].box" % i, message["box"], rank)
        if not 0 <= message["transfer"] < len(transfers):
            fail("messages[%d].transfer is out of range" % i)
        depends = message["depends_on"]
        if depends is not None and not 0 <= depends < i:
            fail("messages[%d] depends on %r, not an earlier message"
                 % (i, depends))
        if message["end_seconds"] > plan["predicted_seconds"] * (1 + 1e-9):
            fail("messages[%d] ends after the predicted time" % i)
    for i, device in enumerate(plan["devices"]):
        expect_keys("devices[%d]" % i, device, DEVICE_KEYS)
        if device["bytes_sent"] == 0 and device["bytes_received"] == 0:
            fail("devices[%d] has no traffic but is listed" % i)
    if not plan["in_mesh"]:
        sent = sum(d["bytes_sent"] for d in plan["devices"])
        received = sum(d["bytes_received"] for d in plan["devices"])
        in_messages = sum(m["bytes"] for m in messages)
        if not sent == received == in_messages == plan["bytes"]:
            fail("bytes disagree: sent %d, received %d, messages %d, plan %d"
                 % (sent, received, in_messages, plan["bytes"]))
    for i, step in enumerate(plan["in_mesh_steps"]):
        expect_keys("in_mesh_steps[%d]" % i, step, {"kind", "axes", "dim"})
    if plan["reduction"] is not None:
        expect_keys("reduction", plan["reduction"],
                    {"kind", "axes", "dim", "seconds"})
    bound = plan["lower_bound_seconds"]
    if bound > 0 and not math.isclose(
            plan["ratio"], plan["predicted_seconds"] / bound, rel_tol=1e-9):
        fail("ratio is not predicted / bound")
    if plan["predicted_seconds"] < bound * (1 - 1e-9):
        fail("predicted %g s is below the lower bound %g s"
             % (plan["predicted_seconds"], bound))
    print("plan %s transfers=%d messages=%d devices=%d calls=%d"
          % (plan["method"], len(transfers), len(messages),
             len(plan["devices"]), calls))


def check_groups(groups):
    for g, group in enumerate(groups):
        if len(group) < 2 or group != sorted(set(group)):
            fail("broadcast_groups[%d] %s is not an increasing set of at "
                 "least two devices" % (g, group))
        if group in groups[:g]:
            fail("broadcast_groups[%d] %s is listed twice" % (g, group))


def main():
    mode = sys.argv[1]
    data = json.load(sys.stdin)
    if mode == "one":
        groups = data.pop("broadcast_groups", None)
        if groups is None:
            fail("the plan has no broadcast_groups")
        check_groups(groups)
        check_plan(data, groups)
        return
    expect_keys("the output", data, {"plans", "broadcast_groups"})
    check_groups(data["broadcast_groups"])
    for plan in data["plans"]:
        check_plan(plan, data["broadcast_groups"])


main()
