// libFuzzer target for the GGUF reader: parses arbitrary bytes exactly as the plugin
// parses a mapped file, then calls every read entry of the format interface on what it
// accepted, touching every tensor's first and last byte. The input buffer is exactly the
// file, so any read past it is an AddressSanitizer report.
//
// A refusal must be ER_E_FORMAT with a one-line message; anything else (another
// exception, a crash, a sanitizer report, an absurd allocation) is a finding.
#include "format_iface.hpp"
#include "gguf_file.hpp"

#include <cstdlib>
#include <cstring>

namespace {

using edgerun::gguf::format_iface;

// Bounds the work per input so the fuzzer stays fast on huge (valid) arrays.
constexpr uint64_t kElementBudget = 4096;

void check_message(er_status status, const er_error& err) {
    if (status == ER_OK) return;
    const size_t n = strnlen(err.message, sizeof err.message);
    if (n == sizeof err.message || std::memchr(err.message, '\n', n)) std::abort();
}

void walk_array(er_file* file, const er_meta_value& array, uint64_t& budget) {
    const er_format_iface& api = format_iface();
    for (uint64_t i = 0; i < array.array_count && budget > 0; ++i, --budget) {
        er_meta_value element{};
        er_error err{};
        const er_status status = api.meta_array_at(file, &array, i, &element, &err);
        if (status != ER_OK) std::abort();  // every element of an accepted array is reachable
        if (element.type == ER_META_STRING && element.v.str.size) {
            volatile char last = element.v.str.data[element.v.str.size - 1];
            (void)last;
        }
        if (element.type == ER_META_ARRAY) walk_array(file, element, budget);
    }
}

void exercise(er_file* file) {
    const er_format_iface& api = format_iface();
    (void)api.describe(file);
    uint64_t budget = kElementBudget;
    for (uint64_t i = 0; i < api.meta_count(file); ++i) {
        er_str key{};
        er_meta_value value{};
        er_error err{};
        if (api.meta_at(file, i, &key, &value, &err) != ER_OK) std::abort();
        er_meta_value found{};
        const std::string name(key.data, key.size);
        if (api.meta_find(file, name.c_str(), &found, &err) != ER_OK && name.find('\0') == std::string::npos) std::abort();
        if (value.type == ER_META_ARRAY) walk_array(file, value, budget);
    }
    unsigned sum = 0;
    for (uint64_t i = 0; i < api.tensor_count(file); ++i) {
        er_tensor_desc t{};
        er_error err{};
        if (api.tensor_at(file, i, &t, &err) != ER_OK) std::abort();
        const auto* bytes = static_cast<const unsigned char*>(t.data);
        sum += bytes[0] + bytes[t.nbytes - 1];
    }
    er_model_desc model{};
    model.struct_size = sizeof model;
    er_error err{};
    check_message(api.model_desc(file, &model, &err), err);
    er_vocab_desc vocab{};
    vocab.struct_size = sizeof vocab;
    const er_status vocab_status = api.vocab_desc(file, &vocab, &err);
    check_message(vocab_status, err);
    if (vocab_status == ER_OK) {
        for (uint64_t i = 0; i < vocab.n_tokens && i < kElementBudget; ++i) {
            er_str text{};
            float score = 0;
            int32_t type = 0;
            check_message(api.vocab_token(file, i, &text, &score, &type, &err), err);
        }
        for (uint64_t i = 0; i < vocab.n_merges && i < kElementBudget; ++i) {
            er_str merge{};
            check_message(api.vocab_merge(file, i, &merge, &err), err);
        }
    }
    volatile unsigned sink = sum;
    (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::unique_ptr<edgerun::gguf::GgufFile> parsed;
    try {
        parsed = edgerun::gguf::GgufFile::parse(data, size);
    } catch (const edgerun::sdk::Failure& failure) {
        if (failure.code() != ER_E_FORMAT || std::strchr(failure.what(), '\n')) std::abort();
        return 0;
    }
    er_file* file = edgerun::gguf::wrap_file(std::move(parsed));
    exercise(file);
    format_iface().close(file);
    return 0;
}
