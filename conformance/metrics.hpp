// How two backends' outputs are compared: whole-output NMSE for ops, and per position of
// a sequence top-1 agreement, the reference's top-2 gap, KL divergence of the softmax and
// the largest logit difference; greedy runs by their first divergence.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace edgerun::conformance {

struct OpError {
    double nmse = 0;          // sum (c - r)^2 / sum r^2 (the plain sum when r is all zero)
    bool non_finite = false;  // the candidate has inf or NaN where the reference is finite
    double max_abs = 0;       // for messages
};

OpError compare_outputs(std::span<const float> candidate, std::span<const float> reference);

struct Top2 {
    int32_t first = 0, second = 0;  // ids; ties go to the lowest id
    double gap = 0;                 // logit(first) - logit(second)
};

Top2 top2(std::span<const float> logits);

// The k largest logits (ids and values, best first) and the log of the softmax's
// normaliser, so a trace can give exact probabilities for those ids.
struct TopK {
    std::vector<int32_t> ids;
    std::vector<float> logits;
    double log_z = 0;
};

TopK top_k(std::span<const float> logits, int k);
double log_sum_exp(std::span<const float> logits);

// One position of a teacher-forced sequence.
struct PositionStats {
    int32_t ref_top1 = 0, cand_top1 = 0;
    double ref_gap = 0;         // the reference's top-2 gap
    double kl = 0;              // KL(reference || candidate), nats
    double max_abs_diff = 0;    // over the compared logits
    double ref_sd = 0;          // standard deviation of the reference's logits
    bool finite = true;
};

PositionStats compare_position(std::span<const float> candidate, std::span<const float> reference);
// Against a trace's top-k: the candidate's log-probabilities of the reference's top-k ids
// are exact; the rest of the mass is lumped into one outcome, which makes the KL a lower
// bound of the full one (the log-sum inequality). max_abs_diff is over the top-k ids.
PositionStats compare_position_topk(std::span<const float> candidate, const TopK& reference, double ref_sd);

double logit_sd(std::span<const float> logits);

struct SequenceSummary {
    int32_t positions = 0;
    int32_t agree = 0;               // candidate top-1 == reference top-1
    int32_t decisive = 0;            // positions whose reference gap >= the tie gap
    int32_t decisive_agree = 0;
    int32_t first_disagreement = -1; // first decisive position whose top-1 differs,
    int32_t first_cand = -1, first_ref = -1;  // the two tokens there
    double first_gap = 0;            // and the reference's top-2 gap there
    double mean_kl = 0, max_kl = 0;
    int32_t max_kl_position = -1;
    double max_diff_sd = 0;          // max over positions of max_abs_diff / ref_sd
    int32_t max_diff_position = -1;
    bool finite = true;

    double decisive_top1() const { return decisive ? double(decisive_agree) / decisive : 1.0; }
};

SequenceSummary summarize(const std::vector<PositionStats>& positions, double tie_gap);

// A greedy run: the tokens generated, and for each the top-2 gap of the logits it was
// chosen from.
struct GreedyRun {
    std::vector<int32_t> tokens;
    std::vector<double> margins;
};

struct Divergence {
    bool identical = true;
    int32_t position = -1;  // index into the generated tokens
    int32_t cand_token = -1, ref_token = -1;
    double cand_margin = 0, ref_margin = 0;
};

Divergence first_divergence(const GreedyRun& candidate, const GreedyRun& reference);

}  // namespace edgerun::conformance
