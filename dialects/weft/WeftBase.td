//===- WeftBase.td - Weft base op class and type constraints -*- tablegen -*-===//
//
// The base class of every weft op and the tensor types the dialect accepts.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_WEFTBASE_TD
#define WEFT_DIALECT_WEFT_WEFTBASE_TD

include "weft/WeftDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// Element types of ONNX tensors that weft supports.
def Weft_Float : AnyTypeOf<[F32, F16, BF16, F64]>;
def Weft_Int : AnyTypeOf<[I8, UI8, I32, I64]>;
def Weft_ElementType : AnyTypeOf<[F32, F16, BF16, F64, I1, I8, UI8, I32, I64]>;

/// A ranked tensor of a supported element type; dimensions may be dynamic.
def Weft_Tensor : RankedTensorOf<[F32, F16, BF16, F64, I1, I8, UI8, I32, I64]>;
def Weft_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Weft_NumericTensor : RankedTensorOf<[F32, F16, BF16, F64, I8, UI8, I32, I64]>;
def Weft_IntegerTensor : RankedTensorOf<[I8, UI8, I32, I64]>;
def Weft_BoolTensor : RankedTensorOf<[I1]>;
/// A 1-D or 0-D tensor of i64 carrying a shape, axes or indices.
def Weft_I64Tensor : RankedTensorOf<[I64]>;
/// Indices: i32 or i64.
def Weft_IndexTensor : RankedTensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Base op
//===----------------------------------------------------------------------===//

/// Every weft op is side-effect free and infers its result types. A result
/// type may be less static than the inferred one (a dynamic dimension where
/// inference knows a size), never in conflict with it: the op's own
/// `isCompatibleReturnTypes` below replaces the interface's exact match.
/// Canonicalization refines such types. Ops that need more class
/// declarations use Weft_OpWithDecls, which keeps this method.
class Weft_Op<string mnemonic, list<Trait> traits = []>
    : Op<Weft_Dialect, mnemonic,
         !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let extraClassDeclaration = [{
    /// Result types may be less static than, but must be compatible with,
    /// the inferred ones.
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual) {
      return ::mlir::weft::areCompatibleTensorTypes(inferred, actual);
    }
  }];
}

/// Weft op with extra class declarations of its own.
class Weft_OpWithDecls<string mnemonic, list<Trait> traits = [],
                       code decls = [{}]>
    : Weft_Op<mnemonic, traits> {
  let extraClassDeclaration = [{
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual) {
      return ::mlir::weft::areCompatibleTensorTypes(inferred, actual);
    }
  }] # decls;
}

#endif // WEFT_DIALECT_WEFT_WEFTBASE_TD
