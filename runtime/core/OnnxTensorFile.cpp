//===- OnnxTensorFile.cpp - ONNX TensorProto without protobuf -------------===//
//
// The runtime links no protobuf, so TensorProto's wire format is decoded here
// directly. Only the fields a dense numeric tensor uses are understood; every
// other known field is either skipped (doc_string) or refused with a reason.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"
#include "TensorIO.h"

#include <cstring>

using namespace weft::rt;

namespace {

enum WireType { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

/// Reads protobuf wire-format values from a byte range, never past its end.
class WireReader {
public:
  WireReader(const uint8_t *begin, const uint8_t *end)
      : cursor(begin), end(end) {}

  bool atEnd() const { return cursor == end; }

  bool readVarint(uint64_t &out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (cursor == end)
        return false;
      uint8_t byte = *cursor++;
      out |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false; // More than 10 bytes.
  }

  bool readFixed(size_t bytes, uint64_t &out) {
    if (static_cast<size_t>(end - cursor) < bytes)
      return false;
    out = 0;
    std::memcpy(&out, cursor, bytes); // Little-endian host (x86, AArch64).
    cursor += bytes;
    return true;
  }

  bool readLengthDelimited(const uint8_t *&outBegin, size_t &outSize) {
    uint64_t length = 0;
    if (!readVarint(length) || length > static_cast<uint64_t>(end - cursor))
      return false;
    outBegin = cursor;
    outSize = static_cast<size_t>(length);
    cursor += length;
    return true;
  }

  bool skip(int wireType) {
    uint64_t ignored;
    const uint8_t *begin;
    size_t size;
    switch (wireType) {
    case Varint:
      return readVarint(ignored);
    case Fixed64:
      return readFixed(8, ignored);
    case LengthDelimited:
      return readLengthDelimited(begin, size);
    case Fixed32:
      return readFixed(4, ignored);
    default:
      return false; // Groups (3, 4) are not used by ONNX; others are invalid.
    }
  }

private:
  const uint8_t *cursor;
  const uint8_t *end;
};

/// What the fields of one TensorProto said, before dtype rules apply.
struct RawFields {
  std::vector<int64_t> dims;
  int64_t dataType = 0;
  bool hasRaw = false;
  const uint8_t *raw = nullptr;
  size_t rawSize = 0;
  std::vector<float> floats;
  std::vector<int64_t> int32s; // Already truncated to int32.
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
};

} // namespace

/// ONNX's name of a TensorProto.DataType, for messages.
static const char *onnxTypeName(int64_t code) {
  static const char *names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",
      "INT8",           "UINT16",     "INT16",
      "INT32",          "INT64",      "STRING",
      "BOOL",           "FLOAT16",    "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",
      "COMPLEX128",     "BFLOAT16",   "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",          "INT4"};
  if (code < 0 || code >= static_cast<int64_t>(sizeof(names) / sizeof(*names)))
    return "unknown";
  return names[code];
}

static const char *kExternalHint =
    "keeps its data in an external file; tensor files for the driver must "
    "be self-contained (write them with onnx.numpy_helper.from_array)";

/// Reads a repeated varint field, packed (one length-delimited run) or not.
template <typename Push>
static bool readVarints(WireReader &reader, int wireType, Push push) {
  uint64_t value = 0;
  if (wireType == Varint) {
    if (!reader.readVarint(value))
      return false;
    push(value);
    return true;
  }
  const uint8_t *begin;
  size_t size;
  if (wireType != LengthDelimited || !reader.readLengthDelimited(begin, size))
    return false;
  WireReader packed(begin, begin + size);
  while (!packed.atEnd()) {
    if (!packed.readVarint(value))
      return false;
    push(value);
  }
  return true;
}

/// Reads a repeated fixed-width field (float or double), packed or not.
template <typename T>
static bool readFixedValues(WireReader &reader, int wireType, int unpackedType,
                            std::vector<T> &into) {
  uint64_t bits = 0;
  T value;
  if (wireType == unpackedType) {
    if (!reader.readFixed(sizeof(T), bits))
      return false;
    std::memcpy(&value, &bits, sizeof(T));
    into.push_back(value);
    return true;
  }
  const uint8_t *begin;
  size_t size;
  if (wireType != LengthDelimited || !reader.readLengthDelimited(begin, size) ||
      size % sizeof(T) != 0)
    return false;
  size_t count = size / sizeof(T);
  if (count == 0)
    return true;
  size_t old = into.size();
  into.resize(old + count);
  std::memcpy(into.data() + old, begin, size);
  return true;
}

