// JsonSource: JSON that remembers the line of every value, so that a problem in a preset, a
// fault plan or a trace names file:line instead of just a key.
#include "fabric/json_source.h"

#include <gtest/gtest.h>

#include <string>

namespace mcsim::fabric {
namespace {

// Parses `text` and returns the InputError it throws; fails the test when it does not throw.
InputError parseError(const std::string& text, const std::string& file) {
  try {
    JsonSource::parse(text, file);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError for:\n" << text;
  return InputError("", -1, "");
}

// BUG (fabric/json_source.cpp:84, LineRecorder::parse_error): the SAX handler takes the error as
// `const nlohmann::detail::exception&` and hands it to json_sax_dom_parser::parse_error, a
// template that rethrows its argument by its static type, so the parse_error is sliced to its
// base class. JsonSource::parse's `catch (const nlohmann::json::parse_error&)` then never
// matches: every syntax error escapes as nlohmann::json::exception, not as an InputError naming
// file and line. Every JsonSourceSyntax test fails for this reason until that is fixed (taking
// the exception type as a template parameter fixes it; these tests then pass, except the one
// marked below).
TEST(JsonSourceSyntax, BadLiteralOnLineFourReportsLineFour) {
  const std::string text =
      "{\n"              // 1
      "  \"a\": 1,\n"    // 2
      "  \"b\": [1, 2],\n"  // 3
      "  \"c\": tru,\n"  // 4: not a literal
      "  \"d\": 4\n"     // 5
      "}\n";
  const InputError e = parseError(text, "conf/cfg.json");
  EXPECT_EQ(e.file(), "conf/cfg.json");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(std::string(e.what()).rfind("conf/cfg.json:4: invalid JSON", 0), 0u) << e.what();
}

TEST(JsonSourceSyntax, MissingCommaIsReportedAtTheNextKeysLine) {
  // The parser only notices the missing comma when it meets the next key, on line 4.
  const std::string text =
      "{\n"            // 1
      "  \"a\": 1\n"   // 2
      "\n"             // 3
      "  \"b\": 2\n"   // 4
      "}\n";
  const InputError e = parseError(text, "x.json");
  EXPECT_EQ(e.file(), "x.json");
  EXPECT_EQ(e.line(), 4);
}

TEST(JsonSourceSyntax, ErrorOnFirstLine) {
  const InputError e = parseError("{,}\n", "one.json");
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.file(), "one.json");
}

TEST(JsonSourceSyntax, RawNewlineInsideStringIsReportedOnTheStringsLine) {
  // A control character inside a string is the error; it is the newline ending line 3.
  const std::string text =
      "{\n"                  // 1
      "  \"a\": 1,\n"        // 2
      "  \"b\": \"open\n"    // 3
      "  \"c\": 2\n"         // 4
      "}\n";
  EXPECT_EQ(parseError(text, "s.json").line(), 3);
}

TEST(JsonSourceSyntax, TruncatedInputIsReportedOnItsLastLine) {
  // The input stops in the middle of line 3.
  const std::string text =
      "{\n"              // 1
      "  \"a\": [\n"     // 2
      "    1, 2";        // 3
  EXPECT_EQ(parseError(text, "t.json").line(), 3);
}

TEST(JsonSourceSyntax, TruncatedInputEndingWithANewlineIsReportedOnItsLastLine) {
  // BUG (minor; fabric/json_source.cpp, lineAtOffset in JsonSource::parse): at end of input the
  // error offset lies past the final newline, so the error names line 4 of a three-line file.
  // It should name the last line the file has.
  const std::string text =
      "{\n"              // 1
      "  \"a\": [\n"     // 2
      "    1,\n";        // 3
  EXPECT_EQ(parseError(text, "t.json").line(), 3);
}

TEST(JsonSourceSyntax, ProblemTextSaysInvalidJson) {
  const InputError e = parseError("[1, 2", "p.json");
  EXPECT_EQ(e.problem().rfind("invalid JSON", 0), 0u) << e.problem();
}

// A document whose every value sits on a known line.
const char* const kNested =
    "{\n"                        // 1
    "  \"gpu\": {\n"             // 2
    "    \"name\": \"x\",\n"     // 3
    "    \"attributes\": {\n"    // 4
    "      \"A\": 1,\n"          // 5
    "      \"B\": 2\n"           // 6
    "    }\n"                    // 7
    "  },\n"                     // 8
    "  \"list\": [\n"            // 9
    "    10,\n"                  // 10
    "    {\"k\": 3},\n"          // 11
    "    [\n"                    // 12
    "      7\n"                  // 13
    "    ],\n"                   // 14
    "    \"s\"\n"                // 15
    "  ],\n"                     // 16
    "  \"a/b\": {\n"             // 17
    "    \"c~d\": true\n"        // 18
    "  },\n"                     // 19
    "  \"last\":\n"              // 20
    "    false\n"                // 21
    "}\n";

TEST(JsonSourceLineOf, RootIsLineOne) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf(""), 1);
}

