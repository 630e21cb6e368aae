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
    Turns `func.func @main(tensors...) -> tensors...` into the entry point of
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
    op is erased. A `weft.shard` left in the module is an error: sharding
    constraints are resolved by the SPMD partitioner, before code
    generation.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "Name of the model function">,
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
    `weft.arena_bytes`, and printed when `report` is set.

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

def WeftApproximateMath : Pass<"weft-approximate-math"> {
  let summary = "Replace f32 transcendental functions by polynomials";
  let description = [{
    Rewrites `math.exp`, `expm1`, `log`, `log1p`, `tanh` and `erf` on f32
    (the compute type of f16 and bf16 math too) into MLIR's polynomial
    approximations (relative error about 1e-7), which LLVM vectorizes:
    otherwise each element would be a scalar call into libm, the bottleneck
    of GELU and sigmoid loops. f64 math keeps calling libm; `sin` and `cos`
    do too, because their approximations lose accuracy on large arguments.
  }];
  let dependentDialects = ["math::MathDialect", "arith::ArithDialect",
                           "vector::VectorDialect"];
}

#endif // WEFT_CODEGEN_PASSES_TD
