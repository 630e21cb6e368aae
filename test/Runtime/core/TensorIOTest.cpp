//===- TensorIOTest.cpp - Tests of .pb and .npy tensor files --------------===//
//
// Round trips of every dtype, the protobuf encodings ONNX writers use
// (packed and unpacked, typed fields), and malformed files of each kind,
// which must be refused with a reason rather than read past their end.
//
//===----------------------------------------------------------------------===//

#include "TensorIO.h"
#include "TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace weft::rt;
using weft::rt::test::ScratchDir;

namespace {

/// Builds protobuf wire-format bytes field by field.
struct Proto {
  std::vector<uint8_t> bytes;

  Proto &raw(std::initializer_list<uint8_t> data) {
    bytes.insert(bytes.end(), data);
    return *this;
  }
  void varint(uint64_t value) {
    while (value >= 0x80) {
      bytes.push_back(static_cast<uint8_t>(value | 0x80));
      value >>= 7;
    }
    bytes.push_back(static_cast<uint8_t>(value));
  }
  Proto &field(uint32_t number, uint64_t value) {
    varint(number << 3);
    varint(value);
    return *this;
  }
  Proto &blob(uint32_t number, const void *data, size_t size) {
    varint((number << 3) | 2);
    varint(size);
    const uint8_t *p = static_cast<const uint8_t *>(data);
    bytes.insert(bytes.end(), p, p + size);
    return *this;
  }
  Proto &text(uint32_t number, const std::string &s) {
    return blob(number, s.data(), s.size());
  }
  Proto &packedVarints(uint32_t number, std::vector<uint64_t> values) {
    Proto inner;
    for (uint64_t v : values)
      inner.varint(v);
    return blob(number, inner.bytes.data(), inner.bytes.size());
  }
  Proto &fixed64(uint32_t number, uint64_t value) {
    varint((number << 3) | 1);
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }
  Proto &fixed32(uint32_t number, float value) {
    varint((number << 3) | 5);
    uint8_t b[4];
    std::memcpy(b, &value, 4);
    bytes.insert(bytes.end(), b, b + 4);
    return *this;
  }
};

template <typename T> std::vector<uint8_t> bytesOf(std::vector<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty())
    std::memcpy(out.data(), values.data(), out.size());
  return out;
}

Tensor makeTensor(weft_rt_dtype dtype, std::vector<int64_t> dims,
                  std::vector<uint8_t> data, std::string name = "t") {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = std::move(data);
  return t;
}

std::string parseError(const Proto &proto) {
  Tensor t;
  std::string error;
  EXPECT_FALSE(
      parseTensorProto(proto.bytes.data(), proto.bytes.size(), t, error));
  return error;
}

Tensor parseOk(const Proto &proto) {
  Tensor t;
  std::string error;
  EXPECT_TRUE(
      parseTensorProto(proto.bytes.data(), proto.bytes.size(), t, error))
      << error;
  return t;
}

/// Every dtype with a few bytes of data, for round trips.
std::vector<Tensor> sampleTensors() {
  return {
      makeTensor(WEFT_RT_F32, {2, 2}, bytesOf<float>({1.5f, -2, NAN, 0})),
      makeTensor(WEFT_RT_F64, {3}, bytesOf<double>({1e300, -0.0, 3})),
      makeTensor(WEFT_RT_F16, {2}, bytesOf<uint16_t>({0x3c00, 0xc000})),
      makeTensor(WEFT_RT_BF16, {1, 1}, bytesOf<uint16_t>({0x3f80})),
      makeTensor(WEFT_RT_I8, {3}, bytesOf<int8_t>({-128, 0, 127})),
      makeTensor(WEFT_RT_U8, {2}, bytesOf<uint8_t>({0, 255})),
      makeTensor(WEFT_RT_I32, {2}, bytesOf<int32_t>({INT32_MIN, 7})),
      makeTensor(WEFT_RT_I64, {}, bytesOf<int64_t>({INT64_MAX})),
      makeTensor(WEFT_RT_BOOL, {4}, bytesOf<uint8_t>({1, 0, 0, 1})),
      makeTensor(WEFT_RT_F32, {0, 3}, {}),
  };
}

