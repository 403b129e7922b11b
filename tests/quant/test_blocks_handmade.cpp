// blocks.hpp against blocks built by hand, with each expected value worked out from the
// GGUF format definition in the comments (not from the code under test).
//
// fp16 constants used: 0x3C00 = 1.0, 0x3800 = 0.5, 0x3400 = 0.25, 0xBC00 = -1.0.
#include <doctest/doctest.h>

#include <edgerun/quant/blocks.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace edgerun::quant;

namespace {

template <typename Block>
std::vector<float> decode(const Block& block, int32_t dtype, int n) {
    std::vector<float> out(n, NAN);
    REQUIRE(dequantize_row(dtype, &block, out.data(), n));
    return out;
}

}  // namespace

TEST_CASE("fp16 and bf16 conversions") {
    CHECK(fp16_to_fp32(0x3C00) == 1.0f);
    CHECK(fp16_to_fp32(0xC000) == -2.0f);
    CHECK(fp16_to_fp32(0x7BFF) == 65504.0f);              // largest finite half
    CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal: 2^-14 * 2^-10
    CHECK(fp16_to_fp32(0x0200) == std::ldexp(1.0f, -15));  // subnormal 0x200/0x400 * 2^-14
    CHECK(std::isinf(fp16_to_fp32(0x7C00)));
    CHECK(std::isnan(fp16_to_fp32(0x7E00)));
    CHECK(std::signbit(fp16_to_fp32(0x8000)));
    // Round to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> 1 (even).
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);
    // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 -> 1 + 2^-9 = 0x3C02.
    CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
    CHECK(fp32_to_fp16(65520.0f) == 0x7C00);  // rounds past 65504 -> inf
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);  // half of the smallest subnormal, ties to even 0
    CHECK(fp32_to_fp16(std::ldexp(3.0f, -26)) == 0x0001);  // 0.75 of it rounds up
    CHECK(bf16_to_fp32(0x3F80) == 1.0f);
    CHECK(bf16_to_fp32(0xC040) == -3.0f);
    CHECK(bf16_to_fp32(0x4049) == 3.140625f);  // 0x40490000: 1.5703125 * 2
    CHECK(fp32_to_bf16(3.14159265f) == 0x4049);
}

TEST_CASE("Q4_0: y = (nibble - 8) * d, low nibbles are weights 0..15, high nibbles 16..31") {
    BlockQ4_0 b{};
    b.d = 0x3800;  // 0.5
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | ((15 - j) << 4));
    auto y = decode(b, 2, 32);
    CHECK(y[0] == -4.0f);   // low(qs[0]) = 0: (0 - 8) * 0.5
    CHECK(y[5] == -1.5f);   // low(qs[5]) = 5: -3 * 0.5
    CHECK(y[15] == 3.5f);   // 7 * 0.5
    CHECK(y[16] == 3.5f);   // high(qs[0]) = 15
    CHECK(y[20] == 1.5f);   // high(qs[4]) = 11: 3 * 0.5
    CHECK(y[31] == -4.0f);  // high(qs[15]) = 0
}

TEST_CASE("Q4_1: y = nibble * d + m") {
    BlockQ4_1 b{};
    b.d = 0x3400;  // 0.25
    b.m = 0xBC00;  // -1
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t((15 - j) | (j << 4));
    auto y = decode(b, 3, 32);
    CHECK(y[0] == 2.75f);   // 15 * 0.25 - 1
    CHECK(y[10] == 0.25f);  // 5 * 0.25 - 1
    CHECK(y[15] == -1.0f);  // 0 * 0.25 - 1
    CHECK(y[16] == -1.0f);  // high(qs[0]) = 0
    CHECK(y[31] == 2.75f);  // high(qs[15]) = 15
}

