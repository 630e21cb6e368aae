#!/usr/bin/env python3
"""Checks that pipelines that flow compute what one device computes.

  1. Microbatches: the in-repo mlp, transformer, cnn and GPT at batch 8,
     compiled for one device (the baseline, itself checked against the
     reference outputs), then as pipelines of 2 and 3 stages (--stages on
     cpu:2 and cpu:3) with --microbatches 2 and 4, each run with
     `weft-run --check BASELINE`; plan.json's schedule must name the
     microbatch count.
  2. Streams: the mlp at batch 1 and 200 distinct requests (request_<i>/
     folders of random inputs). The one-device package's `--stream 200
     --output-dir` gives each request's baseline, and a few requests run one
     at a time must agree with it (the stream mode itself is checked). The
     2-stage pipeline's `--stream 200 --check BASELINE` must pass, its
     written request_<i>/ outputs must match request i's baseline, and its
     throughput line must be there.
  3. Self-checks, so that the test can fail: the stream checked against the
     baseline shifted by one request must exit 2; --microbatches=3 on batch
     8 must exit 1.

Prints a table (model, stages, microbatches, result, seconds). Exit codes: 0
all passed, 1 a failure, 77 PyTorch or ONNX missing.

With --shared DIR (not with --quick) the shared mlp, bert_tiny and resnet18
join step 1 at batch 8 on random inputs; their one-device run is the
baseline.

Usage: run_stream_e2e.py --weftc PATH --weft-run PATH --work DIR [--quick]
                         [--shared DIR]
"""

import argparse
import copy
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run_e2e import compare_outputs, describe_rc, run  # noqa: E402
import run_multi_e2e as multi  # noqa: E402

SKIP = 77
RTOL, ATOL = 1e-3, 1e-4
TIMEOUT = 300
REQUESTS = 200

# The models at batch 8 (make_models.py's b8 cases, make_gpt --batch 8).
BATCH8 = {
    "mlp": {"case": "b8"},
    "transformer": {"case": "b8_s16"},
    "cnn": {"case": "b8_16x16"},
    "gpt": {"case": "b8", "args": ["--layers", "2", "--hidden", "64",
                                   "--heads", "4", "--seq", "16", "--batch",
                                   "8", "--vocab", "100", "--seed", "7"]},
}
# (stages, microbatches): every pair in the full run; --quick keeps two.
RUNS = [(2, 2), (2, 4), (3, 2), (3, 4)]
QUICK_RUNS = [(2, 2), (3, 4)]


def log(msg):
    print(msg, flush=True)


def shape_flags(shapes):
    return ["--input-shape=%s=%s" % (k, "x".join(map(str, v)))
            for k, v in shapes.items()]


class Runner:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.failed = 0

    def compile(self, model, pkg, flags):
        shutil.rmtree(pkg, ignore_errors=True)
        cmd = [self.args.weftc, model["onnx"], "-o", pkg, "--quiet"] + \
            shape_flags(model["shapes"]) + flags
        rc, secs, text = run(cmd, TIMEOUT)
        return rc, secs, text, cmd

    def weft_run(self, pkg, flags):
        cmd = [self.args.weft_run, pkg, "--rtol", str(RTOL), "--atol",
               str(ATOL), "--threads", "1", "--timeout", str(TIMEOUT),
               "--quiet"] + flags
        rc, secs, text = run(cmd, TIMEOUT + 30)
        return rc, secs, text, cmd

    def report(self, row, ok, why="", cmd=None, text=""):
        row["result"] = "ok" if ok else "FAIL"
        self.rows.append(row)
        if not ok:
            self.failed += 1
            log("FAIL %s: %s" % (row, why))
            if cmd:
                log("  $ " + " ".join(cmd))
            if text:
                log("  " + text.strip().replace("\n", "\n  ")[-3000:])


def batch8_models(work):
    saved = copy.deepcopy(multi.MODELS)
    try:
        for name, spec in BATCH8.items():
            multi.MODELS[name].update(spec)
        return multi.generate(os.path.join(work, "batch8"), list(BATCH8))
    finally:
        multi.MODELS.clear()
        multi.MODELS.update(saved)


def baseline(runner, name, model, work):
    pkg = os.path.join(work, "base", name)
    rc, secs, text, cmd = runner.compile(model, pkg, [])
    if rc != 0:
        runner.report({"model": name, "stages": 1, "microbatches": 1}, False,
                      "weftc " + describe_rc(rc), cmd, text)
        return None
    outputs = os.path.join(pkg, "outputs")
    check = [] if model.get("no_reference") else ["--check", model["data"]]
    rc, rsecs, text, cmd = runner.weft_run(
        pkg, ["--inputs", model["data"], "--output-dir", outputs] + check)
    runner.report({"model": name, "stages": 1, "microbatches": 1,
                   "seconds": round(secs + rsecs, 2)}, rc == 0,
                  "against the reference: weft-run " + describe_rc(rc), cmd,
                  text)
    return outputs if rc == 0 else None


