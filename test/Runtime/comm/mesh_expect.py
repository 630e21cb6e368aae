#!/usr/bin/python3
"""Runs a command and checks its exit code, output, duration and files.

usage: mesh_expect.py --exit N [--stdout RE]... [--stderr RE]...
                      [--stdout-once RE]...
                      [--no-stdout RE]... [--no-stderr RE]...
                      [--max-seconds S]
                      [--file PATH]... [--remove PATH]... -- COMMAND...

--file checks that PATH exists and is a JSON Chrome trace with a "run 0"
event when it ends in .json, else that it is not empty; --remove deletes
PATH before the run, so that --file sees this run's file. The command is
killed after --max-seconds plus 30 s, so that a hang fails instead of
blocking ctest.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time


def fail(message, result=None, seconds=None):
    print("FAIL:", message)
    if seconds is not None:
        print(f"took {seconds:.2f} s")
    if result is not None:
        print("exit code:", result.returncode)
        print("--- stdout ---\n" + result.stdout)
        print("--- stderr ---\n" + result.stderr)
    sys.exit(1)


def check_file(path):
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        fail(f"{path} was not written")
    if path.endswith(".json"):
        with open(path) as f:
            trace = json.load(f)
        names = {e.get("name") for e in trace["traceEvents"]}
        if "run 0" not in names:
            fail(f"trace {path} has no 'run 0' event: {sorted(names)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exit", type=int, required=True)
    parser.add_argument("--stdout", action="append", default=[])
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--no-stdout", action="append", default=[])
    parser.add_argument("--stdout-once", action="append", default=[])
    parser.add_argument("--no-stderr", action="append", default=[])
    parser.add_argument("--max-seconds", type=float, default=60)
    parser.add_argument("--file", action="append", default=[])
    parser.add_argument("--remove", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    for path in args.remove:
        if os.path.exists(path):
            os.remove(path)
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=args.max_seconds + 30)
    except subprocess.TimeoutExpired:
        fail("hung: " + " ".join(command))
    seconds = time.monotonic() - start
    if result.returncode != args.exit:
        fail(f"expected exit code {args.exit}", result, seconds)
    if seconds > args.max_seconds:
        fail(f"took longer than {args.max_seconds} s", result, seconds)
    for pattern in args.stdout:
        if not re.search(pattern, result.stdout, re.M):
            fail(f"stdout does not match /{pattern}/", result, seconds)
    for pattern in args.stderr:
        if not re.search(pattern, result.stderr, re.M):
            fail(f"stderr does not match /{pattern}/", result, seconds)
    for pattern in args.stdout_once:
        found = len(re.findall(pattern, result.stdout, re.M))
        if found != 1:
            fail(f"stdout matches /{pattern}/ {found} times, not once",
                 result, seconds)
    for pattern in args.no_stdout:
        if re.search(pattern, result.stdout, re.M):
            fail(f"stdout matches /{pattern}/", result, seconds)
    for pattern in args.no_stderr:
        if re.search(pattern, result.stderr, re.M):
            fail(f"stderr matches /{pattern}/", result, seconds)
    for path in args.file:
        check_file(path)
    print(f"ok ({seconds:.2f} s):", " ".join(command))


if __name__ == "__main__":
    main()
