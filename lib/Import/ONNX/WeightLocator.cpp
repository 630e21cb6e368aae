//===- WeightLocator.cpp - Where initializer bytes live on disk ------------===//
//
// A minimal reader of the protobuf wire format (just enough to walk
// ModelProto.graph.initializer) and the validation of external-data paths.
//
//===----------------------------------------------------------------------===//

#include "WeightLocator.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace mlir::weft::onnx_import;

namespace {
/// Reads protobuf wire-format fields from a byte range. Every read is bounds
/// checked; on malformed input `ok` turns false and reading stops.
class WireReader {
public:
  WireReader(const uint8_t *begin, const uint8_t *end) : pos(begin), end(end) {}

  bool atEnd() const { return pos >= end || !ok; }
  bool isOk() const { return ok; }

  /// Reads the next field's number and wire type.
  bool readTag(uint32_t &field, uint32_t &wireType) {
    uint64_t tag;
    if (!readVarint(tag))
      return false;
    field = static_cast<uint32_t>(tag >> 3);
    wireType = static_cast<uint32_t>(tag & 7);
    return field != 0 || fail();
  }

  /// Reads a length-delimited payload.
  bool readBytes(const uint8_t *&data, uint64_t &size) {
    if (!readVarint(size))
      return false;
    if (size > static_cast<uint64_t>(end - pos))
      return fail();
    data = pos;
    pos += size;
    return true;
  }

  /// Skips a field of the given wire type.
  bool skip(uint32_t wireType) {
    uint64_t value;
    const uint8_t *data;
    switch (wireType) {
    case 0:
      return readVarint(value);
    case 1:
      return advance(8);
    case 2:
      return readBytes(data, value);
    case 5:
      return advance(4);
    default: // Groups (3, 4) are not used by ONNX.
      return fail();
    }
  }

  bool readVarint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end)
        return fail();
      uint8_t byte = *pos++;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return fail();
  }

private:
  bool advance(uint64_t n) {
    if (n > static_cast<uint64_t>(end - pos))
      return fail();
    pos += n;
    return true;
  }
  bool fail() {
    ok = false;
    return false;
  }

  const uint8_t *pos;
  const uint8_t *end;
  bool ok = true;
};
} // namespace

// Field numbers from onnx.proto.
static constexpr uint32_t kModelGraph = 7;
static constexpr uint32_t kGraphInitializer = 5;
static constexpr uint32_t kTensorFloatData = 4;
static constexpr uint32_t kTensorName = 8;
static constexpr uint32_t kTensorRawData = 9;
static constexpr uint32_t kTensorDoubleData = 10;

/// Records where the data of one serialized TensorProto lies.
static void scanTensor(const uint8_t *fileBegin, const uint8_t *begin,
                       const uint8_t *end, llvm::StringMap<FileRange> &out) {
  WireReader reader(begin, end);
  std::string name;
  std::optional<FileRange> range;
  bool ambiguous = false;
  while (!reader.atEnd()) {
    uint32_t field, wireType;
    if (!reader.readTag(field, wireType))
      return;
    bool isData = field == kTensorRawData || field == kTensorFloatData ||
                  field == kTensorDoubleData;
    if ((field == kTensorName || isData) && wireType == 2) {
      const uint8_t *data;
      uint64_t size;
      if (!reader.readBytes(data, size))
        return;
      if (field == kTensorName) {
        name.assign(reinterpret_cast<const char *>(data), size);
      } else {
        // Repeated data fields are concatenated (packed) or replaced
        // (raw_data) by the parser; neither is one contiguous range.
        ambiguous |= range.has_value();
        range = FileRange{static_cast<uint64_t>(data - fileBegin), size};
      }
      continue;
    }
    if (!reader.skip(wireType))
      return;
  }
  if (reader.isOk() && range && !ambiguous && !name.empty())
    out[name] = *range;
}

