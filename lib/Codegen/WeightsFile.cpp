//===- WeightsFile.cpp - A device's weights file --------------------------===//
//
// Copies weights (or a device's blocks of them) out of the model's files into
// the device's weights file, checking each stored tensor against the checksum
// recorded at import.
//
//===----------------------------------------------------------------------===//

#include "weft/Codegen/WeightsFile.h"
#include "weft/Codegen/ProgramABI.h"
#include "weft/WeftOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

int64_t WeightCopy::bytes() const {
  if (!isBlock())
    return size;
  return product(blockShape) * elementBytes;
}

WeightsFileLayout mlir::weft::layoutWeights(ModuleOp module,
                                            StringRef fileName) {
  WeightsFileLayout layout;
  std::string dir;
  if (auto attr = module->getAttrOfType<StringAttr>("weft.weights_dir"))
    dir = attr.str();
  // (source, offset, size, block offsets, block shape, permutation) ->
  // offset in the file.
  using Key = std::tuple<std::string, int64_t, int64_t, std::vector<int64_t>,
                         std::vector<int64_t>, std::vector<int64_t>>;
  std::map<Key, int64_t> placed;
  OpBuilder b(module.getContext());
  module.walk([&](WeightOp weight) {
    SmallString<256> source(weight.getFile());
    if (!dir.empty() && !llvm::sys::path::is_absolute(source)) {
      source = dir;
      llvm::sys::path::append(source, weight.getFile());
    }
    RankedTensorType type = weight.getType();
    WeightCopy copy;
    copy.name = weight.getName().str();
    copy.sourcePath = source.str().str();
    copy.sourceOffset = static_cast<int64_t>(weight.getOffset());
    copy.size = static_cast<int64_t>(weight.getSize());
    copy.checksum = weight.getChecksum().str();
    // A block that is the whole stored tensor is a plain weight.
    std::optional<ArrayRef<int64_t>> full = weight.getFullShape();
    SmallVector<int64_t> unpermuted = weight.getUnpermutedShape();
    if (full && weight.getBlockOffsets() &&
        *full != ArrayRef<int64_t>(unpermuted)) {
      copy.fullShape.assign(full->begin(), full->end());
      copy.blockOffsets.assign(weight.getBlockOffsets()->begin(),
                               weight.getBlockOffsets()->end());
      copy.blockShape.assign(unpermuted.begin(), unpermuted.end());
      copy.elementBytes = getStorageBytes(type.getElementType());
    }
    if (std::optional<ArrayRef<int64_t>> perm = weight.getPerm()) {
      copy.perm.assign(perm->begin(), perm->end());
      copy.unpermutedShape.assign(unpermuted.begin(), unpermuted.end());
      copy.elementBytes = getStorageBytes(type.getElementType());
    }
    Key key{copy.sourcePath, copy.sourceOffset, copy.size, copy.blockOffsets,
            copy.blockShape, copy.perm};
    auto [it, inserted] = placed.try_emplace(key, layout.bytes);
    if (inserted) {
      copy.offset = layout.bytes;
      layout.bytes = alignTo64(layout.bytes + copy.bytes());
      layout.copies.push_back(copy);
    }
    // The op now reads its bytes (only its block) from the device's file.
    weight.setFileAttr(b.getStringAttr(fileName));
    weight.setOffsetAttr(b.getI64IntegerAttr(it->second));
    if (weight.getFullShape() || weight.getBlockOffsets() ||
        weight.getPerm()) {
      weight.setSizeAttr(b.getI64IntegerAttr(copy.bytes()));
      weight.removeFullShapeAttr();
      weight.removeBlockOffsetsAttr();
      weight.removePermAttr();
    }
  });
  module->removeAttr("weft.weights_dir");
  return layout;
}

/// Checks a block copy's shapes (they come from verified ops, but the
/// layout is a public struct).
static LogicalResult checkBlock(const WeightCopy &copy, Location loc) {
  size_t rank = copy.fullShape.size();
  bool ok = copy.blockOffsets.size() == rank &&
            copy.blockShape.size() == rank && copy.elementBytes > 0 &&
            product(copy.fullShape) * copy.elementBytes == copy.size;
  for (size_t i = 0; ok && i < rank; ++i)
    ok = copy.blockOffsets[i] >= 0 && copy.blockShape[i] >= 0 &&
         copy.blockOffsets[i] + copy.blockShape[i] <= copy.fullShape[i];
  if (ok)
    return success();
  return emitError(loc) << "weight '" << copy.name
                        << "': the block to copy does not fit its stored "
                           "tensor of "
                        << copy.size << " bytes";
}

