#!/usr/bin/env python3
"""Generates GPT-style decoder models as ONNX, with reference outputs.

The graph is written node by node with onnx.helper (opset 17), so every
model has exactly the shape the multi-device planner is tested on:

  input_ids i64[batch, seq]
  Gather(wte) + wpe                           token and position embeddings
  per layer (pre-norm):
    LayerNormalization
    MatMul [h, 3h] + Add bias                 packed QKV, one weight
    Slice x3 (or Split)                       Q, K, V
    Reshape [0, 0, heads, h/heads] + Transpose
    MatMul Q K^T, Mul 1/sqrt(dh), Add causal mask (constant), Softmax
    MatMul V, Transpose + Reshape [0, 0, h]   merge the heads
    MatMul [h, h] + Add bias, Add residual
    LayerNormalization
    MatMul [h, 4h] + Add bias, GELU           exact (Erf) or tanh approximation
    MatMul [4h, h] + Add bias, Add residual
  LayerNormalization
  MatMul [h, vocab]                           LM head (--no-lm-head drops it;
                                              --tied makes it wte's transpose)

With --layer-only the model is one such layer whose input is the hidden state
hidden_in [batch, seq, hidden] (the planner's fixed-decision tests).

Weights are drawn from a seeded NumPy generator; the same options give the
same files byte for byte. --zero-weights makes every parameter zero (the
causal mask and the shape constants stay real) and, with --external-data,
writes the data file sparse, so a 300M-parameter model is written in
milliseconds and takes no disk space. --external-data stores every tensor
over 1 KiB in a side file (PATH.data) so the .onnx stays small.

--test-data DIR writes input_0.pb and output_0.pb (ONNX test-data layout).
The reference is computed by a separate NumPy implementation of the same
network in float64 (never by Weft, and not from the ONNX graph), then cast
to the model's dtype.

Usage: make_gpt.py --out PATH [--layers N] [--hidden H] [--heads A]
                   [--seq S] [--batch B] [--vocab V] [--dtype f32|f16]
                   [--seed N] [--layer-only] [--no-lm-head]
                   [--qkv slice|split] [--gelu erf|tanh] [--dynamic-batch]
                   [--zero-weights] [--external-data] [--test-data DIR]
                   [--no-check]

Examples:
  make_gpt.py --out /tmp/gpt/model.onnx --layers 2 --hidden 64 --heads 4 \\
              --seq 16 --vocab 100 --test-data /tmp/gpt/data
  make_gpt.py --out /tmp/gpt24.onnx --layers 24 --hidden 1024 --heads 16 \\
              --seq 1024 --dtype f16 --zero-weights --external-data
  make_gpt.py --out /tmp/layer.onnx --layer-only --hidden 4096 --heads 32 \\
              --seq 1024 --batch 64 --dtype f16 --zero-weights \\
              --external-data

Exit codes: 0 written, 1 bad options or a file that cannot be written,
77 ONNX or NumPy missing.
"""

import argparse
import math
import os
import sys
import time

try:
    import numpy as np
    import onnx
    from onnx import helper, mapping, numpy_helper, TensorProto
except ImportError as err:
    print("make_gpt.py: missing Python module: %s" % err, file=sys.stderr)
    sys.exit(77)

OPSET = 17
LN_EPS = 1e-5
# Added to the scores of future positions. Small enough for f16 (max 65504)
# and large enough that exp() of it is exactly 0 in f16 and f32.
MASK_VALUE = -1e4
# Tensors this large or larger go to the external data file.
EXTERNAL_MIN_BYTES = 1024
# Offsets in the data file are aligned so that a reader may map them.
EXTERNAL_ALIGN = 64

DTYPES = {"f32": (np.float32, TensorProto.FLOAT),
          "f16": (np.float16, TensorProto.FLOAT16)}


class Options:
    """The model's hyperparameters, validated."""

    def __init__(self, args):
        self.layers = args.layers
        self.hidden = args.hidden
        self.heads = args.heads
        self.seq = args.seq
        self.batch = args.batch
        self.vocab = args.vocab
        self.np_dtype, self.onnx_dtype = DTYPES[args.dtype]
        self.dtype = args.dtype
        self.seed = args.seed
        self.layer_only = args.layer_only
        self.lm_head = not args.no_lm_head and not args.layer_only
        self.tied = args.tied
        self.qkv = args.qkv
        self.gelu = args.gelu
        self.dynamic_batch = args.dynamic_batch
        self.zero = args.zero_weights

    def validate(self):
        """Returns a list of problems, empty when the options are usable."""
        problems = []
        for name in ("layers", "hidden", "heads", "seq", "batch", "vocab"):
            if getattr(self, name) < 1:
                problems.append("--%s must be at least 1, got %d" %
                                (name, getattr(self, name)))
        if self.tied and not self.lm_head:
            problems.append("--tied needs the LM head (drop --no-lm-head "
                            "and --layer-only)")
        if self.layer_only and self.layers != 1:
            problems.append("--layer-only builds one layer; drop --layers")
        if self.heads >= 1 and self.hidden % self.heads:
            problems.append("--hidden %d is not a multiple of --heads %d" %
                            (self.hidden, self.heads))
        return problems


