#!/usr/bin/env python3
"""Latency of weft against onnxruntime on the same models, inputs and threads.

Models: the shared ones (mlp, resnet18, bert_tiny from --models, default
../shared/models; one that is missing is skipped with a note) and the repo's
own CPU benchmark models (gpt2_style, mobilenet_v2, crnn), which
bench/models/make_bench_models.py writes into --bench-models (default
build/bench-models) when they are missing or older than the generator.

For every model it first compiles two packages with weftc (input shapes from
its test_data_set_0): the default one (x86-64-v3) and one with
--mcpu=native. Then it checks correctness: both packages with
`weft-run PKG --inputs DATA --check DATA` and onnxruntime with
`ort_bench.js --check`, at the model's tolerances (TOLERANCES below); a
failing check stops the run before anything is timed. Then, --rounds times,
for every model and thread count, it times weft default, weft native
(`weft-run PKG --bench N --threads T`: the run call only, inputs already
loaded) and onnxruntime on the CPU (../shared/bench/ort_bench.js:
session.run only) on the same inputs, in --chunks chunks that take turns
(a figure is the median of its chunks' medians), and prints
a table of medians per round with a summary: per thread count the geometric
mean of weft/ort over the models whose ort median is at least 1 ms (shorter
ones, the mlp, are listed but left out of the mean: a few microseconds of
call overhead decide their ratio), the worst of those ratios, and weft's own
2-thread speed-up (t1/t2) per model. It records the CPU, its vector flags, the
core count and the load averages before and after each round.

With --write it replaces the first section of docs/benchmarks.md (everything
before the first "## " line) with the tables; the other sections stay as
they are. It prints figures; it is not a test.

onnxruntime-node is installed into a cache folder when missing
(~/.cache/weft/ort, with `npm install onnxruntime-node@1.30.0`; needs npm and
the npm registry).

Usage: bench/compare.py [--models DIR] [--bench-models DIR] [--names a,b]
                        [--threads 1,2] [--iters 100] [--warmup 10]
                        [--rounds 1] [--build DIR] [--ort-cache DIR] [--write]
The issue's acceptance run: bench/compare.py --rounds 3 --write
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import statistics
import shutil
import subprocess
import sys
import tempfile
import textwrap

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_VERSION = "1.30.0"
ORT_BENCH = os.path.join(ROOT, "..", "shared", "bench", "ort_bench.js")
GENERATOR = os.path.join(ROOT, "bench", "models", "make_bench_models.py")
# Written by GENERATOR into --bench-models; every other name is a shared model.
BENCH_MODELS = ("gpt2_style", "mobilenet_v2", "crnn")
DEFAULT_NAMES = "mlp,resnet18,bert_tiny," + ",".join(BENCH_MODELS)

# Tolerances of the correctness check, (rtol, atol), for weft and onnxruntime
# alike; both are compared with the reference outputs stored beside the
# model (torch's, for the repo's own models).
DEFAULT_TOLERANCE = (1e-3, 1e-4)
TOLERANCES = {
    # Its logits reach ~200 in magnitude, where both runtimes differ from
    # torch by ~1e-4 (float32 summation order), so atol 1e-4 fails near zero.
    "gpt2_style": (1e-3, 1e-3),
}

# Models whose onnxruntime median is shorter are left out of the mean.
MEAN_MIN_ORT_MS = 1.0
VECTOR_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                "avx512_vnni", "avx512_bf16", "amx_tile")


def fail(message):
    """Stops the run with a one-line message, exit 1."""
    print(f"bench: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


def show_output(out):
    """A failed command's output, unless fail()'s line repeats all of it."""
    text = out.stdout + out.stderr
    if len([l for l in text.splitlines() if l.strip()]) > 1:
        sys.stderr.write(text)


def run_or_fail(model, what, cmd, **kwargs):
    """Runs cmd; on failure prints its output and stops, naming model and cmd."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    except OSError as e:
        fail(f"{model}: {what} did not start: {shlex.join(cmd)}: {e}")
    if out.returncode != 0:
        show_output(out)
        fail(f"{model}: {what} failed (exit {out.returncode}): "
             f"{shlex.join(cmd)}: {last_line(out.stderr or out.stdout)}")
    return out