TEST_CASE("Q5_0 / Q5_1: bit i of qh is the fifth bit of weight i") {
    // qh = 0x80000001: weights 0 and 31 get +16. qs[j] = j in both nibbles.
    BlockQ5_0 b{};
    b.d = 0x3800;  // 0.5
    const uint8_t qh[4] = {0x01, 0x00, 0x00, 0x80};
    std::memcpy(b.qh, qh, 4);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (j << 4));
    auto y = decode(b, 6, 32);
    CHECK(y[0] == 0.0f);    // (0 | 16) - 16 = 0
    CHECK(y[1] == -7.5f);   // 1 - 16 = -15, * 0.5
    CHECK(y[15] == -0.5f);  // 15 - 16
    CHECK(y[16] == -8.0f);  // high(qs[0]) = 0, bit 16 clear: -16 * 0.5
    CHECK(y[31] == 7.5f);   // high(qs[15]) = 15 | 16 = 31: 15 * 0.5

    BlockQ5_1 c{};
    c.d = 0x3800;  // 0.5
    c.m = 0x3C00;  // 1
    std::memcpy(c.qh, qh, 4);
    std::memcpy(c.qs, b.qs, 16);
    auto z = decode(c, 7, 32);
    CHECK(z[0] == 9.0f);    // 16 * 0.5 + 1
    CHECK(z[1] == 1.5f);    // 1 * 0.5 + 1
    CHECK(z[16] == 1.0f);   // 0 * 0.5 + 1
    CHECK(z[31] == 16.5f);  // 31 * 0.5 + 1
}

TEST_CASE("Q8_0: y = int8 * d") {
    BlockQ8_0 b{};
    b.d = 0x3400;  // 0.25
    for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(j - 16);
    b.qs[1] = -128;
    b.qs[2] = 127;
    auto y = decode(b, 8, 32);
    CHECK(y[0] == -4.0f);   // -16 * 0.25
    CHECK(y[1] == -32.0f);  // -128 * 0.25
    CHECK(y[2] == 31.75f);  // 127 * 0.25
    CHECK(y[16] == 0.0f);
    CHECK(y[31] == 3.75f);  // 15 * 0.25
}

TEST_CASE("Q2_K: 2-bit values, 4-bit scale (low) and min (high) per 16 weights") {
    // d = 0.5, dmin = 0.25; scales[k] = ((k + 1) & 15) | (k << 4): scale (k+1)%16, min k.
    // Weight i: half i/128, group (i%128)/32 (shift 2*group), byte qs[32*half + i%32].
    // Every qs byte is 0xE4 = 11 10 01 00b: groups 0..3 read 0, 1, 2, 3 ...
    BlockQ2_K b{};
    b.d = 0x3800;
    b.dmin = 0x3400;
    for (int k = 0; k < 16; ++k) b.scales[k] = uint8_t(((k + 1) & 15) | (k << 4));
    std::memset(b.qs, 0xE4, sizeof b.qs);
    b.qs[5] = 0x03;       // ... except half 0, l = 5: group 0 reads 3, the others 0
    b.qs[32 + 7] = 0xC0;  // and half 1, l = 7: group 3 reads 3, the others 0
    auto y = decode(b, 10, 256);
    CHECK(y[0] == 0.0f);     // q 0, scale 1, min 0
    CHECK(y[5] == 1.5f);     // q 3, scale 1, min 0: 0.5 * 1 * 3
    CHECK(y[37] == -0.5f);   // group 1 of byte 5: q 0; sub-block 2: scale 3, min 2: -0.25 * 2
    CHECK(y[40] == 1.0f);    // q 1, sub-block 2: 0.5 * 3 * 1 - 0.25 * 2
    CHECK(y[100] == 9.0f);   // q 3, sub-block 6 (scale 7, min 6): 10.5 - 1.5
    CHECK(y[130] == -2.0f);  // q 0, sub-block 8 (scale 9, min 8): -0.25 * 8
    CHECK(y[135] == -2.0f);  // half 1 l 7 group 0 reads 0
    CHECK(y[200] == 10.0f);  // q 2, sub-block 12 (scale 13, min 12): 13 - 3
    CHECK(y[231] == 19.0f);  // half 1 l 7 group 3: q 3, sub-block 14 (scale 15, min 14): 22.5 - 3.5
    CHECK(y[255] == -3.75f); // q 3, sub-block 15: scale 16 & 15 = 0, min 15: -0.25 * 15
}

