#!/usr/bin/env python3
"""Generates core/tokenizer/unicode_tables.cpp: code point ranges with category flags.

The BPE pre-tokenizers (core/tokenizer/pretokenize.cpp) need the regex classes \\p{L}, \\p{N} and
\\s (and, for future pre-tokenizers, \\p{M}, \\p{P}, \\p{S}). Python's `unicodedata` supplies the
general categories; consecutive code points with equal flags are merged into one range, and code
points without any flag (other, unassigned) are left out, so a lookup is a binary search.

\\s follows Oniguruma / Rust regex: U+0009..U+000D, U+0085 and the Zs, Zl, Zp categories (this is the
Unicode White_Space property).

Usage: scripts/gen_unicode_tables.py [OUTPUT]   (default: core/tokenizer/unicode_tables.cpp)
"""

import pathlib
import sys
import unicodedata

LETTER, NUMBER, MARK, PUNCT, SYMBOL, SPACE = 1, 2, 4, 8, 16, 32


def flags_of(cp: int) -> int:
    cat = unicodedata.category(chr(cp))
    f = {"L": LETTER, "N": NUMBER, "M": MARK, "P": PUNCT, "S": SYMBOL}.get(cat[0], 0)
    if cat in ("Zs", "Zl", "Zp") or 0x09 <= cp <= 0x0D or cp == 0x85:
        f |= SPACE
    return f


def ranges():
    out = []
    start, cur = 0, flags_of(0)
    for cp in range(1, 0x110000):
        f = flags_of(cp)
        if f != cur:
            if cur:
                out.append((start, cp - 1, cur))
            start, cur = cp, f
    if cur:
        out.append((start, 0x10FFFF, cur))
    return out


def main() -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    target = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "core/tokenizer/unicode_tables.cpp"
    rs = ranges()
    lines = [
        "// GENERATED FILE - DO NOT EDIT. Regenerate with scripts/gen_unicode_tables.py",
        f"// Source: Python {sys.version_info.major}.{sys.version_info.minor} unicodedata, "
        f"Unicode {unicodedata.unidata_version}.",
        "// Code point ranges with category flags (see core/tokenizer/unicode.hpp).",
        '#include "core/tokenizer/unicode.hpp"',
        "",
        "namespace decodebench::unicode {",
        "",
        f'const char kUnicodeVersion[] = "{unicodedata.unidata_version}";',
        "",
        f"const size_t kRangeCount = {len(rs)};",
        "",
        "// clang-format off",
        "const CodepointRange kRanges[] = {",
    ]
    row = []
    for a, b, f in rs:
        row.append(f"{{0x{a:X}, 0x{b:X}, {f}}},")
        if len(row) == 4:
            lines.append("    " + " ".join(row))
            row = []
    if row:
        lines.append("    " + " ".join(row))
    lines += ["};", "// clang-format on", "", "}  // namespace decodebench::unicode", ""]
    target.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {target}: {len(rs)} ranges, Unicode {unicodedata.unidata_version}")


if __name__ == "__main__":
    main()