TEST(JsonSourceLineOf, NestedKeysHaveTheirOwnLines) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf("/gpu"), 2);
  EXPECT_EQ(src.lineOf("/gpu/name"), 3);
  EXPECT_EQ(src.lineOf("/gpu/attributes"), 4);
  EXPECT_EQ(src.lineOf("/gpu/attributes/A"), 5);
  // A number that ends its line: the lexer reads the newline after it, which must not count.
  EXPECT_EQ(src.lineOf("/gpu/attributes/B"), 6);
  EXPECT_EQ(src.lineOf("/list"), 9);
}

TEST(JsonSourceLineOf, ArrayElementsHaveTheirOwnLines) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf("/list/0"), 10);
  EXPECT_EQ(src.lineOf("/list/1"), 11);
  EXPECT_EQ(src.lineOf("/list/1/k"), 11);
  EXPECT_EQ(src.lineOf("/list/2"), 12);
  EXPECT_EQ(src.lineOf("/list/2/0"), 13);
  EXPECT_EQ(src.lineOf("/list/3"), 15);
}

TEST(JsonSourceLineOf, KeysNeedingPointerEscapesAreFound) {
  // JSON pointer escapes: '/' is "~1" and '~' is "~0".
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf("/a~1b"), 17);
  EXPECT_EQ(src.lineOf("/a~1b/c~0d"), 18);
}

TEST(JsonSourceLineOf, KeyLineIsWhereTheKeyIsNotWhereItsValueIs) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf("/last"), 20);
}

TEST(JsonSourceLineOf, MissingPointerFallsBackToNearestAncestor) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.lineOf("/gpu/attributes/Z"), 4);
  EXPECT_EQ(src.lineOf("/list/9/x"), 9);
  EXPECT_EQ(src.lineOf("/nope"), 1);
}

TEST(JsonSourceLineOf, ValuesParseAsJson) {
  // The line bookkeeping must not disturb the document itself.
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  EXPECT_EQ(src.root().at("gpu").at("attributes").at("B").get<int>(), 2);
  EXPECT_EQ(src.root().at("list").at(2).at(0).get<int>(), 7);
  EXPECT_EQ(src.root().at("a/b").at("c~d").get<bool>(), true);
  EXPECT_EQ(src.file(), "n.json");
}

TEST(JsonSourceFail, ThrowsFileLineProblem) {
  const JsonSource src = JsonSource::parse(kNested, "dir/n.json");
  try {
    src.fail("/gpu/attributes/B", "attribute B is wrong");
    FAIL() << "fail() returned";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "dir/n.json");
    EXPECT_EQ(e.line(), 6);
    EXPECT_EQ(e.problem(), "attribute B is wrong");
    EXPECT_STREQ(e.what(), "dir/n.json:6: attribute B is wrong");
  }
}

TEST(JsonSourceFail, UnknownPointerBlamesNearestAncestor) {
  const JsonSource src = JsonSource::parse(kNested, "n.json");
  try {
    src.fail("/list/1/missing", "missing thing");
    FAIL() << "fail() returned";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 11);
    EXPECT_STREQ(e.what(), "n.json:11: missing thing");
  }
}

// Issue 19, item 13: a number beyond a double made nlohmann throw out_of_range, which escaped
// JsonSource::parse (and aborted cuInit). It is an InputError at the number's line.
TEST(JsonSourceSyntax, NumberBeyondADoubleIsAnInputErrorAtItsLine) {
  const std::string text =
      "{\n"             // 1
      "  \"a\": 1,\n"   // 2
      "  \"b\": 1e400\n"  // 3
      "}\n";
  const InputError e = parseError(text, "big.json");
  EXPECT_EQ(e.file(), "big.json");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.problem().find("number overflow"), std::string::npos) << e.problem();
  EXPECT_EQ(e.problem().rfind("invalid JSON", 0), 0u) << e.problem();
}

// Issue 19, item 13: every value's pointer is kept for its line, so unbounded nesting took memory
// in the square of the depth (40 KB of nested arrays took 465 MB). Nesting is bounded.
TEST(JsonSourceSyntax, NestingDeeperThanTheBoundIsRefusedAtItsLine) {
  std::string text = "{\n  \"a\":\n";  // the deep part starts on line 3
  text += std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "\n}\n";
  const InputError e = parseError(text, "deep.json");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.problem().find("nested deeper than 64 levels"), std::string::npos) << e.problem();
  // 120 KB of nesting (which took more than 3 GB) is refused as quickly.
  EXPECT_EQ(parseError(std::string(120000, '['), "deeper.json").line(), 1);
}

TEST(JsonSourceSyntax, NestingUpToTheBoundIsRead) {
  // The root object is one level: kMaxJsonDepth - 1 arrays inside it.
  const std::string text = "{\"a\": " + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_NO_THROW(JsonSource::parse(text, "ok.json"));
}

}  // namespace
}  // namespace mcsim::fabric
