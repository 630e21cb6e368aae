#!/usr/bin/env python3
"""Compile time of one model for growing meshes (weftc --sharding=tp).

Each device count is compiled --repeat times; the median wall time is
printed with the number of distinct programs, beside the CPU model, its
flags and the load average. Codegen compiles each distinct program once, so
the time should barely grow with the device count (#13's target: 64 devices
within 1.5x of 4).

Usage: compile_time.py --weftc build/bin/weftc MODEL [--input-shape=...]...
                       [--devices 1,4,16,64] [--repeat 3] [--work DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def cpu_facts():
    model, flags = "?", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    wanted = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni")
              if f in flags]
    return model, wanted, os.cpu_count()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weftc", required=True)
    parser.add_argument("model")
    parser.add_argument("--devices", default="1,4,16,64")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sharding", default="tp")
    parser.add_argument("--work")
    args, extra = parser.parse_known_args()
    work = args.work or tempfile.mkdtemp(prefix="weft-compile-time-")
    model, flags, cores = cpu_facts()
    print("CPU: %s (%d cores; %s); load average %s" % (
        model, cores, " ".join(flags), " ".join(
            "%.2f" % x for x in os.getloadavg())))
    print("model %s, --sharding=%s %s" % (os.path.basename(args.model),
                                          args.sharding, " ".join(extra)))
    print("%8s %10s %10s %9s" % ("devices", "median s", "vs 4", "programs"))
    medians = {}
    for n in [int(x) for x in args.devices.split(",")]:
        out = os.path.join(work, "d%d" % n)
        times = []
        for _ in range(args.repeat):
            cmd = [args.weftc, args.model, "-o", out, "--quiet",
                   "--cluster", "cpu:%d" % n, "--sharding", args.sharding] + \
                extra
            start = time.monotonic()
            proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
            times.append(time.monotonic() - start)
            if proc.returncode != 0:
                sys.stdout.write(proc.stdout.decode(errors="replace"))
                print("compile_time.py: weftc exit %d for %d devices" %
                      (proc.returncode, n))
                return 1
        with open(os.path.join(out, "manifest.json")) as f:
            programs = len({d["executable"] for d in json.load(f)["devices"]})
        medians[n] = statistics.median(times)
        ratio = "%.2fx" % (medians[n] / medians[4]) if 4 in medians else "-"
        print("%8d %10.2f %10s %9d" % (n, medians[n], ratio, programs))
    print("load average after: %s" % " ".join("%.2f" % x
                                              for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