TEST(TensorProtoTest, RoundTripsEveryDType) {
  for (const Tensor &tensor : sampleTensors()) {
    std::vector<uint8_t> bytes = serializeTensorProto(tensor);
    Tensor back;
    std::string error;
    ASSERT_TRUE(parseTensorProto(bytes.data(), bytes.size(), back, error))
        << weft_rt_dtype_name(tensor.dtype) << ": " << error;
    EXPECT_EQ(back.name, tensor.name);
    EXPECT_EQ(back.dtype, tensor.dtype);
    EXPECT_EQ(back.dims, tensor.dims);
    EXPECT_EQ(back.data, tensor.data);
  }
}

TEST(TensorProtoTest, ReadsPackedAndUnpackedDims) {
  float values[6] = {1, 2, 3, 4, 5, 6};
  Tensor packed = parseOk(Proto()
                              .packedVarints(1, {2, 3})
                              .field(2, WEFT_RT_F32)
                              .blob(9, values, sizeof(values)));
  EXPECT_EQ(packed.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(packed.name.empty());
  Tensor unpacked = parseOk(Proto()
                                .blob(9, values, sizeof(values))
                                .field(1, 2)
                                .field(1, 3)
                                .field(2, WEFT_RT_F32)
                                .text(8, "x"));
  EXPECT_EQ(unpacked.dims, packed.dims);
  EXPECT_EQ(unpacked.data, packed.data);
  EXPECT_EQ(unpacked.name, "x");
}

TEST(TensorProtoTest, ReadsTypedFields) {
  // float_data, packed and unpacked.
  Tensor f = parseOk(Proto()
                         .field(1, 3)
                         .field(2, WEFT_RT_F32)
                         .fixed32(4, 1.5f)
                         .blob(4, "\0\0\0\x40\0\0\x80\x3f", 8));
  EXPECT_EQ(f.data, bytesOf<float>({1.5f, 2.0f, 1.0f}));
  // int64_data with a negative value (10-byte varint).
  Tensor i =
      parseOk(Proto()
                  .field(1, 2)
                  .field(2, WEFT_RT_I64)
                  .packedVarints(7, {static_cast<uint64_t>(-5), 1ull << 40}));
  EXPECT_EQ(i.data, bytesOf<int64_t>({-5, 1LL << 40}));
  // double_data.
  double d[2] = {0.25, -8};
  Tensor dd =
      parseOk(Proto().field(1, 2).field(2, WEFT_RT_F64).blob(10, d, sizeof(d)));
  EXPECT_EQ(dd.data, bytesOf<double>({0.25, -8}));
  // int32_data carries int8, bool, float16 and bfloat16 values.
  Tensor i8 = parseOk(Proto()
                          .field(1, 2)
                          .field(2, WEFT_RT_I8)
                          .packedVarints(5, {static_cast<uint64_t>(-3), 100}));
  EXPECT_EQ(i8.data, bytesOf<int8_t>({-3, 100}));
  Tensor b = parseOk(
      Proto().field(1, 3).field(2, WEFT_RT_BOOL).packedVarints(5, {1, 0, 1}));
  EXPECT_EQ(b.data, bytesOf<uint8_t>({1, 0, 1}));
  Tensor h =
      parseOk(Proto().field(2, WEFT_RT_F16).field(5, 0x3c00)); // A scalar 1.0.
  EXPECT_EQ(h.data, bytesOf<uint16_t>({0x3c00}));
  Tensor i32 = parseOk(Proto()
                           .field(1, 1)
                           .field(2, WEFT_RT_I32)
                           .field(5, static_cast<uint64_t>(-7)));
  EXPECT_EQ(i32.data, bytesOf<int32_t>({-7}));
}

TEST(TensorProtoTest, SkipsUnknownAndDocFields) {
  float v = 3;
  Tensor t = parseOk(Proto()
                         .text(12, "doc")
                         .field(2, WEFT_RT_F32)
                         .field(99, 5) // A later field.
                         .fixed64(100, 0x0807060504030201ull)
                         .blob(9, &v, 4));
  EXPECT_TRUE(t.dims.empty());
  EXPECT_EQ(t.data, bytesOf<float>({3}));
}

TEST(TensorProtoTest, RefusesMalformedTensors) {
  float six[6] = {};
  struct Case {
    Proto proto;
    const char *message;
  } cases[] = {
      {Proto().field(1, 2).blob(9, six, 8), "no data_type"},
      {Proto().field(2, 8).text(6, "s"), "string tensors"},
      {Proto().field(2, 4).blob(9, six, 2), "data_type 4 (UINT16) is not "
                                            "supported"},
      {Proto().field(2, 13), "data_type 13 (UINT64) is not supported"},
      {Proto().field(2, 1000), "data_type 1000 (unknown)"},
      {Proto().field(1, 2).field(1, 4).field(2, 1).blob(9, six, 24),
       "raw_data has 24 bytes; f32[2,4] needs 32"},
      {Proto().field(1, 1ull << 40).field(1, 1ull << 40).field(2, 1),
       "more elements than fit in 64 bits"},
      {Proto().field(1, static_cast<uint64_t>(-2)).field(2, 1), "are negative"},
      {Proto().field(1, 1ull << 50).field(2, 1).blob(9, six, 4),
       "raw_data has 4 bytes; f32[1125899906842624] needs 4503599627370496"},
      {Proto().field(1, 2).field(2, 1), "the tensor has 0 values; f32[2] has "
                                        "2 elements"},
      {Proto().field(1, 2).field(2, 1).fixed32(4, 1), "float_data has 1 "
                                                      "values"},
      {Proto().field(1, 1).field(2, 1).fixed32(4, 1).blob(9, six, 4),
       "more than one field"},
      {Proto().field(1, 1).field(2, 1).field(7, 1),
       "a FLOAT tensor carries its values in int64_data"},
      {Proto().field(1, 1).field(2, WEFT_RT_I8).field(5, 200),
       "int32_data[0] = 200 is out of range for i8"},
      {Proto().field(1, 1).field(2, WEFT_RT_BOOL).field(5, 2),
       "out of range for bool"},
      {Proto().field(1, 1).field(2, WEFT_RT_BOOL).blob(9, "\x02", 1),
       "bool element 0 is 2"},
      {Proto().field(2, 1).field(14, 1), "external file"},
      {Proto().field(2, 1).blob(13, "\x0a\x01x", 3), "external file"},
      {Proto().field(2, 1).blob(3, "", 0), "segmented"},
      {Proto().raw({0x0a, 0x05, 0x01}), "truncated or malformed"},
      {Proto().raw({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                    0xff, 0x01}),
       "truncated or malformed"},
      {Proto().raw({0x00, 0x01}), "field number 0"},
      {Proto().raw({0x0b}), "wire type 3"},
      {Proto().raw({0x15, 1, 2, 3, 4}), "field 2, wire type 5"},
      {Proto().raw({0x25, 1, 2}), "field 4"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(c.proto);
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
  }
}

TEST(TensorProtoTest, RefusesEveryTruncation) {
  Tensor tensor = sampleTensors()[0];
  std::vector<uint8_t> bytes = serializeTensorProto(tensor);
  for (size_t size = 0; size < bytes.size(); ++size) {
    Tensor t;
    std::string error;
    EXPECT_FALSE(parseTensorProto(bytes.data(), size, t, error))
        << "prefix of " << size << " bytes was accepted";
  }
}

TEST(TensorFileTest, SurvivesCorruptedBytes) {
  // Every single-byte corruption of valid files either parses to a tensor
  // whose data matches its dims or is refused; none reads out of bounds
  // (run under a sanitizer to see the latter).
  for (const Tensor &tensor : sampleTensors()) {
    std::vector<uint8_t> pb = serializeTensorProto(tensor);
    std::vector<uint8_t> npy;
    std::string error;
    serializeNpy(tensor, npy, error);
    for (const std::vector<uint8_t> *file : {&pb, &npy}) {
      for (size_t at = 0; at < file->size(); ++at)
        for (uint8_t mask : {0x01, 0x80, 0xff}) {
          std::vector<uint8_t> bad = *file;
          bad[at] ^= mask;
          Tensor t;
          bool ok = file == &pb
                        ? parseTensorProto(bad.data(), bad.size(), t, error)
                        : parseNpy(bad.data(), bad.size(), t, error);
          if (!ok)
            continue;
          int64_t count = 1;
          for (int64_t d : t.dims)
            count *= d;
          EXPECT_EQ(t.data.size(), count * weft_rt_dtype_size(t.dtype));
        }
    }
  }
}

std::vector<uint8_t> npyFile(int major, const std::string &header,
                             std::vector<uint8_t> data) {
  std::vector<uint8_t> out = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  size_t n = header.size();
  out.push_back(n & 0xff);
  out.push_back((n >> 8) & 0xff);
  if (major > 1) {
    out.push_back((n >> 16) & 0xff);
    out.push_back(n >> 24);
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(NpyTest, RoundTripsEveryDTypeButBf16) {
  for (const Tensor &tensor : sampleTensors()) {
    std::vector<uint8_t> bytes;
    std::string error;
    bool ok = serializeNpy(tensor, bytes, error);
    if (tensor.dtype == WEFT_RT_BF16) {
      EXPECT_FALSE(ok);
      EXPECT_NE(error.find("bf16 has no NumPy dtype"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(ok) << error;
    // NumPy's layout: the data starts 64-byte aligned after a newline.
    size_t headerEnd = bytes.size() - tensor.data.size();
    EXPECT_EQ(headerEnd % 64, 0u);
    EXPECT_EQ(bytes[headerEnd - 1], '\n');
    Tensor back;
    ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), back, error)) << error;
    EXPECT_TRUE(back.name.empty());
    EXPECT_EQ(back.dtype, tensor.dtype);
    EXPECT_EQ(back.dims, tensor.dims);
    EXPECT_EQ(back.data, tensor.data);
  }
}

TEST(NpyTest, ReadsHeaderVariants) {
  std::vector<uint8_t> two = bytesOf<int32_t>({5, 6});
  const char *headers[] = {
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n",
      "{\"shape\": (2,), \"descr\": \"<i4\", \"fortran_order\": False}",
      "{'descr':'<i4','fortran_order':False,'shape':(2L,)}   \n",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2)}",
  };
  for (int major = 1; major <= 3; ++major)
    for (const char *header : headers) {
      std::vector<uint8_t> file = npyFile(major, header, two);
      Tensor t;
      std::string error;
      ASSERT_TRUE(parseNpy(file.data(), file.size(), t, error))
          << header << ": " << error;
      EXPECT_EQ(t.dtype, WEFT_RT_I32);
      EXPECT_EQ(t.data, two);
    }
  std::vector<uint8_t> scalar =
      npyFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
              bytesOf<double>({2.5}));
  Tensor t;
  std::string error;
  ASSERT_TRUE(parseNpy(scalar.data(), scalar.size(), t, error)) << error;
  EXPECT_TRUE(t.dims.empty());
}

TEST(NpyTest, RefusesMalformedFiles) {
  std::vector<uint8_t> eight(8, 0);
  struct Case {
    std::vector<uint8_t> file;
    const char *message;
  } cases[] = {
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}, "no \\x93NUMPY magic"},
      {npyFile(4, "{}", {}), "unknown .npy format version 4"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff}, "truncated .npy header"},
      {{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0xff, '{'},
       "it claims 65535 bytes"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}",
               eight),
       "Fortran-ordered"},
      {npyFile(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}",
               eight),
       "'>f4' is not supported (big-endian"},
      {npyFile(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (2,)}",
               eight),
       "'<u4' is not supported"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
               eight),
       "the data has 8 bytes; f32[3] needs 12 (truncated file?)"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
               eight),
       "the data has 8 bytes; f32[1] needs 4"},
      {npyFile(1,
               "{'descr': '<f4', 'fortran_order': False, 'shape': "
               "(4294967296, 4294967296)}",
               eight),
       "more elements than fit"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': False}", eight),
       "lacks 'descr', 'fortran_order' or 'shape'"},
      {npyFile(1,
               "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
               "'extra': 1}",
               eight),
       "unknown key 'extra'"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
               eight),
       "'shape' must be given once"},
      {npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) x",
               eight),
       "expected ',' or '}'"},
      {npyFile(1,
               "{'descr': [('a', '<f4')], 'fortran_order': False, "
               "'shape': (2,)}",
               eight),
       "structured dtypes are not supported"},
      {npyFile(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,)}",
               {1, 7}),
       "bool element 1 is 7"},
      {npyFile(1, "[1, 2]", {}), "not a dict literal"},
  };
  for (const Case &c : cases) {
    Tensor t;
    std::string error;
    EXPECT_FALSE(parseNpy(c.file.data(), c.file.size(), t, error))
        << "accepted; expected: " << c.message;
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << error;
  }
}