TEST_CASE("Q3_K: 2 low bits + high bit from hmask, sixteen signed 6-bit scales") {
    // Raw 6-bit scales s_j = 4j + 3 (signed value 4j - 29). Low nibbles: bytes 0..7 hold
    // s_j (j < 8) low and s_{j+8} high: both equal 4j+3 mod 16 -> 0x33, 0x77, 0xBB, 0xFF.
    // Bytes 8..11 hold the top two bits of s_m, s_{m+4}, s_{m+8}, s_{m+12} at shifts
    // 0, 2, 4, 6: tops are 0, 1, 2, 3 -> 0xE4.
    BlockQ3_K b{};
    b.d = 0x3800;  // 0.5
    const uint8_t packed[12] = {0x33, 0x77, 0xBB, 0xFF, 0x33, 0x77, 0xBB, 0xFF, 0xE4, 0xE4, 0xE4, 0xE4};
    std::memcpy(b.scales, packed, 12);
    std::memset(b.qs, 0xE4, sizeof b.qs);     // group g reads low bits g
    std::memset(b.hmask, 0x0F, sizeof b.hmask);  // chunks 0..3 have the high bit (q = low), 4..7 not (low - 4)
    auto y = decode(b, 11, 256);
    CHECK(y[0] == 0.0f);      // q 0
    CHECK(y[40] == -10.5f);   // chunk 1: q 1; sub-block 2: 8 - 29 = -21: 0.5 * -21
    CHECK(y[100] == -7.5f);   // chunk 3: q 3; sub-block 6: -5: 0.5 * -5 * 3
    CHECK(y[130] == -6.0f);   // chunk 4: q 0 - 4; sub-block 8: 3: 0.5 * 3 * -4
    CHECK(y[180] == -22.5f);  // chunk 5: q 1 - 4; sub-block 11: 15: 0.5 * 15 * -3
    CHECK(y[255] == -15.5f);  // chunk 7: q 3 - 4; sub-block 15: 31: 0.5 * 31 * -1
}

namespace {
// Sub-block scales {1, 2, 3, 4, 17, 33, 50, 63} and mins {0, 5, 10, 63, 20, 40, 1, 48}
// packed as K-quants do: bytes 0..3 scale_j low 6 bits | top 2 bits of scale_{j+4};
// bytes 4..7 min_j | top bits of min_{j+4}; bytes 8..11 scale_{j+4} & 15 | (min_{j+4} & 15) << 4.
const uint8_t kPackedScales[12] = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x85, 0x0A, 0xFF, 0x41, 0x81, 0x12, 0x0F};
}  // namespace

TEST_CASE("K-quant 6-bit scale unpacking") {
    const uint8_t want_scale[8] = {1, 2, 3, 4, 17, 33, 50, 63}, want_min[8] = {0, 5, 10, 63, 20, 40, 1, 48};
    for (int j = 0; j < 8; ++j) {
        uint8_t s, m;
        q4k_scale_min(j, kPackedScales, &s, &m);
        CAPTURE(j);
        CHECK(s == want_scale[j]);
        CHECK(m == want_min[j]);
    }
}

TEST_CASE("Q4_K: y = d * scale_j * nibble - dmin * min_j per 32-weight sub-block") {
    // qs[b] = (b % 16) | ((15 - b % 16) << 4). Weight i: sub-block j = i / 32, byte
    // qs[32 * (i / 64) + i % 32], low nibble for even j, high for odd j. d 0.5, dmin 0.25.
    BlockQ4_K b{};
    b.d = 0x3800;
    b.dmin = 0x3400;
    std::memcpy(b.scales, kPackedScales, 12);
    for (int i = 0; i < 128; ++i) b.qs[i] = uint8_t((i % 16) | ((15 - i % 16) << 4));
    auto y = decode(b, 12, 256);
    CHECK(y[0] == 0.0f);       // j 0: nibble 0
    CHECK(y[3] == 1.5f);       // j 0: 0.5 * 1 * 3
    CHECK(y[35] == 10.75f);    // j 1: high(qs[3]) = 12: 0.5 * 2 * 12 - 0.25 * 5
    CHECK(y[70] == 6.5f);      // j 2: low(qs[38]) = 6: 0.5 * 3 * 6 - 0.25 * 10
    CHECK(y[127] == -15.75f);  // j 3: high(qs[63]) = 0: -0.25 * 63
    CHECK(y[150] == 46.0f);    // j 4: low(qs[86]) = 6: 0.5 * 17 * 6 - 0.25 * 20
    CHECK(y[170] == 72.5f);    // j 5: high(qs[74]) = 5: 0.5 * 33 * 5 - 0.25 * 40
    CHECK(y[200] == 199.75f);  // j 6: low(qs[104]) = 8: 0.5 * 50 * 8 - 0.25 * 1
    CHECK(y[255] == -12.0f);   // j 7: high(qs[127]) = 0: -0.25 * 48
}

