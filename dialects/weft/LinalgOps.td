//===- LinalgOps.td - Weft matrix products and einsum ------*- tablegen -*-===//
//
// Linear algebra: batched matrix products with optional scaling and bias
// (ONNX MatMul, Gemm) and Einstein summation (ONNX Einsum).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_LINALGOPS_TD
#define WEFT_DIALECT_WEFT_LINALGOPS_TD

include "weft/WeftBase.td"

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

def Weft_MatmulOp : Weft_Op<"matmul"> {
  let summary = "Batched matrix product with transposes, scale and bias";
  let description = [{
    Computes `alpha * (op(lhs) @ op(rhs)) + beta * bias` with numpy `matmul`
    semantics for the product:

    - a 1-D `lhs` of size K is a 1xK matrix whose row dimension is dropped
      from the result; a 1-D `rhs` of size K is a Kx1 matrix whose column
      dimension is dropped;
    - operands of rank > 2 are stacks of matrices in their last two
      dimensions; the leading (batch) dimensions broadcast against each
      other numpy-style;
    - `transpose_a` / `transpose_b` swap the last two dimensions of `lhs` /
      `rhs` before the product (both need rank >= 2).

    The optional `bias` broadcasts unidirectionally to the product's shape
    (each of its dimensions, aligned from the right, is 1 or the product's).
    `alpha` and `beta` default to 1; `beta` is meaningful only with a bias.
    Integers wrap on overflow.

    Canonicalization splits a product whose columns are only used in
    pieces (unit-step slices or a split of the last dimension, as exporters
    unpack a fused Q, K and V projection) into one product per piece, when
    the weight (and any per-column bias or following bias add) are weights
    or constants, whose pieces cost nothing: each projection then has a
    weight of its own that sharding can split by heads.

    ONNX MatMul is this op without flags or bias; ONNX Gemm (rank-2 operands)
    maps `transA`, `transB`, `alpha`, `beta` and `C` to the flags, scales and
    bias. One op covers both so that later passes (sharding, lowering to
    BLAS, which already has these parameters) see every matrix product in
    one form.

    ```mlir
    %y = weft.matmul %x, %w : (tensor<?x128x768xf32>, tensor<768x3072xf32>)
           -> tensor<?x128x3072xf32>
    %z = weft.matmul %a, %b, %c {transpose_b, alpha = 5.000000e-01 : f64}
           : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
           -> tensor<4x16xf32>
    ```

    **Constraints:**
    - `lhs`, `rhs` (and `bias`) have the same element type and `lhs`, `rhs`
      have rank >= 1 (>= 2 when transposed);
    - the contracted dimensions agree when both are static;
    - the batch dimensions broadcast, and `bias` broadcasts unidirectionally
      to the product's shape (its rank is not larger);
    - with an integer element type, `alpha` and `beta` are whole numbers;
    - the result has the element type of the operands and the numpy
      `matmul` shape.
  }];
  let arguments = (ins Weft_NumericTensor:$lhs, Weft_NumericTensor:$rhs,
                       Optional<Weft_NumericTensor>:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta);
  let results = (outs Weft_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

def Weft_EinsumOp : Weft_OpWithDecls<"einsum", [], [{
    /// The labels of one term of an einsum equation: letters as their
    /// character, `kEllipsis` where the term's "..." stands.
    using Term = ::llvm::SmallVector<char>;
    static constexpr char kEllipsis = '.';

    /// A parsed, validated einsum equation.
    struct Equation {
      ::llvm::SmallVector<Term> inputs;
      /// The output term; filled in from the implicit rule when the
      /// equation has no "->".
      Term output;
    };

    /// Parses `equation` for operands of the given ranks: checks its syntax,
    /// the number of terms, each term against its operand's rank and the
    /// output labels. Reports problems at `loc` when given.
    static ::mlir::FailureOr<Equation>
    parseEquation(::llvm::StringRef equation,
                  ::llvm::ArrayRef<int64_t> ranks,
                  std::optional<::mlir::Location> loc);

    /// Prints an equation in explicit form ("ij,jk->ik", no spaces).
    static std::string printEquation(const Equation &equation);
  }]> {
  let summary = "Einstein summation over any number of operands";
  let description = [{
    Multiplies the `inputs` elementwise after aligning their dimensions by
    label, and sums over the labels that the output does not name, as numpy
    and ONNX Einsum define. The `equation` lists one term of labels per
    input, separated by commas, and optionally `->` and the output term.

    - Labels are letters `a`-`z`, `A`-`Z`; spaces are ignored.
    - `...` (at most once per term) stands for the dimensions not named by
      letters; these broadcast numpy-style across inputs (aligned from the
      right) and appear in the output where its `...` stands.
    - A label repeated within one input takes that input's diagonal; the
      dimensions it names there must be equal.
    - Dimensions of the same label in different inputs must be equal or 1
      (size 1 broadcasts).
    - Without `->`, the output is `...` (if any input has one) followed by
      the labels that occur exactly once, in ASCII order (upper case first).

    The importer stores the explicit form of the equation.

    ```mlir
    %c = weft.einsum "bij,bjk->bik" %a, %b
           : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    %d = weft.einsum "...ii->...i" %x : (tensor<?x3x3xf32>) -> tensor<?x3xf32>
    ```

    **Constraints:**
    - there is one input per term, all of the same element type;
    - each term uses only letters and at most one `...`, and has as many
      labels as its input's rank (at least that many minus the `...`);
    - `...` covers zero dimensions in every input or the output has `...`;
    - output labels are distinct and each occurs in some input;
    - sizes of the same label agree (equal, or 1 across inputs) and the
      `...` dimensions broadcast;
    - the result has the inputs' element type and the output term's sizes.
  }];
  let arguments = (ins Variadic<Weft_NumericTensor>:$inputs,
                       StrAttr:$equation);
  let results = (outs Weft_NumericTensor:$result);
  let assemblyFormat = [{
    $equation $inputs attr-dict `:` functional-type($inputs, results)
  }];
}

#endif // WEFT_DIALECT_WEFT_LINALGOPS_TD
