//===- ProgramABI.h - Names and conventions of device programs --*- C++ -*-===//
//
// The contract between the code generation passes and the runtime
// (runtime/include/weft_rt.h): the entry point's name, the module attributes
// that carry the program signature, dtype codes and alignment.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_PROGRAMABI_H
#define WEFT_CODEGEN_PROGRAMABI_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::weft {

/// The program function: (ctx, arena, weights) -> status. With
/// llvm.emit_c_interface its C entry is `_mlir_ciface___weft_program_run`.
inline constexpr llvm::StringLiteral kProgramRunName = "__weft_program_run";
/// The C symbol `weft_rt_program::run` points at.
inline constexpr llvm::StringLiteral kProgramRunCInterface =
    "_mlir_ciface___weft_program_run";
/// The `const weft_rt_program` every device object defines.
inline constexpr llvm::StringLiteral kProgramSymbol = "weft_program";

/// Module attributes filled by the passes and read when the object is
/// emitted: "input"/"output" signature lines, the bytes they take at the
/// start of the arena, the planned arena size and the "op" lines.
inline constexpr llvm::StringLiteral kProgramIOAttr = "weft.program_io";
inline constexpr llvm::StringLiteral kIOBytesAttr = "weft.io_bytes";
inline constexpr llvm::StringLiteral kArenaBytesAttr = "weft.arena_bytes";
inline constexpr llvm::StringLiteral kProgramOpsAttr = "weft.program_ops";
/// The shape of the module's weft.mesh (a DenseI64ArrayAttr), recorded by
/// weft-expose-program-abi when it erases the mesh; the signature gets a
/// "mesh" line when the mesh has more than one device.
inline constexpr llvm::StringLiteral kMeshShapeAttr = "weft.mesh_shape";
/// A pipeline stage's program: the world ranks of its mesh's positions
/// (from the weft.mesh's `devices`), and the job's size (weft.world_size,
/// set by weftc). Together they become the signature's "pipeline" record.
inline constexpr llvm::StringLiteral kMeshWorldRanksAttr =
    "weft.mesh_world_ranks";
inline constexpr llvm::StringLiteral kProgramWorldSizeAttr = "weft.world_size";
/// On a model compiled for one microbatch (weftc --microbatches=M): M, an
/// IntegerAttr; the signature gets a "microbatches M" line.
inline constexpr llvm::StringLiteral kProgramMicrobatchesAttr =
    "weft.microbatches";
/// The world rank that holds the model's outputs whole (the signature's
/// "collector" record; absent: world rank 0).
inline constexpr llvm::StringLiteral kProgramCollectorRankAttr =
    "weft.collector_rank";
/// A program whose weft.send and weft.recv name peer table slots: where the
/// rank's table lies in its weights file and how many (peer, tag) pairs of
/// int64 it holds (DenseI64ArrayAttr {offset, slots}); the signature's
/// "peers" record.
inline constexpr llvm::StringLiteral kProgramPeerTableAttr = "weft.peer_table";
/// The job's broadcast groups (an ArrayAttr of DenseI64ArrayAttr, each a
/// group's world ranks, increasing; the same on every program of the job):
/// the signature's "broadcast-group" records, in order.
inline constexpr llvm::StringLiteral kProgramBroadcastGroupsAttr =
    "weft.broadcast_groups";

/// On a module compiled for CUDA: the GPU architectures (DenseI32ArrayAttr,
/// 80 for sm_80) its kernels are built for; the signature gets a
/// "target cuda sm_80 ..." line.
inline constexpr llvm::StringLiteral kGpuArchsAttr = "weft.gpu_archs";

/// The bytes of the device's weights file so far (an IntegerAttr, set after
/// the weights are laid out); weft-device-constants-to-weights places the
/// GPU's constant data after them and updates it.
inline constexpr llvm::StringLiteral kWeightsBytesAttr = "weft.weights_bytes";
/// How many bytes weft-device-constants-to-weights appended (its file's
/// size).
inline constexpr llvm::StringLiteral kDeviceConstantsBytesAttr =
    "weft.device_constants_bytes";

/// The prefix of every CPU kernel's symbol.
inline constexpr llvm::StringLiteral kCpuKernelPrefix = "weft_rt_cpu_";
/// The prefix of every CUDA kernel's symbol (runtime/include/weft_rt_cuda.h).
inline constexpr llvm::StringLiteral kCudaKernelPrefix = "weft_rt_cuda_";
/// The runtime entry every collective calls.
inline constexpr llvm::StringLiteral kCollectiveSymbol = "weft_rt_collective";
/// On a call whose symbol does not name its kind (collectives): the kind
/// ("all_reduce", ...) for the "op" signature line.
inline constexpr llvm::StringLiteral kOpKindAttr = "weft.op_kind";
/// weft_rt_parallel_for and the outlined loop bodies it runs
/// (weft-parallelize-loops).
inline constexpr llvm::StringLiteral kParallelForSymbol =
    "weft_rt_parallel_for";
inline constexpr llvm::StringLiteral kLoopBodyPrefix = "__weft_loop_";

/// On a memref.alloc: a receive's staging buffer (weft-stage-receives),
/// which the memory plan keeps to itself for the whole program and across
/// runs.
inline constexpr llvm::StringLiteral kStagingBufferAttr = "weft.staging";

/// Every buffer in the arena and every weight starts 64-byte aligned.
inline constexpr int64_t kBufferAlignment = 64;
int64_t alignTo64(int64_t bytes);

/// The runtime's dtype code (ONNX TensorProto numbering) of a weft element
/// type, or nullopt for a type the runtime does not know.
std::optional<int32_t> getRuntimeDType(Type elementType);
/// Bytes one element takes in memory (i1 takes a byte).
int64_t getStorageBytes(Type elementType);
/// Escapes a name for the signature text (%XX for spaces, '%', controls
/// and non-ASCII bytes).
std::string escapeSignatureName(llvm::StringRef name);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_PROGRAMABI_H