# ---------------------------------------------------------------- machine

def machine_info():
    """CPU model name, the vector flags among VECTOR_FLAGS, core count."""
    cpu, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and cpu is None:
                    cpu = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    cpu = cpu or platform.processor() or "unknown CPU"
    present = [f for f in VECTOR_FLAGS if f in flags]
    return {"cpu": cpu, "flags": " ".join(present) or "none of "
            + " ".join(VECTOR_FLAGS), "cores": os.cpu_count()}


def load_averages():
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------- setup

def ensure_ort(cache):
    if not shutil.which("node"):
        fail("node is missing; install Debian's nodejs (onnxruntime-node "
             "runs in it)")
    modules = os.path.join(cache, "node_modules")
    if os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        return modules
    if not shutil.which("npm"):
        fail("npm is missing; install Debian's npm, or put "
             f"onnxruntime-node@{ORT_VERSION} into {modules}")
    os.makedirs(cache, exist_ok=True)
    print(f"bench: installing onnxruntime-node@{ORT_VERSION} into {cache}",
          flush=True)
    run_or_fail("onnxruntime-node", "npm init", ["npm", "init", "-y"],
                cwd=cache)
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    run_or_fail("onnxruntime-node", "npm install",
                ["npm", "install", f"onnxruntime-node@{ORT_VERSION}"],
                cwd=cache, env=env)
    return modules


def ensure_bench_models(folder, names):
    """Writes the repo's own models among names that are missing or older
    than the generator script."""
    stale = []
    for name in names:
        model = os.path.join(folder, name, "model.onnx")
        output = os.path.join(folder, name, "test_data_set_0", "output_0.pb")
        if (not os.path.exists(model) or not os.path.exists(output) or
                os.path.getmtime(GENERATOR) > os.path.getmtime(model)):
            stale.append(name)
    if stale:
        print(f"bench: generating {', '.join(stale)} into {folder}",
              flush=True)
        run_or_fail(",".join(stale), "generating the model",
                    ["/usr/bin/python3", GENERATOR, folder,
                     "--names", ",".join(stale)])


def find_models(names, bench_models, shared_models, note):
    """(name, model.onnx, data folder) per name, the repo's own benchmark
    models generated into bench_models when missing; shared models that are
    not here are skipped with note(...) and returned as the second value."""
    ensure_bench_models(bench_models, [n for n in names if n in BENCH_MODELS])
    models, skipped = [], []
    for name in names:
        base = bench_models if name in BENCH_MODELS else shared_models
        model = os.path.join(base, name, "model.onnx")
        data = os.path.join(base, name, "test_data_set_0")
        if not os.path.exists(model) or not os.path.isdir(data):
            note(f"skipping {name}: no {model} (the shared models are not "
                 "here)")
            skipped.append(name)
            continue
        models.append((name, model, data))
    if not models:
        fail("no model to measure")
    return models, skipped


def resolve_models(args):
    names = [n for n in args.names.split(",") if n]
    return find_models(names, args.bench_models, args.models,
                       lambda text: print("bench: note: " + text, flush=True))


def input_shape_flags(data_dir):
    flags = []
    for name in sorted(os.listdir(data_dir)):
        if re.fullmatch(r"input_\d+\.pb", name):
            t = onnx.load_tensor(os.path.join(data_dir, name))
            flags.append(f"--input-shape={t.name}=" +
                         "x".join(str(d) for d in t.dims))
    return flags


def compile_packages(build, name, model, data, work):
    """The default package and the --mcpu=native one: {variant: folder}."""
    packages = {}
    for variant, extra in (("default", []), ("native", ["--mcpu=native"])):
        pkg = os.path.join(work, f"{name}-{variant}")
        cmd = [os.path.join(build, "bin", "weftc"), model, "-o", pkg,
               "--quiet"] + extra + input_shape_flags(data)
        run_or_fail(name, f"weftc ({variant})", cmd)
        packages[variant] = pkg
    return packages