llvm::StringMap<FileRange>
mlir::weft::onnx_import::scanInitializerData(StringRef modelBytes) {
  llvm::StringMap<FileRange> out;
  auto *fileBegin = reinterpret_cast<const uint8_t *>(modelBytes.data());
  WireReader model(fileBegin, fileBegin + modelBytes.size());
  unsigned numGraphs = 0;
  while (!model.atEnd()) {
    uint32_t field, wireType;
    if (!model.readTag(field, wireType))
      break;
    if (field != kModelGraph || wireType != 2) {
      if (!model.skip(wireType))
        break;
      continue;
    }
    const uint8_t *graphData;
    uint64_t graphSize;
    if (!model.readBytes(graphData, graphSize))
      break;
    // Protobuf merges repeated occurrences of a message field; offsets are
    // then ambiguous, so give up on in-place references.
    if (++numGraphs > 1)
      return {};
    WireReader graph(graphData, graphData + graphSize);
    while (!graph.atEnd()) {
      if (!graph.readTag(field, wireType))
        break;
      if (field == kGraphInitializer && wireType == 2) {
        const uint8_t *tensorData;
        uint64_t tensorSize;
        if (!graph.readBytes(tensorData, tensorSize))
          break;
        scanTensor(fileBegin, tensorData, tensorData + tensorSize, out);
        continue;
      }
      if (!graph.skip(wireType))
        break;
    }
  }
  return out;
}

bool mlir::weft::onnx_import::resolveExternalData(
    const onnx::TensorProto &tensor, StringRef modelDir,
    uint64_t expectedBytes, ExternalLocation &out, std::string &error) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    const std::string &key = entry.key();
    if (key == "location") {
      location = entry.value();
      continue;
    }
    if (key == "offset" || key == "length") {
      uint64_t value;
      if (StringRef(entry.value()).getAsInteger(10, value)) {
        error = "external data " + key + " '" + entry.value() +
                "' is not a non-negative integer";
        return false;
      }
      (key == "offset" ? offset : length) = value;
    }
    // "checksum" and unknown keys are ignored, as ONNX does.
  }
  if (location.empty()) {
    error = "external data has no 'location'";
    return false;
  }
  if (llvm::sys::path::is_absolute(location)) {
    error = "external data location '" + location +
            "' is an absolute path; it must be relative to the model's folder";
    return false;
  }
  for (StringRef part : llvm::make_range(llvm::sys::path::begin(location),
                                         llvm::sys::path::end(location))) {
    if (part == "..") {
      error = "external data location '" + location +
              "' contains '..'; it must stay inside the model's folder";
      return false;
    }
  }

  SmallString<256> dirReal, fileReal;
  SmallString<256> joined(modelDir.empty() ? StringRef(".") : modelDir);
  llvm::sys::path::append(joined, location);
  if (std::error_code ec = llvm::sys::fs::real_path(
          modelDir.empty() ? StringRef(".") : modelDir, dirReal)) {
    error = "cannot resolve the model's folder: " + ec.message();
    return false;
  }
  if (std::error_code ec = llvm::sys::fs::real_path(joined, fileReal)) {
    error = "external data file '" + location + "' cannot be opened: " +
            ec.message();
    return false;
  }
  // After resolving links the file must still be inside the model's folder.
  StringRef dirPrefix = dirReal.str();
  if (!StringRef(fileReal).starts_with(dirPrefix) ||
      fileReal.size() <= dirPrefix.size() ||
      !llvm::sys::path::is_separator(fileReal[dirPrefix.size()])) {
    error = "external data location '" + location +
            "' resolves to '" + std::string(fileReal) +
            "', outside the model's folder";
    return false;
  }
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(fileReal, status)) {
    error = "external data file '" + location + "': " + ec.message();
    return false;
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    error = "external data location '" + location + "' is not a regular file";
    return false;
  }
  uint64_t fileSize = status.getSize();
  uint64_t begin = offset.value_or(0);
  if (begin > fileSize) {
    error = "external data offset " + std::to_string(begin) +
            " is past the end of '" + location + "' (" +
            std::to_string(fileSize) + " bytes)";
    return false;
  }
  uint64_t size = length.value_or(fileSize - begin);
  if (size > fileSize - begin) {
    error = "external data range [" + std::to_string(begin) + ", " +
            std::to_string(begin) + " + " + std::to_string(size) +
            ") is past the end of '" + location + "' (" +
            std::to_string(fileSize) + " bytes)";
    return false;
  }
  if (size != expectedBytes) {
    error = "external data in '" + location + "' has " + std::to_string(size) +
            " bytes but the tensor's shape and type need " +
            std::to_string(expectedBytes);
    return false;
  }
  out.relativePath = location;
  out.resolvedPath = std::string(fileReal);
  out.range = FileRange{begin, size};
  return true;
}

std::string mlir::weft::onnx_import::checksumHex(StringRef bytes) {
  uint64_t hash = llvm::xxh3_64bits(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(bytes.data()),
                              bytes.size()));
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format_hex_no_prefix(hash, 16);
  return out;
}
