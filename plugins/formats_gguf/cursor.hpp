// A bounds-checked little-endian reader over an untrusted byte span, and the checked
// arithmetic every size and offset of a GGUF file goes through. Nothing here reads
// outside [data, data + size): a read that does not fit throws a FormatError built by
// the caller's `describe` callback, which only runs on failure (hot loops pay nothing
// for good messages).
#pragma once

#include <edgerun/plugin_sdk.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace edgerun::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader maps little-endian files and reads them in place");

// Every malformed-file error is ER_E_FORMAT with a one-line message.
inline sdk::Failure format_error(std::string message) { return sdk::Failure(ER_E_FORMAT, std::move(message)); }

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// `alignment` must be a nonzero power of two.
inline std::optional<uint64_t> align_up(uint64_t value, uint64_t alignment) {
    auto sum = checked_add(value, alignment - 1);
    if (!sum) return std::nullopt;
    return *sum & ~(alignment - 1);
}

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size, uint64_t pos = 0) : data_(data), size_(size), pos_(pos) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return size_; }
    uint64_t remaining() const { return pos_ <= size_ ? size_ - pos_ : 0; }
    const uint8_t* data() const { return data_; }

    // Reads a T (an integer or float type) at the cursor and advances.
    template <typename T, typename Describe>
    T read(Describe&& describe) {
        static_assert(std::is_arithmetic_v<T>);
        require(sizeof(T), describe);
        T value;
        std::memcpy(&value, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }

    // Returns a view of the next `n` bytes and advances past them.
    template <typename Describe>
    std::string_view bytes(uint64_t n, Describe&& describe) {
        require(n, describe);
        std::string_view out(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
        pos_ += n;
        return out;
    }

    template <typename Describe>
    void skip(uint64_t n, Describe&& describe) {
        require(n, describe);
        pos_ += n;
    }

    // A GGUF string: u64 length, then that many bytes (no terminator).
    template <typename Describe>
    std::string_view string(Describe&& describe) {
        const uint64_t length = read<uint64_t>(describe);
        if (length > remaining())
            throw format_error(describe() + ": string length " + std::to_string(length) +
                               " runs past the end of the file (" + std::to_string(remaining()) +
                               " bytes left at offset " + std::to_string(pos_) + ")");
        return bytes(length, describe);
    }

private:
    template <typename Describe>
    void require(uint64_t n, Describe& describe) const {
        if (n > remaining())
            throw format_error(describe() + ": the file ends at byte " + std::to_string(size_) + ", " +
                               std::to_string(n) + " bytes are needed at offset " + std::to_string(pos_));
    }

    const uint8_t* data_;
    uint64_t size_;
    uint64_t pos_;
};

// Reads a value stored at a position already validated by the parser (array elements
// indexed after parsing); still bounds-checked, because indices come through the ABI.
template <typename T>
std::optional<T> load_at(const uint8_t* data, uint64_t size, uint64_t offset) {
    if (offset > size || size - offset < sizeof(T)) return std::nullopt;
    T value;
    std::memcpy(&value, data + offset, sizeof(T));
    return value;
}

// Keys and tensor names are identifiers: printable, valid UTF-8. Values (token texts)
// are not checked: tokenizers carry arbitrary byte sequences.
bool is_valid_utf8(std::string_view s);

// Quotes a name from the file for a one-line message: control and non-UTF-8 bytes are
// escaped, and very long names are cut.
std::string quote_text(std::string_view s, size_t max_bytes = 80);

}  // namespace edgerun::gguf
