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
    void accept(int32_t token);    // into the history the penalties see
    int32_t sample(const float* logits);
    bool is_greedy() const;
    int32_t n_vocab() const { return n_vocab_; }

    // For speculative decoding (abi.h er_sampler_iface): the distribution sample() draws
    // from (n_vocab probabilities), the generator's next uniform, and taking back the
    // last accepted tokens (false when fewer were accepted since reset).
    void distribution(const float* logits, float* probs);
    double uniform() { return rng_.uniform(); }
    bool rollback(size_t n_tokens);

private:
    struct Candidate {
        float logit;
        int32_t id;
    };

    // Runs the chain on `logits`: returns the token when greedy, else -1 with the
    // surviving candidates_[0..size_) and their probabilities_.
    int32_t run_chain(const float* logits);
    void apply_penalties();
    void keep_top_k(int32_t k);
    void softmax();  // fills probabilities_ for candidates_[0..size)
    void keep_top_p(float p);
    void keep_min_p(float p);

    er_sampler_params params_;
    int32_t n_vocab_;
    Pcg64 rng_;
    // Every token accepted since reset (the penalties see the last penalty_last_n): the
    // whole of it, so a rollback restores a window whose older tokens had slid out.
    std::vector<int32_t> history_;
    std::vector<int32_t> counts_;   // occurrences in the window, per token (scratch)
    std::vector<Candidate> candidates_;
    std::vector<double> probabilities_;
    size_t size_ = 0;               // live candidates
    bool sorted_ = false;           // candidates_[0..size_) in descending logit order
};

}  // namespace edgerun::sampling
