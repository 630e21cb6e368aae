#!/usr/bin/env python3
"""Compiles and runs every ONNX node conformance test with weftc.

Each test in ONNX's node test data (libonnx-testdata) is compiled by weftc for
the input shapes of its test_data_set_0 (--input-shape for every graph input)
into a temporary package, which is run on test_data_set_0's inputs and checked
against its outputs (run.sh --check, rtol 1e-3 and atol 1e-4 unless a test in
TOLERANCES says otherwise, with its reason). The package is deleted afterwards
(--keep DIR keeps the ones that did not pass, for triage).

Every test ends in one of:
  passed      compiled, ran, and its outputs match
  mismatch    compiled and ran, but an output differs (run.sh exit 2)
  run-error   compiled, but the package refused the test's inputs (exit 1)
  refused     weftc refused it cleanly (exit 1 with an "error:" line)
  crash       any other exit code or a signal, in weftc or in the package
              (exit 70, "internal error", counts as a crash too)
  timeout     weftc ran past --compile-timeout or the package past
              --run-timeout
  bad-data    test_data_set_0 disagrees with the model (see prepare_data);
              not run, listed
Tests whose ops and data types are all in weft's supported list (the
eligibility rule of node_import.py) are "eligible"; the others are expected to
be refused, but one that passes is welcome.

The tests that pass today are kept in node_run_expected.txt: a test on it that
no longer passes is a regression and fails the suite; a test that passes but
is not on it is reported (an unexpected pass, not a failure) so the list can
be updated with --update. Any crash or timeout also fails the suite.

Usage: node_run.py --weftc PATH [--data DIR] [--jobs N] [--filter REGEX]
                   [--expected FILE] [--update] [--verbose] [--keep DIR]
                   [--compile-timeout S] [--run-timeout S]

Examples:
  node_run.py --weftc build/bin/weftc --jobs 2 --verbose
  node_run.py --weftc build/bin/weftc --filter 'test_(add|sub)' --keep /tmp/k
  node_run.py --weftc build/bin/weftc --update    # rewrite the expected list
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_import import is_eligible  # noqa: E402  (same eligibility rule)

RTOL = 1e-3
ATOL = 1e-4

# Per-test tolerances looser than RTOL/ATOL, each with the reason it is fair.
# name -> (rtol, atol, reason)
_BF16_TRUNCATED = (
    1e-2, ATOL,
    "ONNX 1.12's generator (onnx/backend/test/case/node/cast.py) keeps the "
    "upper 16 bits of each float32, i.e. truncates; weft rounds to nearest "
    "even, as onnx.helper.float32_to_bfloat16 does by default: they differ "
    "by at most one bfloat16 ulp, 2^-8 relative")
TOLERANCES = {
    "test_cast_FLOAT_to_BFLOAT16": _BF16_TRUNCATED,
    "test_castlike_FLOAT_to_BFLOAT16": _BF16_TRUNCATED,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": _BF16_TRUNCATED,
}

# Exit codes of run.sh (the weft-run contract).
RUN_PASSED, RUN_BAD_INPUT, RUN_MISMATCH = 0, 1, 2


def graph_inputs(model):
    """The graph inputs fed by test data (initializers excluded), in order."""
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def read_tensor(path):
    """The TensorProto stored in path."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def input_shapes(test_dir, model):
    """--input-shape flags for every tensor input, from test_data_set_0."""
    data_dir = os.path.join(test_dir, "test_data_set_0")
    flags = []
    for idx, vi in enumerate(graph_inputs(model)):
        path = os.path.join(data_dir, "input_%d.pb" % idx)
        if not os.path.exists(path) or not vi.type.HasField("tensor_type"):
            continue
        try:
            t = read_tensor(path)
        except Exception:  # noqa: BLE001 - not a tensor: weftc will say why
            continue
        flags.append("--input-shape=%s=%s" % (vi.name,
                                              "x".join(str(d) for d in t.dims)))
    return flags