def param_shapes(opt):
    """(name, shape, kind) of every parameter, in graph order. kind says how
    it is drawn: 'matmul' (fan-in scaled), 'bias', 'gamma', 'beta',
    'embed', 'pos'."""
    h = opt.hidden
    shapes = []
    if not opt.layer_only:
        shapes += [("wte", (opt.vocab, h), "embed"),
                   ("wpe", (opt.seq, h), "pos")]
    for i in range(opt.layers):
        p = "h%d." % i
        shapes += [
            (p + "ln1.scale", (h,), "gamma"), (p + "ln1.bias", (h,), "beta"),
            (p + "attn.qkv.weight", (h, 3 * h), "matmul"),
            (p + "attn.qkv.bias", (3 * h,), "bias"),
            (p + "attn.proj.weight", (h, h), "matmul"),
            (p + "attn.proj.bias", (h,), "bias"),
            (p + "ln2.scale", (h,), "gamma"), (p + "ln2.bias", (h,), "beta"),
            (p + "mlp.fc.weight", (h, 4 * h), "matmul"),
            (p + "mlp.fc.bias", (4 * h,), "bias"),
            (p + "mlp.proj.weight", (4 * h, h), "matmul"),
            (p + "mlp.proj.bias", (h,), "bias"),
        ]
    if not opt.layer_only:
        shapes += [("ln_f.scale", (h,), "gamma"), ("ln_f.bias", (h,), "beta")]
    if opt.lm_head and not opt.tied:
        shapes.append(("lm_head.weight", (h, opt.vocab), "matmul"))
    return shapes


def make_params(opt):
    """The parameters as arrays of the model's dtype, in graph order."""
    rng = np.random.default_rng(opt.seed)
    params = {}
    for name, shape, kind in param_shapes(opt):
        if opt.zero:
            params[name] = np.zeros(shape, opt.np_dtype)
            continue
        if kind == "gamma":
            arr = rng.random(shape, dtype=np.float32) + 0.5
        elif kind == "beta":
            arr = rng.standard_normal(shape, dtype=np.float32) * 0.2
        elif kind == "bias":
            arr = rng.standard_normal(shape, dtype=np.float32) * 0.1
        elif kind == "embed":
            arr = rng.standard_normal(shape, dtype=np.float32)
        elif kind == "pos":
            arr = rng.standard_normal(shape, dtype=np.float32) * 0.5
        else:
            # Fan-in scaling keeps activations near unit size, so the
            # softmaxes are neither uniform nor one-hot.
            arr = rng.standard_normal(shape, dtype=np.float32)
            arr *= 1.0 / math.sqrt(shape[0])
        params[name] = arr.astype(opt.np_dtype)
    return params


def causal_mask(opt):
    mask = np.triu(np.full((opt.seq, opt.seq), MASK_VALUE, np.float64), k=1)
    return mask.astype(opt.np_dtype)