static bool readFields(const uint8_t *bytes, size_t size, RawFields &fields,
                       std::string &name, std::string &error) {
  WireReader reader(bytes, bytes + size);
  while (!reader.atEnd()) {
    uint64_t tag = 0;
    if (!reader.readVarint(tag)) {
      error = "truncated or malformed protobuf (a field tag)";
      return false;
    }
    uint64_t field = tag >> 3;
    int wireType = static_cast<int>(tag & 7);
    bool ok = true;
    const uint8_t *begin = nullptr;
    size_t length = 0;
    uint64_t value = 0;
    switch (field) {
    case 1: // dims
      ok = readVarints(reader, wireType, [&](uint64_t v) {
        fields.dims.push_back(static_cast<int64_t>(v));
      });
      break;
    case 2: // data_type
      ok = wireType == Varint && reader.readVarint(value);
      fields.dataType = static_cast<int32_t>(static_cast<uint32_t>(value));
      break;
    case 3:
      error = "segmented tensors (TensorProto.segment) are not supported";
      return false;
    case 4: // float_data
      ok = readFixedValues(reader, wireType, Fixed32, fields.floats);
      break;
    case 5: // int32_data
      ok = readVarints(reader, wireType, [&](uint64_t v) {
        fields.int32s.push_back(static_cast<int32_t>(static_cast<uint32_t>(v)));
      });
      break;
    case 6:
      error = "string tensors (string_data) are not supported";
      return false;
    case 7: // int64_data
      ok = readVarints(reader, wireType, [&](uint64_t v) {
        fields.int64s.push_back(static_cast<int64_t>(v));
      });
      break;
    case 8: // name
      ok = wireType == LengthDelimited &&
           reader.readLengthDelimited(begin, length);
      if (ok)
        name.assign(reinterpret_cast<const char *>(begin), length);
      break;
    case 9: // raw_data
      ok = wireType == LengthDelimited &&
           reader.readLengthDelimited(fields.raw, fields.rawSize);
      fields.hasRaw = ok;
      break;
    case 10: // double_data
      ok = readFixedValues(reader, wireType, Fixed64, fields.doubles);
      break;
    case 11: // uint64_data
      ok = readVarints(reader, wireType,
                       [&](uint64_t v) { fields.uint64s.push_back(v); });
      break;
    case 13: // external_data
      error = std::string("the tensor ") + kExternalHint;
      return false;
    case 14: // data_location
      ok = wireType == Varint && reader.readVarint(value);
      if (ok && value != 0) {
        error = std::string("the tensor ") + kExternalHint +
                " (data_location is EXTERNAL)";
        return false;
      }
      break;
    default: // doc_string (12) and fields of later ONNX versions.
      if (field == 0) {
        error = "malformed protobuf (field number 0); is this a TensorProto?";
        return false;
      }
      ok = reader.skip(wireType);
      break;
    }
    if (!ok) {
      error = "truncated or malformed protobuf (field " +
              std::to_string(field) + ", wire type " +
              std::to_string(wireType) + "); is this a TensorProto?";
      return false;
    }
  }
  return true;
}

/// Which typed field holds values of `dtype` (ONNX's rules), as the field's
/// name.
static const char *typedFieldOf(weft_rt_dtype dtype) {
  switch (dtype) {
  case WEFT_RT_F32:
    return "float_data";
  case WEFT_RT_F64:
    return "double_data";
  case WEFT_RT_I64:
    return "int64_data";
  default:
    return "int32_data";
  }
}

/// Stores the int32_data values of a narrow dtype, checking each fits.
static bool storeInt32Values(const std::vector<int64_t> &values,
                             weft_rt_dtype dtype, uint8_t *out,
                             std::string &error) {
  int64_t low = INT32_MIN, high = INT32_MAX;
  switch (dtype) {
  case WEFT_RT_I8:
    low = -128, high = 127;
    break;
  case WEFT_RT_U8:
    low = 0, high = 255;
    break;
  case WEFT_RT_BOOL:
    low = 0, high = 1;
    break;
  case WEFT_RT_F16:
  case WEFT_RT_BF16:
    low = 0, high = 65535; // The bits, as ONNX stores them.
    break;
  default:
    break;
  }
  size_t elementBytes = weft_rt_dtype_size(dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t v = values[i];
    if (v < low || v > high) {
      error = "int32_data[" + std::to_string(i) + "] = " + std::to_string(v) +
              " is out of range for " + weft_rt_dtype_name(dtype);
      return false;
    }
    if (elementBytes == 4) {
      int32_t narrow = static_cast<int32_t>(v);
      std::memcpy(out + i * 4, &narrow, 4);
    } else if (elementBytes == 2) {
      uint16_t narrow = static_cast<uint16_t>(v);
      std::memcpy(out + i * 2, &narrow, 2);
    } else {
      out[i] = static_cast<uint8_t>(v);
    }
  }
  return true;
}