/// Checks a permuted copy's permutation and shape against its bytes.
static LogicalResult checkPermutation(const WeightCopy &copy, Location loc) {
  const size_t rank = copy.perm.size();
  std::vector<bool> seen(rank, false);
  bool ok = copy.unpermutedShape.size() == rank && copy.elementBytes > 0 &&
            product(copy.unpermutedShape) * copy.elementBytes == copy.bytes();
  for (int64_t d : copy.perm) {
    ok = ok && d >= 0 && static_cast<size_t>(d) < rank && !seen[d];
    if (ok)
      seen[d] = true;
  }
  if (ok)
    return success();
  return emitError(loc) << "weight '" << copy.name
                        << "': its permutation does not fit its "
                        << copy.bytes() << " bytes";
}

/// Calls `write` with the contiguous runs of the block, in row-major order.
static void forEachBlockRun(const WeightCopy &copy, StringRef stored,
                            function_ref<void(StringRef)> write) {
  ArrayRef<int64_t> full = copy.fullShape, block = copy.blockShape,
                    offsets = copy.blockOffsets;
  if (product(block) == 0)
    return;
  int64_t rank = full.size();
  // Element strides of the stored tensor.
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * full[i + 1];
  // Trailing dimensions the block spans whole join the innermost run.
  int64_t runDim = rank - 1;
  while (runDim > 0 && block[runDim] == full[runDim])
    --runDim;
  int64_t runBytes = block[runDim] * strides[runDim] * copy.elementBytes;
  // An odometer over the dimensions before runDim.
  SmallVector<int64_t> index(runDim, 0);
  while (true) {
    int64_t element = offsets[runDim] * strides[runDim];
    for (int64_t i = 0; i < runDim; ++i)
      element += (offsets[i] + index[i]) * strides[i];
    write(stored.substr(element * copy.elementBytes, runBytes));
    int64_t i = runDim - 1;
    while (i >= 0 && ++index[i] == block[i])
      index[i--] = 0;
    if (i < 0)
      return;
  }
}

/// The elements of `bytes` (row-major, copy.unpermutedShape) with their
/// dimensions permuted by copy.perm, as weft.transpose would. The innermost
/// permuted dimension is a strided run, copied in a tight loop (MobileNetV2's
/// 3.5 million weights permute in a few milliseconds).
static std::string permuteElements(const WeightCopy &copy, StringRef bytes) {
  ArrayRef<int64_t> shape = copy.unpermutedShape, perm = copy.perm;
  const int64_t rank = shape.size(), width = copy.elementBytes;
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  SmallVector<int64_t> permutedShape, permutedStrides;
  for (int64_t d : perm) {
    permutedShape.push_back(shape[d]);
    permutedStrides.push_back(strides[d]);
  }
  std::string out(bytes.size(), '\0');
  if (product(shape) == 0 || rank == 0) {
    out = bytes.str();
    return out;
  }
  const int64_t run = permutedShape[rank - 1];
  const int64_t runStride = permutedStrides[rank - 1] * width;
  char *dst = out.data();
  // An odometer over the permuted dimensions before the last.
  SmallVector<int64_t> index(rank - 1, 0);
  while (true) {
    int64_t element = 0;
    for (int64_t i = 0; i + 1 < rank; ++i)
      element += index[i] * permutedStrides[i];
    const char *src = bytes.data() + element * width;
    for (int64_t j = 0; j < run; ++j, dst += width, src += runStride)
      std::memcpy(dst, src, width);
    int64_t i = rank - 2;
    while (i >= 0 && ++index[i] == permutedShape[i])
      index[i--] = 0;
    if (i < 0)
      return out;
  }
}