def static_shape(vi):
    """The declared shape of a value as a list, or None if not all static."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape") or \
            not all(d.HasField("dim_value") for d in tt.shape.dim):
        return None
    return [d.dim_value for d in tt.shape.dim]


def prepare_data(test_dir, model, work_dir):
    """(None, the folder to give run.sh for --inputs and --check), or
    (why test_data_set_0 cannot be fed to the model as it is, None).

    ONNX 1.12 wrote its bfloat16 test tensors with data type UINT16 (the
    same 16 bits): those are relabeled BFLOAT16 in a copy under work_dir. A
    tensor whose shape disagrees with the model's declared static shape is a
    defect of the test data (the castlike bfloat16 tests feed 'like' as [1]
    to a [3, 4] input), reported rather than run."""
    data_dir = os.path.join(test_dir, "test_data_set_0")
    relabeled = {}
    for kind, values in (("input", graph_inputs(model)),
                         ("output", list(model.graph.output))):
        for idx, vi in enumerate(values):
            name = "%s_%d.pb" % (kind, idx)
            path = os.path.join(data_dir, name)
            if not os.path.exists(path) or not vi.type.HasField("tensor_type"):
                continue
            try:
                t = read_tensor(path)
            except Exception:  # noqa: BLE001 - the runtime will say why
                continue
            declared = static_shape(vi)
            if declared is not None and declared != list(t.dims):
                return ("test data %s has shape %s but the model declares "
                        "'%s' as %s" % (name, list(t.dims), vi.name,
                                        declared), None)
            if vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 \
                    and t.data_type == onnx.TensorProto.UINT16:
                t.data_type = onnx.TensorProto.BFLOAT16
                relabeled[name] = t
    if not relabeled:
        return None, data_dir
    fixed_dir = os.path.join(work_dir, "data")
    os.makedirs(fixed_dir, exist_ok=True)
    for name in os.listdir(data_dir):
        if name in relabeled:
            with open(os.path.join(fixed_dir, name), "wb") as f:
                f.write(relabeled[name].SerializeToString())
        else:
            shutil.copy(os.path.join(data_dir, name), fixed_dir)
    return None, fixed_dir


def run_bounded(cmd, timeout):
    """Runs cmd in its own process group; returns (exit code, output) or
    (None, output) when it timed out, after killing the whole group (run.sh's
    children included). A command that cannot be started exits 127."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True)
    except OSError as e:
        return 127, "cannot run %s: %s" % (cmd[0], e)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return None, out


def describe_exit(code):
    """'exit 70', 'killed by SIGSEGV', 'exit 139 (SIGSEGV)'."""
    if code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    if code > 128:  # a shell reporting its child's signal
        try:
            return "exit %d (%s)" % (code, signal.Signals(code - 128).name)
        except ValueError:
            pass
    return "exit %d" % code


def first_error(text):
    """The first line of text that says "error:", else its first line."""
    return next((l.strip() for l in text.splitlines() if "error:" in l),
                text.strip().splitlines()[0] if text.strip() else "")


def refusal_category(text):
    """(category, unsupported op types) of a refusal: the category is the
    first error line without the model path, value names and numbers, led
    by the op type of the node it names; models with unsupported operators
    all share one category and list their op types."""
    line = first_error(text)
    line = line.split("error:", 1)[1].strip() if "error:" in line else line
    if "unsupported operator type" in line:
        ops = re.findall(r"^\s+([A-Za-z0-9_.]+): \d+ node", text, re.M)
        return "unsupported operator", sorted(set(ops))
    op = ""
    m = re.match(r"node '([A-Za-z0-9_]+):[^']*': (.*)", line)
    if m:
        op, line = m.group(1) + ": ", m.group(2)
    m = re.match(r"node '[^']*' \(([A-Za-z0-9_]+)\): (.*)", line)
    if m:
        op, line = m.group(1) + ": ", m.group(2)
    # Keep the names of ops ('weft.trilu'), drop those of values.
    line = re.sub(r"'[^']*'", lambda m: m.group(0) if re.match(
        r"'(weft|arith|linalg|tensor)\.", m.group(0)) else "'…'", line)
    line = re.sub(r"\b\d+\b", "N", line)
    return op + line, []


MISMATCH_RE = re.compile(r"output (\S+): max abs err (\S+), max rel err (\S+), "
                         r"(\d+)/(\d+) mismatched")


def mismatch_summary(text):
    """'out: abs 3.9 rel 49.6 (60/60)' for each differing output."""
    parts = []
    for m in MISMATCH_RE.finditer(text):
        if m.group(4) != "0":
            parts.append("%s: abs %s rel %s (%s/%s)" % m.groups())
    return "; ".join(parts) or first_error(text)


class Result:
    """How one test ended: status as in the module docstring, detail the
    line that explains it, compile_s the seconds weftc took."""

    def __init__(self, name, eligible, status, detail, compile_s=0.0):
        self.name, self.eligible = name, eligible
        self.status, self.detail = status, detail
        self.compile_s = compile_s
        self.category = ""
        self.unsupported_ops = []


