#!/usr/bin/env python3
"""Compiles the end-to-end models with weftc and checks their outputs.

Default mode (ctest e2e-models):
  1. make_models.py OUT builds the models and their reference outputs
     (PyTorch, float64) into OUT.
  2. Every case (a model at one set of input shapes) is compiled with
     `weftc MODEL -o OUT/pkg/<model>-<case> --input-shape=...`.
  3. `OUT/pkg/<model>-<case>/run.sh --inputs DATA --check DATA
     --output-dir OUT/pkg/<model>-<case>/outputs` runs it on the case's
     inputs and compares with the reference (rtol 1e-3, atol 1e-4); this
     script compares the written outputs with the reference too (numpy),
     so a fault in Weft's comparison cannot hide a wrong result.
  4. The comparison itself is tested: the first package is checked against
     a copy of its reference with one element moved by 1e-2, which must be
     reported as a mismatch (exit 2). With a weft-run (--weft-run, or the
     one next to weftc), `weft-run --verify-weights PKG` must pass on the
     reference and report the perturbed one as a mismatch too.
  A table with compile times and the largest errors is printed; the exit
  code is 0 when every case passed, 1 otherwise.

--models DIR mode (scripts/check-models.sh): instead of generating, checks
every DIR/NAME/model.onnx on each of its DIR/NAME/test_data_set_<k>/ folders,
compiled at the shapes of that folder's inputs (rtol 1e-3, atol 1e-4).

--emit-lib mode (ctest e2e-emit-lib): compiles the transformer (two int64
inputs, two float outputs) with --emit=lib, builds lib_client.c against the
package's headers and library with the C compiler, and runs it on the
case's data (written as raw .bin files and a case.txt the client reads). The
client must pass on the real reference and fail (exit 1) on a perturbed one.

Exit codes: 0 all passed, 1 a failure, 77 PyTorch or ONNX missing (ctest
reports the test as skipped).

Usage: run_e2e.py --weftc PATH --out DIR [--filter REGEX] [--reuse]
       run_e2e.py --weftc PATH --out DIR --models DIR [--filter REGEX]
       run_e2e.py --weftc PATH --out DIR --emit-lib --client lib_client.c
                  [--cc CC]

Examples:
  run_e2e.py --weftc build/bin/weftc --out /tmp/e2e
  run_e2e.py --weftc build/bin/weftc --out /tmp/e2e --filter transformer
  run_e2e.py --weftc build/bin/weftc --out /tmp/shared \\
             --models ../shared/models --filter bert
  run_e2e.py --weftc build/bin/weftc --out /tmp/e2e-lib --emit-lib \\
             --client test/E2E/lib_client.c
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
# The tolerances of --models (make_models.py sets its own per case).
RTOL, ATOL = 1e-3, 1e-4
COMPILE_TIMEOUT = 300
RUN_TIMEOUT = 120
# The case the library test uses: several inputs and outputs, int64 inputs.
LIB_MODEL, LIB_CASE = "transformer", "b3_s32"


def log(msg):
    print(msg, flush=True)


def run(cmd, timeout, **kw):
    """Runs cmd; returns (exit code, or 'timeout' or 'exec' when it could not
    finish or start; seconds; stdout and stderr together)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if e.output else ""
        return "timeout", time.monotonic() - start, out
    except OSError as e:  # Not executable, missing, ...
        return "exec", time.monotonic() - start, "cannot run %s: %s" % (
            cmd[0], e.strerror)
    return (proc.returncode, time.monotonic() - start,
            proc.stdout.decode(errors="replace"))


def describe_rc(rc):
    if rc == "timeout":
        return "timed out"
    if rc == "exec":
        return "could not start"
    if rc < 0:
        return "killed by signal %d" % -rc
    return "exit %d" % rc


def generate(out, only):
    """Runs make_models.py; returns the case list or an exit code."""
    cmd = [sys.executable, os.path.join(HERE, "make_models.py"), out]
    if only:
        cmd += ["--only"] + only
    rc, secs, text = run(cmd, 600)
    if rc == SKIP:
        log(text.strip())
        log("run_e2e.py: skipped (install python3-torch and python3-onnx)")
        return SKIP
    if rc != 0:
        log(text)
        log("run_e2e.py: make_models.py failed (%s)" % describe_rc(rc))
        return 1
    log("%s (%.1f s)" % (text.strip(), secs))
    with open(os.path.join(out, "cases.json")) as f:
        return json.load(f)


