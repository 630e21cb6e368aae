//===- weft-tensor-file-fuzzer.cpp - libFuzzer target for tensor files ----===//
//
// Feeds bytes to the runtime's tensor file readers (runtime/core: the
// TensorProto decoder in OnnxTensorFile.cpp, the .npy reader in NpyFile.cpp,
// the file layer in TensorIO.cpp). Built twice: weft-tensor-pb-fuzzer reads
// each input as a .pb file, weft-tensor-npy-fuzzer as a .npy file
// (WEFT_FUZZ_TENSOR_NPY). Beyond "no crash", a tensor the reader accepts
// must be self-consistent and survive writing and reading back in both
// formats unchanged, and reading the input from a file must agree with
// decoding it in memory. Run it through scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "Signature.h"
#include "TensorIO.h"

#include <cstring>

using namespace weft::rt;
using weft::fuzz::reportBug;

#if WEFT_FUZZ_TENSOR_NPY
static const char kTarget[] = "weft-tensor-npy-fuzzer";
static const TensorFormat kFormat = TensorFormat::Npy;
static const char kExtension[] = ".npy";
#else
static const char kTarget[] = "weft-tensor-pb-fuzzer";
static const TensorFormat kFormat = TensorFormat::OnnxPb;
static const char kExtension[] = ".pb";
#endif

static bool decode(TensorFormat format, const uint8_t *data, size_t size,
                   Tensor &out, std::string &error) {
  return format == TensorFormat::Npy ? parseNpy(data, size, out, error)
                                     : parseTensorProto(data, size, out, error);
}

/// Why `a` and `b` differ, or "" when they are equal. `withName`: compare
/// the names too (.npy files carry none).
static std::string difference(const Tensor &a, const Tensor &b, bool withName) {
  if (a.dtype != b.dtype || a.dims != b.dims)
    return formatTensorType(a.dtype, a.dims) + " became " +
           formatTensorType(b.dtype, b.dims);
  if (a.data != b.data)
    return "the data changed";
  if (withName && a.name != b.name)
    return "the name '" + printableText(a.name) + "' became '" +
           printableText(b.name) + "'";
  return "";
}

/// What every accepted tensor must satisfy: a dtype the runtime knows, data
/// of exactly the size its dims need, bools that are 0 or 1.
static void checkConsistent(const Tensor &tensor) {
  size_t elementBytes = weft_rt_dtype_size(tensor.dtype);
  if (elementBytes == 0)
    reportBug(kTarget, "accepted a tensor of unknown dtype " +
                           std::to_string(tensor.dtype));
  int64_t count = 0;
  size_t bytes = 0;
  if (!countElements(tensor.dims, elementBytes, count, bytes))
    reportBug(kTarget, "accepted dims that overflow: " +
                           formatTensorType(tensor.dtype, tensor.dims));
  if (bytes != tensor.data.size())
    reportBug(kTarget, "accepted " +
                           formatTensorType(tensor.dtype, tensor.dims) +
                           " with " + std::to_string(tensor.data.size()) +
                           " data bytes");
  if (tensor.dtype == WEFT_RT_BOOL)
    for (uint8_t byte : tensor.data)
      if (byte > 1)
        reportBug(kTarget, "accepted a bool element " + std::to_string(byte));
  // What the driver does with an accepted tensor: print and compare its
  // elements, print its name.
  double sum = 0;
  for (int64_t i = 0; i < std::min<int64_t>(count, 4096); ++i)
    sum += elementAsDouble(tensor.dtype, tensor.data.data(), i);
  (void)sum;
  (void)printableText(tensor.name);
}

/// Writes `tensor` in `format` to the scratch folder and reads it back.
static void checkFileRoundTrip(const Tensor &tensor, TensorFormat format) {
  bool npy = format == TensorFormat::Npy;
  std::string path =
      weft::fuzz::scratchDir() + (npy ? "/written.npy" : "/written.pb");
  std::string error;
  if (!writeTensorFile(path, tensor, format, error)) {
    // NumPy has no bfloat16; every other dtype must be writable.
    if (npy && tensor.dtype == WEFT_RT_BF16)
      return;
    reportBug(kTarget, "cannot write an accepted tensor: " + error);
  }
  Tensor back;
  if (!readTensorFile(path, back, error))
    reportBug(kTarget, "cannot read back a tensor it wrote: " + error);
  std::string changed = difference(tensor, back, /*withName=*/!npy);
  if (!changed.empty())
    reportBug(kTarget, std::string("written as ") + (npy ? ".npy" : ".pb") +
                           " and read back, " + changed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Tensor tensor;
  std::string error;
  bool accepted = decode(kFormat, data, size, tensor, error);
  if (!accepted && error.empty())
    reportBug(kTarget, "refused the input without a message");

  // The same bytes as a file: the file layer must add only the file name.
  std::string path = weft::fuzz::scratchDir() + "/input" + kExtension;
  weft::fuzz::writeFileOrDie(path, data, size);
  Tensor fromFile;
  std::string fileError;
  bool fileAccepted = readTensorFile(path, fromFile, fileError);
  if (fileAccepted != accepted)
    reportBug(kTarget, accepted ? "the file reader refused what the decoder "
                                  "accepted: " +
                                      fileError
                                : "the file reader accepted what the decoder "
                                  "refused: " +
                                      error);
  if (!accepted) {
    if (fileError != path + ": " + error)
      reportBug(kTarget, "the file reader's message '" + fileError +
                             "' is not the decoder's '" + error + "'");
    return 0;
  }
  std::string changed = difference(tensor, fromFile, /*withName=*/true);
  if (!changed.empty())
    reportBug(kTarget, "read from a file, " + changed);

  checkConsistent(tensor);
  checkFileRoundTrip(tensor, TensorFormat::OnnxPb);
  checkFileRoundTrip(tensor, TensorFormat::Npy);
  return 0;
}
