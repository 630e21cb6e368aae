//===- Passes.td - Weft code generation passes -------------*- tablegen -*-===//
//
// The passes that turn a weft function with static shapes into one device's
// program: linalg for elementwise math, runtime kernel calls for the heavy
// ops, buffers planned into one arena, then LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_PASSES_TD
#define WEFT_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def WeftLowerToLinalg : Pass<"weft-lower-to-linalg", "func::FuncOp"> {
  let summary = "Lower elementwise and view-like weft ops to linalg and tensor";
  let description = [{
    Rewrites the weft ops that code generation emits as loops: `weft.unary`,
    `weft.clip`, `weft.cast`, `weft.binary` and `weft.select` become
    `linalg.generic` ops with numpy broadcasting in their indexing maps (so
    that linalg's elementwise fusion can merge chains of them into one loop
    nest), `weft.expand` a broadcasting `linalg.generic`, the reshape family
    (`weft.reshape`, `flatten`, `squeeze`, `unsqueeze`) `tensor.reshape`, and
    `weft.constant` `arith.constant`. Heavy ops (matmul, conv, pooling,
    normalization, reductions, data movement) stay: they become runtime
    kernel calls during bufferization. f16 and bf16 math is done in f32.

    ```mlir
    %r = weft.unary relu %x : tensor<4xf32> -> tensor<4xf32>
    // becomes
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel"]}
           ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) { ... }
    ```
  }];
  let dependentDialects = ["linalg::LinalgDialect", "tensor::TensorDialect",
                           "arith::ArithDialect", "math::MathDialect"];
}

