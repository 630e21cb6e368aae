//===- NpyFile.cpp - NumPy .npy files -------------------------------------===//
//
// The .npy format is a magic string, a version, and a Python dict literal
// describing dtype, order and shape, followed by the raw elements. The
// header is parsed with a small grammar of its own rather than trusted.
//
//===----------------------------------------------------------------------===//

#include "Signature.h"
#include "TensorIO.h"

#include <cstring>

using namespace weft::rt;

static const char kMagic[] = "\x93NUMPY";
static constexpr size_t kMagicSize = 6;
static constexpr size_t kMaxRank = 64;

namespace {

/// The three keys of an .npy header.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the header's dict literal:
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  HeaderParser(const std::string &text, std::string &error)
      : text(text), error(error) {}

  bool parse(NpyHeader &out) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a dict literal");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + printableText(key) + "'");
      skipSpace();
      if (key == "descr") {
        if (sawDescr || !parseString(out.descr))
          return fail("'descr' must be given once, as a string such as "
                      "'<f4' (structured dtypes are not supported)");
        sawDescr = true;
      } else if (key == "fortran_order") {
        if (sawOrder || !parseBool(out.fortranOrder))
          return fail("'fortran_order' must be given once, True or False");
        sawOrder = true;
      } else if (key == "shape") {
        if (sawShape || !parseShape(out.shape))
          return fail("'shape' must be given once, as a tuple of integers "
                      ">= 0 such as (2, 3)");
        sawShape = true;
      } else {
        return fail("unknown key '" + printableText(key) + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}' after '" + printableText(key) + "'");
    }
    skipSpace();
    if (pos != text.size())
      return fail("unexpected text after the dict");
    if (!sawDescr || !sawOrder || !sawShape)
      return fail("the header lacks 'descr', 'fortran_order' or 'shape'");
    return true;
  }

private:
  bool fail(const std::string &why) {
    error = "malformed .npy header: " + why;
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\n' ||
                                 text[pos] == '\t' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool parseBool(bool &out) {
    if (consumeWord("True"))
      return out = true, true;
    if (consumeWord("False"))
      return out = false, true;
    return false;
  }
  bool parseShape(std::vector<int64_t> &out) {
    if (!consume('('))
      return false;
    while (true) {
      skipSpace();
      if (consume(')'))
        return true;
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return false;
      int64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        int digit = text[pos++] - '0';
        if (value > (INT64_MAX - digit) / 10)
          return false;
        value = value * 10 + digit;
      }
      consume('L'); // Python 2 longs.
      if (out.size() >= kMaxRank)
        return false;
      out.push_back(value);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return true;
      return false;
    }
  }

  const std::string &text;
  std::string &error;
  size_t pos = 0;
};

} // namespace

/// The dtype of a little-endian (or byte-sized) NumPy descr, 0 if none.
static weft_rt_dtype dtypeOfDescr(const std::string &descr) {
  static const struct {
    const char *descr;
    weft_rt_dtype dtype;
  } table[] = {{"<f4", WEFT_RT_F32}, {"<f8", WEFT_RT_F64}, {"<f2", WEFT_RT_F16},
               {"<i4", WEFT_RT_I32}, {"<i8", WEFT_RT_I64}, {"|i1", WEFT_RT_I8},
               {"|u1", WEFT_RT_U8},  {"|b1", WEFT_RT_BOOL}};
  for (const auto &entry : table)
    if (descr == entry.descr)
      return entry.dtype;
  return 0;
}

/// The descr NumPy writes for `dtype`, nullptr for bf16 (no NumPy type).
static const char *descrOfDType(weft_rt_dtype dtype) {
  switch (dtype) {
  case WEFT_RT_F32:
    return "<f4";
  case WEFT_RT_F64:
    return "<f8";
  case WEFT_RT_F16:
    return "<f2";
  case WEFT_RT_I32:
    return "<i4";
  case WEFT_RT_I64:
    return "<i8";
  case WEFT_RT_I8:
    return "|i1";
  case WEFT_RT_U8:
    return "|u1";
  case WEFT_RT_BOOL:
    return "|b1";
  default:
    return nullptr;
  }
}

static uint32_t readLittleEndian(const uint8_t *bytes, size_t n) {
  uint32_t value = 0;
  for (size_t i = 0; i < n; ++i)
    value |= static_cast<uint32_t>(bytes[i]) << (8 * i);
  return value;
}

