#include <doctest/doctest.h>

#include <edgerun/dtype.hpp>

using namespace edgerun;

TEST_CASE("dtype table gives GGUF block geometry") {
    struct Expect {
        int32_t id;
        const char* name;
        int32_t elems, bytes;
    };
    // Sizes from the block layouts: e.g. Q4_K = d, dmin (2+2) + 12 scale bytes + 128 nibble bytes.
    const Expect expected[] = {{0, "F32", 1, 4},      {1, "F16", 1, 2},       {2, "Q4_0", 32, 18},
                               {3, "Q4_1", 32, 20},   {6, "Q5_0", 32, 22},    {7, "Q5_1", 32, 24},
                               {8, "Q8_0", 32, 34},   {10, "Q2_K", 256, 84},  {11, "Q3_K", 256, 110},
                               {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176}, {14, "Q6_K", 256, 210},
                               {15, "Q8_K", 256, 292}, {30, "BF16", 1, 2}};
    for (const auto& e : expected) {
        CAPTURE(e.name);
        const DTypeInfo* info = dtype_info(e.id);
        REQUIRE(info != nullptr);
        CHECK(info->name == e.name);
        CHECK(info->block_elems == e.elems);
        CHECK(info->block_bytes == e.bytes);
    }
}

TEST_CASE("unknown and removed type ids are not in the table") {
    for (int32_t id : {4, 5, 31, 32, 33, 36, 37, 38, 99, -1}) {
        CAPTURE(id);
        CHECK(dtype_info(id) == nullptr);
    }
    CHECK(unknown_dtype_message(77) == "unknown tensor type id 77");
}

TEST_CASE("row sizes need whole blocks") {
    CHECK(row_bytes(12, 2560) == uint64_t{10 * 144});
    CHECK_FALSE(row_bytes(12, 576).has_value());  // 576 is not a multiple of 256
    CHECK(row_bytes(0, 7) == uint64_t{28});
    CHECK_FALSE(row_bytes(99, 32).has_value());
    CHECK(bits_per_weight(12) == doctest::Approx(4.5));
    CHECK(bits_per_weight(14) == doctest::Approx(6.5625));
}

TEST_CASE("dtype names parse case-insensitively") {
    CHECK(dtype_from_name("q4_k") == DType::Q4_K);
    CHECK(dtype_from_name("BF16") == DType::BF16);
    CHECK_FALSE(dtype_from_name("Q4_K_M").has_value());
}