def compile_case(weftc, out, case, pkg, extra=()):
    cmd = [weftc, os.path.join(out, case["onnx"]), "-o", pkg, "--quiet"]
    for name, dims in case["shapes"].items():
        cmd.append("--input-shape=%s=%s" % (name, "x".join(map(str, dims))))
    cmd += list(extra)
    shutil.rmtree(pkg, ignore_errors=True)
    return run(cmd, COMPILE_TIMEOUT), cmd


def check_case(pkg, data, expected, case, weft_run=None, output_dir=None):
    """Runs the package on DATA and compares with EXPECTED, through its
    run.sh or, given weft_run, through `weft-run --verify-weights`; with
    output_dir, also writes the outputs there."""
    cmd = [os.path.join(pkg, "run.sh")]
    if weft_run:
        cmd = [weft_run, "--verify-weights", pkg]
    cmd += ["--inputs", data, "--check", expected, "--rtol", str(case["rtol"]),
            "--atol", str(case["atol"]), "--quiet"]
    if output_dir:
        shutil.rmtree(output_dir, ignore_errors=True)
        cmd += ["--output-dir", output_dir]
    return run(cmd, RUN_TIMEOUT), cmd


def compare_outputs(got_dir, ref_dir, rtol, atol):
    """Compares the output_<i>.pb files of two folders without Weft's help:
    names, dtypes and shapes exactly, values within atol + rtol * |ref| (NaN
    only where NaN; integers exactly). Returns (problems, max abs error,
    max relative error over nonzero reference elements)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    problems, max_abs, max_rel = [], 0.0, 0.0
    i = 0
    while os.path.exists(os.path.join(ref_dir, "output_%d.pb" % i)):
        ref = onnx.load_tensor(os.path.join(ref_dir, "output_%d.pb" % i))
        path = os.path.join(got_dir, "output_%d.pb" % i)
        i += 1
        if not os.path.exists(path):
            problems.append("no %s" % path)
            continue
        got = onnx.load_tensor(path)
        if got.name != ref.name or got.data_type != ref.data_type or \
                list(got.dims) != list(ref.dims):
            problems.append("output %d is %s type %d %s, want %s type %d %s"
                            % (i - 1, got.name, got.data_type, list(got.dims),
                               ref.name, ref.data_type, list(ref.dims)))
            continue
        g = numpy_helper.to_array(got)
        r = numpy_helper.to_array(ref)
        if not np.issubdtype(r.dtype, np.floating):
            bad = int(np.count_nonzero(g != r))
        else:
            g64, r64 = g.astype(np.float64), r.astype(np.float64)
            nan = np.isnan(r64) | np.isnan(g64)
            bad = int(np.count_nonzero(np.isnan(r64) != np.isnan(g64)))
            diff = np.abs(g64 - r64)[~nan]
            rabs = np.abs(r64)[~nan]
            bad += int(np.count_nonzero(~(diff <= atol + rtol * rabs)))
            if diff.size:
                max_abs = max(max_abs, float(diff.max()))
                nz = rabs > 0
                if nz.any():
                    max_rel = max(max_rel, float((diff[nz] / rabs[nz]).max()))
        if bad:
            problems.append("output %s: %d of %d elements differ" %
                            (ref.name, bad, r.size))
    if os.path.exists(os.path.join(got_dir, "output_%d.pb" % i)):
        problems.append("more outputs than the reference's %d" % i)
    return problems, max_abs, max_rel


def perturb(src, dst):
    """Copies the test-data folder src to dst with element 0 of output_0
    moved by 1e-2 (100x the absolute tolerance)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    path = os.path.join(dst, "output_0.pb")
    tensor = onnx.load_tensor(path)
    arr = numpy_helper.to_array(tensor).copy()
    arr.flat[0] += np.asarray(1e-2 * (1 + abs(arr.flat[0])), arr.dtype)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, tensor.name).SerializeToString())


def fail(row, why, cmd, text):
    row["status"] = "FAIL"
    row["why"] = why
    log("FAIL %s/%s: %s\n  $ %s\n%s" % (row["model"], row["case"], why,
                                        " ".join(cmd), text.rstrip()))


