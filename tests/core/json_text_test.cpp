// json_text: the layout of the JSON files decodebench writes (hand-written expected text) and its
// round trip through the parser.
#include "core/result/json_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace decodebench {
namespace {

using nlohmann::json;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(JsonText, LaysOutObjectsAsDumpAndKeepsShortScalarArraysOnOneLine) {
  const json doc = json::parse(R"({"b": {"c": "x", "n": null}, "a": [1, 2.5, -3],
      "d": [], "e": {}, "f": [{"g": true}, [1, 2]], "s": ["p", "q"]})");
  const std::string expected =
      "{\n"
      "  \"a\": [1, 2.5, -3],\n"
      "  \"b\": {\n"
      "    \"c\": \"x\",\n"
      "    \"n\": null\n"
      "  },\n"
      "  \"d\": [],\n"
      "  \"e\": {},\n"
      "  \"f\": [\n"
      "    {\n"
      "      \"g\": true\n"
      "    },\n"
      "    [1, 2]\n"
      "  ],\n"
      "  \"s\": [\"p\", \"q\"]\n"
      "}";
  EXPECT_EQ(json_text(doc), expected);
  // Without arrays of scalars the text is dump(2)'s.
  const json plain = json::parse(R"({"z": {"y": [{"x": 1e-05}], "w": "v"}, "k": 3})");
  EXPECT_EQ(json_text(plain), plain.dump(2));
  EXPECT_EQ(json_text(json(7)), "7");
  EXPECT_EQ(json_text(json::array()), "[]");
}

TEST(JsonText, PacksLongArraysIntoLinesOfAtMostTheWidth) {
  json samples = json::array();
  for (int i = 0; i < 4608; ++i) samples.push_back(440000 + (i * 7919) % 9000);
  const json doc = {{"runs", json::array({{{"samples_ns", samples}, {"tpot_ms", 0.441111}}})}};
  const std::string text = json_text(doc);
  const std::vector<std::string> lines = lines_of(text);
  // Every sample is 6 digits, "123456," and a space: after the 8-space indent 11 fit a line of
  // 8 + 11·8 − 1 = 95 columns; a 12th would make 103.
  ASSERT_GT(lines.size(), 4608u / 11);
  ASSERT_LT(lines.size(), 4608u / 11 + 12);
  EXPECT_EQ(lines[3], "      \"samples_ns\": [");
  EXPECT_EQ(lines[4].substr(0, 8), "        ");
  EXPECT_EQ(lines[4].size(), 95u);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_EQ(json::parse(text), doc);
  // One value wider than the width keeps its own line.
  const json wide = {{"t", json::array({std::string(120, 'a'), "b"})}};
  const std::vector<std::string> wl = lines_of(json_text(wide));
  ASSERT_EQ(wl.size(), 6u);
  EXPECT_EQ(wl[2], "    \"" + std::string(120, 'a') + "\",");
  EXPECT_EQ(wl[3], "    \"b\"");
  EXPECT_EQ(json::parse(json_text(wide)), wide);
}

// The one-line rule counts the key's columns and the comma that follows a member: a line of
// exactly kJsonTextColumns stays whole, one more byte splits it.
TEST(JsonText, AnArrayStaysOnItsKeysLineUpToTheWidthWithItsComma) {
  // `  "k": [` is 8 columns; eight 8-digit numbers and one of `last` digits with their ", ".
  const auto numbers = [](int last) {
    json a = json::array();
    for (int i = 0; i < 8; ++i) a.push_back(10000000 + i);
    a.push_back(static_cast<int64_t>(std::stoll("1" + std::string(last - 1, '0'))));
    return a;
  };
  // Followed by a comma: 8 + 8·8 + 8·2 + 10 + "]," = 100 columns.
  std::vector<std::string> lines = lines_of(json_text({{"k", numbers(10)}, {"z", 1}}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1].size(), 100u) << lines[1];
  EXPECT_EQ(lines[1].substr(0, 17), "  \"k\": [10000000,");
  EXPECT_EQ(lines[1].substr(98), "],");
  lines = lines_of(json_text({{"k", numbers(11)}, {"z", 1}}));  // 101: split
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[1], "  \"k\": [");
  // The last member has no comma: 100 columns with 11 digits, 101 with 12.
  lines = lines_of(json_text({{"a", 1}, {"k", numbers(11)}}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2].size(), 100u) << lines[2];
  EXPECT_EQ(lines_of(json_text({{"a", 1}, {"k", numbers(12)}})).size(), 6u);
  // A long key leaves less room: 86 columns before "[", so 25 more do not fit.
  const std::string key(80, 'x');
  lines = lines_of(json_text({{key, json::array({1234567, 1234567, 1234567})}}));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1], "  \"" + key + "\": [");
  EXPECT_EQ(lines[2], "    1234567, 1234567, 1234567");
}