class GraphBuilder:
    """Collects nodes and initializers; names every node after its output."""

    def __init__(self, opt):
        self.opt = opt
        self.nodes = []
        self.inits = {}

    def const(self, name, array):
        if name not in self.inits:
            self.inits[name] = np.asarray(array)
        return name

    def scalar(self, name, value):
        return self.const(name, np.array(value, self.opt.np_dtype))

    def i64(self, name, values):
        return self.const(name, np.array(values, np.int64))

    def node(self, op, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=output,
                                           **attrs))
        return output

    def layer_norm(self, x, prefix, out):
        return self.node("LayerNormalization",
                         [x, prefix + ".scale", prefix + ".bias"], out,
                         axis=-1, epsilon=LN_EPS)

    def linear(self, x, prefix, out):
        y = self.node("MatMul", [x, prefix + ".weight"], out + ".matmul")
        return self.node("Add", [y, prefix + ".bias"], out)

    def gelu(self, x, p):
        """GELU from primitive ops (opset 17 has no Gelu)."""
        half = self.scalar("gelu.half", 0.5)
        one = self.scalar("gelu.one", 1.0)
        if self.opt.gelu == "erf":
            # 0.5 x (1 + erf(x / sqrt 2))
            t = self.node("Div", [x, self.scalar("gelu.sqrt2", math.sqrt(2))],
                          p + "gelu.div")
            t = self.node("Erf", [t], p + "gelu.erf")
        else:
            # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            x2 = self.node("Mul", [x, x], p + "gelu.x2")
            x3 = self.node("Mul", [x2, x], p + "gelu.x3")
            c = self.node("Mul", [x3, self.scalar("gelu.c", 0.044715)],
                          p + "gelu.cx3")
            t = self.node("Add", [x, c], p + "gelu.inner")
            t = self.node("Mul", [t, self.scalar("gelu.k",
                                                 math.sqrt(2 / math.pi))],
                          p + "gelu.scaled")
            t = self.node("Tanh", [t], p + "gelu.tanh")
        t = self.node("Add", [t, one], p + "gelu.plus1")
        t = self.node("Mul", [x, t], p + "gelu.xmul")
        return self.node("Mul", [t, half], p + "gelu")

    def attention(self, x, p):
        opt = self.opt
        h, heads = opt.hidden, opt.heads
        dh = h // heads
        qkv = self.linear(x, p + "attn.qkv", p + "attn.qkv")
        if opt.qkv == "split":
            names = [p + "attn.q", p + "attn.k", p + "attn.v"]
            self.nodes.append(helper.make_node(
                "Split", [qkv, self.i64("qkv.split", [h, h, h])], names,
                name=p + "attn.split", axis=-1))
            q, k, v = names
        else:
            axes = self.i64("qkv.axes", [-1])
            q, k, v = [
                self.node("Slice", [qkv, self.i64("qkv.start%d" % j, [j * h]),
                                    self.i64("qkv.end%d" % j, [(j + 1) * h]),
                                    axes], p + "attn." + part)
                for j, part in enumerate("qkv")]
        # Reshape's 0 copies the batch and sequence dimensions, so the graph
        # also works with a symbolic batch.
        split_shape = self.i64("heads.shape", [0, 0, heads, dh])
        q = self.node("Reshape", [q, split_shape], p + "attn.q.heads")
        k = self.node("Reshape", [k, split_shape], p + "attn.k.heads")
        v = self.node("Reshape", [v, split_shape], p + "attn.v.heads")
        q = self.node("Transpose", [q], p + "attn.q.t", perm=[0, 2, 1, 3])
        kt = self.node("Transpose", [k], p + "attn.k.t", perm=[0, 2, 3, 1])
        v = self.node("Transpose", [v], p + "attn.v.t", perm=[0, 2, 1, 3])
        s = self.node("MatMul", [q, kt], p + "attn.scores")
        s = self.node("Mul", [s, self.scalar("attn.scale",
                                             1.0 / math.sqrt(dh))],
                      p + "attn.scaled")
        if "attn.mask" not in self.inits:
            self.const("attn.mask", causal_mask(opt))
        s = self.node("Add", [s, "attn.mask"],
                      p + "attn.masked")
        s = self.node("Softmax", [s], p + "attn.probs", axis=-1)
        ctx = self.node("MatMul", [s, v], p + "attn.ctx")
        ctx = self.node("Transpose", [ctx], p + "attn.ctx.t",
                        perm=[0, 2, 1, 3])
        ctx = self.node("Reshape", [ctx, self.i64("merge.shape", [0, 0, h])],
                        p + "attn.merged")
        return self.linear(ctx, p + "attn.proj", p + "attn.out")

    def layer(self, x, i, out=None):
        p = "h%d." % i
        a = self.attention(self.layer_norm(x, p + "ln1", p + "ln1"), p)
        x = self.node("Add", [x, a], p + "resid1")
        m = self.linear(self.layer_norm(x, p + "ln2", p + "ln2"),
                        p + "mlp.fc", p + "mlp.fc")
        m = self.gelu(m, p + "mlp.")
        m = self.linear(m, p + "mlp.proj", p + "mlp.out")
        return self.node("Add", [x, m], out or p + "resid2")