def external_cases(models, pattern):
    """Cases for the models under MODELS (NAME/model.onnx with
    NAME/test_data_set_<k>/ folders): one per test-data set, at the shapes
    of its inputs."""
    import onnx
    cases = []
    for name in sorted(os.listdir(models)):
        path = os.path.join(models, name, "model.onnx")
        if not os.path.isfile(path) or (pattern and
                                        not re.search(pattern, name)):
            continue
        try:
            model = onnx.load(path, load_external_data=False)
        except Exception as err:  # A broken file fails the check; say why.
            log("run_e2e.py: cannot read %s: %s" % (path, err))
            return None
        inits = {i.name for i in model.graph.initializer}
        inputs = [i.name for i in model.graph.input if i.name not in inits]
        opset = next((o.version for o in model.opset_import
                      if o.domain in ("", "ai.onnx")), 0)
        sets = sorted(d for d in os.listdir(os.path.join(models, name))
                      if d.startswith("test_data_set_"))
        for data in sets:
            folder = os.path.join(models, name, data)
            shapes = {}
            for i, input_name in enumerate(inputs):
                pb = os.path.join(folder, "input_%d.pb" % i)
                if not os.path.exists(pb):
                    break
                tensor = onnx.load_tensor(pb)
                shapes[tensor.name or input_name] = list(tensor.dims)
            cases.append({"model": name, "case": data, "onnx": path,
                          "data": folder, "opset": opset, "shapes": shapes,
                          "rtol": RTOL, "atol": ATOL})
    return cases


def run_models(args):
    if args.models:
        cases = external_cases(args.models, args.filter)
        if cases is None:
            return 1
        if not cases:
            log("run_e2e.py: no model with test data under %s%s" %
                (args.models, " matching %r" % args.filter
                 if args.filter else ""))
            return 1
        return check_cases(args, cases)
    only = None
    if args.filter:
        from make_models import MODELS
        only = [m for m in MODELS if re.search(args.filter, m)]
        if not only:
            log("run_e2e.py: --filter %r matches no model" % args.filter)
            return 1
    cases = None
    if args.reuse and os.path.exists(os.path.join(args.out, "cases.json")):
        with open(os.path.join(args.out, "cases.json")) as f:
            cases = json.load(f)
        if only:
            cases = [c for c in cases if c["model"] in only]
    if cases is None:
        cases = generate(args.out, only)
        if not isinstance(cases, list):
            return cases
    return check_cases(args, cases)


