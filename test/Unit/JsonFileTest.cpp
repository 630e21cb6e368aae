//===- JsonFileTest.cpp - Tests of weft::parseJson ------------------------===//
//
// The depth limit's exact boundary, brackets and escapes inside strings, the
// size limit, and positions counted as llvm::json::parse counts them.
//
//===----------------------------------------------------------------------===//

#include "weft/Support/JsonFile.h"

#include <gtest/gtest.h>

#include <string>

using namespace weft;

/// `depth` arrays inside each other: [[[...]]].
static std::string nested(unsigned depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

/// The error parseJson returns, or "" when it parses.
static std::string errorOf(llvm::StringRef text,
                           const JsonLimits &limits = {}) {
  llvm::Expected<llvm::json::Value> value = parseJson(text, limits);
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

TEST(JsonFile, DepthLimitIsExact) {
  JsonLimits limits;
  limits.maxDepth = 8;
  EXPECT_EQ(errorOf(nested(8), limits), "");
  EXPECT_EQ(errorOf(nested(9), limits),
            "[1:8, byte=8]: objects and arrays nested more than 8 levels "
            "deep");
  // Objects count as arrays do.
  EXPECT_EQ(errorOf(R"({"a":{"b":{"c":[1]}}})",
                    JsonLimits{/*maxDepth=*/4, /*maxBytes=*/1 << 20}),
            "");
  EXPECT_NE(errorOf(R"({"a":{"b":{"c":[{}]}}})",
                    JsonLimits{/*maxDepth=*/4, /*maxBytes=*/1 << 20}),
            "");
}

TEST(JsonFile, DefaultLimitRefusesWhatWouldOverflowTheStack) {
  EXPECT_EQ(errorOf(nested(64)), "");
  EXPECT_EQ(errorOf(nested(65)),
            "[1:64, byte=64]: objects and arrays nested more than 64 levels "
            "deep");
  // llvm::json::parse recurses once per level: this deep it would crash.
  EXPECT_NE(errorOf(nested(1000000)), "");
}

TEST(JsonFile, SiblingsDoNotAddUp) {
  // Depth is how many are open at once, not how many there are.
  std::string siblings = "[";
  for (int i = 0; i < 1000; ++i)
    siblings += std::string(i ? "," : "") + nested(60);
  siblings += "]";
  EXPECT_EQ(errorOf(siblings), "");
}

TEST(JsonFile, BracketsInStringsDoNotNest) {
  JsonLimits limits;
  limits.maxDepth = 2;
  EXPECT_EQ(errorOf(R"({"[[[[": "{{{{", "k": ["]]]]"]})", limits), "");
  llvm::Expected<llvm::json::Value> value =
      parseJson(R"({"[[[[": "{{{{"})", limits);
  ASSERT_TRUE(static_cast<bool>(value)) << llvm::toString(value.takeError());
  EXPECT_EQ(value->getAsObject()->getString("[[[[").value_or(""), "{{{{");
}

TEST(JsonFile, EscapesStayInsideTheString) {
  JsonLimits limits;
  limits.maxDepth = 1;
  // An escaped quote does not end the string; an escaped backslash before
  // the closing quote does not escape it.
  EXPECT_EQ(errorOf(R"(["a\"[[[", "b\\", "\u005b[["])", limits), "");
  EXPECT_EQ(errorOf(R"(["a\\", [1]])", limits),
            "[1:8, byte=8]: objects and arrays nested more than 1 levels "
            "deep");
}

TEST(JsonFile, PositionsCountAsJsonParseDoes) {
  // Lines from 1, columns from 0 (line 3 starts at byte 11). A depth error
  // points at the bracket; json::parse points just past what it could not
  // read.
  JsonLimits limits;
  limits.maxDepth = 2;
  EXPECT_EQ(errorOf("{\n  \"a\": [\n    [1]]}", limits),
            "[3:4, byte=15]: objects and arrays nested more than 2 levels "
            "deep");
  EXPECT_EQ(errorOf("{\n  \"a\": [\n    ?1]]}"),
            "[3:5, byte=16]: Invalid JSON value");
}

TEST(JsonFile, SizeLimit) {
  JsonLimits limits;
  limits.maxBytes = 10;
  EXPECT_EQ(errorOf("[1,2,3,40]", limits), "");
  EXPECT_EQ(errorOf("[1,2,3,400]", limits),
            "11 bytes, more than the 10 bytes a JSON input may hold");
}

TEST(JsonFile, SyntaxErrorsAreJsonParses) {
  EXPECT_EQ(errorOf("{\"a\": }"), "[1:7, byte=7]: Invalid JSON value");
  // Unbalanced closers are left to json::parse.
  EXPECT_NE(errorOf("]]]]"), "");
  EXPECT_NE(errorOf("[\"unterminated"), "");
}
