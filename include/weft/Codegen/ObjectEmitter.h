//===- ObjectEmitter.h - LLVM IR and object files of programs ---*- C++ -*-===//
//
// Turns a device program in the LLVM dialect into LLVM IR, adds the
// `weft_program` descriptor the runtime reads, optimizes it and emits an
// object file in process with LLVM's TargetMachine.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_OBJECTEMITTER_H
#define WEFT_CODEGEN_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace mlir::weft {

/// What to generate code for.
struct TargetOptions {
  /// An LLVM CPU name; "native" is this machine. The default runs on any
  /// x86-64 with AVX2 and FMA (Haswell and later, Zen and later).
  std::string cpu = "x86-64-v3";
  /// Extra LLVM target features ("+avx512f,-fma").
  std::string features;
};

/// Creates the target machine for the host's triple and `options`, or
/// reports why it cannot (an unknown CPU name, say) in `error`.
std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const TargetOptions &options, std::string &error);

/// The program signature text (runtime/include/weft_rt.h) of a module that
/// went through the codegen pipeline, with the weights file's size; a
/// "mesh" line follows "weights" when the module ran on a weft.mesh of more
/// than one device.
std::string buildProgramSignature(ModuleOp module, int64_t weightsBytes);

/// On an x86-64 `machine` without AVX-512 (the default, x86-64-v3): gives
/// each generated loop body (weft-parallelize-loops' __weft_loop_N) that
/// loads no booleans and does at least 8 float operations an element a copy
/// compiled for x86-64-v4 with 512-bit vectors and turns the body into a
/// dispatcher that runs that copy where weft_rt_cpu_vector_bits() says the
/// CPU has AVX-512, the x86-64-v3 copy elsewhere (LoopVariants.cpp). Runs
/// before the O3 pipeline, which then vectorizes each copy for its target.
void addWideVectorLoopVariants(llvm::Module &module,
                               llvm::TargetMachine &machine);

/// Translates `module` (LLVM dialect) to LLVM IR, adds the signature and the
/// `weft_program` descriptor, adds the AVX-512 loop variants
/// (addWideVectorLoopVariants) and runs LLVM's O3 pipeline for `machine`.
std::unique_ptr<llvm::Module> translateProgram(ModuleOp module,
                                               llvm::LLVMContext &context,
                                               llvm::TargetMachine &machine,
                                               llvm::StringRef signature);

/// Emits `module` as an object file into `path` (written whole or not at
/// all). Reports failures in `error`.
bool emitObjectFile(llvm::Module &module, llvm::TargetMachine &machine,
                    llvm::StringRef path, std::string &error);

} // namespace mlir::weft

#endif // WEFT_CODEGEN_OBJECTEMITTER_H
