//===- LoopVariants.cpp - AVX-512 copies of generated loop bodies ---------===//
//
// The default package targets x86-64-v3 (AVX2 and FMA), so that it runs on
// any x86-64 of the last decade; its kernels pick AVX-512 at run time where
// the CPU has it (runtime/cpu), but the generated loop nests would stay on
// 8-lane vectors. An outlined loop body (weft-parallelize-loops'
// __weft_loop_N) that computes enough per element is therefore compiled
// twice, for x86-64-v3 and for x86-64-v4 with 512-bit vectors, and the
// body's symbol becomes a dispatcher that asks the runtime once per call
// which one this CPU runs (weft_rt_cpu_vector_bits). A GPT-2-style
// decoder's tanh-GELU, 64 x 1024 elements of a rational tanh and a
// division: 28 -> 14 us on AVX-512.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/ObjectEmitter.h"
#include "weft/Codegen/ProgramABI.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

using namespace mlir;
using namespace mlir::weft;

/// The runtime's answer: the widest vectors (bits) the CPU runs.
static constexpr llvm::StringLiteral kVectorBitsFn = "weft_rt_cpu_vector_bits";

/// A copy of `body` named `name`, internal, never inlined into the
/// dispatcher (the AVX-512 one could not be: its features exceed the
/// caller's).
static llvm::Function *cloneBody(llvm::Function &body, llvm::StringRef name) {
  llvm::ValueToValueMapTy map;
  llvm::Function *copy = llvm::CloneFunction(&body, map);
  copy->setName(name);
  copy->setLinkage(llvm::GlobalValue::InternalLinkage);
  copy->addFnAttr(llvm::Attribute::NoInline);
  return copy;
}

/// Replaces `body`'s instructions with: call `wide` when the runtime says
/// the CPU has 512-bit vectors, `narrow` otherwise, with the same
/// arguments.
static void makeDispatcher(llvm::Function &body, llvm::Function &wide,
                           llvm::Function &narrow,
                           llvm::FunctionCallee vectorBits) {
  // deleteBody() makes a function external; the body stays internal.
  const llvm::GlobalValue::LinkageTypes linkage = body.getLinkage();
  body.deleteBody();
  body.setLinkage(linkage);
  llvm::LLVMContext &ctx = body.getContext();
  auto *entry = llvm::BasicBlock::Create(ctx, "entry", &body);
  auto *wideBlock = llvm::BasicBlock::Create(ctx, "avx512", &body);
  auto *narrowBlock = llvm::BasicBlock::Create(ctx, "avx2", &body);
  llvm::IRBuilder<> b(entry);
  llvm::Value *bits = b.CreateCall(vectorBits);
  b.CreateCondBr(b.CreateICmpSGE(bits, b.getInt32(512)), wideBlock,
                 narrowBlock);
  llvm::SmallVector<llvm::Value *> args;
  for (llvm::Argument &arg : body.args())
    args.push_back(&arg);
  for (auto [block, callee] :
       {std::pair(wideBlock, &wide), std::pair(narrowBlock, &narrow)}) {
    b.SetInsertPoint(block);
    b.CreateCall(callee, args);
    b.CreateRetVoid();
  }
}

/// Whether `body` loads booleans. LLVM stores an i1 in a byte and
/// vectorizes such loads as one byte at a time; on AVX-512 it then builds
/// each mask register bit by bit (a masked attention's Where, 64 x 64 x 4
/// floats selected by a byte mask: 3.2 us on AVX2, 10.2 on AVX-512), so
/// such bodies keep the AVX2 code alone.
static bool loadsBooleans(llvm::Function &body) {
  for (llvm::BasicBlock &block : body)
    for (llvm::Instruction &inst : block)
      if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&inst))
        if (load->getType()->getScalarType()->isIntegerTy(1))
          return true;
  return false;
}

/// Whether `body` computes enough per element for wider vectors to pay:
/// at least kMinFloatOps floating-point operations (tanh-GELU has about 30
/// after weft-approximate-math, erf-GELU 20). A bias add or a residual add
/// is bound by memory, gains nothing from 512 bits, and a second copy of
/// it only costs compile time: a GPT-2-style decoder's 29 bodies, all
/// copied, made weftc 28% slower (0.61 -> 0.78 s).
static bool computesEnough(llvm::Function &body) {
  constexpr int kMinFloatOps = 8;
  int floatOps = 0;
  for (llvm::BasicBlock &block : body)
    for (llvm::Instruction &inst : block) {
      // Arithmetic with a float result (fma and the like are intrinsic
      // calls), and float compares (the approximations' clamps).
      const bool floatResult =
          inst.getType()->getScalarType()->isFloatingPointTy();
      if (llvm::isa<llvm::FCmpInst>(inst) ||
          (floatResult && (llvm::isa<llvm::BinaryOperator>(inst) ||
                           llvm::isa<llvm::UnaryOperator>(inst) ||
                           llvm::isa<llvm::IntrinsicInst>(inst))))
        ++floatOps;
    }
  return floatOps >= kMinFloatOps;
}

void mlir::weft::addWideVectorLoopVariants(llvm::Module &module,
                                           llvm::TargetMachine &machine) {
  if (!machine.getTargetTriple().isX86() ||
      !machine.getTargetTriple().isArch64Bit())
    return;
  // A target that has AVX-512 already (--mcpu=native on such a CPU,
  // x86-64-v4) needs no second copy.
  const llvm::MCSubtargetInfo *subtarget = machine.getMCSubtargetInfo();
  if (subtarget && subtarget->checkFeatures("+avx512f"))
    return;
  llvm::SmallVector<llvm::Function *> bodies;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getName().starts_with(kLoopBodyPrefix) &&
        f.getReturnType()->isVoidTy() && !loadsBooleans(f) && computesEnough(f))
      bodies.push_back(&f);
  if (bodies.empty())
    return;
  llvm::LLVMContext &ctx = module.getContext();
  llvm::FunctionCallee vectorBits = module.getOrInsertFunction(
      kVectorBitsFn, llvm::FunctionType::get(llvm::Type::getInt32Ty(ctx),
                                             /*isVarArg=*/false));
  for (llvm::Function *body : bodies) {
    llvm::Function *wide = cloneBody(*body, body->getName().str() + ".avx512");
    llvm::Function *narrow = cloneBody(*body, body->getName().str() + ".avx2");
    // x86-64-v4 is AVX-512 F, BW, CD, DQ and VL, what every AVX-512 CPU
    // since Skylake-SP has and what the runtime checks. LLVM's generic
    // tuning prefers 256-bit vectors; these loops are arithmetic on
    // contiguous floats, where 512 bits halve the instructions.
    wide->addFnAttr("target-cpu", "x86-64-v4");
    wide->addFnAttr("prefer-vector-width", "512");
    wide->removeFnAttr("target-features");
    makeDispatcher(*body, *wide, *narrow, vectorBits);
  }
}
