//===- ConvShape.cpp - Reading a convolution's parameter block -----------===//
//
// parseConv, apart from the CPU convolutions so that the CUDA backend can
// check blocks the same way without linking oneDNN and OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "Conv.h"
#include "KernelParams.h"

#include <cmath>
#include <limits>

using namespace weft::rt;
using namespace weft::rt::cpu;

static const char *const kConv = "conv";

/// The layout word's bits (weft_rt.h).
constexpr int64_t kChannelsLastInput = 1, kChannelsLastOutput = 2,
                  kKernelFirstWeight = 4, kBlockedInput = 8,
                  kBlockedOutput = 16, kBlockedAddend = 32,
                  kPackedWeight = 64;
constexpr int64_t kChannelsLastBits =
    kChannelsLastInput | kChannelsLastOutput | kKernelFirstWeight;
constexpr int64_t kBlockedBits =
    kBlockedInput | kBlockedOutput | kBlockedAddend;

weft_rt_status weft::rt::cpu::parseConv(weft_rt_context *ctx,
                                        const int64_t *params, ConvShape &s) {
  WEFT_RT_REQUIRE(ctx, params, "conv: parameter block is NULL");
  ParamReader r(params);
  int64_t dtype = r.next();
  WEFT_RT_TRY(checkDtype(ctx, kConv, dtype, dtypeBit(WEFT_RT_F32)));
  s.spatialRank = r.next();
  WEFT_RT_REQUIRE(ctx, s.spatialRank >= 1 && s.spatialRank <= 3,
                  "conv: %lld spatial dimensions (1 to 3 are supported)",
                  (long long)s.spatialRank);
  s.n = r.next();
  s.c = r.next();
  s.oc = r.next();
  s.group = r.next();
  WEFT_RT_REQUIRE(ctx, s.n >= 0 && s.c >= 0 && s.oc >= 0,
                  "conv: negative N=%lld, C=%lld or OC=%lld", (long long)s.n,
                  (long long)s.c, (long long)s.oc);
  WEFT_RT_REQUIRE(ctx,
                  s.group >= 1 && s.c % s.group == 0 && s.oc % s.group == 0,
                  "conv: group %lld does not divide C=%lld and OC=%lld",
                  (long long)s.group, (long long)s.c, (long long)s.oc);
  int64_t rank = s.spatialRank;
  int64_t *const fields[] = {s.in,        s.kernel,  s.strides, s.dilations,
                             s.padsBegin, s.padsEnd, s.out};
  readSpatialArrays(r, rank, fields);
  int64_t activation = r.next();
  double low = r.nextDouble(), high = r.nextDouble();
  s.layout = r.next();
  s.words = r.consumed();
  WEFT_RT_REQUIRE(ctx, activation == 0 || activation == 1,
                  "conv: unknown activation %lld (0: none, 1: clamp to [low, "
                  "high])",
                  (long long)activation);
  s.hasClamp = activation == 1;
  s.clampLow = -std::numeric_limits<float>::infinity();
  s.clampHigh = std::numeric_limits<float>::infinity();
  if (s.hasClamp) {
    WEFT_RT_REQUIRE(ctx, !std::isnan(low) && !std::isnan(high) && low <= high,
                    "conv: invalid clamp bounds [%g, %g] (low <= high "
                    "expected, neither NaN)",
                    low, high);
    // Rounding to float keeps low <= high (it is monotonic); bounds beyond
    // the float range become infinities.
    s.clampLow = static_cast<float>(low);
    s.clampHigh = static_cast<float>(high);
  }
  WEFT_RT_REQUIRE(ctx,
                  (s.layout & ~(kChannelsLastBits | kBlockedBits |
                                kPackedWeight)) == 0,
                  "conv: unknown bits in the layout word %lld (known: 1, "
                  "channels-last input; 2, channels-last output and addend; "
                  "4, kernel-first weight; 8, 16 and 32, channel-blocked "
                  "input, output and addend; 64, packed weight)",
                  (long long)s.layout);
  s.inputChannelsLast = s.layout & kChannelsLastInput;
  s.outputChannelsLast = s.layout & kChannelsLastOutput;
  s.weightKernelFirst = s.layout & kKernelFirstWeight;
  s.inputBlocked = s.layout & kBlockedInput;
  s.outputBlocked = s.layout & kBlockedOutput;
  s.addendBlocked = s.layout & kBlockedAddend;
  s.weightPacked = s.layout & kPackedWeight;
  if (s.weightPacked) {
    // The panels of ConvChannelsLast.cpp's packed 1x1 kernel.
    WEFT_RT_REQUIRE(ctx,
                    s.layout == (kPackedWeight | kChannelsLastInput |
                                 kChannelsLastOutput),
                    "conv: layout bit 64 (packed weight) needs bits 1 and 2 "
                    "(channels-last input and output) and no other, got "
                    "layout %lld",
                    (long long)s.layout);
    WEFT_RT_REQUIRE(ctx,
                    rank == 2 && s.group == 1 && s.kernel[1] == 1 &&
                        s.kernel[2] == 1 && s.strides[1] == 1 &&
                        s.strides[2] == 1 && s.padsBegin[1] == 0 &&
                        s.padsBegin[2] == 0 && s.padsEnd[1] == 0 &&
                        s.padsEnd[2] == 0,
                    "conv: layout bit 64 (packed weight) is for 2-D 1x1 "
                    "convolutions of group 1, strides 1 and no pads");
    WEFT_RT_REQUIRE(ctx, s.oc % kConvWeightPanel == 0,
                    "conv: layout bit 64 (packed weight) needs OC to be a "
                    "multiple of %lld, not %lld",
                    (long long)kConvWeightPanel, (long long)s.oc);
  }
  if (s.layout & kBlockedBits) {
    // The blocked layouts are oneDNN's (ConvBlocked.cpp), which knows
    // nothing of the channels-last ones and blocks whole channels.
    WEFT_RT_REQUIRE(ctx, (s.layout & kChannelsLastBits) == 0,
                    "conv: layout %lld mixes the channel-blocked bits (8 "
                    "input, 16 output, 32 addend) with the channels-last or "
                    "kernel-first ones (1, 2, 4)",
                    (long long)s.layout);
    WEFT_RT_REQUIRE(ctx, s.group == 1,
                    "conv: the channel-blocked layout bits (8, 16, 32) need "
                    "group 1, not %lld",
                    (long long)s.group);
    WEFT_RT_REQUIRE(ctx, !s.inputBlocked || s.c % kConvChannelBlock == 0,
                    "conv: layout bit 8 (channel-blocked input) needs C to be "
                    "a multiple of %lld, not %lld",
                    (long long)kConvChannelBlock, (long long)s.c);
    WEFT_RT_REQUIRE(ctx,
                    !(s.outputBlocked || s.addendBlocked) ||
                        s.oc % kConvChannelBlock == 0,
                    "conv: layout bits 16 and 32 (channel-blocked output, "
                    "addend) need OC to be a multiple of %lld, not %lld",
                    (long long)kConvChannelBlock, (long long)s.oc);
  }
  for (int64_t d = 3 - rank; d < 3; ++d) {
    long long axis = d - (3 - rank);
    WEFT_RT_REQUIRE(ctx,
                    s.in[d] >= 0 && s.kernel[d] >= 1 && s.strides[d] >= 1 &&
                        s.dilations[d] >= 1,
                    "conv: spatial axis %lld has input %lld, kernel %lld, "
                    "stride %lld, dilation %lld (sizes >= 0, the rest >= 1)",
                    axis, (long long)s.in[d], (long long)s.kernel[d],
                    (long long)s.strides[d], (long long)s.dilations[d]);
    WEFT_RT_REQUIRE(ctx, s.padsBegin[d] >= 0 && s.padsEnd[d] >= 0,
                    "conv: negative pads on spatial axis %lld", axis);
    int64_t span, padded;
    WEFT_RT_REQUIRE(ctx,
                    dilatedSpan(s.in[d], s.kernel[d], s.dilations[d],
                                s.padsBegin[d], s.padsEnd[d], span, padded),
                    "conv: sizes of spatial axis %lld overflow", axis);
    WEFT_RT_REQUIRE(ctx, padded > span,
                    "conv: on spatial axis %lld the dilated kernel (%lld) is "
                    "larger than the padded input (%lld)",
                    axis, (long long)(span + 1), (long long)padded);
    int64_t expected = (padded - span - 1) / s.strides[d] + 1;
    WEFT_RT_REQUIRE(ctx, s.out[d] == expected,
                    "conv: output size %lld on spatial axis %lld, expected "
                    "%lld",
                    (long long)s.out[d], axis, (long long)expected);
  }
  // Input, weight, output and im2col element counts must fit in int64.
  const int64_t cg = s.c / s.group;
  const int64_t counts[][8] = {
      {s.n, s.c, s.in[0], s.in[1], s.in[2], 1, 1, 1},
      {s.oc, cg, s.kernel[0], s.kernel[1], s.kernel[2], 1, 1, 1},
      {s.n, s.oc, s.out[0], s.out[1], s.out[2], 1, 1, 1},
      {cg, s.kernel[0], s.kernel[1], s.kernel[2], s.out[0], s.out[1], s.out[2],
       1}};
  for (const auto &factors : counts) {
    int64_t count;
    WEFT_RT_REQUIRE(ctx, checkedProduct(factors, 8, count),
                    "conv: tensor sizes overflow int64");
  }
  return WEFT_RT_OK;
}
