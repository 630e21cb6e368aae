//===- WinogradBands.cpp - Winograd F(2,3) on column bands of a plane ------===//
//
// oneDNN has two Winograd convolutions for a channel-blocked 3x3 layer:
// F(4,3), whose transformed weight is 36 x C x OC floats, and F(2,3), 16 x
// C x OC, which it takes only for planes of at most 196 input pixels. On
// a CRNN's 8x32 planes it picks F(4,3): 9.4 MB of weights for a 256 -> 256
// layer, used 16 times each per inference; they come from memory at every
// call, and the layer took 900 us in the model against 380 alone (the
// CRNN's Winograd weights came to 26 MB, against a 32 MB L3 that other
// tenants of the host share).
//
// Cut into column bands whose padded planes have at most 196 pixels, each
// band copied with its halo (the zero padding included) into a plane of
// its own, the layer runs on F(2,3) with 4.2 MB of weights, which every
// band shares: 900 -> 680 us for the 256 -> 256 layer, the whole CRNN
// 2.7-2.8 -> 2.4 ms on one thread (bench/kernels/README.md).
//
//===----------------------------------------------------------------------===//

#include "Conv.h"

#include <oneapi/dnnl/dnnl.h>

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace weft::rt::cpu;

namespace {
/// The largest plane (input pixels, padding included) on which oneDNN 2.6
/// runs F(2,3) for batch 1 (jit_avx512_core_f32_wino_conv_2x3's heuristic).
constexpr int64_t kF23MaxPixels = 196;
/// At most this many bands: each is a oneDNN call and two copies.
constexpr int64_t kMaxBands = 4;
/// Below this size F(4,3)'s weights come from the caches often enough that
/// its fewer multiplications win. Stacks of four 3x3 layers, one thread:
/// 128 channels (2.4 MB) on 8x32 planes 0.59 ms without bands, 0.80 with;
/// 192 channels (5.3 MB) 1.7-2.5 without, 2.3 with; 256 channels (9.4 MB)
/// on 14x16 planes 5.2-6.1 without, 2.8-3.1 with (bench/kernels/README.md).
constexpr int64_t kMinF43WeightBytes = int64_t(4) << 20;

/// The output columns of each band of `s`: as many as the fewest bands
/// (2 to kMaxBands) whose padded planes oneDNN's F(2,3) takes; 0 when none
/// do. A width that the bands do not divide leaves the last band short: its
/// plane is as wide as the others', padded with zeros, and the columns past
/// the layer's are computed and dropped.
int64_t bandColumns(const ConvShape &s) {
  const int64_t rows = s.out[1] + 2, width = s.out[2];
  for (int64_t bands = 2; bands <= kMaxBands; ++bands) {
    const int64_t columns = (width + bands - 1) / bands;
    if (rows * (columns + 2) <= kF23MaxPixels)
      return columns;
  }
  return 0;
}

/// Whether bands can compute `s` at all: a channel-blocked 3x3 layer with
/// pads 1 whose plane 2 to kMaxBands bands cut small enough.
bool bandsFit(const ConvShape &s) {
  return winogradTakes(s) && s.inputBlocked && s.outputBlocked &&
         s.c % kConvChannelBlock == 0 && s.oc % kConvChannelBlock == 0 &&
         s.padsBegin[1] == 1 && s.padsEnd[1] == 1 && s.padsBegin[2] == 1 &&
         s.padsEnd[2] == 1 && bandColumns(s) > 0;
}

/// The shape of one band of `columns` output columns: its padded plane,
/// no padding of its own.
ConvShape bandShape(const ConvShape &s, int64_t columns) {
  ConvShape band = s;
  band.n = 1;
  band.in[1] = s.out[1] + 2;
  band.in[2] = columns + 2;
  band.out[2] = columns;
  for (int d = 1; d < 3; ++d)
    band.padsBegin[d] = band.padsEnd[d] = 0;
  return band;
}

/// A layer's band plane buffers and the key of its bands' oneDNN
/// convolution (an address of its own: the layer's parameter block keys
/// this entry).
struct Bands : CacheEntry {
  std::vector<int64_t> bandKey;
  ScratchBuffer input, output;
};
} // namespace

bool weft::rt::cpu::winogradBandsAvailable() {
  // oneDNN's Winograd kernels (F(2,3) and F(4,3)) are AVX-512 ones; with
  // less it runs its direct convolution, which bands would only slow.
  static const bool available = [] {
    const unsigned isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
  }();
  return available;
}

bool weft::rt::cpu::winogradBandsTake(const ConvShape &s) {
  // Batch 1 only, as measured: a batch reuses F(4,3)'s weights across its
  // images, where the bands would run one call per image and band.
  return winogradBandsAvailable() && bandsFit(s) && s.n == 1 &&
         s.in[1] * s.in[2] > kF23MaxPixels &&
         36 * s.c * s.oc * int64_t(sizeof(float)) >= kMinF43WeightBytes;
}

