//===- RankData.cpp - The data a resharding run moves and checks ----------===//
//
// Element values from a hash of the global index (SplitMix64), made exact
// in their dtype: floats are integers of as many bits as the significand
// holds, scaled by a power of two; integers are the hash's low bits. Copies
// and checks go row by row (the last dimension is contiguous in a block).
// Element bits are stored little-endian, as on every host Weft runs on.
//
//===----------------------------------------------------------------------===//

#include "RankData.h"

#include "weft/Plan/Sharding.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace llvm;
using namespace weft::plan;
using namespace weft::reshard;

bool weft::reshard::runSupportsDType(DType dtype) {
  return dtype != DType::Bool;
}

std::string weft::reshard::runDTypeNames() {
  return "f32, f16, bf16, f64, i8, i32 or i64";
}

Block Block::zeros(Box box, int64_t elementBytes, bool track) {
  Block block;
  block.box = std::move(box);
  block.elementBytes = elementBytes;
  block.data.assign(static_cast<size_t>(block.bytes()), 0);
  if (track)
    block.written.assign(static_cast<size_t>(block.elements()), 0);
  return block;
}

Box weft::reshard::blockBox(ArrayRef<int64_t> shape,
                            const TensorSharding &sharding,
                            ArrayRef<int64_t> meshShape, int64_t device) {
  return Box{localOffsets(shape, sharding, meshShape, device),
             localShape(shape, sharding, meshShape, device)};
}

std::optional<Box> weft::reshard::intersect(const Box &a, const Box &b) {
  Box out;
  for (size_t d = 0; d < a.offsets.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo)
      return std::nullopt;
    out.offsets.push_back(lo);
    out.sizes.push_back(hi - lo);
  }
  return out;
}

