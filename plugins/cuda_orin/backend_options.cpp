// The backend's option table and its one-line errors (backend_options.hpp).
#include "backend_options.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <string>
#include <vector>

namespace edgerun::cuda_orin {
namespace {

using sdk::Failure;

[[noreturn]] void refuse(const std::string& line) { throw Failure(ER_E_INVALID_ARGUMENT, line); }

// "option KEY: 'VALUE' is not TAKES", the value cut to 40 characters.
[[noreturn]] void wrong_value(std::string_view key, std::string_view value, const std::string& takes) {
    const std::string shown = value.size() <= 40 ? std::string(value) : std::string(value.substr(0, 37)) + "...";
    refuse("option " + std::string(key) + ": '" + shown + "' is not " + takes);
}

// "a, b or c".
std::string one_of(const std::vector<std::string_view>& values) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i)
        text += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::string(values[i]);
    return text;
}

// A whole number from `low` to `high`, else wrong_value's line with `takes`.
int32_t whole_number(std::string_view key, std::string_view value, int32_t low, int32_t high, const std::string& takes) {
    int32_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < low || n > high) wrong_value(key, value, takes);
    return n;
}

int32_t rows(std::string_view key, std::string_view value) {
    return whole_number(key, value, 0, 65536, "a number of rows from 0 (never) to 65536");
}

// profile_skip=ENTRY[+ENTRY...]: launch_profile.hpp's names of the Device's entries.
KernelSet launches(std::string_view value) {
    KernelSet set = 0;
    for (std::string_view rest = value;;) {
        const size_t plus = rest.find('+');
        const std::string_view name = rest.substr(0, plus);
        const KernelSet named = kernels_named(name);
        if (!named) wrong_value("profile_skip", name, "a launch (known: " + kernel_names() + ", '+' between)");
        set |= named;
        if (plus == std::string_view::npos) return set;
        rest.remove_prefix(plus + 1);
    }
}

// A key, and what a value of it does to the backend (or to what create() does once the
// device is open); a value it does not take throws wrong_value's line.
using Apply = std::function<void(std::string_view value, Backend&, OpenOptions&)>;
struct Option {
    const char* key;
    Apply apply;
};

// key=0|1 into a field (bool or std::optional<bool>).
template <class Field>
Option flag(const char* key, Field Backend::*field) {
    return {key, [key, field](std::string_view value, Backend& b, OpenOptions&) {
                if (value != "0" && value != "1") wrong_value(key, value, "0 or 1");
                b.*field = value == "1";
            }};
}

// key=one of `values`: set(backend, options, its index).
Option choice(const char* key, std::vector<std::string_view> values,
              std::function<void(Backend&, OpenOptions&, size_t)> set) {
    return {key, [key, values, set](std::string_view value, Backend& b, OpenOptions& o) {
                for (size_t i = 0; i < values.size(); ++i)
                    if (value == values[i]) return set(b, o, i);
                wrong_value(key, value, one_of(values));
            }};
}

// Every option, in the order the unknown-key line lists them.
const std::vector<Option>& options() {
    static const std::vector<Option> all = {
        flag("graphs", &Backend::use_graphs),
        flag("fuse", &Backend::fuse),
        flag("pdl", &Backend::pdl),
        flag("prefetch", &Backend::prefetch),
        flag("profile", &Backend::profile),
        {"profile_skip",
         [](std::string_view v, Backend& b, OpenOptions& o) {
             b.profile_skip = launches(v);
             o.profile_skip = "profile_skip=" + std::string(v);
         }},
        choice("activations", {"q8", "f32"}, [](Backend& b, OpenOptions&, size_t i) { b.q8_activations = i == 0; }),
        flag("stage_x", &Backend::stage_x),
        choice("gemm", {"f16", "f32"}, [](Backend& b, OpenOptions&, size_t i) { b.gemm_f16 = i == 0; }),
        {"gemm_rows", [](std::string_view v, Backend& b, OpenOptions&) { b.gemm_rows = rows("gemm_rows", v); }},
        {"gemm_tile_kib",
         [](std::string_view v, Backend& b, OpenOptions&) {
             b.gemm_tile_bytes = uint64_t(whole_number("gemm_tile_kib", v, 1, 4 << 20, "a size in KiB from 1 to 4194304"))
                                 << 10;
         }},
        flag("mma_attention", &Backend::mma_attention),
        {"tiled_attention",
         [](std::string_view v, Backend& b, OpenOptions&) { b.tiled_attention_rows = rows("tiled_attention", v); }},
        choice("tiled_attention_stages", {"1", "2"},
               [](Backend& b, OpenOptions&, size_t i) { b.tiled_attention_stages = int32_t(i) + 1; }),
        choice("attention_merge", {"kernel", "last_block"},
               [](Backend& b, OpenOptions&, size_t i) { b.merge_in_split_kernel = i == 1; }),
        flag("attention_prefetch", &Backend::attention_prefetch),
        flag("attention_pipeline", &Backend::attention_pipeline),
        flag("merge_q8", &Backend::merge_q8),
        flag("widen_kv", &Backend::widen_kv),
        choice("rope_append", {"kernel", "gemv"},
               [](Backend& b, OpenOptions&, size_t i) { b.rope_append_in_gemv = i == 1; }),
        choice("prepare", {"launch", "gemv"}, [](Backend& b, OpenOptions&, size_t i) { b.prepare_in_gemv = i == 1; }),
        {"gemv_rows_per_warp",
         [](std::string_view v, Backend& b, OpenOptions&) {
             const int32_t n = rows("gemv_rows_per_warp", v);
             if (n > kGemvMaxRowsPerWarp)
                 refuse("option gemv_rows_per_warp: " + std::to_string(n) + " is more than " +
                        std::to_string(kGemvMaxRowsPerWarp) + " (0: the plan chooses)");
             b.gemv_rows_per_warp = n;
         }},
        {"gemv_warps_per_row",
         [](std::string_view v, Backend& b, OpenOptions&) {
             const int32_t n = v.size() == 1 ? v[0] - '0' : -1;
             if (!valid_asked_warps_per_row(n)) wrong_value("gemv_warps_per_row", v, "1, 2, 4 or 8 (0: the plan chooses)");
             b.gemv_warps_per_row = n;
         }},
        choice("gemv_tasks_in_flight", {"1", "2", "4"},
               [](Backend& b, OpenOptions&, size_t i) { b.gemv_tasks_in_flight = int32_t(1) << i; }),
        flag("gemv_load_ahead", &Backend::gemv_load_ahead),
        choice("gemv_kernels", {"generic", "typed", "typed_4_blocks"},
               [](Backend& b, OpenOptions&, size_t i) {
                   b.gemv_typed_kernels = i != 0;
                   b.gemv_typed_blocks_per_sm = i == 2 ? 4 : 3;
               }),
        choice("gemv_pairs", {"none", "swiglu", "all"},
               [](Backend& b, OpenOptions&, size_t i) {
                   b.gemv_swiglu_pairs = i != 0;
                   b.gemv_row_pairs = i == 2;
               }),
        choice("gemv_ring", {"0", "2", "3"},
               [](Backend& b, OpenOptions&, size_t i) { b.gemv_ring_depth = i == 0 ? 0 : int32_t(i) + 1; }),
        choice("weights", {"shared", "device"}, [](Backend&, OpenOptions& o, size_t i) { o.weights_shared = i == 0; }),
    };
    return all;
}

