// The generated code point class table (unicode_tables.cpp, by scripts/gen_unicode_tables.py).
#pragma once

#include <cstdint>

namespace edgerun::text::detail {

struct UnicodeRange {
    uint32_t first;  // the range runs to the next entry's `first`
    uint16_t flags;  // CpFlag bits
};

extern const char kUnicodeVersion[];
extern const UnicodeRange kUnicodeRanges[];
extern const unsigned kUnicodeRangeCount;

}  // namespace edgerun::text::detail
