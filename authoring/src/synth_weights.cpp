#include <edgerun/authoring/synth_weights.hpp>

#include <edgerun/host_api.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

namespace edgerun::authoring {

namespace {

// Per-element standard deviation of an ordinary token's embedding; hot tokens' are this
// many times larger, which keeps the ordinary tokens that lean toward a hot token (by
// kLean times their own size) well below it in the logits.
constexpr float kEmbedStd = 0.02f;
constexpr float kHotGain = 3.0f;
constexpr float kLean = 1.5f;
// Memory gate/up rows read β·cos(residual, hot direction); silu(β)·β is the activation of
// an exact match.
constexpr float kMemorySharpness = 4.0f;
// The memory writes one hot embedding's worth (per element); all later layers together
// add sqrt(n_embd)/kMargin of it in random directions, which puts the winner's logit
// about kMargin standard deviations above the others at any width.
constexpr float kMemoryWrite = 3.0f;
constexpr float kMargin = 10.0f;
// Layer 0 stays quiet apart from its memory so the memory reads a clean embedding.
constexpr float kQuietLayer0 = 0.05f;
// q and k are scaled (or, with qk-norm, their norm weights set) so attention scores
// have a standard deviation of about kQk²: attention that picks, not averages.
constexpr float kQk = 1.4f;
constexpr int kMaxHot = 512;
// attention-scale (see synth_weights.hpp): a self head's query meets its own key with a
// score of about kSelfScore, a quarter past log(FLT_MAX) = 88.7; the quarter of each
// head's dimensions with the lowest RoPE frequencies carries a fraction
// kConcentrate²/(kConcentrate² + 3) = 0.9 of a self head's query and key and 1% of any
// other head's, which keeps the other heads' scores as the plain model's.
constexpr float kSelfScore = 112.0f;
constexpr float kConcentrate = 5.2f;

// Typical RMS of an attention output element and of a SwiGLU output element for unit
// inputs: to turn a target residual contribution into a matrix scale.
constexpr float kAttnOutRms = 0.8f;
constexpr float kSwigluRms = 0.6f;

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t state = a ^ (b * 0xD1B54A32D192ED03ull);
    return splitmix64(state);
}

uint64_t name_hash(const std::string& s) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
    return h;
}

double inverse_normal_cdf(double p) {
    double lo = -10, hi = 10;
    for (int i = 0; i < 100; ++i) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

// Heavier-than-Gaussian tails, as trained weights have: a log-normal factor with unit
// second moment picked by 8 random bits (kurtosis about 3·e^(4·0.3²) ≈ 4.3).
struct TailTable {
    std::array<float, 256> factor;
    TailTable() {
        constexpr double a = 0.3;
        double mean_square = 0;
        for (int k = 0; k < 256; ++k) {
            factor[size_t(k)] = float(std::exp(a * inverse_normal_cdf((k + 0.5) / 256.0)));
            mean_square += double(factor[size_t(k)]) * factor[size_t(k)] / 256.0;
        }
        for (float& f : factor) f = float(f / std::sqrt(mean_square));
    }
};
const TailTable kTails;

// A unit-variance bell-shaped value from 48 random bits (sum of four 12-bit uniforms).
inline float bell(uint64_t h) {
    const float sum = float(h & 0xFFF) + float((h >> 12) & 0xFFF) + float((h >> 24) & 0xFFF) + float((h >> 36) & 0xFFF);
    return (sum - 8190.f) * (1.f / 2364.8f);  // mean 4·2047.5, sd sqrt(4·(4096²−1)/12)
}

inline float heavy(uint64_t h) { return bell(h) * kTails.factor[h >> 56]; }

float silu(float x) { return x / (1.f + std::exp(-x)); }

// Unit-mean-square log-normal scale for index i of a keyed family (channels, rows).
float lognormal_scale(uint64_t key, int64_t i, float spread) {
    return std::exp(spread * bell(mix(key, uint64_t(i))) - spread * spread);
}

const std::array<std::pair<Stress, std::string_view>, 2> kStressNames = {{
    {Stress::AttentionScale, "attention-scale"},
    {Stress::SmallActivations, "small-activations"},
}};

}  // namespace

std::optional<Stress> stress_from_name(std::string_view name) {
    if (name == "none") return Stress::None;
    for (const auto& [stress, text] : kStressNames)
        if (text == name) return stress;
    return std::nullopt;
}