weft_rt_status weft::rt::cpu::convWinogradBands(
    weft_rt_context *ctx, const int64_t *params, const ConvShape &s,
    const float *x, const float *weight, const float *bias, float *y) {
  if (!bandsFit(s))
    return weft_rt_fail(
        ctx, WEFT_RT_UNSUPPORTED,
        "conv: Winograd on column bands needs a 2-D 3x3 convolution of "
        "group 1, strides, dilations and pads 1, channel-blocked input and "
        "output, channels in blocks of 16, and a plane that %lld or fewer "
        "column bands cut into planes of at most %lld pixels with their "
        "halo",
        (long long)kMaxBands, (long long)kF23MaxPixels);
  const int64_t step = bandColumns(s);
  const int64_t bands = (s.out[2] + step - 1) / step;
  const ConvShape band = bandShape(s, step);
  const int64_t inBlocks = s.c / kConvChannelBlock;
  const int64_t outBlocks = s.oc / kConvChannelBlock;
  const int64_t rows = s.out[1], width = s.out[2];
  const int64_t bandRows = band.in[1], bandWidth = band.in[2];
  auto *e = findCached<Bands>(ctx, params, s.words);
  if (!e) {
    auto entry = std::make_unique<Bands>();
    // Any block of the layer's length: only its address keys the bands'
    // convolution, which convOneDnn builds from `band`.
    entry->bandKey.assign(params, params + s.words);
    if (entry->input.allocate(
            ctx, "conv", s.c * bandRows * bandWidth * int64_t(sizeof(float)),
            "a Winograd band's input") != WEFT_RT_OK ||
        entry->output.allocate(ctx, "conv",
                               s.oc * rows * step * int64_t(sizeof(float)),
                               "a Winograd band's output") != WEFT_RT_OK)
      return WEFT_RT_OUT_OF_MEMORY;
    e = storeCached(ctx, params, s.words, std::move(entry));
  }
  float *bandIn = e->input.as<float>(), *bandOut = e->output.as<float>();
  const int copyTeam = threadsFor(ctx, s.c * bandRows * bandWidth);
  for (int64_t image = 0; image < s.n; ++image) {
    const float *xi = x + image * s.c * s.inPlane();
    float *yi = y + image * s.oc * s.outPlane();
    for (int64_t b = 0; b < bands; ++b) {
      // The band's padded plane: input columns [b * step - 1, ... + step +
      // 1), rows -1 to `rows`, zero outside the input.
#pragma omp parallel for collapse(2) num_threads(copyTeam) if (copyTeam > 1)
      for (int64_t block = 0; block < inBlocks; ++block)
        for (int64_t r = 0; r < bandRows; ++r) {
          float *to =
              bandIn + (block * bandRows + r) * bandWidth * kConvChannelBlock;
          const int64_t inRow = r - 1;
          if (inRow < 0 || inRow >= rows) {
            std::fill_n(to, bandWidth * kConvChannelBlock, 0.0f);
            continue;
          }
          const int64_t first = b * step - 1;
          const int64_t begin = std::max<int64_t>(first, 0);
          const int64_t end = std::min(first + bandWidth, width);
          const float *from =
              xi + (block * rows + inRow) * width * kConvChannelBlock;
          std::fill_n(to, (begin - first) * kConvChannelBlock, 0.0f);
          std::copy(from + begin * kConvChannelBlock,
                    from + end * kConvChannelBlock,
                    to + (begin - first) * kConvChannelBlock);
          std::fill(to + (end - first) * kConvChannelBlock,
                    to + bandWidth * kConvChannelBlock, 0.0f);
        }
      WEFT_RT_TRY(convOneDnn(ctx, ConvAlgorithm::OneDnnWinograd,
                             e->bandKey.data(), band, bandIn, weight, bias,
                             bandOut));
      // The band's columns that the layer has (the last band's may be
      // fewer than `step`).
      const int64_t kept = std::min(step, width - b * step);
#pragma omp parallel for collapse(2) num_threads(copyTeam) if (copyTeam > 1)
      for (int64_t block = 0; block < outBlocks; ++block)
        for (int64_t r = 0; r < rows; ++r)
          std::copy_n(bandOut + (block * rows + r) * step * kConvChannelBlock,
                      kept * kConvChannelBlock,
                      yi + ((block * rows + r) * width + b * step) *
                               kConvChannelBlock);
    }
  }
  return WEFT_RT_OK;
}

std::string weft::rt::cpu::winogradBandsImplementation(weft_rt_context *ctx,
                                                       const int64_t *params) {
  auto it = ctx->kernelCache.find(params);
  if (it == ctx->kernelCache.end())
    return "";
  auto *bands = dynamic_cast<Bands *>(it->second.get());
  return bands ? oneDnnConvImplementation(ctx, bands->bandKey.data()) : "";
}
