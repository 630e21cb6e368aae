//===- Conv.h - Convolution algorithms --------------------------*- C++ -*-===//
//
// The validated shape of a convolution and the algorithms that compute one
// (oneDNN in several layouts, im2col + GEMM, a direct depthwise kernel),
// selectable so that weft-kernel-bench can compare them; private to
// runtime/cpu.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CPU_CONV_H
#define WEFT_RUNTIME_CPU_CONV_H

#include "Gemm.h"
#include "VectorIsa.h"

#include <limits>
#include <string>

namespace weft::rt::cpu {

/// How a convolution is computed. Auto is what weft_rt_cpu_conv uses.
enum class ConvAlgorithm {
  Auto,
  /// oneDNN direct convolution on the plain NC[D]HW / OI[D]HW buffers.
  OneDnnPlain,
  /// oneDNN direct convolution in the layouts it prefers (nChw16c, ...),
  /// with the input and output reordered at each call and the weights once.
  OneDnnBlocked,
  /// As OneDnnBlocked with Winograd where oneDNN has it (3x3, stride 1).
  OneDnnWinograd,
  /// im2col (skipped for 1x1 stride-1 convolutions) then a GEMM per image
  /// and group, on oneDNN's or OpenBLAS's sgemm.
  Im2colOneDnnGemm,
  Im2colOpenBlas,
  /// Our direct depthwise convolution on the plain NC[D]HW layout
  /// (DepthwiseConv.cpp): group == C == OC only, other shapes fail with
  /// WEFT_RT_UNSUPPORTED.
  Depthwise,
  /// Our direct convolution for few input channels (DirectConv.cpp):
  /// 2-D, one group, at most 256 input channels x kernel taps, on AVX2 or
  /// AVX-512; other shapes and CPUs fail with WEFT_RT_UNSUPPORTED.
  Direct,
  /// oneDNN's Winograd F(2,3) on column bands of the plane, each copied
  /// with its halo into a plane of its own (WinogradBands.cpp):
  /// channel-blocked 3x3 layers with pads 1 only, other shapes fail with
  /// WEFT_RT_UNSUPPORTED.
  OneDnnWinogradBands,
};

/// A validated convolution parameter block, with 1-D and 2-D convolutions
/// seen as 3-D ones with leading spatial dimensions of size 1.
struct ConvShape {
  int64_t spatialRank;
  int64_t n, c, oc, group;
  int64_t in[3], kernel[3], strides[3], dilations[3], padsBegin[3], padsEnd[3],
      out[3];
  /// The fused activation (activation word 1): every output element is
  /// clamped to [clampLow, clampHigh] after the bias. Without one (word 0)
  /// hasClamp is false and the bounds are -inf and +inf, so that kernels
  /// may clamp unconditionally.
  bool hasClamp;
  float clampLow, clampHigh;
  /// The layout word's bits (the word itself in `layout`, 0 for NC[D]HW,
  /// OIHW weights): the input is N x in... x C (bit 0), the output and the
  /// addend N x out... x OC (bit 1), the weight kernel... x C/group x OC
  /// (bit 2); the input is N x C/16 x in... x 16 (bit 3), the output
  /// N x OC/16 x out... x 16 (bit 4), the addend likewise (bit 5).
  int64_t layout;
  bool inputChannelsLast, outputChannelsLast, weightKernelFirst;
  bool inputBlocked, outputBlocked, addendBlocked;
  /// Layout bit 64: a 2-D 1x1 weight in panels, OC/32 x C x 32 (with
  /// bits 1 and 2 and no other).
  bool weightPacked = false;
  /// Words of the parameter block, the activation and layout words
  /// included.
  size_t words;
  int64_t inPlane() const { return in[0] * in[1] * in[2]; }
  int64_t outPlane() const { return out[0] * out[1] * out[2]; }
  int64_t kernelVolume() const { return kernel[0] * kernel[1] * kernel[2]; }
  /// Whether every group has one input and one output channel.
  bool isDepthwise() const { return group == c && group == oc; }
  /// Whether any buffer is channel-blocked (layout bits 8, 16, 32).
  bool anyBlocked() const {
    return inputBlocked || outputBlocked || addendBlocked;
  }
};

/// The channels of a block in the channel-blocked layouts (oneDNN's
/// nCw16c, nChw16c, nCdhw16c).
constexpr int64_t kConvChannelBlock = 16;

/// The output channels of a panel of a packed 1x1 weight (layout bit 64).
constexpr int64_t kConvWeightPanel = 32;

/// Reads and checks a conv parameter block (sizes agree, nothing
/// overflows).
weft_rt_status parseConv(weft_rt_context *ctx, const int64_t *params,
                         ConvShape &shape);

/// weft_rt_cpu_conv with a chosen algorithm; with `addend`,
/// weft_rt_cpu_conv_add.
weft_rt_status convWith(weft_rt_context *ctx, ConvAlgorithm algorithm,
                        const int64_t *params, const void *input,
                        const void *weight, const void *bias, void *out,
                        const void *addend = nullptr);

/// convWith for a block whose layout word is not 0 (ConvChannelsLast.cpp):
/// 2-D 1x1 convolutions of group 1 (Auto and the im2col algorithms: one
/// GEMM; with a packed weight, Auto only: convPointwisePacked) and 2-D
/// depthwise ones (Auto and Depthwise); other shapes and algorithms fail
/// with WEFT_RT_UNSUPPORTED.
weft_rt_status convChannelsLast(weft_rt_context *ctx, ConvAlgorithm algorithm,
                                const ConvShape &shape, const void *input,
                                const void *weight, const void *bias, void *out,
                                const void *addend);

/// A convolution whose weight is packed (layout bit 64: channels-last input
/// and output, 2-D 1x1, group 1, strides 1, no pads, OC a multiple of 32):
/// tiles of pixels x 32 output channels (16 on AVX2) read the panels in
/// order and apply the bias, `addend` (NULL: none) and the clamp before
/// one store (PointwisePacked.cpp).
weft_rt_status convPointwisePacked(weft_rt_context *ctx,
                                   const ConvShape &shape, const float *input,
                                   const float *weight, const float *bias,
                                   float *out, const float *addend);
/// The same on `vectors` (no wider than the CPU's): the AVX-512 tiles, the
/// AVX2 ones, or with None the plain loop any CPU runs.
weft_rt_status convPointwisePackedOn(CpuVectors vectors,
                                     weft_rt_context *ctx,
                                     const ConvShape &shape,
                                     const float *input, const float *weight,
                                     const float *bias, float *out,
                                     const float *addend);

/// convWith for a block with any channel-blocked bit (ConvBlocked.cpp):
/// oneDNN on the caller's blocked buffers. Auto takes Winograd where
/// winogradTakes says so (in bands where winogradBandsTake does) and
/// OneDnnBlocked elsewhere; OneDnnPlain, OneDnnBlocked, OneDnnWinograd and
/// OneDnnWinogradBands run as asked (OneDnnPlain: on the caller's layouts,
/// the weights unreordered); the other algorithms fail with
/// WEFT_RT_UNSUPPORTED.
weft_rt_status convBlocked(weft_rt_context *ctx, ConvAlgorithm algorithm,
                           const int64_t *params, const ConvShape &shape,
                           const void *input, const void *weight,
                           const void *bias, void *out, const void *addend);

/// Whether Auto runs `s` on oneDNN's Winograd: a 2-D 3x3 convolution of
/// group 1 with strides and dilations 1 (Conv.cpp).
bool winogradTakes(const ConvShape &s);

/// Whether Auto runs a channel-blocked `s` on Winograd F(2,3) in column
/// bands: batch 1, where oneDNN would give it F(4,3) with weights of 4 MB
/// or more, and 2 to 4 bands with their halo fit F(2,3)'s planes of at
/// most 196 pixels (WinogradBands.cpp).
bool winogradBandsTake(const ConvShape &s);
/// Whether oneDNN has its Winograd kernels on this CPU (AVX-512), which
/// winogradBandsTake requires.
bool winogradBandsAvailable();
/// OneDnnWinogradBands on `s` (no addend: the caller adds it).
weft_rt_status convWinogradBands(weft_rt_context *ctx, const int64_t *params,
                                 const ConvShape &s, const float *input,
                                 const float *weight, const float *bias,
                                 float *out);

/// y[i] = clamp(y[i] + bias (+ addend[i]), low, high) for i < count, NaN
/// kept (addend NULL: none): the bias, residual Add and clamp after a GEMM,
/// vectorized (Conv.cpp).
void finishConvRow(float *y, int64_t count, float bias, float low, float high,
                   const float *addend);

/// y[i] = clamp(y[i] + addend[i]) over `count` elements on up to `nt`
/// threads: the residual Add after an algorithm that cannot take it in its
/// own epilogue (which then runs without the clamp); with `addend` NULL,
/// the clamp alone (NaN kept).
/// `s` without its clamp: what an algorithm runs before addAndClamp adds
/// an addend and clamps.
inline ConvShape withoutClamp(ConvShape s) {
  s.hasClamp = false;
  s.clampLow = -std::numeric_limits<float>::infinity();
  s.clampHigh = std::numeric_limits<float>::infinity();
  return s;
}

void addAndClamp(const ConvShape &s, float *y, const float *addend,
                 int64_t count, int nt);

/// The oneDNN algorithms (ConvOneDnn.cpp); the primitive is cached per
/// parameter block.
weft_rt_status convOneDnn(weft_rt_context *ctx, ConvAlgorithm algorithm,
                          const int64_t *params, const ConvShape &shape,
                          const float *input, const float *weight,
                          const float *bias, float *out);

/// The instruction sets the depthwise kernel's fast path is compiled for,
/// in increasing order: 8 lanes on the baseline and on AVX2 with FMA, 16 on
/// AVX-512.
enum class DepthwiseIsa { Baseline, Avx2, Avx512 };

/// Caps the instruction set the depthwise kernel uses (process-wide; the
/// default, Avx512, leaves it the best the CPU has), so that tests and
/// weft-kernel-bench can run the narrower code on a wider CPU. Returns the
/// set now used: the cap or the CPU's, whichever is lower.
DepthwiseIsa capDepthwiseIsa(DepthwiseIsa cap);

/// The instruction set the depthwise kernel uses now: the CPU's best,
/// capped by capDepthwiseIsa.
DepthwiseIsa depthwiseIsa();

/// Which of the depthwise kernel's two paths runs: Auto picks by shape;
/// Planes is the plane-by-plane path (DepthwiseConv.cpp), ChannelBlocked
/// the interleaved tiles of DepthwiseBlocked.cpp (on AVX2 and AVX-512, for
/// 2-D undilated kernels up to 7x7; other shapes take the plane path).
/// With a channels-last layout, Auto and ChannelBlocked take the tiles
/// wherever they can, and Planes the plain channels-last loop of
/// ConvChannelsLast.cpp (the tiles' fallback).
enum class DepthwisePath { Auto, Planes, ChannelBlocked };

/// Forces a depthwise path (process-wide), for tests and
/// weft-kernel-bench; returns the one forced before.
DepthwisePath forceDepthwisePath(DepthwisePath path);

/// The band height, at most `most` output rows, that leaves the busiest of
/// `team` threads the fewest rows when `images` images of `rows` rows are
/// cut into bands dealt out in contiguous runs (as the channel-blocked path
/// deals them); the tallest such.
int64_t evenBandRows(int64_t images, int64_t rows, int64_t most, int64_t team);

/// The channel-blocked path on up to `nt` threads, when `isa`, the shape
/// and the forced path let it take `s` (in any layout); false (nothing
/// written) otherwise.
bool runBlockedDepthwise(const ConvShape &s, DepthwiseIsa isa, int nt,
                         const float *input, const float *weight,
                         const float *bias, float *out);

/// The depthwise kernel's wide-row path (DepthwiseWideRows.cpp): planes
/// [begin, end) of a 3x3 layer.
using DepthwiseRowsFn = void (*)(const ConvShape &s, const float *x,
                                 const float *w, const float *bias, float *y,
                                 int64_t begin, int64_t end);

/// The wide-row path's entry for `s` on AVX-512, or null when it does not
/// take the shape (or the runtime is built without x86 targets).
DepthwiseRowsFn wideRowsEntryFor(const ConvShape &s);

/// The direct depthwise convolution (DepthwiseConv.cpp); `shape` has
/// group == C == OC and C > 0.
weft_rt_status convDepthwise(weft_rt_context *ctx, const ConvShape &shape,
                             const float *input, const float *weight,
                             const float *bias, float *out);

/// Whether Auto takes the direct convolution for `s`: a network's first
/// layer, with at most 4 input channels (DirectConv.cpp).
bool directConvTakes(const ConvShape &shape);

/// The direct convolution for few input channels (DirectConv.cpp); its
/// scratch buffers are cached per parameter block.
weft_rt_status convDirect(weft_rt_context *ctx, const int64_t *params,
                          const ConvShape &shape, const float *input,
                          const float *weight, const float *bias, float *out);

/// The name of the oneDNN implementation cached for `params` ("" if none),
/// for the benchmark's table.
std::string oneDnnConvImplementation(weft_rt_context *ctx,
                                     const int64_t *params);
/// The same for the bands' convolution of the OneDnnWinogradBands layer
/// cached for `params` ("" when there is none).
std::string winogradBandsImplementation(weft_rt_context *ctx,
                                        const int64_t *params);

/// Whether the oneDNN convolution cached for `params` reorders its source
/// (`source`) and its output (`output`) at each call, for tests and the
/// benchmark; false when none is cached.
bool oneDnnConvReorders(weft_rt_context *ctx, const int64_t *params,
                        bool &source, bool &output);

} // namespace weft::rt::cpu

#endif // WEFT_RUNTIME_CPU_CONV_H