std::string_view stress_name(Stress stress) {
    for (const auto& [s, text] : kStressNames)
        if (s == stress) return text;
    return "none";
}

std::string stress_names() {
    std::string out;
    for (const auto& entry : kStressNames) out += (out.empty() ? "" : ", ") + std::string(entry.second);
    return out;
}

WeightSynth::WeightSynth(const Preset& preset, int64_t n_layer, uint64_t seed, const SynthVocab& vocab, Stress stress)
    : preset_(preset), n_layer_(n_layer), seed_(seed), stress_(stress) {
    // Hot tokens: word-like tokens, no more than a quarter of layer 0's FFN units.
    std::vector<int32_t> pool = vocab.word_tokens;
    const size_t n_hot = std::min<size_t>({size_t(kMaxHot), pool.size(), size_t(preset.n_ff / 4)});
    if (n_hot < 2) throw Error("synth: vocabulary has too few word tokens");
    uint64_t state = mix(seed, 0x686F74);  // "hot"
    for (size_t i = 0; i < n_hot; ++i) {  // partial Fisher-Yates: the first n_hot of a shuffle
        const size_t j = i + size_t(splitmix64(state) % (pool.size() - i));
        std::swap(pool[i], pool[j]);
    }
    hot_.assign(pool.begin(), pool.begin() + std::ptrdiff_t(n_hot));
    // One cycle through every hot token: generated text does not fall into a short loop.
    successor_.resize(n_hot);
    for (size_t i = 0; i < n_hot; ++i) successor_[i] = int32_t((i + 1) % n_hot);

    is_hot_.assign(size_t(preset.n_vocab), -1);
    hot_of_.resize(size_t(preset.n_vocab));
    for (size_t i = 0; i < n_hot; ++i) is_hot_[size_t(hot_[i])] = int32_t(i);
    for (int64_t t = 0; t < preset.n_vocab; ++t) {
        const int32_t self = is_hot_[size_t(t)];
        hot_of_[size_t(t)] = self >= 0 ? self : int32_t(mix(seed ^ 0x6C65616E, uint64_t(t)) % n_hot);
    }
    const int64_t n = preset.n_embd;
    hot_dirs_.resize(n_hot * size_t(n));
    for (size_t i = 0; i < n_hot; ++i) {
        float* dir = &hot_dirs_[i * size_t(n)];
        embedding_base(hot_[i], dir);
        double norm = 0;
        for (int64_t c = 0; c < n; ++c) norm += double(dir[c]) * dir[c];
        const float inv = float(1.0 / std::sqrt(norm));
        for (int64_t c = 0; c < n; ++c) dir[c] *= inv;
    }
}

void WeightSynth::embedding_base(int64_t token, float* out) const {
    uint64_t state = mix(mix(seed_, name_hash("token_embd.weight")), uint64_t(token));
    for (int64_t c = 0; c < preset_.n_embd; ++c) out[c] = heavy(splitmix64(state));
}

float WeightSynth::matrix_scale(const SynthTensor& t) const {
    const float n = float(preset_.n_embd);
    const float hot_rms = kHotGain * kEmbedStd;
    // Per-element RMS all layers after the first add together, split evenly between them
    // and, within a layer, a third to attention and two thirds to the FFN.
    const float total = kMemoryWrite * hot_rms * std::sqrt(n) / kMargin;
    const float per_layer = total / std::sqrt(float(std::max<int64_t>(1, n_layer_ - 1)));
    const float quiet = t.layer == 0 ? kQuietLayer0 : 1.f;
    switch (t.role) {
        case TensorRole::AttnQ: case TensorRole::AttnK:
            return (preset_.qk_norm ? 1.f : kQk) / std::sqrt(n);
        case TensorRole::AttnV: case TensorRole::FfnGate: case TensorRole::FfnUp:
            return 1.f / std::sqrt(n);
        case TensorRole::AttnOutput:
            return quiet * per_layer / std::sqrt(3.f) / (kAttnOutRms * std::sqrt(float(t.ne[0])));
        case TensorRole::FfnDown:
            return quiet * per_layer * std::sqrt(2.f / 3.f) / (kSwigluRms * std::sqrt(float(t.ne[0])));
        default:
            return 1.f;
    }
}