def microbatch_run(runner, name, model, base, stages, micro, work):
    row = {"model": name, "stages": stages, "microbatches": micro}
    pkg = os.path.join(work, "micro", "%s-s%d-m%d" % (name, stages, micro))
    rc, secs, text, cmd = runner.compile(
        model, pkg, ["--cluster", "cpu:%d" % stages, "--stages=%d" % stages,
                     "--microbatches=%d" % micro])
    if rc != 0:
        return runner.report(row, False, "weftc " + describe_rc(rc), cmd, text)
    outputs = os.path.join(pkg, "outputs")
    rc, rsecs, text, cmd = runner.weft_run(
        pkg, ["--inputs", model["data"], "--check", base, "--output-dir",
              outputs])
    row["seconds"] = round(secs + rsecs, 2)
    problems = compare_outputs(outputs, base, RTOL, ATOL)[0] \
        if rc in (0, 2) else []
    with open(os.path.join(pkg, "plan.json")) as f:
        schedule = json.load(f).get("schedule", {})
    if schedule.get("microbatches") != micro:
        problems.append("plan.json schedule %r" % schedule)
    for key in ("predicted_latency_seconds", "predicted_throughput_per_s"):
        if not schedule.get(key, 0) > 0:
            problems.append("plan.json schedule has no positive %s" % key)
    runner.report(row, rc == 0 and not problems,
                  "against one device: weft-run %s %s" %
                  (describe_rc(rc), "; ".join(problems)), cmd, text)


def write_requests(folder, count, shape, seed):
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(seed)
    for r in range(count):
        path = os.path.join(folder, "request_%d" % r)
        os.makedirs(path, exist_ok=True)
        x = rng.standard_normal(shape).astype(np.float32)
        tensor = numpy_helper.from_array(x, "x")
        with open(os.path.join(path, "input_0.pb"), "wb") as f:
            f.write(tensor.SerializeToString())


THROUGHPUT = re.compile(r"throughput: ([0-9.e+]+) requests/s \((\d+) requests,"
                        r" p50 ([0-9.e+]+) ms, p99 ([0-9.e+]+) ms\)")


def stream_case(runner, work):
    saved = copy.deepcopy(multi.MODELS)
    try:
        multi.MODELS["mlp"]["case"] = "b1"
        models = multi.generate(os.path.join(work, "batch1"), ["mlp"])
    finally:
        multi.MODELS.clear()
        multi.MODELS.update(saved)
    if not isinstance(models, dict):
        runner.failed += 1
        return
    model = models["mlp"]
    requests = os.path.join(work, "requests")
    shutil.rmtree(requests, ignore_errors=True)
    write_requests(requests, REQUESTS, model["shapes"]["x"], seed=11)

    # The baseline of every request: one device, streamed.
    single = os.path.join(work, "stream", "one")
    rc, secs, text, cmd = runner.compile(model, single, [])
    row = {"model": "mlp b1", "stages": 1, "microbatches": "stream %d" %
           REQUESTS}
    if rc != 0:
        return runner.report(row, False, "weftc " + describe_rc(rc), cmd, text)
    base = os.path.join(work, "stream", "base")
    shutil.rmtree(base, ignore_errors=True)
    rc, rsecs, text, cmd = runner.weft_run(
        single, ["--inputs", requests, "--stream", str(REQUESTS),
                 "--output-dir", base])
    problems = [] if THROUGHPUT.search(text) else ["no throughput line"]
    # Stream mode against single runs of a few requests.
    for r in (0, 1, 117, REQUESTS - 1):
        out = os.path.join(work, "stream", "single_%d" % r)
        shutil.rmtree(out, ignore_errors=True)
        rc1, _, text1, cmd1 = runner.weft_run(
            single, ["--inputs", os.path.join(requests, "request_%d" % r),
                     "--output-dir", out])
        if rc1 != 0:
            problems.append("request %d alone: %s" % (r, describe_rc(rc1)))
        else:
            problems += ["request %d: %s" % (r, p) for p in compare_outputs(
                out, os.path.join(base, "request_%d" % r), 0, 0)[0]]
    row["seconds"] = round(secs + rsecs, 2)
    runner.report(row, rc == 0 and not problems, "one-device stream: %s %s" %
                  (describe_rc(rc), "; ".join(problems)), cmd, text)
    if rc != 0:
        return

    pipe = os.path.join(work, "stream", "pipe")
    rc, secs, text, cmd = runner.compile(
        model, pipe, ["--cluster", "cpu:2", "--stages=2"])
    row = {"model": "mlp b1", "stages": 2, "microbatches": "stream %d" %
           REQUESTS}
    if rc != 0:
        return runner.report(row, False, "weftc " + describe_rc(rc), cmd, text)
    outputs = os.path.join(work, "stream", "pipe_outputs")
    shutil.rmtree(outputs, ignore_errors=True)
    rc, rsecs, text, cmd = runner.weft_run(
        pipe, ["--inputs", requests, "--stream", str(REQUESTS), "--check",
               base, "--output-dir", outputs])
    problems = []
    match = THROUGHPUT.search(text)
    if not match or int(match.group(2)) != REQUESTS:
        problems.append("no throughput line for %d requests" % REQUESTS)
    if rc == 0:
        for r in range(REQUESTS):
            problems += ["request %d: %s" % (r, p) for p in compare_outputs(
                os.path.join(outputs, "request_%d" % r),
                os.path.join(base, "request_%d" % r), RTOL, ATOL)[0]]
    row["seconds"] = round(secs + rsecs, 2)
    runner.report(row, rc == 0 and not problems, "pipeline stream: %s %s" %
                  (describe_rc(rc), "; ".join(problems[:5])), cmd, text)

    # Self-check: request i against request i + 1's baseline must fail.
    shifted = os.path.join(work, "stream", "shifted")
    shutil.rmtree(shifted, ignore_errors=True)
    for r in range(REQUESTS):
        shutil.copytree(os.path.join(base, "request_%d" % ((r + 1) % REQUESTS)),
                        os.path.join(shifted, "request_%d" % r))
    rc, _, text, cmd = runner.weft_run(
        pipe, ["--inputs", requests, "--stream", str(REQUESTS), "--check",
               shifted])
    runner.report({"model": "mlp b1", "stages": 2,
                   "microbatches": "self-check: shifted requests"}, rc == 2,
                  "expected exit 2, got " + describe_rc(rc), cmd, text)


