// blocks.hpp (and cpu_ref's row kernels built on it) against gguf.quants.dequantize on
// random blocks (gen_gguf_reference.py writes the data first, as a ctest fixture).
// Every float must be bit-equal: both sides compute each value with the same IEEE F32
// operations in the same order (e.g. Q4_K: (d * scale) * q - dmin * min), and neither
// fuses multiply-adds (numpy never does; blocks.hpp users build with fp-contract off,
// and x86-64 has no FMA by default).
#include <doctest/doctest.h>

#include <edgerun/dtype.hpp>
#include <edgerun/quant/blocks.hpp>

#include "kernels.hpp"
#include "kv_cache.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr int32_t kQuantizeQ8_0 = 0x10008;  // gguf's Q8_0 quantization of `values` in `bytes`

struct Record {
    int32_t dtype;
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

std::vector<Record> load_records() {
    std::ifstream in(QUANT_REF_DATA, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing " QUANT_REF_DATA " (made by the gen_gguf_reference fixture)");
    std::vector<Record> out;
    uint32_t head[3];
    while (in.read(reinterpret_cast<char*>(head), sizeof head)) {
        Record r;
        r.dtype = static_cast<int32_t>(head[0]);
        r.values.resize(head[1]);
        r.bytes.resize(head[2]);
        in.read(reinterpret_cast<char*>(r.bytes.data()), head[2]);
        in.read(reinterpret_cast<char*>(r.values.data()), head[1] * sizeof(float));
        REQUIRE(in.good());
        out.push_back(std::move(r));
    }
    return out;
}

// Index of the first value whose bits differ, -1 when all match.
int64_t first_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < want.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) return static_cast<int64_t>(i);
    return -1;
}

std::string describe(const Record& r, const std::vector<float>& got, int64_t at) {
    char text[200];
    std::snprintf(text, sizeof text, "%s value %lld: got %.9g, gguf says %.9g",
                  std::string(edgerun::dtype_name(static_cast<edgerun::DType>(r.dtype))).c_str(),
                  static_cast<long long>(at), got[at], r.values[at]);
    return text;
}

}  // namespace

TEST_CASE("blocks.hpp decodes every GGUF type bit-exactly like gguf.quants.dequantize") {
    const auto records = load_records();
    REQUIRE(records.size() == 13);
    for (const Record& r : records) {
        if (r.dtype == kQuantizeQ8_0) continue;
        CAPTURE(r.dtype);
        const auto* info = edgerun::dtype_info(r.dtype);
        REQUIRE(info != nullptr);
        REQUIRE(r.values.size() / info->block_elems * info->block_bytes == r.bytes.size());
        std::vector<float> got(r.values.size(), -1.0f);
        REQUIRE(edgerun::quant::dequantize_row(r.dtype, r.bytes.data(), got.data(), static_cast<int64_t>(got.size())));
        const int64_t at = first_mismatch(got, r.values);
        CHECK_MESSAGE(at < 0, (at < 0 ? "" : describe(r, got, at)));
    }
}

TEST_CASE("cpu_ref's row decoders (portable and SIMD) match gguf bit for bit") {
    using namespace edgerun::cpu_ref;
    const auto records = load_records();
    for (Isa isa : {Isa::Generic, Isa::Avx2}) {
        if (!isa_available(isa)) continue;
        for (const Record& r : records) {
            if (r.dtype == kQuantizeQ8_0) continue;
            const std::string isa_label = isa_name(isa);
            CAPTURE(isa_label);
            CAPTURE(r.dtype);
            const RowKernels* k = row_kernels(r.dtype, isa);
            REQUIRE(k != nullptr);
            std::vector<float> got(r.values.size(), -1.0f);
            k->dequant(r.bytes.data(), got.data(), static_cast<int64_t>(got.size()));
            const int64_t at = first_mismatch(got, r.values);
            CHECK_MESSAGE(at < 0, (at < 0 ? "" : describe(r, got, at)));
        }
    }
}

TEST_CASE("the INT8 KV cache quantizes like llama.cpp's Q8_0 (gguf.quants.quantize, bit for bit)") {
    const auto records = load_records();
    const Record* r = nullptr;
    for (const Record& rec : records)
        if (rec.dtype == kQuantizeQ8_0) r = &rec;
    REQUIRE(r != nullptr);
    std::vector<uint8_t> got(r->bytes.size(), 0xEE);
    edgerun::cpu_ref::quantize_row_q8_0(r->values.data(), got.data(), static_cast<int64_t>(r->values.size()));
    for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        REQUIRE(got[i] == r->bytes[i]);
    }
}
