// app::printable_line: text from a model or an error message on one safe terminal line;
// app::printable_message: an error or warning made safe for the terminal.
#include <gtest/gtest.h>

#include <string>

#include "app/report/text.hpp"

namespace decodebench::app {
namespace {

TEST(PrintableLine, LineBreaksBecomeSpacesAndControlBytesEscapes) {
  EXPECT_EQ(printable_line("a\nb\r\tc", 100), "a b  c");
  // ESC [ 2 J would clear the screen; NUL, BEL and DEL would be invisible or beep.
  EXPECT_EQ(printable_line(std::string("x\x1b[2Jy\x07z\x7f", 9) + std::string(1, '\0'), 100),
            "x\\x1b[2Jy\\x07z\\x7f\\x00");
  EXPECT_EQ(printable_line("Paris.", 100), "Paris.");
}

TEST(PrintableLine, CutsAtACharacterBoundary) {
  EXPECT_EQ(printable_line("abcdef", 4), "abcd…");
  EXPECT_EQ(printable_line("abcd", 4), "abcd");
  // "é" is 2 bytes (C3 A9): a cut after byte 2 would split it.
  EXPECT_EQ(printable_line("aéb", 2), "a…");
  EXPECT_EQ(printable_line("aéb", 3), "aé…");
  // "°" after "25": the escaped text counts, "\x01" is 4 bytes.
  EXPECT_EQ(printable_line("\x01"
                           "25°",
                           6),
            "\\x0125…");
  EXPECT_EQ(printable_line("", 0), "");
}

// Invalid UTF-8 (a GGUF architecture 'llam\xff') and control bytes are escaped; newlines, valid
// multi-byte characters and U+FFFD itself pass.
TEST(PrintableMessage, EscapesInvalidUtf8AndControlBytes) {
  EXPECT_EQ(printable_message("unsupported architecture 'llam\xff'"),
            "unsupported architecture 'llam\\xff'");
  EXPECT_EQ(printable_message("a\x1b[2Jb\nc\td"), "a\\x1b[2Jb\nc\\x09d");
  EXPECT_EQ(printable_message("h\xc3\xa9llo \xef\xbf\xbd \xe2\x96"),
            "h\xc3\xa9llo \xef\xbf\xbd \\xe2\\x96");  // é and U+FFFD kept; a cut sequence not
  EXPECT_EQ(printable_message("a\xc2\x9b"
                              "2Jb"),
            "a\\xc2\\x9b2Jb");  // U+009B, a C1 CSI
  EXPECT_EQ(printable_message(""), "");
}

}  // namespace
}  // namespace decodebench::app