def refusal_case(runner, name, model, work):
    pkg = os.path.join(work, "refused")
    rc, _, text, cmd = runner.compile(
        model, pkg, ["--cluster", "cpu:2", "--stages=2", "--microbatches=3"])
    ok = rc == 1 and "does not divide the batch 8" in text
    runner.report({"model": name, "stages": 2,
                   "microbatches": "self-check: 3 of 8"}, ok,
                  "expected exit 1 naming the batch, got " + describe_rc(rc),
                  cmd, text)


def shared_batch8(shared, work):
    """The shared models with a batch dimension, at batch 8 on random
    inputs (the one-device run is the oracle): name -> model."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    out = {}
    for folder in ("mlp", "bert_tiny", "resnet18"):
        path = os.path.join(shared, folder, "model.onnx")
        meta = os.path.join(shared, folder, "meta.json")
        if not (os.path.exists(path) and os.path.exists(meta)):
            continue
        with open(meta) as f:
            first = {k: v[0] for k, v in json.load(f)["inputs"].items()}
        # Integer inputs (token ids, types, masks) keep the test set's
        # values, shuffled along the row for each of the 8 rows; floats
        # are random.
        sample = os.path.join(shared, folder, "test_data_set_0")
        given = {}
        i = 0
        while os.path.exists(os.path.join(sample, "input_%d.pb" % i)):
            t = onnx.load_tensor(os.path.join(sample, "input_%d.pb" % i))
            given[t.name] = numpy_helper.to_array(t)
            i += 1
        data = os.path.join(work, "shared-data", folder)
        os.makedirs(data, exist_ok=True)
        rng = np.random.default_rng(5)
        shapes = {}
        for i, (name, shape) in enumerate(first.items()):
            row = given[name][0]
            shapes[name] = [8] + list(row.shape)
            if np.issubdtype(row.dtype, np.integer):
                array = np.stack([rng.permutation(row.flatten())
                                  .reshape(row.shape) for _ in range(8)])
            else:
                array = rng.standard_normal(shapes[name]).astype(row.dtype)
            with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(array, name)
                        .SerializeToString())
        out["shared-" + folder] = {"onnx": path, "data": data,
                                   "shapes": shapes, "no_reference": True}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weftc", required=True)
    parser.add_argument("--weft-run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--shared", help="folder of the shared models (run "
                        "at batch 8 on random inputs)")
    parser.add_argument("--quick", action="store_true",
                        help="two microbatch runs per model (ctest)")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        log("run_stream_e2e.py: skipped (install python3-onnx)")
        return SKIP
    os.makedirs(args.work, exist_ok=True)
    models = batch8_models(args.work)
    if models == SKIP:
        return SKIP
    if not isinstance(models, dict):
        return 1
    if args.shared and not args.quick:
        models.update(shared_batch8(args.shared, args.work))
    runner = Runner(args)
    for name in sorted(models):
        base = baseline(runner, name, models[name], args.work)
        if base is None:
            continue
        for stages, micro in QUICK_RUNS if args.quick else RUNS:
            microbatch_run(runner, name, models[name], base, stages, micro,
                           args.work)
    refusal_case(runner, "mlp", models["mlp"], args.work)
    stream_case(runner, args.work)

    log("\n| model | stages | microbatches | result | seconds |")
    log("|---|---|---|---|---|")
    for row in runner.rows:
        log("| %s | %s | %s | %s | %s |" % (
            row["model"], row["stages"], row["microbatches"], row["result"],
            row.get("seconds", "")))
    log("run_stream_e2e.py: %d of %d passed" %
        (len(runner.rows) - runner.failed, len(runner.rows)))
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())