// "unknown option 'ITEM' (known: KEY,KEY,...)", the item cut to what the ABI's message
// cap leaves beside the list.
[[noreturn]] void unknown_option(std::string_view item) {
    std::string known;
    for (const Option& o : options()) {
        if (!known.empty()) known += ',';
        known += o.key;
    }
    static constexpr std::string_view kBefore = "unknown option '", kAfter = "' (known: ";
    const size_t fixed = kBefore.size() + kAfter.size() + known.size() + 1;
    const size_t room = ER_ERROR_MESSAGE_CAP - 1 > fixed + 16 ? ER_ERROR_MESSAGE_CAP - 1 - fixed : 16;
    const std::string shown = item.size() <= room ? std::string(item) : std::string(item.substr(0, room - 3)) + "...";
    refuse(std::string(kBefore) + shown + std::string(kAfter) + known + ")");
}

// Options a kernel cannot take together: one line naming both.
void check_combinations(const Backend& b) {
    const auto refuse_with_rows_per_warp = [&](const char* option, int32_t value, bool taken, const char* why) {
        if (taken && b.gemv_rows_per_warp > 1)
            refuse(std::string("options ") + option + "=" + std::to_string(value) +
                   " and gemv_rows_per_warp=" + std::to_string(b.gemv_rows_per_warp) + " do not combine: " + why);
    };
    refuse_with_rows_per_warp("gemv_tasks_in_flight", b.gemv_tasks_in_flight, b.gemv_tasks_in_flight > 1,
                              "the GEMV that takes several rows a warp loads one task at a time");
    refuse_with_rows_per_warp("gemv_warps_per_row", b.gemv_warps_per_row, b.gemv_warps_per_row > 1,
                              "a row split across warps is one row a warp");
    refuse_with_rows_per_warp("gemv_load_ahead", 1, b.gemv_load_ahead,
                              "the GEMV that takes several rows a warp loads each row's tasks as it reaches it");
    if (b.gemv_load_ahead && b.gemv_tasks_in_flight > 1)
        refuse("option gemv_load_ahead=1 is for one task in flight: with gemv_tasks_in_flight=" +
               std::to_string(b.gemv_tasks_in_flight) + " the first tasks are loaded ahead already");
    if (b.attention_pipeline && b.attention_prefetch)
        refuse("options attention_pipeline=1 and attention_prefetch=1 do not combine: the pipelined walk loads a "
               "warp's next tile itself, where the prefetch asks L2 for it");
}

}  // namespace

OpenOptions apply_backend_options(std::string_view text, Backend& backend) {
    OpenOptions open;
    std::vector<std::string_view> given;  // a key given twice: which value was meant is not known
    for (std::string_view rest = text; !rest.empty();) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        const std::string_view key = item.substr(0, eq);
        const std::vector<Option>& all = options();
        const auto it = std::find_if(all.begin(), all.end(), [&](const Option& o) { return key == o.key; });
        if (it == all.end()) unknown_option(item);
        if (std::find(given.begin(), given.end(), key) != given.end())
            refuse("option " + std::string(key) + " is given twice");
        given.push_back(key);
        if (eq == std::string_view::npos)
            refuse("option " + std::string(key) + " has no value: give " + std::string(key) + "=VALUE");
        it->apply(item.substr(eq + 1), backend, open);
    }
    check_combinations(backend);
    return open;
}

}  // namespace edgerun::cuda_orin