// Packed lines are filled to exactly the width, an element with its comma counted.
TEST(JsonText, PackedLinesFillTheWidthExactly) {
  json a = json::array();
  for (int i = 0; i < 8; ++i) a.push_back(12345678);
  a.push_back(123456789012345LL);  // 4 + 8·(9 + 1) + 16 = 100 columns with its comma
  for (int i = 0; i < 20; ++i) a.push_back(i);
  const std::vector<std::string> lines = lines_of(json_text({{"a", a}}));
  ASSERT_EQ(lines.size(), 6u);  // {, "a": [, two packed lines, ], }
  EXPECT_EQ(lines[2],
            "    12345678, 12345678, 12345678, 12345678, 12345678, 12345678, 12345678, "
            "12345678, 123456789012345,");
  EXPECT_EQ(lines[2].size(), 100u);
  EXPECT_EQ(lines[3], "    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19");
  EXPECT_EQ(json::parse(json_text({{"a", a}})), json({{"a", a}}));
  // One digit more: 101 columns with the space before it, so it starts the next line.
  a[8] = 1234567890123456LL;
  const std::vector<std::string> wrapped = lines_of(json_text({{"a", a}}));
  ASSERT_EQ(wrapped.size(), 6u);
  EXPECT_EQ(wrapped[2].size(), 83u) << wrapped[2];
  EXPECT_EQ(wrapped[3].substr(0, 22), "    1234567890123456, ");
}

TEST(JsonText, NotANumberAndInfinityAreNullAsDumpWritesThem) {
  const json doc = {{"n", json::array({1.5, std::nan(""), -INFINITY})}};
  EXPECT_EQ(json_text(doc), "{\n  \"n\": [1.5, null, null]\n}");
  EXPECT_EQ(doc.dump(), "{\"n\":[1.5,null,null]}");
}

TEST(JsonText, WritesNumbersAsDumpAndReplacesInvalidUtf8) {
  const json doc = {{"f", json::array({0.1, 1e-05, 123456789012345678.0, -0.0, 1.5e300})},
                    {"i", json::array({-9223372036854775807LL - 1, 18446744073709551615ULL})},
                    {"t", std::string("ab\xff", 3)},
                    {std::string("k\xfe", 2), json::array({std::string("\xc3", 1)})}};
  const std::string text = json_text(doc);
  EXPECT_NE(text.find("[0.1, 1e-05, 1.2345678901234568e+17, -0.0, 1.5e+300]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[-9223372036854775808, 18446744073709551615]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"ab\xEF\xBF\xBD\""), std::string::npos) << text;  // U+FFFD
  EXPECT_NE(text.find("\"k\xEF\xBF\xBD\": [\"\xEF\xBF\xBD\"]"), std::string::npos) << text;
  const json back = json::parse(text);
  EXPECT_EQ(back["f"], doc["f"]);
  EXPECT_EQ(back["i"], doc["i"]);
  EXPECT_EQ(back["t"], "ab\xEF\xBF\xBD");
}

}  // namespace
}  // namespace decodebench