def run_one(args, test_dir, work_root):
    """Compiles, runs and checks one test; keeps its package if asked."""
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    data_dir = os.path.join(test_dir, "test_data_set_0")
    try:
        model = onnx.load(model_path, load_external_data=False)
    except Exception as e:  # noqa: BLE001 - report, don't die
        return Result(name, None, "skip", "python onnx cannot load: %s" % e)
    if not os.path.isdir(data_dir):
        return Result(name, None, "skip", "no test_data_set_0")
    eligible = is_eligible(model)
    out_dir = os.path.join(work_root, name)
    scratch = os.path.join(work_root, name + ".data")
    try:
        result = compile_and_run(args, test_dir, model, eligible, out_dir,
                                 scratch)
        if args.keep and result.status != "passed" and \
                os.path.isdir(out_dir):
            shutil.copytree(out_dir, os.path.join(args.keep, name),
                            symlinks=True, dirs_exist_ok=True)
        return result
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def compile_and_run(args, test_dir, model, eligible, out_dir, scratch):
    """The Result of compiling test_dir's model into out_dir and running it
    on test_data_set_0 (repaired under scratch if need be)."""
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    rtol, atol, _ = TOLERANCES.get(name, (RTOL, ATOL, ""))
    problem, data_dir = prepare_data(test_dir, model, scratch)
    if problem:
        return Result(name, eligible, "bad-data", problem)

    cmd = [args.weftc, "--quiet", model_path, "-o", out_dir]
    cmd += input_shapes(test_dir, model)
    start = time.time()
    code, text = run_bounded(cmd, args.compile_timeout)
    compile_s = time.time() - start
    if code is None:
        return Result(name, eligible, "timeout",
                      "weftc ran past %d s" % args.compile_timeout, compile_s)
    if code == 1 and "error:" in text:
        r = Result(name, eligible, "refused", first_error(text), compile_s)
        r.category, r.unsupported_ops = refusal_category(text)
        return r
    if code != 0:
        return Result(name, eligible, "crash", "weftc %s: %s" % (
            describe_exit(code), text.strip()[-1500:]), compile_s)

    cmd = [os.path.join(out_dir, "run.sh"), "--inputs", data_dir,
           "--check", data_dir, "--rtol", repr(rtol), "--atol", repr(atol)]
    start = time.time()
    code, text = run_bounded(cmd, args.run_timeout)
    run_s = time.time() - start
    if code is None:
        return Result(name, eligible, "timeout",
                      "run ran past %d s" % args.run_timeout, compile_s)
    if code == RUN_PASSED:
        return Result(name, eligible, "passed", "compile %.1f s, run %.2f s"
                      % (compile_s, run_s), compile_s)
    if code == RUN_MISMATCH:
        return Result(name, eligible, "mismatch", mismatch_summary(text),
                      compile_s)
    if code == RUN_BAD_INPUT and "error" in text:
        return Result(name, eligible, "run-error", first_error(text),
                      compile_s)
    return Result(name, eligible, "crash", "run %s: %s" % (
        describe_exit(code), text.strip()[-1500:]), compile_s)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weftc", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="",
                    help="run only tests whose name matches this regex")
    ap.add_argument("--expected", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "node_run_expected.txt"))
    ap.add_argument("--update", action="store_true",
                    help="rewrite the expected list with today's passes")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", default="",
                    help="copy the packages of tests that did not pass here")
    ap.add_argument("--compile-timeout", type=int, default=120)
    ap.add_argument("--run-timeout", type=int, default=60)
    args = ap.parse_args()

    if not os.path.isdir(args.data):
        print("node-run: no ONNX test data at %s (install libonnx-testdata)"
              % args.data, file=sys.stderr)
        return 1
    if not os.access(args.weftc, os.X_OK):
        print("node-run: %s is not an executable" % args.weftc, file=sys.stderr)
        return 1
    if args.jobs < 1 or args.compile_timeout < 1 or args.run_timeout < 1:
        print("node-run: --jobs and the timeouts must be at least 1",
              file=sys.stderr)
        return 1
    try:
        name_filter = re.compile(args.filter)
    except re.error as e:
        print("node-run: bad --filter: %s" % e, file=sys.stderr)
        return 1
    if args.update and args.filter:
        print("node-run: --update needs the whole suite (no --filter)",
              file=sys.stderr)
        return 1
    if args.keep:
        try:
            os.makedirs(args.keep, exist_ok=True)
        except OSError as e:
            print("node-run: cannot create --keep folder: %s" % e,
                  file=sys.stderr)
            return 1
    args.weftc = os.path.abspath(args.weftc)

    tests = sorted(os.path.join(args.data, d) for d in os.listdir(args.data)
                   if os.path.isfile(os.path.join(args.data, d, "model.onnx"))
                   and name_filter.search(d))
    start = time.time()
    work_root = tempfile.mkdtemp(prefix="weft-node-run-")
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, args, t, work_root) for t in tests]
            results = []
            for test, fut in zip(tests, futures):
                try:
                    r = fut.result()
                except Exception as e:  # noqa: BLE001 - a bug here fails too
                    r = Result(os.path.basename(test), None, "crash",
                               "node_run.py itself failed: %r" % e)
                results.append(r)
                if args.verbose:
                    line = "%-55s %-9s %s" % (r.name, r.status, r.detail)
                    print(line if len(line) < 400 else line[:400] + " [...]",
                          flush=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    elapsed = time.time() - start

    expected = set()
    if os.path.exists(args.expected):
        with open(args.expected) as f:
            expected = {l.strip() for l in f
                        if l.strip() and not l.startswith("#")}

    def count(status, eligible=None):
        return sum(1 for r in results if r.status == status and
                   (eligible is None or r.eligible == eligible))

    crashes = [r for r in results if r.status in ("crash", "timeout")]
    regressions = [r for r in results
                   if r.name in expected and r.status != "passed"]
    new_passes = [r for r in results
                  if r.status == "passed" and r.name not in expected]
    eligible = [r for r in results if r.eligible]
    print("node-run: %d tests in %.0f s (--jobs %d)" % (len(results), elapsed,
                                                       args.jobs))
    print("  eligible (only supported ops and dtypes): %d; passed %d, "
          "mismatch %d, run-error %d, refused %d, crash %d, timeout %d" % (
              len(eligible), count("passed", True), count("mismatch", True),
              count("run-error", True), count("refused", True),
              count("crash", True), count("timeout", True)))
    print("  others: %d; refused cleanly %d, passed %d, mismatch %d, "
          "run-error %d" % (
              sum(1 for r in results if r.eligible is False),
              count("refused", False), count("passed", False),
              count("mismatch", False), count("run-error", False)))
    print("  totals: passed %d, failed check %d, run-error %d, refused %d, "
          "crashes %d, timeouts %d, bad test data %d, skipped %d" % (
              count("passed"), count("mismatch"), count("run-error"),
              count("refused"), count("crash"), count("timeout"),
              count("bad-data"), count("skip")))
    refusal_times = [r.compile_s for r in results if r.status == "refused"]
    if refusal_times:
        print("  refusals took %.2f s at most (%.2f s on average)" % (
            max(refusal_times), sum(refusal_times) / len(refusal_times)))

    categories, ops = {}, {}
    for r in results:
        if r.status == "refused":
            categories.setdefault(r.category, []).append(r.name)
            for op in r.unsupported_ops:
                ops[op] = ops.get(op, 0) + 1
    if categories:
        print("  refused at compile time, by category:")
        for cat, names in sorted(categories.items(),
                                 key=lambda kv: (-len(kv[1]), kv[0])):
            print("    %4d  %s" % (len(names), cat[:150]))
            if cat == "unsupported operator":
                listed = ["%s %d" % (op, n) for op, n in sorted(
                    ops.items(), key=lambda kv: (-kv[1], kv[0]))]
                for i in range(0, len(listed), 6):
                    print("            " + ", ".join(listed[i:i + 6]))
    for r in results:
        if r.status == "refused" and r.eligible:
            print("  eligible but refused: %s: %s" % (r.name, r.detail[:300]))
    for r in results:
        if r.status in ("bad-data", "skip"):
            print("  not run: %s: %s" % (r.name, r.detail))
    for r in results:
        if r.status in ("mismatch", "run-error"):
            print("  FAILED %s (%s): %s" % (r.name, r.status, r.detail[:300]))
    for r in crashes:
        print("  CRASH %s (%s): %s" % (r.name, r.status, r.detail))
    for r in regressions:
        print("  REGRESSION %s no longer passes: %s: %s" % (
            r.name, r.status, r.detail[:300]))
    if args.update:
        print("  unexpected passes: %d (now added to %s)" % (
            len(new_passes), os.path.basename(args.expected)))
    else:
        for r in new_passes:
            print("  unexpected pass: %s (not yet in %s)" % (
                r.name, os.path.basename(args.expected)))

    if args.update:
        with open(args.expected, "w") as f:
            f.write("# ONNX node tests (libonnx-testdata) that weftc compiles\n"
                    "# and whose package reproduces test_data_set_0's\n"
                    "# outputs. Regenerate with node_run.py --update.\n")
            for r in results:
                if r.status == "passed":
                    f.write(r.name + "\n")
        print("node-run: wrote %s" % args.expected)

    failed = len({r.name for r in crashes + regressions})
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
