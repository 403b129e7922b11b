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

#include "synth_presets.hpp"
#include "synth_vocab.hpp"

#include <cstdint>
#include <vector>

namespace edgerun::tools {

class WeightSynth {
public:
    WeightSynth(const Preset& preset, int64_t n_layer, uint64_t seed, const SynthVocab& vocab);

    // Rows [first, end) of `tensor` (each tensor.ne[0] floats) into `out`. Thread-safe.
    void fill_rows(const SynthTensor& tensor, int64_t first, int64_t end, float* out) const;

    const std::vector<int32_t>& hot_tokens() const { return hot_; }

private:
    void embedding_base(int64_t token, float* out) const;
    void matrix_rows(const SynthTensor& t, int64_t first, int64_t end, float* out) const;
    float matrix_scale(const SynthTensor& t) const;

    const Preset& preset_;
    int64_t n_layer_;
    uint64_t seed_;
    std::vector<int32_t> hot_;        // hot token ids, in memory-unit order
    std::vector<int32_t> hot_of_;     // per token: index of the hot token it leans toward
    std::vector<int32_t> is_hot_;     // per token: its hot index, or -1
    std::vector<int32_t> successor_;  // per hot index: the hot index that follows
    std::vector<float> hot_dirs_;     // hot_.size() unit vectors of n_embd
};

}  // namespace edgerun::tools
