//===- TensorConversion.cpp - ONNX data types and tensors to MLIR ---------===//
//
// Maps ONNX element types to MLIR types and TensorProto contents (raw_data or
// the typed repeated fields) to dense attributes.
//
//===----------------------------------------------------------------------===//

#include "NodeImporter.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cstring>

using namespace mlir;
using namespace mlir::weft;
using namespace mlir::weft::onnx_import;

Type mlir::weft::onnx_import::convertOnnxDataType(MLIRContext *context,
                                                  int32_t dataType) {
  Builder b(context);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  default:
    return nullptr;
  }
}

StringRef mlir::weft::onnx_import::getOnnxDataTypeName(int32_t dataType) {
  if (onnx::TensorProto::DataType_IsValid(dataType)) {
    // The generated name table outlives every caller.
    const std::string &name = onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(dataType));
    return name;
  }
  return "unknown data type";
}

/// Bytes per element as ONNX stores them in raw_data (bool: one byte).
static int64_t getStorageBytes(Type elementType) {
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

/// Appends `count` little-endian values of `bytesPerElement` bytes each,
/// truncating wider integers from a typed field.
template <typename T>
static void appendTruncated(std::vector<char> &out, const T &values,
                            int64_t bytesPerElement) {
  for (auto v : values) {
    uint64_t bits;
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(v)>>) {
      if (sizeof(v) == 4) {
        float f = static_cast<float>(v);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u;
      } else {
        double d = static_cast<double>(v);
        std::memcpy(&bits, &d, 8);
      }
    } else {
      bits = static_cast<uint64_t>(v);
    }
    for (int64_t i = 0; i < bytesPerElement; ++i)
      out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
}

FailureOr<DenseElementsAttr> mlir::weft::onnx_import::convertTensorProto(
    MLIRContext *context, const onnx::TensorProto &tensor,
    llvm::function_ref<InFlightDiagnostic()> emitError) {
  Type elementType = convertOnnxDataType(context, tensor.data_type());
  if (!elementType)
    return emitError() << "tensor '" << tensor.name() << "' has data type "
                       << getOnnxDataTypeName(tensor.data_type())
                       << ", which weft does not support (supported: FLOAT, "
                          "FLOAT16, BFLOAT16, DOUBLE, BOOL, INT8, UINT8, "
                          "INT32, INT64)";
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return emitError() << "tensor '" << tensor.name()
                       << "' stores its data externally, which is not "
                          "allowed here";
  SmallVector<int64_t> shape;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError() << "tensor '" << tensor.name()
                         << "' has negative dimension " << d;
    if (d != 0 && numElements > (int64_t(1) << 40) / d)
      return emitError() << "tensor '" << tensor.name()
                         << "' is too large to hold in the IR";
    numElements *= d;
    shape.push_back(d);
  }
  auto type = RankedTensorType::get(shape, elementType);
  int64_t bytesPerElement = getStorageBytes(elementType);
  int64_t expectedBytes = numElements * bytesPerElement;

  std::vector<char> bytes;
  auto checkCount = [&](int64_t got) -> LogicalResult {
    if (got == numElements)
      return success();
    return emitError() << "tensor '" << tensor.name() << "' of shape "
                       << formatShape(shape) << " holds " << got
                       << " values, expected " << numElements;
  };
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (static_cast<int64_t>(raw.size()) != expectedBytes)
      return emitError() << "tensor '" << tensor.name() << "' has "
                         << raw.size() << " bytes of raw data, expected "
                         << expectedBytes << " for " << type;
    bytes.assign(raw.begin(), raw.end());
  } else {
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (failed(checkCount(tensor.float_data_size())))
        return failure();
      appendTruncated(bytes, tensor.float_data(), 4);
      break;
    case onnx::TensorProto::DOUBLE:
      if (failed(checkCount(tensor.double_data_size())))
        return failure();
      appendTruncated(bytes, tensor.double_data(), 8);
      break;
    case onnx::TensorProto::INT64:
      if (failed(checkCount(tensor.int64_data_size())))
        return failure();
      appendTruncated(bytes, tensor.int64_data(), 8);
      break;
    default:
      // INT32, INT8, UINT8, BOOL, FLOAT16 and BFLOAT16 (as bit patterns) all
      // live in int32_data.
      if (failed(checkCount(tensor.int32_data_size())))
        return failure();
      appendTruncated(bytes, tensor.int32_data(), bytesPerElement);
      break;
    }
  }

  if (elementType.isInteger(1)) {
    SmallVector<bool> values;
    values.reserve(numElements);
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  if (numElements == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>{});
  bool detectedSplat = false;
  ArrayRef<char> buffer(bytes.data(), bytes.size());
  if (!DenseElementsAttr::isValidRawBuffer(type, buffer, detectedSplat))
    return emitError() << "tensor '" << tensor.name()
                       << "' has data that does not match " << type;
  return DenseElementsAttr::getFromRawBuffer(type, buffer);
}