/// Calls fn(index) for the first element of every row of a box of `sizes`
/// (index: its position in the box, the last coordinate 0); nothing for an
/// empty box.
template <typename Fn> static void forEachRow(ArrayRef<int64_t> sizes, Fn fn) {
  if (llvm::any_of(sizes, [](int64_t size) { return size <= 0; }))
    return;
  SmallVector<int64_t, 8> index(sizes.size(), 0);
  while (true) {
    fn(ArrayRef<int64_t>(index));
    int d = static_cast<int>(sizes.size()) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// The row-major position in `block` of the element at `box.offsets +
/// index` (which the block contains).
static int64_t positionIn(const Box &block, const Box &box,
                          ArrayRef<int64_t> index) {
  int64_t position = 0;
  for (size_t d = 0; d < block.sizes.size(); ++d)
    position = position * block.sizes[d] +
               (box.offsets[d] + index[d] - block.offsets[d]);
  return position;
}

/// The global row-major index of the element at `box.offsets + index`.
static int64_t globalIndex(ArrayRef<int64_t> shape, const Box &box,
                           ArrayRef<int64_t> index) {
  int64_t position = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    position = position * shape[d] + box.offsets[d] + index[d];
  return position;
}

void weft::reshard::copyBox(const Block &from, Block &to, const Box &box) {
  int64_t rowElements = box.sizes.back();
  size_t rowBytes = static_cast<size_t>(rowElements * from.elementBytes);
  forEachRow(box.sizes, [&](ArrayRef<int64_t> index) {
    int64_t source = positionIn(from.box, box, index);
    int64_t target = positionIn(to.box, box, index);
    std::memcpy(to.data.data() + target * to.elementBytes,
                from.data.data() + source * from.elementBytes, rowBytes);
    if (!to.written.empty())
      std::fill_n(to.written.begin() + target, rowElements, 1);
  });
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

/// SplitMix64's finalizer.
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The hash of element `index` in stream `stream` (0: whole values; 1 + m:
/// member m's contributions).
static uint64_t elementHash(int64_t index, uint64_t stream) {
  return mix(static_cast<uint64_t>(index) ^ mix(stream + 0x5EEDull));
}

static uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// The f16 bits of `value`, which must be 0 or a normal f16 with at most 11
/// significant bits (every value made here is).
static uint16_t halfBits(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  if ((bits & 0x7fffffff) == 0)
    return sign;
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127;
  return sign | static_cast<uint16_t>((exponent + 15) << 10) |
         static_cast<uint16_t>((bits & 0x7fffff) >> 13);
}

/// The bits of the float `value` in `dtype` (exact for the values made
/// here: bf16 keeps the top half of the f32 bits).
static uint64_t realBits(DType dtype, double value) {
  switch (dtype) {
  case DType::F64: {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
  }
  case DType::F16:
    return halfBits(static_cast<float>(value));
  case DType::BF16:
    return floatBits(static_cast<float>(value)) >> 16;
  default:
    return floatBits(static_cast<float>(value));
  }
}

/// The bits of the integer `value` in `dtype`: two's complement truncated
/// to the width (as integer sums wrap), or the float it is.
static uint64_t integerBits(DType dtype, int64_t value) {
  switch (dtype) {
  case DType::I8:
    return static_cast<uint8_t>(value);
  case DType::I32:
    return static_cast<uint32_t>(value);
  case DType::I64:
    return static_cast<uint64_t>(value);
  default:
    return realBits(dtype, static_cast<double>(value));
  }
}

/// Whole values: an integer of as many bits as the significand holds,
/// scaled by a power of two, for floats; the hash's low bits for integers.
static uint64_t wholeBits(DType dtype, int64_t index) {
  uint64_t hash = elementHash(index, 0);
  switch (dtype) {
  case DType::F32:
    return realBits(
        dtype, std::ldexp(static_cast<double>(static_cast<int64_t>(hash >> 40) -
                                              (int64_t(1) << 23)),
                          -10));
  case DType::F64:
    return realBits(
        dtype, std::ldexp(static_cast<double>(static_cast<int64_t>(hash >> 11) -
                                              (int64_t(1) << 52)),
                          -20));
  case DType::F16:
    return realBits(dtype, (static_cast<int64_t>(hash >> 53) - 1024) / 16.0);
  case DType::BF16:
    return realBits(dtype, (static_cast<int64_t>(hash >> 56) - 128) / 4.0);
  case DType::I8:
  case DType::I32:
  case DType::I64:
  case DType::Bool:
    return integerBits(dtype, static_cast<int64_t>(hash));
  }
  return 0;
}

/// Member `member`'s contribution to element `index`: -3 to 3, so that the
/// sum of up to 85 members is exact even in bf16.
static int64_t contribution(int64_t index, int64_t member) {
  return static_cast<int64_t>(
             elementHash(index, 1 + static_cast<uint64_t>(member)) % 7) -
         3;
}

uint64_t weft::reshard::expectedBits(const Values &values, int64_t index) {
  if (values.members <= 1)
    return wholeBits(values.dtype, index);
  int64_t sum = 0;
  for (int64_t member = 0; member < values.members; ++member)
    sum += contribution(index, member);
  return integerBits(values.dtype, sum);
}

void weft::reshard::fillBlock(Block &block, const Values &values,
                              int64_t member) {
  int64_t rowElements = block.box.sizes.back();
  forEachRow(block.box.sizes, [&](ArrayRef<int64_t> index) {
    int64_t global = globalIndex(values.shape, block.box, index);
    uint8_t *out = block.data.data() +
                   positionIn(block.box, block.box, index) * block.elementBytes;
    for (int64_t j = 0; j < rowElements; ++j) {
      uint64_t bits =
          values.members > 1
              ? integerBits(values.dtype, contribution(global + j, member))
              : wholeBits(values.dtype, global + j);
      std::memcpy(out + j * block.elementBytes, &bits,
                  static_cast<size_t>(block.elementBytes));
    }
  });
}

CheckResult weft::reshard::checkBlock(const Block &block,
                                      const Values &values) {
  CheckResult result;
  int64_t rowElements = block.box.sizes.back();
  forEachRow(block.box.sizes, [&](ArrayRef<int64_t> index) {
    int64_t global = globalIndex(values.shape, block.box, index);
    int64_t position = positionIn(block.box, block.box, index);
    for (int64_t j = 0; j < rowElements; ++j) {
      ++result.checked;
      uint64_t expected = expectedBits(values, global + j);
      uint64_t got = 0;
      std::memcpy(&got, block.data.data() + (position + j) * block.elementBytes,
                  static_cast<size_t>(block.elementBytes));
      bool written = block.written.empty() || block.written[position + j];
      if (written && got == expected)
        continue;
      if (result.mismatched++ == 0) {
        result.firstIndex = global + j;
        result.got = got;
        result.expected = expected;
      }
    }
  });
  return result;
}

std::string weft::reshard::formatIndex(ArrayRef<int64_t> shape, int64_t index) {
  SmallVector<int64_t, 8> coordinates(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    coordinates[d] = index % shape[d];
    index /= shape[d];
  }
  return "[" +
         join(map_range(coordinates,
                        [](int64_t c) { return std::to_string(c); }),
              ", ") +
         "]";
}