TEST(TensorFileTest, ReadsAndWritesByExtension) {
  ScratchDir scratch;
  Tensor tensor = sampleTensors()[0];
  for (const char *name : {"t.pb", "t.npy"}) {
    std::string path = scratch.track(name);
    TensorFormat format;
    ASSERT_TRUE(tensorFormatFromPath(path, format));
    std::string error;
    ASSERT_TRUE(writeTensorFile(path, tensor, format, error)) << error;
    Tensor back;
    ASSERT_TRUE(readTensorFile(path, back, error)) << error;
    EXPECT_EQ(back.data, tensor.data);
    EXPECT_EQ(back.dims, tensor.dims);
  }
}

TEST(TensorFileTest, ErrorsNameTheFile) {
  ScratchDir scratch;
  Tensor t;
  std::string error;
  EXPECT_FALSE(readTensorFile(scratch.dir + "/missing.pb", t, error));
  EXPECT_NE(error.find("missing.pb: cannot read: No such file"),
            std::string::npos)
      << error;
  std::string odd = scratch.write("t.txt", std::string("1 2 3"));
  EXPECT_FALSE(readTensorFile(odd, t, error));
  EXPECT_NE(error.find("t.txt: unknown tensor file type"), std::string::npos);
  std::string empty = scratch.write("empty.npy", std::string());
  EXPECT_FALSE(readTensorFile(empty, t, error));
  EXPECT_NE(error.find("empty.npy: not a NumPy .npy file"), std::string::npos);
  EXPECT_FALSE(readTensorFile(scratch.dir + "/", t, error));
  std::string bad = scratch.write("bad.pb", std::string("\x0a\x09", 2));
  EXPECT_FALSE(readTensorFile(bad, t, error));
  EXPECT_NE(error.find("bad.pb: truncated"), std::string::npos) << error;
  EXPECT_FALSE(writeTensorFile(scratch.dir + "/no/such/dir/t.pb",
                               sampleTensors()[0], TensorFormat::OnnxPb,
                               error));
  EXPECT_NE(error.find("t.pb: cannot create"), std::string::npos) << error;
}

TEST(TensorIOTest, ConvertsHalfFloats) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(halfToFloat(0x8000)));
  EXPECT_TRUE(std::isinf(halfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc2f7), -123.5f);
  uint16_t half = 0x3555; // ~0.33325
  EXPECT_NEAR(elementAsDouble(WEFT_RT_F16, &half, 0), 0.33325, 1e-5);
  int8_t small = -5;
  EXPECT_EQ(elementAsDouble(WEFT_RT_I8, &small, 0), -5.0);
}

} // namespace
