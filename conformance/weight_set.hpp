// Weights the op tests make: owned bytes and the tensor table a backend loads them from.
// Values are drawn from a seeded generator, so every run tests the same numbers.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/graph.hpp>

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace edgerun::conformance {

class WeightSet {
public:
    // A weight of `rows` rows of `cols` values of GGUF type `dtype`, from `values`
    // (cols * rows floats): quantized with core's quantizers where they exist; for the
    // types without one (Q2_K, Q3_K) random blocks with realistic scales.
    int32_t add(const std::string& name, int32_t dtype, int64_t cols, int64_t rows, const std::vector<float>& values,
                std::mt19937& rng);
    // A one-dimensional weight (norm gains, biases, rope factors).
    int32_t add_vector(const std::string& name, int32_t dtype, const std::vector<float>& values, std::mt19937& rng) {
        const int32_t index = add(name, dtype, int64_t(values.size()), 1, values, rng);
        descs_[size_t(index)].n_dims = 1;
        return index;
    }

    WeightTable table() const { return WeightTable(descs_); }
    const std::vector<er_tensor_desc>& descs() const { return descs_; }

private:
    std::deque<std::string> names_;
    std::deque<std::vector<uint8_t>> data_;
    std::vector<er_tensor_desc> descs_;
};

// n values of N(0, sd^2), with every 97th value made an outlier of 8 sd (activations of
// real models have a few: they stress per-block activation scales).
std::vector<float> random_values(size_t n, std::mt19937& rng, float sd = 1.0f, bool outliers = false);

// The weight types a model may hold that the suite tests (every type blocks.hpp dequantizes
// except the activation-only Q8_1 and Q8_K).
const std::vector<int32_t>& weight_types();

}  // namespace edgerun::conformance