def build_graph(opt, params):
    """Returns (nodes, initializers as name -> array, inputs, outputs)."""
    g = GraphBuilder(opt)
    for name, arr in params.items():
        g.const(name, arr)
    batch = "batch" if opt.dynamic_batch else opt.batch
    h = opt.hidden
    if opt.layer_only:
        inputs = [helper.make_tensor_value_info(
            "hidden_in", opt.onnx_dtype, [batch, opt.seq, h])]
        x = g.layer("hidden_in", 0, "hidden_out")
        outputs = [helper.make_tensor_value_info(
            "hidden_out", opt.onnx_dtype, [batch, opt.seq, h])]
        return g.nodes, g.inits, inputs, outputs
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                            [batch, opt.seq])]
    x = g.node("Gather", ["wte", "input_ids"], "embed.tok", axis=0)
    x = g.node("Add", [x, "wpe"], "embed")
    for i in range(opt.layers):
        x = g.layer(x, i)
    if opt.lm_head:
        x = g.layer_norm(x, "ln_f", "ln_f")
        if opt.tied:
            # GPT-2's tied head: the logits reuse the token embedding.
            head = g.node("Transpose", ["wte"], "wte.T", perm=[1, 0])
        else:
            head = "lm_head.weight"
        g.node("MatMul", [x, head], "logits")
        out = ("logits", opt.vocab)
    else:
        g.layer_norm(x, "ln_f", "hidden")
        out = ("hidden", h)
    outputs = [helper.make_tensor_value_info(out[0], opt.onnx_dtype,
                                             [batch, opt.seq, out[1]])]
    return g.nodes, g.inits, inputs, outputs


def write_model(path, opt, nodes, inits, inputs, outputs, external,
                zero_names):
    """Writes the model; with external, tensors of EXTERNAL_MIN_BYTES or
    more go to PATH.data, where those in zero_names are left as holes (the
    file is sparse). Returns the bytes of the data file (0 without one)."""
    tensors = []
    data_path = path + ".data"
    data_name = os.path.basename(data_path)
    offset = 0
    data_file = open(data_path, "wb") if external else None
    try:
        for name, arr in inits.items():
            arr = np.ascontiguousarray(arr)
            if not external or arr.nbytes < EXTERNAL_MIN_BYTES:
                tensors.append(numpy_helper.from_array(arr, name))
                continue
            t = TensorProto()
            t.name = name
            t.dims.extend(arr.shape)
            t.data_type = mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", data_name),
                               ("offset", str(offset)),
                               ("length", str(arr.nbytes))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            # Known-zero parameters are not even read: touching 800 MB of
            # fresh zero pages takes seconds.
            if name not in zero_names:
                data_file.seek(offset)
                data_file.write(arr.astype(arr.dtype.newbyteorder("<"),
                                           copy=False).tobytes())
            offset += arr.nbytes
            offset = -(-offset // EXTERNAL_ALIGN) * EXTERNAL_ALIGN
            tensors.append(t)
        if data_file:
            # Zero tensors were skipped: extending the file leaves a hole.
            data_file.truncate(offset)
    finally:
        if data_file:
            data_file.close()
    if not external and os.path.exists(data_path):
        os.remove(data_path)

    kind = "layer" if opt.layer_only else "gpt"
    graph = helper.make_graph(
        nodes, "%s_l%d_h%d_a%d_s%d_b%d_%s" % (
            kind, opt.layers, opt.hidden, opt.heads, opt.seq, opt.batch,
            opt.dtype), inputs, outputs, tensors)
    model = helper.make_model(
        graph, producer_name="weft make_gpt.py",
        opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return offset if external else 0


# --- The reference: NumPy, float64, written from the network's definition.


def _erf(x):
    try:
        import torch
        return torch.erf(torch.from_numpy(x)).numpy()
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])(x)


def ref_layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta


def ref_gelu(x, kind):
    if kind == "erf":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) *
                                    (x + 0.044715 * x ** 3)))


def ref_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference(opt, params, x):
    """The network in float64: x is input_ids (int64 [b, s]) or, with
    --layer-only, the hidden state. Returns the output in the model's
    dtype."""
    w = {k: v.astype(np.float64) for k, v in params.items()}
    h, heads = opt.hidden, opt.heads
    dh = h // heads
    b, s = x.shape[0], x.shape[1]
    # Future positions get MASK_VALUE, exactly as the graph's constant.
    mask = causal_mask(opt).astype(np.float64)
    if opt.layer_only:
        x = x.astype(np.float64)
    else:
        x = w["wte"][x] + w["wpe"][None]

    def heads_of(t):
        return t.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)

    for i in range(opt.layers):
        p = "h%d." % i
        y = ref_layer_norm(x, w[p + "ln1.scale"], w[p + "ln1.bias"])
        qkv = y @ w[p + "attn.qkv.weight"] + w[p + "attn.qkv.bias"]
        q, k, v = (heads_of(qkv[..., j * h:(j + 1) * h]) for j in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + mask
        ctx = ref_softmax(scores) @ v
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b, s, h)
        x = x + ctx @ w[p + "attn.proj.weight"] + w[p + "attn.proj.bias"]
        y = ref_layer_norm(x, w[p + "ln2.scale"], w[p + "ln2.bias"])
        m = ref_gelu(y @ w[p + "mlp.fc.weight"] + w[p + "mlp.fc.bias"],
                     opt.gelu)
        x = x + m @ w[p + "mlp.proj.weight"] + w[p + "mlp.proj.bias"]
    if not opt.layer_only:
        x = ref_layer_norm(x, w["ln_f.scale"], w["ln_f.bias"])
        if opt.lm_head:
            x = x @ (w["wte"].T if opt.tied else w["lm_head.weight"])
    return x.astype(opt.np_dtype)