LogicalResult mlir::weft::writeWeightsFile(const WeightsFileLayout &layout,
                                           StringRef path, Location loc,
                                           std::string &outSha256,
                                           WeightSources *sources) {
  SmallString<256> temp(path);
  temp += ".partial";
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(temp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc) << "cannot write " << temp << ": " << ec.message();
    auto abandon = [&]() {
      os.close();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return failure();
    };
    llvm::SHA256 sha;
    int64_t written = 0;
    auto emit = [&](StringRef bytes) {
      os.write(bytes.data(), bytes.size());
      sha.update(ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
      written += bytes.size();
    };
    auto pad = [&](int64_t to) {
      static const char zeros[64] = {};
      while (written < to)
        emit(StringRef(zeros, std::min<int64_t>(64, to - written)));
    };
    // Stored tensors whose checksum was already verified (several blocks of
    // one tensor, or of several devices' files, are checked once).
    WeightSources local;
    if (!sources)
      sources = &local;
    auto &files = sources->files;
    auto &verified = sources->verified;
    for (const WeightCopy &copy : layout.copies) {
      if (copy.isBlock() && failed(checkBlock(copy, loc)))
        return abandon();
      if (!copy.perm.empty() && failed(checkPermutation(copy, loc)))
        return abandon();
      if (copy.offset < written || copy.offset + copy.bytes() > layout.bytes) {
        emitError(loc) << "weight '" << copy.name << "' is laid out at "
                       << copy.offset << ", overlapping the previous one or "
                       << "past the file's " << layout.bytes << " bytes";
        return abandon();
      }
      if (copy.sourcePath.empty()) {
        pad(copy.offset);
        emit(copy.contents);
        continue;
      }
      auto &file = files[copy.sourcePath];
      if (!file) {
        auto buffer =
            llvm::MemoryBuffer::getFile(copy.sourcePath, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false);
        if (!buffer) {
          emitError(loc) << "cannot read weight '" << copy.name << "' from "
                         << copy.sourcePath << ": "
                         << buffer.getError().message();
          return abandon();
        }
        file = std::move(*buffer);
      }
      StringRef all = file->getBuffer();
      if (copy.sourceOffset < 0 || copy.size < 0 ||
          static_cast<uint64_t>(copy.sourceOffset + copy.size) > all.size()) {
        emitError(loc) << copy.sourcePath
                       << " is shorter than the model says: weight '"
                       << copy.name << "' at offset " << copy.sourceOffset
                       << " of " << copy.size << " bytes is past its end ("
                       << all.size() << " bytes); was the file changed after "
                       << "import?";
        return abandon();
      }
      StringRef stored = all.substr(copy.sourceOffset, copy.size);
      if (verified.insert({copy.sourcePath, copy.sourceOffset, copy.size})
              .second) {
        std::string checksum;
        llvm::raw_string_ostream cs(checksum);
        cs << llvm::format_hex_no_prefix(
            llvm::xxh3_64bits(ArrayRef<uint8_t>(
                reinterpret_cast<const uint8_t *>(stored.data()),
                stored.size())),
            16);
        if (checksum != copy.checksum) {
          emitError(loc) << "weight '" << copy.name << "' at offset "
                         << copy.sourceOffset << " of " << copy.sourcePath
                         << " has checksum " << checksum << ", not "
                         << copy.checksum << " as at import; was the file "
                         << "changed?";
          return abandon();
        }
      }
      pad(copy.offset);
      if (!copy.perm.empty()) {
        std::string unpermuted;
        if (copy.isBlock())
          forEachBlockRun(copy, stored,
                          [&](StringRef run) { unpermuted += run.str(); });
        else
          unpermuted = stored.str();
        emit(permuteElements(copy, unpermuted));
      } else if (copy.isBlock()) {
        forEachBlockRun(copy, stored, emit);
      } else {
        emit(stored);
      }
    }
    pad(layout.bytes);
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return emitError(loc) << "writing " << temp << " failed";
    }
    std::array<uint8_t, 32> digest = sha.final();
    outSha256 = llvm::toHex(digest, /*LowerCase=*/true);
  }
  if ((ec = llvm::sys::fs::rename(temp, path)))
    return emitError(loc) << "cannot rename " << temp << " to " << path << ": "
                          << ec.message();
  return success();
}