def check_cases(args, cases):
    """Compiles and checks every case; prints the table."""
    rows = []
    for case in cases:
        row = {"model": case["model"], "case": case["case"],
               "opset": case["opset"], "status": "ok", "compile": None,
               "run": None, "abs": None, "rel": None}
        rows.append(row)
        pkg = os.path.join(args.out, "pkg", "%s-%s" % (case["model"],
                                                       case["case"]))
        data = os.path.join(args.out, case["data"])
        (rc, secs, text), cmd = compile_case(args.weftc, args.out, case, pkg,
                                             args.weftc_arg)
        row["compile"] = secs
        if rc != 0:
            fail(row, "weftc " + describe_rc(rc), cmd, text)
            continue
        if args.compile_target and secs > args.compile_target:
            row["slow"] = True
        outputs = os.path.join(pkg, "outputs")
        (rc, secs, text), cmd = check_case(pkg, data, data, case,
                                          output_dir=outputs)
        row["run"] = secs
        # Weft's own comparison (run.sh --check) and this script's must
        # both pass; the table shows this script's figures.
        problems = []
        if rc in (0, 2):
            problems, row["abs"], row["rel"] = compare_outputs(
                outputs, data, case["rtol"], case["atol"])
        if rc != 0:
            fail(row, "run.sh --check " + describe_rc(rc) +
                 (" (mismatch)" if rc == 2 else ""), cmd,
                 text + "\n".join(problems))
        elif problems:
            fail(row, "outputs differ (run.sh said they match)", cmd,
                 text + "\n".join(problems))

    # A comparison that cannot fail proves nothing: a perturbed reference
    # must be reported as a mismatch, by run.sh and by weft-run (which also
    # verifies the weights' checksum against the manifest).
    self_check = None
    first = next((r for r in rows if r["status"] == "ok"), None)
    if first is not None:
        case = next(c for c in cases if c["model"] == first["model"] and
                    c["case"] == first["case"])
        pkg = os.path.join(args.out, "pkg", "%s-%s" % (case["model"],
                                                       case["case"]))
        data = os.path.join(args.out, case["data"])
        bad = os.path.join(args.out, "perturbed")
        perturb(data, bad)
        checks = [(bad, None, 2)]
        if args.weft_run:
            checks += [(data, args.weft_run, 0), (bad, args.weft_run, 2)]
        self_check = bool(compare_outputs(os.path.join(pkg, "outputs"), bad,
                                        case["rtol"], case["atol"])[0])
        if not self_check:
            log("FAIL self-check: compare_outputs missed the perturbation")
        for expected, weft_run, want in checks:
            (rc, _, text), cmd = check_case(pkg, data, expected, case, weft_run)
            if rc != want:
                self_check = False
                log("FAIL self-check: %s gave %s, want exit %d\n  $ %s\n%s" %
                    ("a perturbed reference" if want else "the reference",
                     describe_rc(rc), want, " ".join(cmd), text))

    print_table(rows)
    failed = [r for r in rows if r["status"] != "ok"]
    log("self-check (perturbed reference is a mismatch%s): %s" %
        (", also through weft-run" if args.weft_run else "",
         "n/a" if self_check is None else "ok" if self_check else "FAIL"))
    if args.compile_target:
        slow = [r for r in rows if r.get("slow")]
        log("compile time over %g s: %s (load average %s)" %
            (args.compile_target,
             ", ".join("%s/%s" % (r["model"], r["case"]) for r in slow)
             or "none", " ".join("%.1f" % l for l in os.getloadavg())))
    log("%d/%d cases passed" % (len(rows) - len(failed), len(rows)))
    return 0 if not failed and self_check else 1


def fmt(value, spec):
    return "-" if value is None else spec % value