bool weft::rt::parseNpy(const uint8_t *bytes, size_t size, Tensor &out,
                        std::string &error) {
  out = Tensor();
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    error = "not a NumPy .npy file (no \\x93NUMPY magic)";
    return false;
  }
  uint8_t major = bytes[kMagicSize];
  if (major < 1 || major > 3) {
    error = "unknown .npy format version " + std::to_string(major) + "." +
            std::to_string(bytes[kMagicSize + 1]);
    return false;
  }
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t preamble = kMagicSize + 2 + lengthBytes;
  if (size < preamble) {
    error = "truncated .npy header";
    return false;
  }
  size_t headerSize = readLittleEndian(bytes + kMagicSize + 2, lengthBytes);
  if (headerSize > size - preamble) {
    error = "truncated .npy header (it claims " + std::to_string(headerSize) +
            " bytes, the file has " + std::to_string(size - preamble) + ")";
    return false;
  }
  std::string text(reinterpret_cast<const char *>(bytes + preamble),
                   headerSize);
  NpyHeader header;
  if (!HeaderParser(text, error).parse(header))
    return false;
  if (header.fortranOrder) {
    error = "Fortran-ordered arrays are not supported; save a C-ordered "
            "copy (numpy.ascontiguousarray)";
    return false;
  }
  weft_rt_dtype dtype = dtypeOfDescr(header.descr);
  if (!dtype) {
    bool bigEndian = !header.descr.empty() && header.descr[0] == '>';
    error = "dtype '" + printableText(header.descr) + "' is not supported" +
            (bigEndian ? " (big-endian; save with .astype('<...'))" : "") +
            "; the runtime takes <f4 <f8 <f2 <i4 <i8 |i1 |u1 |b1";
    return false;
  }
  out.dtype = dtype;
  out.dims = header.shape;
  int64_t count = 0;
  size_t dataBytes = 0;
  if (!countElements(out.dims, weft_rt_dtype_size(dtype), count, dataBytes)) {
    error = "shape " + formatTensorType(dtype, out.dims) +
            " has more elements than fit in 64 bits";
    return false;
  }
  size_t available = size - preamble - headerSize;
  if (available != dataBytes) {
    error = "the data has " + std::to_string(available) + " bytes; " +
            formatTensorType(dtype, out.dims) + " needs " +
            std::to_string(dataBytes) +
            (available < dataBytes ? " (truncated file?)" : "");
    return false;
  }
  const uint8_t *data = bytes + preamble + headerSize;
  if (dtype == WEFT_RT_BOOL)
    for (size_t i = 0; i < dataBytes; ++i)
      if (data[i] > 1) {
        error = "bool element " + std::to_string(i) + " is " +
                std::to_string(data[i]) + ", not 0 or 1";
        return false;
      }
  out.data.assign(data, data + dataBytes);
  return true;
}

bool weft::rt::serializeNpy(const Tensor &tensor, std::vector<uint8_t> &out,
                            std::string &error) {
  const char *descr = descrOfDType(tensor.dtype);
  if (!descr) {
    error = std::string(weft_rt_dtype_name(tensor.dtype)) +
            " has no NumPy dtype; write this tensor as .pb";
    return false;
  }
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (";
  // Python's repr of a tuple: (), (3,), (2, 3).
  for (size_t i = 0; i < tensor.dims.size(); ++i)
    header += (i ? ", " : "") + std::to_string(tensor.dims[i]);
  if (tensor.dims.size() == 1)
    header += ",";
  header += "), }";
  // NumPy pads so that the data starts 64-byte aligned and the header ends
  // with a newline.
  // Version 1 counts the header in 16 bits; 64 covers newline and padding.
  bool large = header.size() + 64 > 65535;
  size_t preamble = kMagicSize + 2 + (large ? 4 : 2);
  size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  out.clear();
  out.reserve(preamble + header.size() + tensor.data.size());
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(large ? 2 : 1);
  out.push_back(0);
  size_t length = header.size();
  for (size_t i = 0; i < (large ? 4u : 2u); ++i)
    out.push_back(static_cast<uint8_t>(length >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), tensor.data.begin(), tensor.data.end());
  return true;
}