def write_test_data(folder, opt, params, input_name, output_name):
    rng = np.random.default_rng(opt.seed + 1)
    if opt.layer_only:
        x = rng.standard_normal((opt.batch, opt.seq, opt.hidden)).astype(
            opt.np_dtype)
    else:
        x = rng.integers(0, opt.vocab, (opt.batch, opt.seq), dtype=np.int64)
    y = reference(opt, params, x)
    os.makedirs(folder, exist_ok=True)
    for fname, name, arr in (("input_0.pb", input_name, x),
                             ("output_0.pb", output_name, y)):
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())


class ArgumentParser(argparse.ArgumentParser):
    """Bad options exit 1 (the project's code for wrong user input), not
    argparse's 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print("%s: error: %s" % (self.prog, message), file=sys.stderr)
        sys.exit(1)


def main():
    parser = ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, metavar="PATH",
                        help="the .onnx file to write (folders created)")
    parser.add_argument("--layers", type=int,
                        help="decoder layers (default 2; 1 with --layer-only)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=100)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layer-only", action="store_true",
                        help="one layer, input hidden_in [batch, seq, "
                        "hidden], output hidden_out")
    parser.add_argument("--no-lm-head", action="store_true",
                        help="end at the final layer norm (output 'hidden')")
    parser.add_argument("--tied", action="store_true",
                        help="the LM head reuses the token embedding "
                        "(GPT-2): MatMul(x, Transpose(wte))")
    parser.add_argument("--qkv", choices=("slice", "split"), default="slice",
                        help="how the packed QKV is cut (default slice)")
    parser.add_argument("--gelu", choices=("erf", "tanh"), default="erf")
    parser.add_argument("--dynamic-batch", action="store_true",
                        help="make the batch dimension symbolic ('batch')")
    parser.add_argument("--zero-weights", action="store_true",
                        help="all parameters zero (planning-only models)")
    parser.add_argument("--external-data", action="store_true",
                        help="tensors over 1 KiB in PATH.data")
    parser.add_argument("--test-data", metavar="DIR",
                        help="write input_0.pb and the reference output_0.pb")
    parser.add_argument("--no-check", action="store_true",
                        help="skip onnx.checker on the written model")
    args = parser.parse_args()
    if args.layers is None:
        args.layers = 1 if args.layer_only else 2
    opt = Options(args)
    problems = opt.validate()
    if problems:
        for p in problems:
            print("make_gpt.py: error: %s" % p, file=sys.stderr)
        return 1

    start = time.monotonic()
    params = make_params(opt)
    nodes, inits, inputs, outputs = build_graph(opt, params)
    out = os.path.abspath(args.out)
    try:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        data_bytes = write_model(out, opt, nodes, inits, inputs, outputs,
                                 args.external_data,
                                 set(params) if opt.zero else set())
    except OSError as err:
        print("make_gpt.py: error: cannot write %s: %s" % (out, err),
              file=sys.stderr)
        return 1
    if not args.no_check:
        try:
            onnx.checker.check_model(out)
        except Exception as err:  # The checker raises several types.
            print("make_gpt.py: internal error: onnx.checker rejects %s: %s"
                  % (out, err), file=sys.stderr)
            return 70
    if args.test_data:
        try:
            write_test_data(args.test_data, opt, params, inputs[0].name,
                            outputs[0].name)
        except OSError as err:
            print("make_gpt.py: error: cannot write %s: %s" %
                  (args.test_data, err), file=sys.stderr)
            return 1
    nparams = sum(a.size for a in params.values())
    weight_bytes = sum(a.nbytes for a in params.values())
    print("make_gpt.py: %s: %d nodes, %d parameters (%.1f MB %s), "
          "onnx %.1f KB%s%s, %.2f s" % (
              out, len(nodes), nparams, weight_bytes / 1e6, opt.dtype,
              os.path.getsize(out) / 1e3,
              ", data %.1f MB" % (data_bytes / 1e6) if data_bytes else "",
              ", test data in %s" % args.test_data if args.test_data else "",
              time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