def print_table(rows):
    head = ("model", "case", "opset", "compile s", "run s", "max abs err",
            "max rel err", "result")
    lines = [head]
    for r in rows:
        lines.append((r["model"], r["case"], str(r["opset"]),
                      fmt(r["compile"], "%.2f"), fmt(r["run"], "%.2f"),
                      fmt(r["abs"], "%.2e"), fmt(r["rel"], "%.2e"),
                      ("FAIL: " + r["why"] if r["status"] != "ok" else
                       "ok (compile over target)" if r.get("slow")
                       else "ok")))
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    log("")
    for n, line in enumerate(lines):
        log("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
        if n == 0:
            log("  ".join("-" * w for w in widths))


def write_lib_case(data, dst):
    """Writes DATA's tensors as raw .bin files and a case.txt for the C
    client: `input|output NAME DTYPE RANK D0 ... FILE` per line."""
    import onnx
    from onnx import numpy_helper
    names = {1: "f32", 6: "i32", 7: "i64", 11: "f64", 9: "bool"}
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    lines = []
    for kind in ("input", "output"):
        i = 0
        while os.path.exists(os.path.join(data, "%s_%d.pb" % (kind, i))):
            tensor = onnx.load_tensor(os.path.join(data, "%s_%d.pb" % (kind,
                                                                       i)))
            arr = numpy_helper.to_array(tensor)
            fname = "%s_%d.bin" % (kind, i)
            arr.astype(arr.dtype.newbyteorder("<")).tofile(
                os.path.join(dst, fname))
            lines.append(" ".join([kind, tensor.name, names[tensor.data_type],
                                   str(arr.ndim)] + [str(d) for d in arr.shape]
                                  + [fname]))
            i += 1
    with open(os.path.join(dst, "case.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def run_lib(args):
    cases = generate(args.out, [LIB_MODEL])
    if not isinstance(cases, list):
        return cases
    case = next(c for c in cases if c["case"] == LIB_CASE)
    pkg = os.path.join(args.out, "lib-pkg")
    data = os.path.join(args.out, case["data"])
    steps = []

    def step(name, result, cmd, want=0):
        rc, secs, text = result
        ok = rc == want
        steps.append((name, secs, "ok" if ok else "FAIL (%s, want exit %d)" %
                      (describe_rc(rc), want)))
        log("%s %s (%.2f s)\n  $ %s" % ("ok  " if ok else "FAIL", name, secs,
                                         " ".join(cmd)))
        if text.strip():
            log("    " + text.rstrip().replace("\n", "\n    "))
        return ok

    result, cmd = compile_case(args.weftc, args.out, case, pkg,
                              ["--emit=lib"])
    if not step("weftc --emit=lib", result, cmd):
        return 1
    for f in ("include/weft_model.h", "include/weft_rt.h",
              "lib/libweft_model.so", "weights/dev0.bin"):
        if not os.path.isfile(os.path.join(pkg, f)):
            log("FAIL package lacks %s" % f)
            return 1

    client = os.path.join(args.out, "lib_client")
    lib = os.path.join(pkg, "lib")
    cmd = [args.cc, "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror",
           "-I", os.path.join(pkg, "include"), args.client, "-o", client,
           "-L", lib, "-lweft_model", "-Wl,-rpath," + os.path.abspath(lib),
           "-lm"]
    if not step("cc lib_client.c", run(cmd, 120), cmd):
        return 1

    good = os.path.join(args.out, "lib-case")
    write_lib_case(data, good)
    weights = os.path.join(pkg, "weights", "dev0.bin")
    cmd = [client, weights, good, str(case["rtol"]), str(case["atol"])]
    ok = step("lib_client on the reference", run(cmd, RUN_TIMEOUT), cmd)

    # The client must notice wrong numbers.
    bad = os.path.join(args.out, "perturbed")
    perturb(data, bad)
    bad_lib = os.path.join(args.out, "lib-case-perturbed")
    write_lib_case(bad, bad_lib)
    cmd = [client, weights, bad_lib, str(case["rtol"]), str(case["atol"])]
    ok &= step("lib_client on a perturbed reference", run(cmd, RUN_TIMEOUT),
               cmd, want=1)
    log("%s: %d/%d steps passed" % ("passed" if ok else "FAILED",
                                   sum(s[2] == "ok" for s in steps),
                                   len(steps)))
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weftc", required=True, help="the weftc to test")
    parser.add_argument("--out", required=True,
                        help="work folder: models, packages (created)")
    parser.add_argument("--models", metavar="DIR",
                        help="check the models under DIR (NAME/model.onnx, "
                        "NAME/test_data_set_<k>/) instead of generating")
    parser.add_argument("--weft-run", metavar="PATH",
                        help="also check one package through this weft-run "
                        "(default: the weft-run next to --weftc, if any)")
    parser.add_argument("--filter", help="only models matching REGEX")
    parser.add_argument("--compile-target", type=float, metavar="S",
                        help="report compilations over S seconds (they do "
                        "not fail: timings on a shared machine vary)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse OUT/cases.json instead of regenerating")
    parser.add_argument("--weftc-arg", action="append", default=[],
                        metavar="ARG",
                        help="pass ARG to every weftc compile (repeatable), "
                        "e.g. --weftc-arg=--target=cuda "
                        "--weftc-arg=--gpu-emulate")
    parser.add_argument("--emit-lib", action="store_true",
                        help="test --emit=lib with the C client")
    parser.add_argument("--client", default=os.path.join(HERE, "lib_client.c"),
                        help="the C client's source (--emit-lib)")
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"),
                        help="C compiler (--emit-lib; default $CC or cc)")
    args = parser.parse_args()
    if not os.access(args.weftc, os.X_OK):
        log("run_e2e.py: --weftc %s is not an executable" % args.weftc)
        return 1
    args.weftc = os.path.abspath(args.weftc)
    if args.weft_run is None:
        sibling = os.path.join(os.path.dirname(args.weftc), "weft-run")
        args.weft_run = sibling if os.access(sibling, os.X_OK) else None
    elif not os.access(args.weft_run, os.X_OK):
        log("run_e2e.py: --weft-run %s is not an executable" % args.weft_run)
        return 1
    args.out = os.path.abspath(args.out)
    if args.models and not os.path.isdir(args.models):
        log("run_e2e.py: --models %s is not a folder" % args.models)
        return 1
    os.makedirs(args.out, exist_ok=True)
    return run_lib(args) if args.emit_lib else run_models(args)


if __name__ == "__main__":
    sys.exit(main())