bool weft::rt::parseTensorProto(const uint8_t *bytes, size_t size, Tensor &out,
                                std::string &error) {
  out = Tensor();
  RawFields fields;
  if (!readFields(bytes, size, fields, out.name, error))
    return false;

  if (fields.dataType == 0) {
    error = "the TensorProto has no data_type";
    return false;
  }
  weft_rt_dtype dtype = static_cast<weft_rt_dtype>(fields.dataType);
  size_t elementBytes = fields.dataType > 0 && fields.dataType <= INT32_MAX
                            ? weft_rt_dtype_size(dtype)
                            : 0;
  if (elementBytes == 0) {
    error = "data_type " + std::to_string(fields.dataType) + " (" +
            onnxTypeName(fields.dataType) +
            ") is not supported; the runtime takes FLOAT, DOUBLE, FLOAT16, "
            "BFLOAT16, INT8, UINT8, INT32, INT64 and BOOL";
    return false;
  }
  out.dtype = dtype;
  out.dims = fields.dims;
  int64_t count = 0;
  size_t dataBytes = 0;
  if (!countElements(out.dims, elementBytes, count, dataBytes)) {
    error = "dims " + formatTensorType(dtype, out.dims) +
            " are negative or have more elements than fit in 64 bits";
    return false;
  }
  std::string type = formatTensorType(dtype, out.dims);

  int sources = (fields.hasRaw ? 1 : 0) + !fields.floats.empty() +
                !fields.int32s.empty() + !fields.int64s.empty() +
                !fields.doubles.empty() + !fields.uint64s.empty();
  if (sources > 1) {
    error = "the TensorProto carries values in more than one field "
            "(raw_data and a typed field, or two typed fields)";
    return false;
  }
  if (fields.hasRaw) {
    if (fields.rawSize != dataBytes) {
      error = "raw_data has " + std::to_string(fields.rawSize) + " bytes; " +
              type + " needs " + std::to_string(dataBytes);
      return false;
    }
    out.data.assign(fields.raw, fields.raw + fields.rawSize);
  } else {
    const char *expected = typedFieldOf(dtype);
    size_t given = 0;
    const char *givenField = expected;
    if (!fields.floats.empty())
      given = fields.floats.size(), givenField = "float_data";
    else if (!fields.int32s.empty())
      given = fields.int32s.size(), givenField = "int32_data";
    else if (!fields.int64s.empty())
      given = fields.int64s.size(), givenField = "int64_data";
    else if (!fields.doubles.empty())
      given = fields.doubles.size(), givenField = "double_data";
    else if (!fields.uint64s.empty())
      given = fields.uint64s.size(), givenField = "uint64_data";
    if (given && std::strcmp(givenField, expected) != 0) {
      error = std::string("a ") + onnxTypeName(fields.dataType) +
              " tensor carries its values in " + givenField +
              "; ONNX keeps them in raw_data or " + expected;
      return false;
    }
    if (given != static_cast<uint64_t>(count)) {
      error = std::string(given ? expected : "the tensor") + " has " +
              std::to_string(given) + " values; " + type + " has " +
              std::to_string(count) + " elements";
      return false;
    }
    out.data.resize(dataBytes);
    if (!fields.floats.empty())
      std::memcpy(out.data.data(), fields.floats.data(), dataBytes);
    else if (!fields.doubles.empty())
      std::memcpy(out.data.data(), fields.doubles.data(), dataBytes);
    else if (!fields.int64s.empty())
      std::memcpy(out.data.data(), fields.int64s.data(), dataBytes);
    else if (!fields.int32s.empty() &&
             !storeInt32Values(fields.int32s, dtype, out.data.data(), error))
      return false;
  }
  if (dtype == WEFT_RT_BOOL)
    for (size_t i = 0; i < out.data.size(); ++i)
      if (out.data[i] > 1) {
        error = "bool element " + std::to_string(i) + " is " +
                std::to_string(out.data[i]) + ", not 0 or 1";
        return false;
      }
  return true;
}

static void appendVarint(std::vector<uint8_t> &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<uint8_t>(value));
}

static void appendBytesField(std::vector<uint8_t> &out, uint32_t field,
                             const uint8_t *data, size_t size) {
  appendVarint(out, (field << 3) | LengthDelimited);
  appendVarint(out, size);
  out.insert(out.end(), data, data + size);
}

std::vector<uint8_t> weft::rt::serializeTensorProto(const Tensor &tensor) {
  std::vector<uint8_t> out;
  out.reserve(tensor.data.size() + tensor.name.size() + 16 +
              tensor.dims.size() * 10);
  // dims unpacked, as onnx.proto (proto2) declares them; readers take both.
  for (int64_t d : tensor.dims) {
    appendVarint(out, (1 << 3) | Varint);
    appendVarint(out, static_cast<uint64_t>(d));
  }
  appendVarint(out, (2 << 3) | Varint);
  appendVarint(out, static_cast<uint64_t>(tensor.dtype));
  if (!tensor.name.empty())
    appendBytesField(out, 8,
                     reinterpret_cast<const uint8_t *>(tensor.name.data()),
                     tensor.name.size());
  appendBytesField(out, 9, tensor.data.data(), tensor.data.size());
  return out;
}
