// Model hyperparameters from `<arch>.*` metadata, with llama.cpp's defaults where a key
// is optional.
#include "descriptions.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace edgerun::gguf {

namespace {

constexpr double kDefaultRopeFreqBase = 10000.0;
// The largest size a hyperparameter may give: graphs and backends hold them as int32.
constexpr int64_t kMaxHparam = std::numeric_limits<int32_t>::max();

void copy_text(char* dst, size_t capacity, std::string_view text) {
    const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(dst, text.data(), n);
    dst[n] = '\0';
}

std::string key_text(const std::string& key) { return quote_text(key); }

// Reads the `<arch>.` keys, remembering the first required key that is missing.
class HparamReader {
public:
    HparamReader(const Metadata& metadata, std::string_view arch) : metadata_(metadata), prefix_(std::string(arch) + ".") {}

    std::string key(const char* suffix) const { return prefix_ + suffix; }

    // A required positive integer (a per-layer array is accepted when uniform, and checked
    // by check_per_layer_lengths); 0 if missing.
    int64_t required(const char* suffix) {
        const std::string k = key(suffix);
        const auto value = uniform_int(k);
        if (!value) {
            if (missing_.empty()) missing_ = k;
            return 0;
        }
        return positive(k, *value);
    }

    std::optional<int64_t> optional(const char* suffix) {
        const std::string k = key(suffix);
        const auto value = uniform_int(k);
        if (!value) return std::nullopt;
        return positive(k, *value);
    }

    // Every per-layer array read so far holds one value per layer: one of another length
    // was written for another model, and taking its value for every layer would hide that.
    void check_per_layer_lengths(int64_t n_layer) const {
        for (const auto& [k, count] : per_layer_)
            if (count != static_cast<uint64_t>(n_layer))
                throw format_error("metadata key " + key_text(k) + " has " + std::to_string(count) +
                                   " per-layer values, but " + key_text(key("block_count")) + " is " +
                                   std::to_string(n_layer));
    }

    std::optional<double> optional_float(const char* suffix) const {
        const std::string k = key(suffix);
        const auto value = metadata_.get_float(k);
        if (value && !std::isfinite(*value)) throw format_error("metadata key " + key_text(k) + " is not a finite number");
        return value;
    }

    const std::string& missing() const { return missing_; }

private:
    std::optional<int64_t> uniform_int(const std::string& k) {
        const auto value = metadata_.get_uniform_int(k);
        if (const MetaEntry* entry = metadata_.find(k); value && entry->value.type == ER_META_ARRAY)
            per_layer_.emplace_back(k, entry->value.array_count);
        return value;
    }

    static int64_t positive(const std::string& k, int64_t value) {
        if (value <= 0) throw format_error("metadata key " + key_text(k) + " is " + std::to_string(value) + ", must be positive");
        if (value > kMaxHparam)
            throw format_error("metadata key " + key_text(k) + " is " + std::to_string(value) + ", more than the " +
                               std::to_string(kMaxHparam) + " supported");
        return value;
    }

    const Metadata& metadata_;
    std::string prefix_;
    std::string missing_;
    std::vector<std::pair<std::string, uint64_t>> per_layer_;  // arrays read: key, length
};

// <arch>.vocab_size when present, else the token table's length, else token_embd's rows.
// The key and the table must agree: the one sizes the sampler, the other the tokenizer.
int64_t vocab_size(const GgufFile& file, HparamReader& hp) {
    const auto key_value = hp.optional("vocab_size");
    const MetaEntry* tokens = file.metadata().find(kTokensKey);
    if (tokens && tokens->value.type == ER_META_ARRAY) {
        const uint64_t n_tokens = tokens->value.array_count;
        if (key_value && static_cast<uint64_t>(*key_value) != n_tokens)
            throw format_error("metadata key " + key_text(hp.key("vocab_size")) + " is " + std::to_string(*key_value) +
                               ", but " + quote_text(kTokensKey) + " has " + std::to_string(n_tokens) + " tokens");
        if (!key_value) return static_cast<int64_t>(n_tokens);  // < 2^63: each token takes bytes of the file
    }
    if (key_value) return *key_value;
    if (const TensorInfo* embd = file.tensors().find("token_embd.weight"); embd && embd->n_dims >= 2) return embd->ne[1];
    return 0;
}

}  // namespace

