#include "weight_set.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/quant/blocks.hpp>
#include <edgerun/quant/quantize.hpp>

#include <cstring>

namespace edgerun::conformance {

namespace {

// Q2_K and Q3_K have no quantizer in core: random quant bits under random scales of the
// size a real tensor has (d about 1e-2, so values of order 0.1-1).
void random_k_blocks(int32_t dtype, std::vector<uint8_t>& bytes, std::mt19937& rng) {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.005f, 0.02f);
    for (auto& b : bytes) b = uint8_t(byte(rng));
    const size_t block = dtype == int32_t(DType::Q2_K) ? sizeof(quant::BlockQ2_K) : sizeof(quant::BlockQ3_K);
    const std::vector<size_t> halves = dtype == int32_t(DType::Q2_K) ? std::vector<size_t>{80, 82} : std::vector<size_t>{108};
    for (size_t b = 0; b < bytes.size() / block; ++b)
        for (size_t off : halves) {
            const uint16_t h = quant::fp32_to_fp16(scale(rng));
            std::memcpy(&bytes[b * block + off], &h, 2);
        }
}

}  // namespace

int32_t WeightSet::add(const std::string& name, int32_t dtype, int64_t cols, int64_t rows,
                       const std::vector<float>& values, std::mt19937& rng) {
    const auto row_size = row_bytes(dtype, cols);
    if (!row_size) throw Error("weight " + name + ": " + std::to_string(cols) + " values are not whole blocks");
    std::vector<uint8_t> bytes(*row_size * uint64_t(rows));
    if (quant::can_quantize(dtype)) {
        quant::quantize_rows(dtype, values.data(), bytes.data(), rows, cols);
    } else if (dtype == int32_t(DType::Q2_K) || dtype == int32_t(DType::Q3_K)) {
        random_k_blocks(dtype, bytes, rng);
    } else {
        throw Error("weight " + name + ": cannot make type " + std::to_string(dtype));
    }
    names_.push_back(name);
    data_.push_back(std::move(bytes));
    er_tensor_desc t{};
    t.name = er_str{names_.back().data(), names_.back().size()};
    t.dtype = dtype;
    t.n_dims = 2;
    t.ne[0] = cols;
    t.ne[1] = rows;
    t.ne[2] = t.ne[3] = 1;
    t.data = data_.back().data();
    t.nbytes = data_.back().size();
    descs_.push_back(t);
    return int32_t(descs_.size() - 1);
}

std::vector<float> random_values(size_t n, std::mt19937& rng, float sd, bool outliers) {
    std::normal_distribution<float> normal(0.0f, sd);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = outliers && i % 97 == 13 ? 8 * sd : normal(rng);
    return v;
}

const std::vector<int32_t>& weight_types() {
    static const std::vector<int32_t> types = [] {
        std::vector<int32_t> out;
        for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                        DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K})
            out.push_back(int32_t(t));
        return out;
    }();
    return types;
}

}  // namespace edgerun::conformance