TEST_CASE("Q5_K: Q4_K plus a fifth bit: bit j of qh[i % 32] for sub-block j") {
    // qh[l] = 0xAA for l < 16 (odd sub-blocks get +16), 0x01 for l >= 16 (sub-block 0 only).
    BlockQ5_K b{};
    b.d = 0x3800;
    b.dmin = 0x3400;
    std::memcpy(b.scales, kPackedScales, 12);
    for (int i = 0; i < 128; ++i) b.qs[i] = uint8_t((i % 16) | ((15 - i % 16) << 4));
    for (int l = 0; l < 32; ++l) b.qh[l] = l < 16 ? 0xAA : 0x01;
    auto y = decode(b, 13, 256);
    CHECK(y[0] == 0.0f);       // j 0, l 0: bit 0 of 0xAA clear
    CHECK(y[3] == 1.5f);       // 0.5 * 1 * 3
    CHECK(y[20] == 10.0f);     // j 0, l 20: bit 0 of 0x01 set: (4 + 16) * 0.5
    CHECK(y[35] == 26.75f);    // j 1, l 3: bit 1 set: (12 + 16) * 0.5 * 2 - 1.25
    CHECK(y[111] == 16.25f);   // j 3, l 15: bit 3 set, high(qs[47]) = 0: 16 * 0.5 * 4 - 15.75
    CHECK(y[127] == -15.75f);  // j 3, l 31: bit 3 of 0x01 clear
    CHECK(y[239] == 492.0f);   // j 7, l 15: bit 7 set, high(qs[111]) = 0: 16 * 0.5 * 63 - 12
    CHECK(y[255] == -12.0f);   // j 7, l 31: clear
}

TEST_CASE("Q6_K: 4 low bits from ql, 2 high bits from qh, minus 32, int8 scale per 16") {
    // Weight i: half h = i/128, group g = (i%128)/32, l = i%32. Low bits: g 0: ql[64h+l]
    // low nibble, g 1: ql[64h+32+l] low, g 2: ql[64h+l] high, g 3: ql[64h+32+l] high.
    // High bits: (qh[32h+l] >> 2g) & 3. ql[b] = (b%16) | ((b%16 ^ 15) << 4); qh = 0xE4
    // (group g reads g) except qh[5] = 0x1B (g 0 reads 3, g 3 reads 0).
    // scales[k] = k - 8, d = 0.5.
    BlockQ6_K b{};
    b.d = 0x3800;
    for (int i = 0; i < 128; ++i) b.ql[i] = uint8_t((i % 16) | (((i % 16) ^ 15) << 4));
    std::memset(b.qh, 0xE4, sizeof b.qh);
    b.qh[5] = 0x1B;
    for (int k = 0; k < 16; ++k) b.scales[k] = int8_t(k - 8);
    auto y = decode(b, 14, 256);
    CHECK(y[0] == 128.0f);    // low 0, high 0: -32; scale -8: 0.5 * -8 * -32
    CHECK(y[5] == -84.0f);    // low 5, high 3: 5 + 48 - 32 = 21; scale -8
    CHECK(y[37] == -15.0f);   // g 1 l 5: low(ql[37]) = 5, high 2 (from 0x1B): 5; scale -6
    CHECK(y[38] == 30.0f);    // g 1 l 6: low(ql[38]) = 6, high 1: -10; scale -6
    CHECK(y[70] == -18.0f);   // g 2: high(ql[6]) = 9, high 2: 9; scale -4
    CHECK(y[101] == 22.0f);   // g 3 l 5: high(ql[37]) = 10, high 0: -22; scale -2
    CHECK(y[127] == -8.0f);   // g 3: high(ql[63]) = 0, high 3: 16; scale -1
    CHECK(y[150] == -13.0f);  // h 1 g 0: low(ql[86]) = 6, high 0: -26; scale 1
    CHECK(y[200] == 14.0f);   // h 1 g 2: high(ql[72]) = 7, high 2: 7; scale 4
    CHECK(y[255] == 56.0f);   // h 1 g 3: high(ql[127]) = 0, high 3: 16; scale 7
}

TEST_CASE("plain rows and unknown types") {
    const uint16_t halves[3] = {0x3C00, 0xC000, 0x3555};  // 1, -2, 0.333251953125
    float y[3];
    REQUIRE(dequantize_row(1, halves, y, 3));
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == -2.0f);
    CHECK(y[2] == 0.333251953125f);  // 0x3555: (1 + 0x155/1024) * 2^-2
    const uint16_t bf[2] = {0x3F80, 0xBFC0};  // 1, -1.5
    REQUIRE(dequantize_row(30, bf, y, 2));
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == -1.5f);
    CHECK_FALSE(dequantize_row(16, halves, y, 256));  // IQ2_XXS: not decoded here
}