void fill_model_desc(const GgufFile& file, er_model_desc& out) {
    const uint32_t struct_size = out.struct_size;
    std::memset(&out, 0, sizeof out);
    out.struct_size = struct_size;
    out.file_type = -1;

    const Metadata& m = file.metadata();
    const auto arch = m.get_string("general.architecture");
    if (!arch) {
        copy_text(out.missing_key, sizeof out.missing_key, "general.architecture");
        throw format_error("missing metadata key 'general.architecture'");
    }
    if (arch->empty() || arch->size() >= sizeof out.arch)
        throw format_error("metadata key 'general.architecture' is " + quote_text(*arch) + ", which is not an architecture name");
    copy_text(out.arch, sizeof out.arch, *arch);
    if (auto name = m.get_string("general.name")) copy_text(out.name, sizeof out.name, *name);
    if (auto file_type = m.get_int("general.file_type"))
        out.file_type = *file_type >= INT32_MIN && *file_type <= INT32_MAX ? static_cast<int32_t>(*file_type) : -1;

    HparamReader hp(m, *arch);
    out.n_ctx_train = hp.required("context_length");
    out.n_embd = hp.required("embedding_length");
    out.n_layer = hp.required("block_count");
    out.n_ff = hp.required("feed_forward_length");
    out.n_head = hp.required("attention.head_count");
    out.n_vocab = vocab_size(file, hp);

    out.n_head_kv = hp.optional("attention.head_count_kv").value_or(out.n_head);
    if (out.n_head > 0 && out.n_head % out.n_head_kv != 0)
        throw format_error("metadata key " + key_text(hp.key("attention.head_count_kv")) + " is " + std::to_string(out.n_head_kv) +
                           ", which does not divide the head count " + std::to_string(out.n_head));

    const auto key_length = hp.optional("attention.key_length");
    const auto value_length = hp.optional("attention.value_length");
    if (out.n_embd > 0 && out.n_head > 0) {
        if (!key_length && out.n_embd % out.n_head != 0)
            throw format_error("no " + key_text(hp.key("attention.key_length")) + " and the embedding length " +
                               std::to_string(out.n_embd) + " is not a multiple of the head count " + std::to_string(out.n_head));
        out.head_dim_k = key_length.value_or(out.n_embd / out.n_head);
        out.head_dim_v = value_length.value_or(key_length ? *key_length : out.head_dim_k);
    }

    out.n_rot = hp.optional("rope.dimension_count").value_or(out.head_dim_k);
    if (out.head_dim_k > 0 && out.n_rot > out.head_dim_k)
        throw format_error("metadata key " + key_text(hp.key("rope.dimension_count")) + " is " + std::to_string(out.n_rot) +
                           ", more than the head dimension " + std::to_string(out.head_dim_k));

    out.rms_eps = static_cast<float>(hp.optional_float("attention.layer_norm_rms_epsilon").value_or(0.0));
    out.rope_freq_base = static_cast<float>(hp.optional_float("rope.freq_base").value_or(kDefaultRopeFreqBase));

    // As llama.cpp: the frequency scale is 1/factor for every scaling type but "none";
    // the older key rope.scale_linear means the same factor.
    out.rope_freq_scale = 1.0f;
    const auto scaling_type = m.get_string(hp.key("rope.scaling.type"));
    auto factor = hp.optional_float("rope.scaling.factor");
    if (!factor) factor = hp.optional_float("rope.scale_linear");
    if (factor && *factor < 0)
        throw format_error("metadata key " + key_text(hp.key("rope.scaling.factor")) + " is negative");
    if (factor && *factor > 0 && scaling_type.value_or("linear") != "none") out.rope_freq_scale = static_cast<float>(1.0 / *factor);

    if (out.n_layer > 0) hp.check_per_layer_lengths(out.n_layer);
    if (!hp.missing().empty()) {
        copy_text(out.missing_key, sizeof out.missing_key, hp.missing());
        throw format_error("missing metadata key " + key_text(hp.missing()));
    }
}

}  // namespace edgerun::gguf
