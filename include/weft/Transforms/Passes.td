//===- Passes.td - Weft transformation passes --------------*- tablegen -*-===//
//
// Declares weft's passes. Every command-line name starts with `weft-`.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_PASSES_TD
#define WEFT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def WeftPrintSummary : Pass<"weft-print-summary", "ModuleOp"> {
  let summary = "Print a summary of each function: inputs, outputs, ops, weights";
  let description = [{
    Prints, for every `func.func` of the module, its inputs and outputs with
    their types, how many ops of each kind it holds (weft ops by variant, such
    as `weft.unary(relu)`), the number of weights and their bytes, and the
    number of constants left in the IR. It does not change the IR. The summary
    goes to stdout, or to the file named by `output`.

    ```
    $ weft-opt --canonicalize --weft-print-summary -o /dev/null model.mlir
    func @main
      input  %input : tensor<1x784xf32>
      output #0     : tensor<1x10xf32>
      ops 5: weft.matmul 3, weft.binary(add) 3, weft.unary(relu) 2
      weights 6 (0.9 MB), constants 0
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' for stdout)">,
  ];
}

def WeftAutoShard : Pass<"weft-auto-shard", "ModuleOp"> {
  let summary = "Choose a sharding for every op of @main (Alpa's ILP)";
  let description = [{
    Plans @main for a device mesh of a cluster: every op gets the strategies
    its sharding rule allows (mesh axes assigned to its loops), priced with
    the cluster's roofline and alpha-beta cost model; the resharding between
    neighbours is priced by the resharding planner; the ILP (COIN-OR CBC,
    deterministic node limit) picks one strategy per op under the per-device
    memory budget. Declares `weft.mesh @mesh` and writes `weft.sharding`
    (results) and `weft.operand_sharding` (what each operand must be, unit
    for non-data operands) and `weft.predicted_seconds` on every op.

    ```
    $ weft-opt --weft-auto-shard="cluster=dgx-h100x8 mesh=8" layer.mlir
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"cpu:2\"",
           "A cluster spec file or preset (cpu:N, dgx-h100x8, ...)">,
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "The logical mesh shape, e.g. 2x2 (default: all devices)">,
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto, dp, tp or replicate">,
    Option<"objective", "objective", "std::string", /*default=*/"\"latency\"",
           "latency or throughput">,
    Option<"deviceMemory", "device-memory", "std::string",
           /*default=*/"\"\"", "Override every device's memory (bytes)">,
  ];
}

def WeftSpmdPartition : Pass<"weft-spmd-partition", "ModuleOp"> {
  let summary = "Rewrite a sharded @main into one device's program";
  let description = [{
    Turns @main, as weft-auto-shard annotated it, into the local program of
    mesh position `device`: local ops on local blocks, weights as the
    device's blocks of them, and collectives (weft.all_reduce, all_gather,
    reduce_scatter, all_to_all, local_slice) wherever a value's sharding is
    not the one its user needs. Inputs arrive whole and results leave whole,
    except arguments and results with a `weft.sharding` attribute (a
    pipeline stage's boundary), which stay in that sharding.
  }];
  let options = [
    Option<"device", "device", "int64_t", /*default=*/"0",
           "The mesh position to partition for">,
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "The weft.mesh symbol the plan's shardings name (default: the "
           "module's only weft.mesh)">,
  ];
}

#endif // WEFT_TRANSFORMS_PASSES_TD
