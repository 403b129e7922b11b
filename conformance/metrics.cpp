#include "metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edgerun::conformance {

OpError compare_outputs(std::span<const float> candidate, std::span<const float> reference) {
    OpError e;
    double num = 0, den = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double r = reference[i], c = candidate[i];
        if (!std::isfinite(c) && std::isfinite(r)) {
            e.non_finite = true;
            continue;
        }
        const double d = c - r;
        num += d * d;
        den += r * r;
        e.max_abs = std::max(e.max_abs, std::fabs(d));
    }
    e.nmse = den > 0 ? num / den : num;
    if (e.non_finite) e.nmse = INFINITY;
    return e;
}

Top2 top2(std::span<const float> logits) {
    Top2 t;
    float best = -INFINITY, second = -INFINITY;
    bool have_best = false;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float v = logits[i];
        if (v > best || !have_best) {
            if (have_best) second = best, t.second = t.first;
            best = v, t.first = int32_t(i), have_best = true;
        } else if (v > second || (t.second == t.first)) {
            second = v, t.second = int32_t(i);
        }
    }
    t.gap = double(best) - double(second);
    return t;
}

double log_sum_exp(std::span<const float> logits) {
    double max = -INFINITY;
    for (float v : logits) max = std::max(max, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max);
    return max + std::log(sum);
}

TopK top_k(std::span<const float> logits, int k) {
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    k = std::min<int>(k, int(order.size()));
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    TopK t;
    t.ids.assign(order.begin(), order.begin() + k);
    for (int32_t id : t.ids) t.logits.push_back(logits[id]);
    t.log_z = log_sum_exp(logits);
    return t;
}

double logit_sd(std::span<const float> logits) {
    double mean = 0, sq = 0;
    for (float v : logits) mean += v;
    mean /= double(logits.size());
    for (float v : logits) sq += (v - mean) * (v - mean);
    return std::sqrt(sq / double(logits.size()));
}

namespace {

bool all_finite(std::span<const float> v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

}  // namespace

PositionStats compare_position(std::span<const float> candidate, std::span<const float> reference) {
    PositionStats s;
    const Top2 r = top2(reference), c = top2(candidate);
    s.ref_top1 = r.first, s.ref_gap = r.gap, s.cand_top1 = c.first;
    s.ref_sd = logit_sd(reference);
    s.finite = all_finite(candidate);
    if (!s.finite) {
        s.kl = s.max_abs_diff = INFINITY;
        return s;
    }
    const double lz_r = log_sum_exp(reference), lz_c = log_sum_exp(candidate);
    double kl = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double lp = reference[i] - lz_r, lq = candidate[i] - lz_c;
        kl += std::exp(lp) * (lp - lq);
        s.max_abs_diff = std::max(s.max_abs_diff, std::fabs(double(candidate[i]) - reference[i]));
    }
    s.kl = std::max(0.0, kl);
    return s;
}

PositionStats compare_position_topk(std::span<const float> candidate, const TopK& reference, double ref_sd) {
    PositionStats s;
    s.ref_top1 = reference.ids.empty() ? -1 : reference.ids[0];
    s.ref_gap = reference.logits.size() >= 2 ? double(reference.logits[0]) - reference.logits[1] : INFINITY;
    s.cand_top1 = top2(candidate).first;
    s.ref_sd = ref_sd;
    s.finite = all_finite(candidate);
    if (!s.finite) {
        s.kl = s.max_abs_diff = INFINITY;
        return s;
    }
    const double lz_c = log_sum_exp(candidate);
    double kl = 0, p_top = 0, q_top = 0;
    for (size_t i = 0; i < reference.ids.size(); ++i) {
        const double lp = reference.logits[i] - reference.log_z, lq = candidate[reference.ids[i]] - lz_c;
        kl += std::exp(lp) * (lp - lq);
        p_top += std::exp(lp), q_top += std::exp(lq);
        s.max_abs_diff = std::max(s.max_abs_diff, std::fabs(double(candidate[reference.ids[i]]) - reference.logits[i]));
    }
    const double p_rest = std::max(0.0, 1 - p_top), q_rest = std::max(1e-300, 1 - q_top);
    if (p_rest > 0) kl += p_rest * std::log(p_rest / q_rest);
    s.kl = std::max(0.0, kl);
    return s;
}

SequenceSummary summarize(const std::vector<PositionStats>& positions, double tie_gap) {
    SequenceSummary s;
    s.positions = int32_t(positions.size());
    double kl_sum = 0;
    for (int32_t i = 0; i < s.positions; ++i) {
        const PositionStats& p = positions[i];
        const bool agree = p.cand_top1 == p.ref_top1;
        s.agree += agree;
        if (p.ref_gap >= tie_gap) {
            ++s.decisive;
            s.decisive_agree += agree;
            if (!agree && s.first_disagreement < 0)
                s.first_disagreement = i, s.first_cand = p.cand_top1, s.first_ref = p.ref_top1, s.first_gap = p.ref_gap;
        }
        s.finite = s.finite && p.finite;
        kl_sum += p.kl;
        if (p.kl > s.max_kl || s.max_kl_position < 0) s.max_kl = p.kl, s.max_kl_position = i;
        const double diff = p.ref_sd > 0 ? p.max_abs_diff / p.ref_sd : p.max_abs_diff;
        if (diff > s.max_diff_sd || s.max_diff_position < 0) s.max_diff_sd = diff, s.max_diff_position = i;
    }
    s.mean_kl = s.positions ? kl_sum / s.positions : 0;
    return s;
}

Divergence first_divergence(const GreedyRun& candidate, const GreedyRun& reference) {
    Divergence d;
    const size_t n = std::min(candidate.tokens.size(), reference.tokens.size());
    for (size_t i = 0; i < n; ++i) {
        if (candidate.tokens[i] == reference.tokens[i]) continue;
        d.identical = false;
        d.position = int32_t(i);
        d.cand_token = candidate.tokens[i], d.ref_token = reference.tokens[i];
        d.cand_margin = candidate.margins[i], d.ref_margin = reference.margins[i];
        return d;
    }
    if (candidate.tokens.size() != reference.tokens.size()) {
        d.identical = false;
        d.position = int32_t(n);
    }
    return d;
}

}  // namespace edgerun::conformance
