// Random weights with the statistics a forward pass needs to behave like a trained
// model: unit-scale activations in every layer, a residual stream that stays bounded,
// and logits with a clear winner so greedy decoding agrees across backends.
//
// How the clear winner is made: a few hundred "word" tokens are hot. Layer 0's FFN holds
// an associative memory: hidden unit j reads the direction of hot token j's embedding
// (gate and up rows along it) and writes the embedding of its successor (a down column),
// the hot tokens forming one long cycle. Every other token's embedding leans toward one
// hot token, so it triggers that token's unit more weakly. With tied embeddings the
// written direction is the next token's logit row: its logit stands well clear of the
// rest, while the other layers (ordinary random matrices, scaled so the residual stays
// bounded) make the rest of the distribution depend on the context.
//
// Values come from a counter-based generator keyed by (seed, tensor, row), so a tensor is
// the same whatever the thread count or chunking.
#pragma once

#include <edgerun/authoring/synth_presets.hpp>
#include <edgerun/authoring/synth_vocab.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::authoring {

// Stress variants (`edgerun synth --stress NAME`, for the conformance suite): the plain
// model's tensors, changed so that a numerically demanding regime real checkpoints reach
// shows up in a two-layer model with a short sequence.
//   attention-scale    "self" attention heads with large scores: the query heads of KV
//                      head 0 are projected exactly as that key is, and concentrate their
//                      query and key on the quarter of each head's dimensions with the
//                      lowest RoPE frequencies, where the q/k gains (q/k norm weights, else
//                      the projections) are raised: each token's query meets its own key
//                      (and earlier copies of the same token, which those frequencies
//                      hardly rotate) with a score of about 112 (with a q/k norm; 100 to
//                      250 without one), past 88.7, where exp() overflows in F32 unless
//                      the softmax subtracts the maximum; other keys score far lower. Real
//                      checkpoints have such massive low-frequency q/k values. The other
//                      heads give that quarter 1% of their norm, so their scores stay as
//                      soft as the plain model's: sharpening every head instead puts
//                      near-ties everywhere, which an INT8 KV cache's rounding tips (cpu_ref's
//                      own INT8 cache then misses the INT8 thresholds: KL 0.05 at scores x16).
//   small-activations  the residual stream scaled down (token_embd, attn_output, ffn_down;
//                      1/32 for Qwen's epsilon of 1e-6, 1/16 for 1e-5) and the output
//                      norm's gain up as much (the tied LM head keeps its logits): an
//                      ordinary token's residual has an RMS of about sqrt(epsilon), so
//                      RMSNorm's epsilon is comparable to the mean square and changes every
//                      normalised value, smaller rows more. With an epsilon of 0 the model
//                      would compute exactly the plain one.
enum class Stress { None, AttentionScale, SmallActivations };
std::optional<Stress> stress_from_name(std::string_view name);
std::string_view stress_name(Stress stress);
std::string stress_names();  // "attention-scale, small-activations"

class WeightSynth {
public:
    WeightSynth(const Preset& preset, int64_t n_layer, uint64_t seed, const SynthVocab& vocab,
                Stress stress = Stress::None);

    // Rows [first, end) of `tensor` (each tensor.ne[0] floats) into `out`. Thread-safe.
    void fill_rows(const SynthTensor& tensor, int64_t first, int64_t end, float* out) const;

    const std::vector<int32_t>& hot_tokens() const { return hot_; }

private:
    void fill_plain_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const;
    void embedding_base(int64_t token, float* out) const;
    void matrix_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const;
    float matrix_scale(const SynthTensor& t) const;
    float small_residual_factor() const;
    bool low_frequency_dim(int64_t i) const;
    float low_frequency_gain() const;
    void attention_scale_values(const SynthTensor& t, int64_t first, int64_t end, float* out) const;

    const Preset& preset_;
    int64_t n_layer_;
    uint64_t seed_;
    Stress stress_;
    std::vector<int32_t> hot_;        // hot token ids, in memory-unit order
    std::vector<int32_t> hot_of_;     // per token: index of the hot token it leans toward
    std::vector<int32_t> is_hot_;     // per token: its hot index, or -1
    std::vector<int32_t> successor_;  // per hot index: the hot index that follows
    std::vector<float> hot_dirs_;     // hot_.size() unit vectors of n_embd
};

}  // namespace edgerun::authoring
