// Shared by cpu_ref's tests: loading the plugin, synthetic weights of any GGUF type, and
// running one graph through the ABI exactly as a host does.
#pragma once

#include <doctest/doctest.h>

#include "../check_throws.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/graph.hpp>
#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/quant/blocks.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cpu_ref_test {

using namespace edgerun;

inline const Plugin& cpu_ref_plugin() {
    static PluginRegistry registry = [] {
        PluginRegistry r;
        r.load_file(std::string(EDGERUN_BUILD_PLUGIN_DIR) + "/libedgerun_cpu_ref.so");
        return r;
    }();
    const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "cpu_ref");
    REQUIRE_MESSAGE(plugin != nullptr, "cpu_ref plugin did not load");
    return *plugin;
}

inline Backend make_backend(int threads, const char* options = nullptr) {
    auto params = sized<er_backend_params>();
    params.n_threads = threads;
    params.options = options;
    return Backend(cpu_ref_plugin(), params);
}

// Byte offsets of the fp16 scale fields of each quantized block type.
inline std::vector<int> half_fields(int32_t dtype) {
    switch (dtype) {
        case 2: case 6: case 8: return {0};
        case 3: case 7: case 12: case 13: return {0, 2};
        case 10: return {80, 82};
        case 11: return {108};
        case 14: return {208};
        default: return {};
    }
}

// Weights a test owns: bytes plus the tensor table a model is loaded from.
class Weights {
public:
    // A weight of `rows` rows of `cols` values of `dtype`: random bytes for quantized
    // types with scales in [scale_lo, scale_hi], N(0, 1) * spread for plain types.
    int32_t add_random(const std::string& name, int32_t dtype, int64_t cols, int64_t rows, std::mt19937& rng,
                       float spread = 0.5f, float scale_lo = 0.002f, float scale_hi = 0.02f) {
        const DTypeInfo* info = dtype_info(dtype);
        REQUIRE(info != nullptr);
        const uint64_t row_size = *row_bytes(dtype, cols);
        std::vector<uint8_t> bytes(row_size * rows);
        if (dtype == 0 || dtype == 1 || dtype == 30) {
            std::normal_distribution<float> normal(0.0f, spread);
            for (int64_t i = 0; i < cols * rows; ++i) {
                const float v = normal(rng);
                if (dtype == 0) std::memcpy(&bytes[4 * i], &v, 4);
                const uint16_t h = dtype == 1 ? quant::fp32_to_fp16(v) : quant::fp32_to_bf16(v);
                if (dtype != 0) std::memcpy(&bytes[2 * i], &h, 2);
            }
        } else {
            std::uniform_int_distribution<int> byte(0, 255);
            std::uniform_real_distribution<float> scale(scale_lo, scale_hi);
            for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
            for (size_t block = 0; block < bytes.size() / info->block_bytes; ++block)
                for (int off : half_fields(dtype)) {
                    // Q4_1/Q5_1/K-quant mins: any sign; scales: positive.
                    float s = scale(rng);
                    if (off == 2 && (dtype == 3 || dtype == 7)) s = -s * 8;
                    const uint16_t h = quant::fp32_to_fp16(s);
                    std::memcpy(&bytes[block * info->block_bytes + off], &h, 2);
                }
        }
        return add_bytes(name, dtype, cols, rows, std::move(bytes));
    }

    int32_t add_f32(const std::string& name, int64_t cols, int64_t rows, const std::vector<float>& values) {
        REQUIRE(static_cast<int64_t>(values.size()) == cols * rows);
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return add_bytes(name, 0, cols, rows, std::move(bytes));
    }

    int32_t add_bytes(const std::string& name, int32_t dtype, int64_t cols, int64_t rows, std::vector<uint8_t> bytes) {
        names_.push_back(name);
        data_.push_back(std::move(bytes));
        er_tensor_desc t{};
        t.name = er_str{names_.back().data(), names_.back().size()};
        t.dtype = dtype;
        t.n_dims = rows == 1 ? 1 : 2;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.ne[2] = t.ne[3] = 1;
        t.data = data_.back().data();
        t.nbytes = data_.back().size();
        descs_.push_back(t);
        return static_cast<int32_t>(descs_.size() - 1);
    }

    // The weight dequantized to F32 as the format defines it (blocks.hpp), row-major.
    std::vector<float> dequantized(int32_t index) const {
        const er_tensor_desc& t = descs_[index];
        std::vector<float> out(static_cast<size_t>(t.ne[0] * t.ne[1]));
        const uint64_t row_size = *row_bytes(t.dtype, t.ne[0]);
        for (int64_t r = 0; r < t.ne[1]; ++r)
            REQUIRE(quant::dequantize_row(t.dtype, static_cast<const uint8_t*>(t.data) + r * row_size,
                                          out.data() + r * t.ne[0], t.ne[0]));
        return out;
    }

    WeightTable table() const { return WeightTable(descs_); }
    const std::vector<er_tensor_desc>& descs() const { return descs_; }

private:
    std::deque<std::string> names_;
    std::deque<std::vector<uint8_t>> data_;
    std::vector<er_tensor_desc> descs_;
};

inline er_context_params context_params(int32_t n_ctx, int32_t n_batch, int32_t kv_type = ER_KV_F32, int32_t n_layer = 0,
                                        int32_t n_head_kv = 0, int32_t head_dim_k = 0, int32_t head_dim_v = 0) {
    auto p = sized<er_context_params>();
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.kv_type = kv_type;
    p.n_layer = n_layer;
    p.n_head_kv = n_head_kv;
    p.head_dim_k = head_dim_k;
    p.head_dim_v = head_dim_v;
    return p;
}

// Backend, model and context for a weight table, kept together.
struct Session {
    Backend backend;
    BackendModel model;
    BackendContext context;

    Session(const Weights& weights, const er_context_params& params, int threads = 2, const char* options = nullptr)
        : backend(make_backend(threads, options)), model(backend, model_params(weights)), context(model, params) {}

    static er_model_params model_params(const Weights& weights) {
        auto p = sized<er_model_params>();
        p.weights = weights.descs().data();
        p.n_weights = static_cast<int64_t>(weights.descs().size());
        return p;
    }
};

inline std::vector<float> random_vector(size_t n, std::mt19937& rng, float spread = 1.0f) {
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    return v;
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// max |got - want| / (scale), for messages and bounds.
inline double max_abs_diff(const std::vector<float>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    double m = 0;
    for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(double(got[i]) - want[i]));
    return m;
}

}  // namespace cpu_ref_test
