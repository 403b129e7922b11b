#include "trace.hpp"

#include <edgerun/dtype.hpp>
#include <edgerun/engine.hpp>
#include <edgerun/traffic.hpp>

namespace edgerun::cli {

void print_decode_trace(std::FILE* out, const Graph& decode, const WeightTable& weights, int64_t kv_len,
                        int32_t kv_type) {
    const StepTraffic step = decode_traffic(decode, weights, kv_len, kv_type);
    std::fprintf(out, "trace of one decode step (KV length %lld, KV %s):\n", (long long)kv_len, kv_type_name(kv_type));
    int gemv = 0;
    for (const OpTraffic& t : step.ops) {
        const bool matmul = t.op == ER_OP_MATMUL || t.op == ER_OP_MATMUL_MULTI || t.op == ER_OP_LOGITS;
        const char* layer_sep = t.layer >= 0 ? "L" : "";
        char layer[16];
        std::snprintf(layer, sizeof layer, "%s%d", layer_sep, t.layer);
        if (matmul) {
            std::fprintf(out, "[GEMV #%d] %-4s %-13s type=%d (%s) M=%lld K=%lld bytes=%llu  %s\n", gemv++,
                         t.layer >= 0 ? layer : "-", op_name(t.op), t.dtype,
                         std::string(dtype_name(static_cast<DType>(t.dtype))).c_str(), (long long)t.rows,
                         (long long)t.cols, (unsigned long long)t.weight_bytes, t.tensor.c_str());
        } else if (t.op == ER_OP_ATTENTION) {
            std::fprintf(out, "[%-9s] %-4s kv_len=%lld kv_bytes=%llu\n", op_name(t.op), layer, (long long)kv_len,
                         (unsigned long long)t.kv_bytes);
        } else {
            std::fprintf(out, "[%-9s] %-4s%s%s%s\n", op_name(t.op), t.layer >= 0 ? layer : "-",
                         t.tensor.empty() ? "" : " ", t.tensor.c_str(),
                         t.weight_bytes ? (" bytes=" + std::to_string(t.weight_bytes)).c_str() : "");
        }
    }
    std::fprintf(out, "totals: %zu ops, %d GEMV outputs, weights %.2f MiB, KV %.2f MiB, %.2f MiB read per token\n",
                 step.ops.size(), gemv, double(step.weight_bytes) / (1 << 20), double(step.kv_bytes) / (1 << 20),
                 double(step.total()) / (1 << 20));
}

}  // namespace edgerun::cli