void WeightSynth::matrix_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const {
    const int64_t cols = t.ne[0];
    const uint64_t key = mix(seed_, name_hash(t.name));
    std::vector<float> column(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) column[size_t(c)] = lognormal_scale(key ^ 0xC01, c, 0.25f);
    const float scale = matrix_scale(t);
    const int64_t n_hot = int64_t(hot_.size());
    const int64_t n = preset_.n_embd;
    const bool memory = t.layer == 0;
    for (int64_t r = first; r < end; ++r) {
        float* row = out + (r - first) * cols;
        const float row_scale = scale * lognormal_scale(key ^ 0x2011, r, 0.1f);
        uint64_t state = mix(key, uint64_t(r));
        for (int64_t c = 0; c < cols; ++c) row[c] = row_scale * column[size_t(c)] * heavy(splitmix64(state));
        if (!memory) continue;
        if ((t.role == TensorRole::FfnGate || t.role == TensorRole::FfnUp) && r < n_hot) {
            // Memory unit r reads hot token r's direction: β·cos for a unit-RMS input.
            const float* dir = &hot_dirs_[size_t(r * n)];
            // |input| = sqrt(n) and |dir| = 1, so (β/sqrt(n))·dir·input = β·cos.
            for (int64_t c = 0; c < cols; ++c) row[c] = kMemorySharpness / std::sqrt(float(n)) * dir[c];
        } else if (t.role == TensorRole::FfnDown) {
            // Column j writes the successor of hot token j: one hot embedding's RMS.
            const float act = silu(kMemorySharpness) * kMemorySharpness;
            const float write = kMemoryWrite * kHotGain * kEmbedStd * std::sqrt(float(n)) / act;
            for (int64_t j = 0; j < n_hot; ++j) row[j] = write * hot_dirs_[size_t(successor_[size_t(j)] * n + r)];
        }
    }
}

float WeightSynth::small_residual_factor() const {
    // The power of two that brings an ordinary token's embedding RMS to sqrt(eps) (a
    // power of two: the rescaled weights are exact in every float format, away from
    // F16's subnormal block scales). 1/32 for an epsilon of 1e-6, 1/16 for 1e-5.
    const double plain_rms = double(kEmbedStd) * std::sqrt(1.0 + double(kLean) * kLean);
    return float(std::exp2(std::round(std::log2(std::sqrt(double(preset_.rms_eps)) / plain_rms))));
}

bool WeightSynth::low_frequency_dim(int64_t i) const {
    // The quarter of a head's rotated pairs with the lowest frequencies: the last pairs,
    // which NEOX (qwen) keeps at i and i + d/2 and llama's adjacent layout at 2k, 2k+1.
    const int64_t d = preset_.head_dim, first_pair = d / 2 - d / 8;
    const bool neox = preset_.arch != "llama";
    return neox ? i % (d / 2) >= first_pair : i / 2 >= first_pair;
}

float WeightSynth::low_frequency_gain() const {
    // A self head's score with itself is sum(q_i²)/sqrt(d) over its query: a share f of
    // the norm on the low-frequency quarter (m = d/4 dimensions), gained by F, the rest
    // not. With a q/k norm, q_i has RMS kQk before F; without, kQk too (Wq's rows).
    const double d = double(preset_.head_dim), m = d / 4, r2 = double(kConcentrate) * kConcentrate;
    const double qk2 = double(kQk) * kQk;
    double f2;
    if (preset_.qk_norm) {
        const double f = m * r2 / (m * r2 + d - m);
        f2 = (kSelfScore / (qk2 * std::sqrt(d)) - (1 - f)) / f;
    } else {
        f2 = (kSelfScore * std::sqrt(d) / qk2 - (d - m)) / (m * r2);
    }
    return float(std::sqrt(std::max(f2, 1.0 / r2)));
}

