#include "launch_profile.hpp"

#include "weight_layout.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <algorithm>
#include <cstdio>

namespace edgerun::cuda_orin {
namespace {

const char* entry_name(Kernel k) {
    switch (k) {
        case Kernel::prepare: return "prepare";
        case Kernel::gemv: return "gemv";
        case Kernel::attention: return "attention (split)";
        case Kernel::attention_mma: return "attention (split on mma)";
        case Kernel::attention_tiles: return "attention (tiled)";
        case Kernel::widen_kv: return "widen_kv";
        case Kernel::embed: return "embed";
        case Kernel::rms_norm: return "rms_norm";
        case Kernel::rope_rows: return "rope_rows";
        case Kernel::elementwise: return "elementwise";
        case Kernel::kv_append: return "kv_append";
        case Kernel::rope_append: return "rope_append";
        case Kernel::attention_rows: return "attention_rows";
        case Kernel::dequantize_rows: return "dequantize_rows";
        case Kernel::half_rows: return "half_rows";
        case Kernel::gemm: return "gemm";
    }
    return "?";
}

// A per-step average: whole numbers as such, others with one decimal.
std::string per_step(double value) {
    char text[32];
    std::snprintf(text, sizeof text, value == double(int64_t(value)) ? "%.0f" : "%.1f", value);
    return text;
}

// MB of 10^6 bytes and GB/s of 10^9, as bandwidths are quoted; "-" for launches not counted.
std::string megabytes(double bytes) {
    if (bytes <= 0) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", bytes / 1e6);
    return text;
}

std::string gigabytes_per_second(double bytes, double ms) {
    if (bytes <= 0 || ms <= 0) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", bytes / (ms * 1e6));
    return text;
}

// profile_skip's names of the Device's entries (kernels_named), in Kernel's order.
struct NamedKernels {
    const char* name;
    KernelSet kernels;
};
constexpr NamedKernels kNamedKernels[] = {
    {"prepare", kernel_bit(Kernel::prepare)},
    {"gemv", kernel_bit(Kernel::gemv)},
    {"attention", kernel_bit(Kernel::attention) | kernel_bit(Kernel::attention_mma)},
    {"attention_tiles", kernel_bit(Kernel::attention_tiles)},
    {"widen_kv", kernel_bit(Kernel::widen_kv)},
    {"embed", kernel_bit(Kernel::embed)},
    {"rms_norm", kernel_bit(Kernel::rms_norm)},
    {"rope_rows", kernel_bit(Kernel::rope_rows)},
    {"elementwise", kernel_bit(Kernel::elementwise)},
    {"kv_append", kernel_bit(Kernel::kv_append)},
    {"rope_append", kernel_bit(Kernel::rope_append)},
    {"attention_rows", kernel_bit(Kernel::attention_rows)},
    {"dequantize_rows", kernel_bit(Kernel::dequantize_rows)},
    {"half_rows", kernel_bit(Kernel::half_rows)},
    {"gemm", kernel_bit(Kernel::gemm)},
};

}  // namespace

KernelSet kernels_named(std::string_view name) {
    for (const NamedKernels& n : kNamedKernels)
        if (name == n.name) return n.kernels;
    return 0;
}

std::string kernel_names() {
    std::string names;
    for (const NamedKernels& n : kNamedKernels) {
        if (!names.empty()) names += ',';
        names += n.name;
    }
    return names;
}

std::string LaunchKind::label() const {
    if (merged) {  // "attention (split + merge)"
        const std::string name = entry_name(kernel);
        return name.substr(0, name.size() - 1) + " + merge)";
    }
    if (kernel != Kernel::gemv) return entry_name(kernel);
    char text[96];
    std::snprintf(text, sizeof text, "gemv %d->%lld, %d output%s, %d row%s%s", width, static_cast<long long>(out_rows),
                  outputs, outputs == 1 ? "" : "s", x_rows, x_rows == 1 ? "" : "s",
                  rope_appended ? " + rope_append" : "");
    return text;
}

LaunchKind gemv_kind(const GemvLaunch& launch) {
    LaunchKind kind(Kernel::gemv);
    kind.x_rows = launch.n_x_rows;
    kind.outputs = launch.n_outputs;
    kind.width = launch.x.n;
    kind.rope_appended = launch.rope_append_tickets != nullptr;
    const uint64_t rows_of_x = uint64_t(std::max(launch.n_x_rows, 1));
    // x once per launch: floats, or bytes and a word pair per 16 (q8_segment_words).
    kind.bytes = rows_of_x * (launch.x.q8.q ? uint64_t(launch.x.n_pad) / 16 * (16 + sizeof(Words2)) : uint64_t(launch.x.n_pad) * 4);
    const bool swiglu = launch.epilogue == kEpilogueSwiGLU;  // two weights, one y
    for (int32_t j = 0; j < launch.n_outputs && j < kMaxGemvOutputs; ++j) {
        const GemvOutput& out = launch.out[j];
        kind.out_rows += out.w.n_rows;
        kind.bytes += packed_layout(out.w.type, out.w.n_rows, out.w.n_cols).total_bytes;
        if (swiglu && j > 0) continue;
        kind.bytes += rows_of_x * uint64_t(out.w.n_rows) * ((out.y_is_f16 ? 2 : 4) + (out.residual ? 4 : 0));
    }
    return kind;
}

// Each cached position once per sequence (positions_read) even for the tiled kernel,
// whose tiles of one sequence each read up to their own longest row.
LaunchKind attention_kind(const AttentionParams& p) {
    LaunchKind kind(p.tiles ? Kernel::attention_tiles : p.mma ? Kernel::attention_mma : Kernel::attention);
    kind.merged = attention_merges(p);
    const KvCacheLayer& c = p.cache;
    const uint64_t values = uint64_t(std::max<int64_t>(p.positions_read, 0)) * uint64_t(c.n_head_kv) * uint64_t(c.head_dim);
    const uint64_t kv = 2 * (values * uint64_t(kv_value_bytes(c.type)) + (c.type == kKvQ8 ? values / 32 * 2 : 0));
    const uint64_t q_and_out = 2 * uint64_t(p.n_rows) * uint64_t(p.n_head) * uint64_t(c.head_dim) * 4;
    kind.bytes = kv + q_and_out;
    return kind;
}

void LaunchProfile::add_step(int32_t rows, int64_t kernels, const std::vector<TimedLaunch>& times, double wall_ms) {
    Steps& s = rows == 1 ? decode_ : other_;
    ++s.steps;
    s.kernels += kernels;
    if (times.empty()) return;
    ++s.timed;
    s.wall_ms += wall_ms;
    for (const TimedLaunch& t : times) {
        Totals& totals = s.by_kind[t.kind];
        totals.kernels += t.kind.kernels();
        totals.ms += t.ms;
        totals.bytes += double(t.kind.bytes);
        s.kernel_ms += t.ms;
        s.bytes += double(t.kind.bytes);
    }
}

std::string LaunchProfile::launches_per_step() const {
    auto average = [](const Steps& s) { return per_step(double(s.kernels) / double(s.steps)); };
    if (decode_.steps && other_.steps)
        return average(decode_) + " launches per decode step, " + average(other_) + " per prefill step";
    if (decode_.steps) return average(decode_) + " launches per step";
    if (other_.steps) return average(other_) + " launches per step";
    return "";
}

// Launch kinds by total time, largest first; "launches" are kernel launches (a split
// attention launch is two kernels). Shares are of the summed kernel time, which leaves out
// the gaps between launches: the wall time per step says how large they are.
void LaunchProfile::log_tables() const {
    for (const Steps* s : {&decode_, &other_}) {
        if (s->timed == 0) continue;
        const double n = double(s->timed);
        sdk::logf(ER_LOG_INFO,
                  "cuda_orin: launch profile of %lld %s steps (%s): %.3f ms of kernel time per step, %.3f ms wall "
                  "per step (launch to synchronized)",
                  static_cast<long long>(s->timed), s == &decode_ ? "decode" : "prefill",
                  s == &decode_ ? "one row" : "several rows", s->kernel_ms / n, s->wall_ms / n);
        sdk::logf(ER_LOG_INFO, "cuda_orin:   %-44s %13s %11s %11s %7s %11s %9s", "launch", "launches/step", "total ms",
                  "ms/step", "share", "MB/step", "GB/s");
        std::vector<std::pair<LaunchKind, Totals>> rows(s->by_kind.begin(), s->by_kind.end());
        std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
        int64_t timed_kernels = 0;
        for (const auto& [kind, totals] : rows) {
            sdk::logf(ER_LOG_INFO, "cuda_orin:   %-44s %13s %11.3f %11.4f %6.1f%% %11s %9s", kind.label().c_str(),
                      per_step(double(totals.kernels) / n).c_str(), totals.ms, totals.ms / n,
                      s->kernel_ms > 0 ? 100.0 * totals.ms / s->kernel_ms : 0.0,
                      megabytes(totals.bytes / n).c_str(), gigabytes_per_second(totals.bytes, totals.ms).c_str());
            timed_kernels += totals.kernels;
        }
        sdk::logf(ER_LOG_INFO, "cuda_orin: launches per step: %s", per_step(double(timed_kernels) / n).c_str());
        sdk::logf(ER_LOG_INFO,
                  "cuda_orin: bytes per step: %s MB counted (GEMVs and attention); %s GB/s over the kernel time, "
                  "%s GB/s over the wall time",
                  megabytes(s->bytes / n).c_str(), gigabytes_per_second(s->bytes, s->kernel_ms).c_str(),
                  gigabytes_per_second(s->bytes, s->wall_ms).c_str());
    }
}

}  // namespace edgerun::cuda_orin
