#!/usr/bin/python3
"""Starts a weft-run command, injects a fault once its programs run, and
checks how the run ends: exit code, messages, how long it took, and that no
process of it is left behind.

usage: fault_expect.py --fault FAULT --exit N [--stderr RE]...
                       [--max-seconds S] [--min-seconds S]
                       [--same-env NAME]... -- COMMAND...

FAULT is one of
  stop-rank:K    SIGSTOP the device program with --weights .../devK.bin
  kill-rank:K    SIGKILL it
  kill-launcher  SIGKILL weft-run itself (the command's own process)
  none           no fault (the command must end by itself; --max-seconds
                 then bounds the whole run after the programs started)
The fault comes --after seconds (default 1) after every expected program
(--ranks, default 2) is running. --max-seconds bounds the time from the
fault to the command's end. With kill-launcher, the command's exit is the
signal's (-9) and the check is that every program and mpirun are gone
within --max-seconds, and that Open MPI left no session folder behind.
--max-cpu RANK:SHARE checks, before the fault, that RANK used at most SHARE
of a core over --cpu-window seconds. --same-env NAME checks, before the
fault, that every program has NAME in
its environment with one value. --busy N keeps N processes spinning on a
core each during the run.
"""

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import time


def fail(message, out="", err=""):
    print("FAIL:", message)
    print("--- stdout ---\n" + out)
    print("--- stderr ---\n" + err)
    sys.exit(1)


def processes():
    """pid -> (ppid, argv) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        # The command name may hold spaces: the fields after ')' are fixed.
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        table[int(entry)] = (int(fields[1]),
                             [a.decode(errors="replace") for a in argv if a])
    return table


def descendants(root):
    table = processes()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, argv) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = argv
                frontier.append(pid)
    return found


def programs(root):
    """Device programs at or under `root`: rank -> pid (by their
    --weights, or rank 0 for a program started without one)."""
    ranks = {}
    table = processes()
    found = descendants(root)
    if root in table:
        found[root] = table[root][1]
    for pid, argv in found.items():
        if not argv or "mpirun" in os.path.basename(argv[0]) or \
                "weft-run" in os.path.basename(argv[0]):
            continue
        if pid == root and "--weights" not in argv:
            ranks[0] = pid
            continue
        for i, arg in enumerate(argv):
            if arg == "--weights" and i + 1 < len(argv):
                m = re.search(r"dev(\d+)\.bin$", argv[i + 1])
                if m:
                    ranks[int(m.group(1))] = pid
    return ranks


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def environment(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return {}
    out = {}
    for entry in entries:
        name, _, value = entry.decode(errors="replace").partition("=")
        if name:
            out[name] = value
    return out


def stop_all(child):
    """Kills `child` and everything it started; returns its output. (A
    launcher that leaves its children behind must not hang the test: they
    hold its pipes.)"""
    for pid in list(descendants(child.pid)) + [child.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        return child.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        return "", "(the output could not be read)"


def session_folders():
    tmp = os.environ.get("TMPDIR", "/tmp")
    return set(glob.glob(os.path.join(tmp, "ompi.*"))) | set(
        glob.glob(os.path.join(tmp, "openmpi-sessions-*")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", required=True)
    parser.add_argument("--exit", type=int, required=True)
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--no-stderr", action="append", default=[])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--after", type=float, default=1.0)
    parser.add_argument("--max-seconds", type=float, default=15)
    parser.add_argument("--min-seconds", type=float, default=0)
    parser.add_argument("--same-env", action="append", default=[],
                        help="every program has this variable, with one "
                        "value (read from /proc/PID/environ)")
    parser.add_argument("--busy", type=int, default=0,
                        help="processes that spin on a core each for the "
                        "whole run (a busy machine)")
    parser.add_argument("--max-cpu", metavar="RANK:SHARE",
                        help="before the fault, RANK uses at most SHARE of "
                        "a core over --cpu-window seconds (a rank waiting "
                        "for a peer must not spin)")
    parser.add_argument("--cpu-window", type=float, default=3.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    before = session_folders()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.busy)]
    try:
        run(args, command, before)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run(args, command, before):
    child = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    ranks = {}
    while len(ranks) < args.ranks:
        if child.poll() is not None or time.monotonic() > deadline:
            out, err = stop_all(child)
            fail(f"only {len(ranks)} of {args.ranks} programs started", out,
                 err)
        time.sleep(0.05)
        ranks = programs(child.pid)
    time.sleep(args.after)
    every = set(descendants(child.pid))
    for name in args.same_env:
        values = {rank: environment(pid).get(name)
                  for rank, pid in sorted(ranks.items())}
        if None in values.values() or len(set(values.values())) != 1:
            out, err = stop_all(child)
            fail(f"{name} differs between the programs: {values}", out, err)
    if args.max_cpu:
        rank, _, share = args.max_cpu.partition(":")
        pid = ranks[int(rank)]
        start_cpu, start = cpu_seconds(pid), time.monotonic()
        time.sleep(args.cpu_window)
        used = (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)
        print(f"rank {rank} used {used:.1%} of a core while it waited")
        if used > float(share):
            out, err = stop_all(child)
            fail(f"rank {rank} used {used:.1%} of a core over "
                 f"{args.cpu_window} s (at most {float(share):.0%})", out, err)
    kind, _, which = args.fault.partition(":")
    if kind in ("stop-rank", "kill-rank"):
        os.kill(ranks[int(which)],
                signal.SIGSTOP if kind == "stop-rank" else signal.SIGKILL)
    elif kind == "kill-launcher":
        os.kill(child.pid, signal.SIGKILL)
    elif kind != "none":
        fail(f"unknown fault {args.fault}")
    start = time.monotonic()
    try:
        out, err = child.communicate(timeout=args.max_seconds + 30)
    except subprocess.TimeoutExpired:
        out, err = stop_all(child)
        fail(f"still running {args.max_seconds + 30:.0f} s after the fault",
             out, err)
    if kind == "kill-launcher":
        # The launcher is gone at once; its children must follow.
        while time.monotonic() - start < args.max_seconds:
            left = [p for p in every if os.path.exists(f"/proc/{p}")
                    and p in processes()]
            if not left:
                break
            time.sleep(0.1)
        else:
            fail(f"processes left {args.max_seconds} s after weft-run died: "
                 f"{left}", out, err)
    seconds = time.monotonic() - start
    print(f"ended {seconds:.2f} s after the fault, exit {child.returncode}")
    if child.returncode != args.exit:
        fail(f"exit code {child.returncode}, expected {args.exit}", out, err)
    if seconds > args.max_seconds:
        fail(f"took {seconds:.1f} s, more than {args.max_seconds}", out, err)
    if seconds < args.min_seconds:
        fail(f"took {seconds:.1f} s, less than {args.min_seconds}", out, err)
    for pattern in args.stderr:
        if not re.search(pattern, err, re.MULTILINE):
            fail(f"stderr does not match /{pattern}/", out, err)
    for pattern in args.no_stderr:
        if re.search(pattern, err, re.MULTILINE):
            fail(f"stderr matches /{pattern}/", out, err)
    left = [p for p in every if p in processes()]
    if left:
        fail(f"processes left behind: {left}", out, err)
    # mpirun removes its session folder as it exits: allow it a moment.
    for _ in range(50):
        leaked = session_folders() - before
        if not leaked:
            break
        time.sleep(0.1)
    if leaked:
        fail(f"Open MPI session folders left behind: {sorted(leaked)}", out,
             err)
    print("PASS")


if __name__ == "__main__":
    main()