void WeightSynth::attention_scale_values(const SynthTensor& t, int64_t first, int64_t end, float* out) const {
    const bool query = t.role == TensorRole::AttnQ || t.role == TensorRole::AttnQBias;
    const bool vector = t.role == TensorRole::AttnQBias || t.role == TensorRole::AttnKBias;
    const int64_t d = preset_.head_dim, group = preset_.n_head / preset_.n_head_kv;
    // The self heads' queries are projected exactly as their key (KV head 0) is.
    SynthTensor key = t;
    if (query) {
        key.name.replace(key.name.find("attn_q"), 6, "attn_k");
        key.role = vector ? TensorRole::AttnKBias : TensorRole::AttnK;
        key.ne[vector ? 0 : 1] = preset_.n_head_kv * d;
    }
    auto factor = [&](int64_t i) {  // i: the output dimension (row, or bias element)
        const bool self = (query ? i / d < group : i / d == 0);
        if (!low_frequency_dim(i % d)) return 1.f;
        return (self ? kConcentrate : 1.f / kConcentrate) * (preset_.qk_norm ? 1.f : low_frequency_gain());
    };
    if (vector) {
        fill_plain_rows(t, 0, 1, out);
        std::vector<float> keys(size_t(key.ne[0]));
        fill_plain_rows(key, 0, 1, keys.data());
        for (int64_t i = 0; i < t.ne[0]; ++i) out[i] = (query && i / d < group ? keys[size_t(i % d)] : out[i]) * factor(i);
        return;
    }
    const int64_t cols = t.ne[0];
    for (int64_t r = first; r < end; ++r) {
        float* row = out + (r - first) * cols;
        if (query && r / d < group) fill_plain_rows(key, r % d, r % d + 1, row);
        else fill_plain_rows(t, r, r + 1, row);
        const float f = factor(r);
        for (int64_t c = 0; c < cols; ++c) row[c] *= f;
    }
}

void WeightSynth::fill_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const {
    const int64_t cols = t.ne[0];
    switch (stress_) {
        case Stress::AttentionScale:
            switch (t.role) {
                case TensorRole::AttnQ: case TensorRole::AttnK: case TensorRole::AttnQBias: case TensorRole::AttnKBias:
                    attention_scale_values(t, first, end, out);
                    return;
                case TensorRole::AttnQNorm: case TensorRole::AttnKNorm:
                    fill_plain_rows(t, first, end, out);
                    for (int64_t c = 0; c < cols; ++c)
                        if (low_frequency_dim(c)) out[c] *= low_frequency_gain();
                    return;
                default:
                    break;
            }
            break;
        case Stress::SmallActivations: {
            fill_plain_rows(t, first, end, out);
            float factor = 1.f;
            if (t.role == TensorRole::TokenEmbd || t.role == TensorRole::AttnOutput || t.role == TensorRole::FfnDown)
                factor = small_residual_factor();
            else if (t.role == TensorRole::OutputNorm)
                factor = 1.f / small_residual_factor();
            for (int64_t i = 0; i < (end - first) * cols; ++i) out[i] *= factor;
            return;
        }
        case Stress::None:
            break;
    }
    fill_plain_rows(t, first, end, out);
}

void WeightSynth::fill_plain_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const {
    const int64_t cols = t.ne[0];
    switch (t.role) {
        case TensorRole::TokenEmbd: {
            const int64_t n = preset_.n_embd;
            for (int64_t token = first; token < end; ++token) {
                float* row = out + (token - first) * cols;
                embedding_base(token, row);
                const int32_t hot = is_hot_[size_t(token)];
                if (hot >= 0) {
                    for (int64_t c = 0; c < n; ++c) row[c] *= kHotGain * kEmbedStd;
                } else {
                    const float* dir = &hot_dirs_[size_t(hot_of_[size_t(token)]) * size_t(n)];
                    const float lean = kLean * kEmbedStd * std::sqrt(float(n));
                    for (int64_t c = 0; c < n; ++c) row[c] = kEmbedStd * row[c] + lean * dir[c];
                }
            }
            return;
        }
        case TensorRole::RopeFreqs: {
            const std::vector<float> factors = llama3_rope_factors(preset_);
            std::copy(factors.begin(), factors.end(), out);
            return;
        }
        case TensorRole::AttnNorm: case TensorRole::FfnNorm: case TensorRole::OutputNorm:
        case TensorRole::AttnQNorm: case TensorRole::AttnKNorm: {
            // Norm weights near their gain, never negative.
            const bool qk = t.role == TensorRole::AttnQNorm || t.role == TensorRole::AttnKNorm;
            uint64_t state = mix(seed_, name_hash(t.name));
            for (int64_t c = 0; c < cols; ++c)
                out[c] = (qk ? kQk : 1.f) * std::max(0.2f, 1.f + 0.1f * bell(splitmix64(state)));
            return;
        }
        case TensorRole::AttnQBias: case TensorRole::AttnKBias: case TensorRole::AttnVBias: {
            // Biases of half a unit-scale activation: they shift q, k and v visibly.
            uint64_t state = mix(seed_, name_hash(t.name));
            for (int64_t c = 0; c < cols; ++c) out[c] = 0.5f * heavy(splitmix64(state));
            return;
        }
        default:
            matrix_rows(t, first, end, out);
            return;
    }
}

}  // namespace edgerun::authoring
