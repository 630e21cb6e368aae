//===- WeightsFile.cpp - A device's weights file --------------------------===//
//
// Copies weights out of the model's files into the device's weights file,
// checking each against the checksum recorded at import.
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

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::weft;

WeightsFileLayout mlir::weft::layoutWeights(ModuleOp module,
                                            StringRef fileName) {
  WeightsFileLayout layout;
  std::string dir;
  if (auto attr = module->getAttrOfType<StringAttr>("weft.weights_dir"))
    dir = attr.str();
  std::map<std::tuple<std::string, int64_t, int64_t>, int64_t> placed;
  OpBuilder b(module.getContext());
  module.walk([&](WeightOp weight) {
    SmallString<256> source(weight.getFile());
    if (!dir.empty() && !llvm::sys::path::is_absolute(source)) {
      source = dir;
      llvm::sys::path::append(source, weight.getFile());
    }
    auto key = std::make_tuple(source.str().str(),
                               static_cast<int64_t>(weight.getOffset()),
                               static_cast<int64_t>(weight.getSize()));
    auto [it, inserted] = placed.try_emplace(key, layout.bytes);
    if (inserted) {
      layout.copies.push_back({source.str().str(),
                               static_cast<int64_t>(weight.getOffset()),
                               static_cast<int64_t>(weight.getSize()),
                               weight.getChecksum().str(), layout.bytes});
      layout.bytes = alignTo64(layout.bytes + weight.getSize());
    }
    weight.setFileAttr(b.getStringAttr(fileName));
    weight.setOffsetAttr(b.getI64IntegerAttr(it->second));
  });
  module->removeAttr("weft.weights_dir");
  return layout;
}

LogicalResult mlir::weft::writeWeightsFile(const WeightsFileLayout &layout,
                                           StringRef path, Location loc,
                                           std::string &outSha256) {
  SmallString<256> temp(path);
  temp += ".partial";
  std::error_code ec;
  {
    llvm::raw_fd_ostream os(temp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return emitError(loc) << "cannot write " << temp << ": " << ec.message();
    llvm::SHA256 sha;
    int64_t written = 0;
    auto pad = [&](int64_t to) {
      static const char zeros[64] = {};
      while (written < to) {
        int64_t n = std::min<int64_t>(64, to - written);
        os.write(zeros, n);
        sha.update(
            ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(zeros), n));
        written += n;
      }
    };
    std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
    for (const WeightCopy &copy : layout.copies) {
      auto &file = files[copy.sourcePath];
      if (!file) {
        auto buffer =
            llvm::MemoryBuffer::getFile(copy.sourcePath, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false);
        if (!buffer) {
          os.close();
          llvm::sys::fs::remove(temp);
          return emitError(loc)
                 << "cannot read weights from " << copy.sourcePath << ": "
                 << buffer.getError().message();
        }
        file = std::move(*buffer);
      }
      StringRef all = file->getBuffer();
      if (copy.sourceOffset < 0 || copy.size < 0 ||
          static_cast<uint64_t>(copy.sourceOffset + copy.size) > all.size()) {
        os.close();
        llvm::sys::fs::remove(temp);
        return emitError(loc)
               << copy.sourcePath << " is shorter than the model says: a "
               << "weight at offset " << copy.sourceOffset << " of "
               << copy.size << " bytes is past its end (" << all.size()
               << " bytes); was the file changed after import?";
      }
      StringRef bytes = all.substr(copy.sourceOffset, copy.size);
      std::string checksum;
      llvm::raw_string_ostream cs(checksum);
      cs << llvm::format_hex_no_prefix(
          llvm::xxh3_64bits(ArrayRef<uint8_t>(
              reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size())),
          16);
      if (checksum != copy.checksum) {
        os.close();
        llvm::sys::fs::remove(temp);
        return emitError(loc)
               << "the weight at offset " << copy.sourceOffset << " of "
               << copy.sourcePath << " has checksum " << checksum << ", not "
               << copy.checksum << " as at import; was the file changed?";
      }
      pad(copy.offset);
      os.write(bytes.data(), bytes.size());
      sha.update(ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
      written += bytes.size();
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