def WeftExposeProgramABI : Pass<"weft-expose-program-abi", "ModuleOp"> {
  let summary = "Give the model function the runtime's program signature";
  let description = [{
    Turns the model function, `func.func @main(tensors...) -> tensors...`
    (the one the module attribute `weft.model` names, else the only public
    function; the `entry` option names another), into the entry point of
    a device program (runtime/include/weft_rt.h, `weft_rt_program`):

    ```mlir
    func.func @__weft_program_run(%ctx: !llvm.ptr, %arena: memref<?xi8>,
                                  %weights: memref<?xi8>) -> i32
    ```

    Inputs and outputs live at the start of the arena, each 64-byte aligned,
    inputs first: an input becomes a `memref.view` of the arena wrapped in
    `bufferization.to_tensor`, an output is written with
    `bufferization.materialize_in_destination` into its view, so that
    bufferization can let the producing op write there directly. The layout
    is recorded in the module attribute `weft.program_io` (lines of the
    program signature) and the bytes it takes in `weft.io_bytes`.
    Every input and output must have a static shape.

    A module partitioned for a mesh declares it with `weft.mesh`: its shape
    is recorded in `weft.mesh_shape` (the signature's "mesh" line) and the
    op is erased. A module may declare several meshes; the device's is the
    one its collectives run on (all on one: the runtime gives a program one
    communicator), else the only one declared. A `weft.shard` left in the module is an error: sharding
    constraints are resolved by the SPMD partitioner, before code
    generation.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "Name of the model function (default: the one the module's "
           "weft.model attribute names, else its only public function)">,
  ];
  let dependentDialects = ["memref::MemRefDialect",
                           "bufferization::BufferizationDialect",
                           "arith::ArithDialect", "LLVM::LLVMDialect"];
}

def WeftBufferize : Pass<"weft-bufferize", "ModuleOp"> {
  let summary = "Bufferize a device program; heavy weft ops become kernel calls";
  let description = [{
    One-shot bufferization of the program function (after
    `weft-expose-program-abi`). linalg, tensor, arith and bufferization ops
    bufferize as upstream does; copies are `linalg.copy` (no call into MLIR's
    runtime library). Each remaining weft op allocates its results and calls
    its CPU kernel, `weft_rt_cpu_<kernel>(ctx, params, buffers...)`, with a
    private constant global holding the op's parameter block (layouts in
    runtime/include/weft_rt.h). `weft.weight` becomes a view of the weights
    buffer at its offset. Every allocation is static; `weft-plan-memory`
    places them in the arena next.

    Collectives (`weft.all_reduce`, `all_gather`, `reduce_scatter`,
    `local_slice`, `all_to_all`) become calls of
    `weft_rt_collective(ctx, params, in, out)`, the call tagged with
    `weft.op_kind`; an all_reduce sums in place when the analysis allows.

    ```mlir
    %r = weft.softmax %x axis = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
    // becomes
    %out = memref.alloc() {alignment = 64 : i64} : memref<2x8xf32>
    %params = memref.get_global @__weft_params_0 : memref<5xi64>
    %status = func.call @weft_rt_cpu_softmax(%ctx, %p, %in, %o)
                : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    ```
    An op or dtype without a CPU kernel is an error that names the op.
  }];
  let dependentDialects = ["memref::MemRefDialect", "linalg::LinalgDialect",
                           "func::FuncDialect", "LLVM::LLVMDialect",
                           "bufferization::BufferizationDialect"];
}

def WeftStageReceives : Pass<"weft-stage-receives", "ModuleOp"> {
  let summary = "Give each receive a staging buffer: double-buffered transfers";
  let description = [{
    After `weft-bufferize`: each `weft_rt_collective` call of kind `recv`
    (a `weft.recv`) gets a buffer of its own, the size of what it receives,
    as its `in` argument (before, `in` was `out`). The runtime posts the
    receive of the next run's message into it as soon as this run's receive
    ends, and moves it while the program computes; the next receive copies
    it out (runtime/include/weft_rt.h, RECV). The allocation is marked
    `weft.staging`, and `weft-plan-memory` keeps it to itself for the whole
    program, so nothing else is placed where a message may arrive at any
    time; the device's memory check counts it. Receives of nothing get
    none. The CUDA pipeline leaves this pass out (NCCL's receives run on
    the device's stream already and ignore `in`).

    ```mlir
    %p = memref.extract_aligned_pointer_as_index %out : memref<2x8xf32> -> index
    ...
    %s = func.call @weft_rt_collective(%ctx, %params, %outptr, %outptr) {weft.op_kind = "recv"}
    // becomes
    %staging = memref.alloc() {alignment = 64 : i64, weft.staging} : memref<2x8xf32>
    ...
    %s = func.call @weft_rt_collective(%ctx, %params, %stagingptr, %outptr) {weft.op_kind = "recv"}
    ```
  }];
  let dependentDialects = ["memref::MemRefDialect", "arith::ArithDialect",
                           "LLVM::LLVMDialect"];
}

def WeftPlanMemory : Pass<"weft-plan-memory", "ModuleOp"> {
  let summary = "Place every buffer of a device program in one arena";
  let description = [{
    Computes, for each `memref.alloc` of the program function, the interval
    of ops during which it (or a view of it) is live, and gives each a
    64-byte aligned offset in the arena so that buffers live at the same
    time never overlap (greedy by size, best fit: see
    include/weft/Codegen/MemoryPlanner.h). Allocations become
    `memref.view`s of the arena argument, after the inputs and outputs. The
    arena size (the planned peak) is recorded in the module attribute
    `weft.arena_bytes`, and printed when `report` is set. An allocation
    marked `weft.staging` (`weft-stage-receives`) is live for the whole
    program: its bytes belong to it alone.

    ```mlir
    %b = memref.alloc() {alignment = 64 : i64} : memref<2x8xf32>
    // becomes
    %off = arith.constant 128 : index
    %b = memref.view %arena[%off][] : memref<?xi8> to memref<2x8xf32>
    ```
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Print the plan: buffers, offsets and the peak">,
  ];
  let dependentDialects = ["memref::MemRefDialect", "arith::ArithDialect"];
}

def WeftInsertStatusChecks : Pass<"weft-insert-status-checks", "ModuleOp"> {
  let summary = "Return the first failing kernel status; add profiling hooks";
  let description = [{
    After every `weft_rt_cpu_*` and `weft_rt_collective` call of the
    program function, branches to an exit that returns the call's status
    when it is not 0, so a kernel's error (an index out of range in a
    Gather, say) ends the run with its message instead of carrying on. Also
    numbers the program's ops (runtime calls and linalg loop nests),
    brackets each with `weft_rt_op_begin/end(ctx, id)` for `--profile`, and
    records `op <id> <kind> <name>` lines in the module attribute
    `weft.program_ops` (a collective's kind is its call's `weft.op_kind`).
  }];
  let dependentDialects = ["cf::ControlFlowDialect", "arith::ArithDialect",
                           "func::FuncDialect"];
}

def WeftFuseLayerNorm : Pass<"weft-fuse-layer-norm"> {
  let summary = "LayerNorm written out as elementwise ops, as weft.normalize";
  let description = [{
    Exporters of hand-written models, and opsets before 17, spell LayerNorm
    out:

    ```mlir
    %mean = weft.reduce mean %x axes [2] keepdims
    %d    = weft.binary sub %x, %mean
    %sq   = weft.binary pow %d, %two          // or weft.binary mul %d, %d
    %var  = weft.reduce mean %sq axes [2] keepdims
    %ve   = weft.binary add %var, %eps
    %s    = weft.unary sqrt %ve
    %n    = weft.binary div %d, %s
    %g    = weft.binary mul %n, %gamma        // optional
    %y    = weft.binary add %g, %beta         // optional
    ```

    The pass replaces the chain by `weft.normalize layer %x, %gamma, %beta
    axis 2 epsilon <eps>` (gamma all ones when there is no multiplication):
    two reductions and four elementwise passes become one kernel that reads
    each row for its statistics and once more to write it. It matches only
    when the axes are the trailing ones, `eps` is a one-element constant,
    every intermediate value has no other user, the type is f32 or f64 (the
    normalization kernels' types), and gamma and beta hold one
    value per normalized element (a Mul or Add that broadcasts otherwise
    stays after the normalization). The statistics are computed as
    weft.normalize computes them (sums in double on the CPU), so results
    may differ from the written-out form in the last bits.
  }];
}

def WeftFuseConvClamp : Pass<"weft-fuse-conv-clamp"> {
  let summary = "Fuse a residual Add and a Relu, Relu6 or Clip into the "
                "convolution before them";
  let description = [{
    A `weft.conv` on f32 whose only user is `weft.unary relu` or a
    `weft.clip` with constant finite bounds (Relu6 is `clip min 0 max 6`)
    gets `clamp_min` / `clamp_max` and the user goes: the CPU kernels clamp
    each output block while it is in cache (oneDNN's post-op, the im2col
    path's bias pass, the depthwise kernel) instead of a separate pass over
    the tensor. One (without a clamp yet) whose only user is a
    `weft.binary add` of a tensor of its type, a residual connection, takes
    that tensor as its `addend`, in the Add's place, and then the Relu that
    may follow (`weft_rt_cpu_conv_add`). Runs on per-device programs, after
    partitioning, so a convolution whose output is a partial sum (an
    all-reduce follows it) is never clamped early. CPU only: the CUDA
    backend has no fused clamp or addend.

    ```mlir
    %y = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] : (...) -> tensor<1x64x56x56xf32>
    %r = weft.unary relu %y : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32>
    // becomes
    %r = weft.conv %x, %w, %b strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] clamp_min 0.0 : (...) -> ...

    %y = weft.conv %x, %w, %b ... : (...) -> tensor<1x64x56x56xf32>
    %a = weft.binary add %y, %skip : (...) -> tensor<1x64x56x56xf32>
    %r = weft.unary relu %a : ...
    // becomes
    %r = weft.conv %x, %w, %b addend %skip ... clamp_min 0.0 : (...) -> ...
    ```
  }];
}

def WeftConvBlocked : Pass<"weft-conv-blocked", "func::FuncOp"> {
  let summary = "Store the tensors between oneDNN convolutions channel-blocked";
  let description = [{
    Stores channel-blocked (N x C/16 x D... x 16, oneDNN's nChw16c) the
    tensors that only pass between convolutions the CPU runtime runs on
    oneDNN, so that they need no reorders: the results of convolutions
    (f32, group 1, a kernel of more than one tap or a stride, input and
    output channels multiples of 16, static shapes, no other layout) and of
    the pools between them that are used only as the input of such a
    convolution, as the addend of one (an addend's layout is its own), or
    as the input of a pool whose result is blocked too. The convolutions and pools touching
    them get `blocked_input`, `blocked_result`, `blocked_addend` and
    `blocked`. Tensors the rest of the program sees keep their layout. Run
    after `weft-fuse-conv-clamp` and `weft-conv-channels-last`; CPU only.

    ```mlir
    %a = weft.conv %x, %w1, %b1 strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] clamp_min 0.0 : (...) -> tensor<1x64x56x56xf32>
    %y = weft.conv %a, %w2, %b2 addend %x strides [1, 1] pads [1, 1, 1, 1]
           dilations [1, 1] clamp_min 0.0 : (...) -> tensor<1x64x56x56xf32>
    // becomes
    %a = weft.conv %x, %w1, %b1 ... blocked_result
           : (...) -> tensor<1x4x56x56x16xf32>
    %y = weft.conv %a, %w2, %b2 addend %x ... blocked_input
           : (tensor<1x4x56x56x16xf32>, ...) -> tensor<1x64x56x56xf32>
    ```
  }];
  let dependentDialects = ["::mlir::weft::WeftDialect"];
}

def WeftPackConvWeights : Pass<"weft-pack-conv-weights", "func::FuncOp"> {
  let summary = "Store the model weights of channels-last 1x1 convolutions "
                "in panels";
  let description = [{
    Gives a 2-D 1x1 convolution between channels-last tensors (group 1,
    strides 1, no pads, f32, `channels_last_input` and
    `channels_last_result`, as `weft-conv-channels-last` leaves them) whose
    weight is the model's (a `weft.weight` of the whole tensor, stored
    M x C x 1 x 1) and whose M is a multiple of 32 a `packed_weight`: the
    weights file then holds it as M/32 x C x 32 (a `weft.weight`
    permutation of the same bytes viewed as M/32 x 32 x C), the panels the
    CPU kernel's tiles read in order. Packed once at compile time, in
    place of the model's copy, the panels keep the file's order, so that
    reading them streams the next layer's weights into the cache as
    reading the weight did. Run after `weft-conv-channels-last`; CPU only.

    ```mlir
    %w = weft.weight "w" from "m.onnx" offset 0 size 1228800
           checksum "..." permuted [2, 3, 1, 0] : tensor<1x1x960x320xf32>
    %y = weft.conv %x, %w, %b ... channels_last_input channels_last_result
           kernel_first_weight : (...) -> tensor<1x7x7x320xf32>
    // becomes
    %w = weft.weight "w" from "m.onnx" offset 0 size 1228800
           checksum "..." permuted [0, 2, 1] : tensor<10x960x32xf32>
    %y = weft.conv %x, %w, %b ... channels_last_input channels_last_result
           packed_weight : (...) -> tensor<1x7x7x320xf32>
    ```
  }];
  let dependentDialects = ["::mlir::weft::WeftDialect"];
}

def WeftConvChannelsLast : Pass<"weft-conv-channels-last",
                                 "func::FuncOp"> {
  let summary = "Store the tensors between convolutions channels-last";
  let description = [{
    Finds the convolution results that may be stored channels-last
    (N x H x W x C): each is at most `max-plane` pixels (H x W) and used
    only as the `input` of a `weft.conv` that the CPU kernel runs
    channels-last (2-D, f32, static shapes: 1x1 of group 1, stride 1 and no
    pads, or depthwise), as the `addend` of one whose result is
    channels-last too, or by a `weft.reduce` over exactly the spatial
    dimensions (a global pool: its axes move, and with `keepdims` a
    `weft.reshape` gives its users N x C x 1 x 1); a result with an addend only with its addend, and a
    depthwise convolution's result only with its input (its forms that
    change the layout lose to the channels-first kernels). Of those it
    keeps the connected parts (tensors joined by a convolution that reads
    one and writes the other) that a depthwise convolution reads or writes:
    MobileNet-style blocks of 1x1 expansion, depthwise convolution and 1x1
    projection with their residual stream, on the small planes where the
    channels-last kernels win. Every convolution touching a kept tensor
    gets `channels_last_input` and/or `channels_last_result`, and, unless it
    is a 1x1 convolution writing channels-first, a kernel-first weight
    (`kernel_first_weight`; a model weight is stored permuted, any other is
    permuted by a `weft.transpose`, which folds a constant of up to 65,536
    elements at compile time). Tensors the rest of the program sees keep their
    layout. Run after `weft-fuse-conv-clamp` (a clamp or Add between two
    convolutions keeps their tensor channels-first); CPU only.

    ```mlir
    %e = weft.conv %x, %w1, %b1 strides [1, 1] pads [0, 0, 0, 0]
           dilations [1, 1] clamp_min 0.0 clamp_max 6.0
           : (...) -> tensor<1x144x28x28xf32>
    %d = weft.conv %e, %w2, %b2 strides [2, 2] pads [1, 1, 1, 1]
           dilations [1, 1] group 144 clamp_min 0.0 clamp_max 6.0
           : (...) -> tensor<1x144x14x14xf32>
    // becomes
    %e = weft.conv %x, %w1t, %b1 ... channels_last_result
           kernel_first_weight : (tensor<1x24x28x28xf32>,
           tensor<1x1x24x144xf32>, tensor<144xf32>) -> tensor<1x28x28x144xf32>
    %d = weft.conv %e, %w2t, %b2 ... group 144 ... channels_last_input
           channels_last_result kernel_first_weight
           : (...) -> tensor<1x14x14x144xf32>
    ```
  }];
  let options = [
    Option<"maxPlane", "max-plane", "int64_t", /*default=*/"1024",
           "Largest H x W of a tensor stored channels-last: on larger "
           "planes the channels-first kernels win (MobileNetV2's 56x56 "
           "and 112x112 layers; bench/kernels/README.md)">
  ];
}

def WeftParallelizeLoops : Pass<"weft-parallelize-loops", "ModuleOp"> {
  let summary = "Run the program's large loop nests on the runtime's threads";
  let description = [{
    Every top-level `scf.parallel` nest of `@__weft_program_run` (the fused
    elementwise loops, after `convert-linalg-to-parallel-loops`) whose work
    is at least `min-work` (iterations times the operations of one
    iteration, inner loops included) becomes a call

    ```mlir
    %body = func.constant @__weft_loop_0 : (!llvm.ptr, memref<?xi8>,
                                            memref<?xi8>, index, index) -> ()
    func.call @weft_rt_parallel_for(%ctx, %items, %work_per_item, %body,
                                    %arena, %weights)
    ```

    The outer parallel dimensions, as few as give 64 items, are flattened
    into `items`; the innermost dimension stays a whole loop (the one LLVM
    vectorizes) unless it is the only one. `@__weft_loop_<k>(ctx, arena,
    weights, begin, end)` runs items [begin, end): it re-creates the views
    the nest reads from the arena and weights arguments (after memory
    planning every buffer is one, or a constant global) and keeps the inner
    dimensions as an `scf.parallel`. A nest that reads anything else, or
    has dynamic or non-unit bounds, stays serial.

    The runtime splits the items over its one OpenMP team, the threads that
    OpenBLAS and oneDNN use too, and only when the work is large enough for
    the context's thread count (docs/Runtime.md, `weft_rt_parallel_for`).
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "Least work (iterations x operations) worth a parallel call">,
  ];
  let dependentDialects = ["func::FuncDialect", "scf::SCFDialect",
                           "arith::ArithDialect", "memref::MemRefDialect"];
}

def WeftApproximateMath : Pass<"weft-approximate-math"> {
  let summary = "Replace f32 transcendental functions by polynomials";
  let description = [{
    Rewrites `math.exp`, `expm1`, `log`, `log1p`, `tanh` and `erf` on f32
    (the compute type of f16 and bf16 math too) into MLIR's polynomial
    approximations (relative error about 1e-7), which LLVM vectorizes:
    otherwise each element would be a scalar call into libm, the bottleneck
    of GELU and sigmoid loops. f64 math keeps calling libm; `sin` and `cos`
    do too, because their approximations lose accuracy on large arguments.

    `math.powf` with a constant exponent becomes arithmetic (MLIR's algebraic
    simplification): `x^2` and `x^3` multiplications, `x^0.5` a `sqrt`,
    `x^-1` a division, `x^-0.5` an `rsqrt`. Exporters write LayerNorm's
    variance as `Pow(x, 2)` and tanh-GELU's cube as `Pow(x, 3)`; a libm
    `powf` per element kept those loops scalar. Other exponents still call
    `powf`.
  }];
  let dependentDialects = ["math::MathDialect", "arith::ArithDialect",
                           "vector::VectorDialect"];
}


//===----------------------------------------------------------------------===//
// CUDA target (--target=cuda)
//===----------------------------------------------------------------------===//

def WeftDeviceConstantsToWeights
    : Pass<"weft-device-constants-to-weights", "ModuleOp"> {
  let summary = "Move constant data a GPU reads into the weights";
  let description = [{
    On a GPU the program's constant globals (small initializers and folded
    constants) would live in host memory, where kernels cannot read them.
    This pass appends the bytes of every constant global the program reads
    as data to the weights (which the runtime copies to the device once)
    and replaces each `memref.get_global` by a `memref.view` of the
    weights argument. Kernel parameter blocks (`__weft_params_*`) and index
    shapes, which the host reads, stay. The bytes go to the raw file
    `file`, placed after the module's `weft.weights_bytes` (64-byte
    aligned); the pass updates that attribute and records the bytes it
    wrote in `weft.device_constants_bytes`, for the driver to append the
    file to the device's weights file.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Where to write the constants' bytes (required when there are any)">
  ];
  let dependentDialects = ["memref::MemRefDialect", "arith::ArithDialect"];
}

def WeftRetargetKernelsToCuda
    : Pass<"weft-retarget-kernels-to-cuda", "ModuleOp"> {
  let summary = "Call the CUDA runtime's kernels instead of the CPU's";
  let description = [{
    Renames every `weft_rt_cpu_<kernel>` call and declaration to
    `weft_rt_cuda_<kernel>` and `weft_rt_collective` to
    `weft_rt_cuda_collective` (runtime/include/weft_rt_cuda.h): the CUDA
    kernels take the same parameter blocks, on device buffers. The op
    kinds recorded for profiling stay those of the CPU names.
  }];
}

def WeftLinalgToGpu : Pass<"weft-linalg-to-gpu", "func::FuncOp"> {
  let summary = "Turn each linalg.generic on buffers into a GPU launch";
  let description = [{
    The fused elementwise loop nests of a device program become GPU
    kernels: one thread per point of the parallel loops, numbered
    row-major so that neighbouring threads touch neighbouring elements
    (coalesced for the identity maps of elementwise chains), in blocks of
    `block-size` threads on a one-dimensional grid. Reduction loops, if
    any, run inside each thread. The loop body is cloned into the
    `gpu.launch` with its operands loaded through the indexing maps.

    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : memref<1000xf32>) outs(%y : memref<1000xf32>) { ... }
    // becomes
    gpu.launch blocks(...) in (%gx = %c4, ...) threads(...) in (%bx = %c256, ...) {
      %i = <block id * 256 + thread id>
      scf.if %i < 1000 { %v = memref.load %x[%i] ... memref.store ..., %y[%i] }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block">
  ];
  let dependentDialects = ["gpu::GPUDialect", "scf::SCFDialect",
                           "affine::AffineDialect", "arith::ArithDialect",
                           "memref::MemRefDialect"];
}

def WeftGpuLaunchToLoops : Pass<"weft-gpu-launch-to-loops", "func::FuncOp"> {
  let summary = "Run gpu.launch bodies as host loops (a testing aid)";
  let description = [{
    Replaces each `gpu.launch` with constant grid and block sizes by nested
    `scf.for` loops over blocks and threads that run its body on the host,
    with `gpu.block_id`, `gpu.thread_id`, `gpu.grid_dim` and `gpu.block_dim`
    given by the loops. Threads of a block run one after another, which is
    a valid schedule for kernels without barriers or shared memory (what
    weft-linalg-to-gpu makes). `weftc --gpu-emulate` uses it to check the
    CUDA pipeline's host side and kernel index arithmetic on a machine
    without a GPU: the program computes on the CPU what the GPU would.
  }];
  let dependentDialects = ["scf::SCFDialect", "arith::ArithDialect"];
}

def WeftBuildGpuFatbin : Pass<"weft-build-gpu-fatbin", "ModuleOp"> {
  let summary = "Assemble each GPU module's PTX into one fatbin of all archs";
  let description = [{
    After `gpu-module-to-binary{format=isa}` with one `#nvvm.target` per
    architecture, each `gpu.binary` holds PTX per architecture. This pass
    assembles each with CUDA's `ptxas` into a cubin for its architecture and
    combines them, plus the PTX of the newest architecture (which the driver
    compiles for GPUs newer than every listed one), with `fatbinary` into
    one fatbin object: the only object of the binary, loaded with
    `mgpuModuleLoad` at run time.
  }];
  let options = [
    Option<"cudaBin", "cuda-bin", "std::string", /*default=*/"\"\"",
           "Folder with ptxas and fatbinary (default: CUDA_HOME/bin, then "
           "the toolkit found when Weft was built)">
  ];
}

#endif // WEFT_CODEGEN_PASSES_TD
