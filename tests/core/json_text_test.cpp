// json_text: the layout of the JSON files decodebench writes (hand-written expected text) and its
// round trip through the parser.
#include "core/result/json_text.hpp"

#include <gtest/gtest.h>

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
