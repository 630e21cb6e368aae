//===- TensorIO.h - Tensor files: TensorProto and .npy ----------*- C++ -*-===//
//
// Reads and writes the tensor files the driver takes and produces. Every
// file is untrusted: malformed ones are refused with a message, never
// trusted for sizes.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_CORE_TENSORIO_H
#define WEFT_RUNTIME_CORE_TENSORIO_H

#include "weft_rt.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt {

/// A dense row-major tensor in host memory, little-endian elements.
struct Tensor {
  /// "" when the file carries no name.
  std::string name;
  weft_rt_dtype dtype = 0;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;

  int64_t numElements() const {
    return static_cast<int64_t>(data.size() /
                                std::max<size_t>(weft_rt_dtype_size(dtype), 1));
  }
};

/// File formats of tensors.
enum class TensorFormat { OnnxPb, Npy };

/// The format a path's extension names (".pb", ".npy"); false for others.
bool tensorFormatFromPath(const std::string &path, TensorFormat &out);

/// Decodes an ONNX TensorProto. `error` says what is wrong (without a file
/// name).
bool parseTensorProto(const uint8_t *bytes, size_t size, Tensor &out,
                      std::string &error);
/// Encodes `tensor` as a TensorProto with dims, data_type, name and
/// raw_data.
std::vector<uint8_t> serializeTensorProto(const Tensor &tensor);

/// Decodes a NumPy .npy file (format versions 1 to 3, C order,
/// little-endian).
bool parseNpy(const uint8_t *bytes, size_t size, Tensor &out,
              std::string &error);
/// Encodes `tensor` as a version 1.0 .npy file; false for dtypes NumPy has
/// no type for (bf16).
bool serializeNpy(const Tensor &tensor, std::vector<uint8_t> &out,
                  std::string &error);

/// Reads a .pb or .npy file (by extension). `error` names the file.
bool readTensorFile(const std::string &path, Tensor &out, std::string &error);
/// Writes `tensor` in `format`. `error` names the file.
bool writeTensorFile(const std::string &path, const Tensor &tensor,
                     TensorFormat format, std::string &error);

/// `text` from a file, safe to print in a message: control bytes and bytes
/// that are not UTF-8 become \xNN.
std::string printableText(const std::string &text);
/// Length of the valid UTF-8 sequence starting at text[i]; 0 if none.
size_t utf8SequenceLength(const std::string &text, size_t i);

/// Element `index` of `data` (of `dtype`) as a double: f16 and bf16 are
/// widened, integers converted, bool is 0 or 1.
double elementAsDouble(weft_rt_dtype dtype, const void *data, int64_t index);
/// True for f32, f64, f16, bf16.
bool isFloatDType(weft_rt_dtype dtype);
/// IEEE half and bfloat16 bits to float.
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CORE_TENSORIO_H
