//===- TensorIO.cpp - Reading and writing tensor files --------------------===//
//
// The file-level half of tensor I/O: picks the format by extension, maps the
// file, and prefixes every decoding error with the file's name. Also the
// element conversions the driver prints and compares with.
//
//===----------------------------------------------------------------------===//

#include "TensorIO.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace weft::rt;

static bool endsWith(const std::string &text, const char *suffix) {
  size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

bool weft::rt::tensorFormatFromPath(const std::string &path,
                                    TensorFormat &out) {
  if (endsWith(path, ".pb")) {
    out = TensorFormat::OnnxPb;
    return true;
  }
  if (endsWith(path, ".npy")) {
    out = TensorFormat::Npy;
    return true;
  }
  return false;
}

namespace {

/// A file mapped read-only for the duration of one read.
class MappedFile {
public:
  ~MappedFile() {
    if (data && size)
      munmap(data, size);
  }
  bool open(const std::string &path, std::string &error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = std::strerror(errno);
      return false;
    }
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      error = "not a regular file";
      ::close(fd);
      return false;
    }
    size = static_cast<size_t>(info.st_size);
    if (size > 0) {
      data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        data = nullptr;
        error = std::string("cannot map it: ") + std::strerror(errno);
        ::close(fd);
        return false;
      }
    }
    ::close(fd);
    return true;
  }
  const uint8_t *bytes() const {
    static const uint8_t empty = 0;
    return data ? static_cast<const uint8_t *>(data) : &empty;
  }
  size_t size = 0;

private:
  void *data = nullptr;
};

} // namespace

bool weft::rt::readTensorFile(const std::string &path, Tensor &out,
                              std::string &error) {
  TensorFormat format;
  if (!tensorFormatFromPath(path, format)) {
    error = path + ": unknown tensor file type (expected .pb or .npy)";
    return false;
  }
  MappedFile file;
  std::string why;
  if (!file.open(path, why)) {
    error = path + ": cannot read: " + why;
    return false;
  }
  bool ok = format == TensorFormat::OnnxPb
                ? parseTensorProto(file.bytes(), file.size, out, why)
                : parseNpy(file.bytes(), file.size, out, why);
  if (!ok) {
    error = path + ": " + why;
    return false;
  }
  return true;
}

bool weft::rt::writeTensorFile(const std::string &path, const Tensor &tensor,
                               TensorFormat format, std::string &error) {
  std::vector<uint8_t> bytes;
  if (format == TensorFormat::OnnxPb) {
    bytes = serializeTensorProto(tensor);
  } else {
    std::string why;
    if (!serializeNpy(tensor, bytes, why)) {
      error = path + ": " + why;
      return false;
    }
  }
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int savedErrno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    error = path + ": cannot write: " + std::strerror(savedErrno);
    return false;
  }
  return true;
}

size_t weft::rt::utf8SequenceLength(const std::string &text, size_t i) {
  unsigned char c = text[i];
  size_t length = c >= 0xf0 && c <= 0xf4  ? 4
                  : c >= 0xe0             ? 3
                  : c >= 0xc2 && c < 0xe0 ? 2
                                          : 0;
  if (length == 0 || i + length > text.size())
    return 0;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80)
      return 0;
  // No overlong forms, surrogates or code points past U+10FFFF.
  unsigned char next = text[i + 1];
  if ((c == 0xe0 && next < 0xa0) || (c == 0xed && next >= 0xa0) ||
      (c == 0xf0 && next < 0x90) || (c == 0xf4 && next >= 0x90))
    return 0;
  return length;
}

std::string weft::rt::printableText(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    if (size_t length = c >= 0x80 ? utf8SequenceLength(text, i) : 0) {
      out.append(text, i, length);
      i += length - 1;
      continue;
    }
    char buffer[8];
    std::snprintf(buffer, sizeof(buffer), "\\x%02x", c);
    out += buffer;
  }
  return out;
}

float weft::rt::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits >> 15) << 31;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: a normal float once shifted into place.
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  float result;
  std::memcpy(&result, &out, sizeof(result));
  return result;
}

float weft::rt::bfloat16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &out, sizeof(result));
  return result;
}

bool weft::rt::isFloatDType(weft_rt_dtype dtype) {
  return dtype == WEFT_RT_F32 || dtype == WEFT_RT_F64 || dtype == WEFT_RT_F16 ||
         dtype == WEFT_RT_BF16;
}

template <typename T> static T loadElement(const void *data, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t *>(data) + index * sizeof(T),
              sizeof(T));
  return value;
}

double weft::rt::elementAsDouble(weft_rt_dtype dtype, const void *data,
                                 int64_t index) {
  switch (dtype) {
  case WEFT_RT_F32:
    return loadElement<float>(data, index);
  case WEFT_RT_F64:
    return loadElement<double>(data, index);
  case WEFT_RT_F16:
    return halfToFloat(loadElement<uint16_t>(data, index));
  case WEFT_RT_BF16:
    return bfloat16ToFloat(loadElement<uint16_t>(data, index));
  case WEFT_RT_I8:
    return loadElement<int8_t>(data, index);
  case WEFT_RT_U8:
  case WEFT_RT_BOOL:
    return loadElement<uint8_t>(data, index);
  case WEFT_RT_I32:
    return loadElement<int32_t>(data, index);
  case WEFT_RT_I64:
    return static_cast<double>(loadElement<int64_t>(data, index));
  default:
    return 0.0;
  }
}
