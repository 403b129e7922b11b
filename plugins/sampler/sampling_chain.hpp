// The sampling chain, in llama.cpp's default order: penalties over recent tokens, then
// top-k, top-p and min-p on the temperature-1 distribution, then temperature, then a
// draw from the project's own generator (edgerun/random.hpp). Greedy (temperature <= 0)
// is the argmax after penalties, ties going to the lowest id.
#pragma once

#include <edgerun/abi.h>
#include <edgerun/random.hpp>

#include <cstdint>
#include <vector>

namespace edgerun::sampling {

class SamplingChain {
public:
    SamplingChain(const er_sampler_params& params, int32_t n_vocab);

    void reset();                  // forget the history, keep the generator's state
    void accept(int32_t token);    // into the penalty window
    int32_t sample(const float* logits);
    bool is_greedy() const;
    int32_t n_vocab() const { return n_vocab_; }

private:
    struct Candidate {
        float logit;
        int32_t id;
    };

    void apply_penalties();
    void keep_top_k(int32_t k);
    void softmax();  // fills probabilities_ for candidates_[0..size)
    void keep_top_p(float p);
    void keep_min_p(float p);

    er_sampler_params params_;
    int32_t n_vocab_;
    Pcg64 rng_;
    std::vector<int32_t> history_;  // ring buffer of the last penalty_last_n tokens
    size_t history_next_ = 0;
    size_t history_size_ = 0;
    std::vector<int32_t> counts_;   // occurrences in the window, per token (scratch)
    std::vector<Candidate> candidates_;
    std::vector<double> probabilities_;
    size_t size_ = 0;               // live candidates
    bool sorted_ = false;           // candidates_[0..size_) in descending logit order
};

}  // namespace edgerun::sampling