# ---------------------------------------------------------------- checks

def check_weft(build, name, pkg, variant, data, rtol, atol):
    cmd = [os.path.join(build, "bin", "weft-run"), pkg, "--inputs", data,
           "--check", data, "--rtol", str(rtol), "--atol", str(atol)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode == 2:
        show_output(out)
        fail(f"{name}: weft ({variant}) outputs do not match the reference "
             f"(rtol {rtol}, atol {atol}); nothing timed: {shlex.join(cmd)}")
    if out.returncode != 0:
        show_output(out)
        fail(f"{name}: weft-run ({variant}) failed (exit {out.returncode}): "
             f"{shlex.join(cmd)}: {last_line(out.stderr or out.stdout)}")


def check_ort(modules, name, model, data, rtol, atol):
    cmd = ["node", ORT_BENCH, "--check", model, data, "--rtol", str(rtol),
           "--atol", str(atol)]
    out = subprocess.run(cmd, capture_output=True, text=True,
                         env=dict(os.environ, NODE_PATH=modules))
    if out.returncode != 0:
        show_output(out)
        what = ("outputs do not match the reference" if "FAILED" in out.stdout
                else f"failed (exit {out.returncode})")
        fail(f"{name}: onnxruntime {what} (rtol {rtol}, atol {atol}); "
             f"nothing timed: {shlex.join(cmd)}")


def check_model(build, modules, name, model, data, packages):
    rtol, atol = TOLERANCES.get(name, DEFAULT_TOLERANCE)
    for variant, pkg in packages.items():
        check_weft(build, name, pkg, variant, data, rtol, atol)
    check_ort(modules, name, model, data, rtol, atol)
    print(f"bench: {name}: weft default, weft native and onnxruntime match "
          f"the reference (rtol {rtol}, atol {atol})", flush=True)


# ---------------------------------------------------------------- timing

def weft_median(build, name, pkg, data, threads, iters, warmup):
    cmd = [os.path.join(build, "bin", "weft-run"), pkg, "--inputs", data,
           "--bench", str(iters), "--warmup", str(warmup), "--threads",
           str(threads)]
    out = run_or_fail(name, "weft-run --bench", cmd)
    m = re.search(r"median ([0-9.]+) ms\s+min ([0-9.]+) ms", out.stdout)
    if not m:
        fail(f"{name}: no median in the output of {shlex.join(cmd)}")
    return float(m.group(1))


def ort_median(modules, name, model, data, threads, iters, warmup):
    """(median ms, onnxruntime version it reports)."""
    cmd = ["node", ORT_BENCH, model, str(threads), str(iters), "--warmup",
           str(warmup), "--inputs", data, "--json"]
    out = run_or_fail(name, "ort_bench.js", cmd,
                      env=dict(os.environ, NODE_PATH=modules))
    try:
        res = json.loads(out.stdout.strip().splitlines()[-1])
        return res["median_ms"], res.get("ort", ORT_VERSION)
    except (ValueError, IndexError, KeyError):
        fail(f"{name}: no JSON median in the output of {shlex.join(cmd)}")


def time_round(args, modules, models, packages, threads):
    """One round: rows of (name, threads, weft, native, ort) medians in ms.

    The runs of each model and thread count are split into --chunks chunks,
    weft, weft native and onnxruntime taking turns chunk by chunk; each
    tool's figure is the median of its chunks' medians. On this VM the
    second core is at times unavailable for several seconds: measured in
    one block each, whichever tool ran then lost its two-thread speed-up
    and its ratio was off by up to 1.5x; taking turns, such a window spoils
    one chunk of each tool, which the median leaves out."""
    rows, ort_version = [], ORT_VERSION
    chunks = args.chunks
    per_chunk = max(1, args.iters // chunks)
    for name, model, data in models:
        for t in threads:
            ws, ns, os_ = [], [], []
            for _ in range(chunks):
                ws.append(weft_median(args.build, name,
                                      packages[name]["default"], data, t,
                                      per_chunk, args.warmup))
                ns.append(weft_median(args.build, name,
                                      packages[name]["native"], data, t,
                                      per_chunk, args.warmup))
                o, ort_version = ort_median(modules, name, model, data, t,
                                            per_chunk, args.warmup)
                os_.append(o)
            w, n, o = (statistics.median(x) for x in (ws, ns, os_))
            rows.append((name, t, w, n, o))
            print(f"{name:12s} threads {t}: weft {w:8.3f} ms  native "
                  f"{n:8.3f} ms  onnxruntime {o:8.3f} ms  ratio {w / o:5.2f} "
                  f"(native {n / o:5.2f})", flush=True)
    return rows, ort_version


# ---------------------------------------------------------------- report

def ms(x):
    return f"{x:.3f}" if x >= 1 else f"{x:.4f}"


def table(rows):
    lines = ["| model | threads | weft (ms) | weft native (ms) | "
             "onnxruntime (ms) | weft / ort | native / ort |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, t, w, n, o in rows:
        lines.append(f"| {name} | {t} | {ms(w)} | {ms(n)} | {ms(o)} | "
                     f"{w / o:.2f} | {n / o:.2f} |")
    return lines


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary(rows, threads):
    """Summary lines: per thread count the mean and worst weft/ort ratio over
    the models with ort >= MEAN_MIN_ORT_MS, then weft's t1/t2 speed-up."""
    lines = []
    for t in threads:
        at_t = [r for r in rows if r[1] == t]
        counted = [r for r in at_t if r[4] >= MEAN_MIN_ORT_MS]
        left_out = [r[0] for r in at_t if r[4] < MEAN_MIN_ORT_MS]
        note = (f" (left out, ort under {MEAN_MIN_ORT_MS:g} ms: "
                f"{', '.join(left_out)})" if left_out else "")
        if not counted:
            lines.append(f"{t} thread(s): no model with an onnxruntime "
                         f"median of {MEAN_MIN_ORT_MS:g} ms or more{note}")
            continue
        parts = []
        for label, col in (("weft", 2), ("weft native", 3)):
            ratios = [(r[col] / r[4], r[0]) for r in counted]
            worst = max(ratios)
            parts.append(f"{label}/ort geometric mean {geomean([x for x, _ in ratios]):.2f}, "
                         f"worst {worst[0]:.2f} ({worst[1]})")
        lines.append(f"{t} thread(s), mean over {len(counted)} "
                     f"model{'s' if len(counted) > 1 else ''}: "
                     + "; ".join(parts) + note)
    if 1 in threads and 2 in threads:
        speedups = []
        for name in dict.fromkeys(r[0] for r in rows):
            one = next(r for r in rows if r[0] == name and r[1] == 1)
            two = next(r for r in rows if r[0] == name and r[1] == 2)
            speedups.append(f"{name} {one[2] / two[2]:.2f} "
                            f"(native {one[3] / two[3]:.2f})")
        lines.append("weft 2-thread speed-up (t1/t2): " + ", ".join(speedups))
    return lines


def paragraph(text):
    return textwrap.fill(" ".join(text.split()), width=76)


def doc_text(args, machine, rounds, ort_version, skipped):
    """The first section of docs/benchmarks.md."""
    out = ["# Benchmarks", "", paragraph(f"""
        Written by `bench/compare.py --write` on {datetime.date.today()}:
        median latency of one inference (the run call only, inputs already
        loaded) for weft compiled for the default CPU (x86-64-v3), weft
        compiled with `--mcpu=native`, and onnxruntime {ort_version} (CPU
        execution provider, all graph optimizations), on the same inputs
        (each model's test_data_set_0) and thread counts. Each tool's
        {args.iters} runs are {args.chunks} chunks of
        {max(1, args.iters // args.chunks)} (each after {args.warmup}
        warm-up runs) that take turns with the other tools' chunks; a
        figure is the median of its chunks' medians, so that a few seconds
        in which this VM's second core is unavailable spoil one chunk of
        each tool, not one tool's whole figure. Every model's outputs were first checked against its
        reference outputs (torch's for the models of
        `bench/models/make_bench_models.py`) by weft-run, for both packages,
        and by onnxruntime."""), "", paragraph(f"""
        Machine: {machine['cpu']}; vector flags {machine['flags']};
        {machine['cores']} cores. Load averages (1/5/15 minutes) are taken
        before and after each round. The geometric means and worst ratios
        leave out models whose onnxruntime median is under
        {MEAN_MIN_ORT_MS:g} ms (their ratios are in the tables); t1/t2 is
        weft's 2-thread speed-up.""")]
    if skipped:
        out += ["", f"Skipped (not present): {', '.join(skipped)}."]
    for i, (rows, summary_lines, before, after) in enumerate(rounds, 1):
        out += ["", f"### Round {i} of {len(rounds)} (load average {before} "
                f"before, {after} after)", ""]
        out += table(rows) + [""] + ["- " + s for s in summary_lines]
    out += ["", paragraph("""
        Reproduce: `bench/compare.py --rounds 3 --write` (builds nothing: run
        it after `scripts/test.sh` or a build into `build/`; it generates the
        repo's own models into `build/bench-models`)."""), "", paragraph("""
        Kernel-level measurements (GEMM on OpenBLAS vs oneDNN, convolution
        algorithms) are in bench/kernels/README.md.""")]
    return "\n".join(out) + "\n\n"


def write_file_atomically(path, data):
    """Writes bytes to path through a temp file beside it and a rename, so
    that the file is never half written; keeps path's mode."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix=".benchmarks-", suffix=".md")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def replace_first_section(path, text):
    """Replaces everything before the first line starting with "## " by text
    and keeps the rest byte for byte; writes a temp file, then renames."""
    with open(path, "rb") as f:
        old = f.read()
    m = re.search(rb"^## ", old, re.MULTILINE)
    rest = old[m.start():] if m else b""
    write_file_atomically(path, text.encode() + rest)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"),
                    help="the shared models (default ../shared/models)")
    ap.add_argument("--bench-models",
                    default=os.path.join(ROOT, "build", "bench-models"),
                    help="where the repo's own models are generated "
                         "(default build/bench-models)")
    ap.add_argument("--names", default=DEFAULT_NAMES)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--chunks", type=int, default=5,
                    help="split each tool's runs into N chunks that take "
                         "turns with the other tools' (default 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the whole table N times (default 1)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ort-cache",
                    default=os.path.expanduser("~/.cache/weft/ort"))
    ap.add_argument("--write", action="store_true",
                    help="replace the first section of docs/benchmarks.md")
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.chunks < 1 or args.chunks > args.iters:
        ap.error("--chunks must be between 1 and --iters")

    threads = [int(t) for t in args.threads.split(",")]
    for tool in ("weftc", "weft-run"):
        if not os.access(os.path.join(args.build, "bin", tool), os.X_OK):
            fail(f"no {os.path.join(args.build, 'bin', tool)}: build weft "
                 "first (or pass --build DIR)")
    machine = machine_info()
    print(f"bench: {machine['cpu']}; {machine['flags']}; "
          f"{machine['cores']} cores", flush=True)
    modules = ensure_ort(args.ort_cache)
    models, skipped = resolve_models(args)

    work = tempfile.mkdtemp(prefix="weft-bench-")
    rounds, ort_version = [], ORT_VERSION
    try:
        packages = {}
        for name, model, data in models:
            packages[name] = compile_packages(args.build, name, model, data,
                                              work)
            check_model(args.build, modules, name, model, data,
                        packages[name])
        for i in range(1, args.rounds + 1):
            before = load_averages()
            print(f"\nround {i} of {args.rounds} (load average {before})",
                  flush=True)
            rows, ort_version = time_round(args, modules, models, packages,
                                           threads)
            after = load_averages()
            summary_lines = summary(rows, threads)
            print("\n".join([""] + table(rows) + [""] + summary_lines +
                            [f"load average {before} before, {after} after"]),
                  flush=True)
            rounds.append((rows, summary_lines, before, after))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.write:
        replace_first_section(
            args.doc, doc_text(args, machine, rounds, ort_version, skipped))
        print(f"bench: wrote the first section of {args.doc}")


if __name__ == "__main__":
    main()
