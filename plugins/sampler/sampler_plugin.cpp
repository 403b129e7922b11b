// sampler: the sampling chain behind the C ABI (er_sampler_iface).
#include "sampling_chain.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cmath>

namespace {

using edgerun::sampling::SamplingChain;
using edgerun::sdk::guard;
using edgerun::sdk::set_errorf;

SamplingChain* chain(er_sampler* s) { return reinterpret_cast<SamplingChain*>(s); }

er_status check_params(const er_sampler_params* p, int32_t n_vocab, er_error* err) {
    if (!p || p->struct_size != sizeof(er_sampler_params))
        return edgerun::sdk::set_error(err, ER_E_INVALID_ARGUMENT, "sampler: parameters missing or of another ABI");
    if (n_vocab <= 0) return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: vocabulary size %d", n_vocab);
    if (!std::isfinite(p->temperature)) return set_errorf(err, ER_E_INVALID_ARGUMENT, "--temp must be finite");
    // 0 keeps only the most likely token (as llama.cpp and the OpenAI API take it).
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--top-p must be in [0, 1] (got %g)", p->top_p);
    // Written so that NaN, which every comparison calls false, is refused too.
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--min-p must be in [0, 1] (got %g)", p->min_p);
    if (!(p->repeat_penalty > 0.0f) || !std::isfinite(p->repeat_penalty))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--repeat-penalty must be finite and > 0 (got %g)", p->repeat_penalty);
    if (!std::isfinite(p->presence_penalty))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--presence-penalty must be finite (got %g)", p->presence_penalty);
    if (!std::isfinite(p->frequency_penalty))
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--frequency-penalty must be finite (got %g)", p->frequency_penalty);
    if (p->penalty_last_n < 0)
        return set_errorf(err, ER_E_INVALID_ARGUMENT, "--repeat-last-n must be >= 0 (got %d)", p->penalty_last_n);
    return ER_OK;
}

const er_sampler_iface kIface = {
    sizeof(er_sampler_iface),
    [](const er_sampler_params* params, int32_t n_vocab, er_sampler** out, er_error* err) {
        *out = nullptr;
        if (er_status s = check_params(params, n_vocab, err); s != ER_OK) return s;
        return guard(err, [&] { *out = reinterpret_cast<er_sampler*>(new SamplingChain(*params, n_vocab)); });
    },
    [](er_sampler* s) { delete chain(s); },
    [](er_sampler* s) { chain(s)->reset(); },
    [](er_sampler* s, int32_t token, er_error* err) {
        if (token < 0 || token >= chain(s)->n_vocab())
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: token %d outside the vocabulary", token);
        chain(s)->accept(token);
        return er_status{ER_OK};
    },
    [](er_sampler* s, const float* logits, int32_t n_vocab, int32_t* token, er_error* err) {
        if (n_vocab != chain(s)->n_vocab())
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: %d logits for a vocabulary of %d", n_vocab,
                              chain(s)->n_vocab());
        *token = chain(s)->sample(logits);
        return er_status{ER_OK};
    },
    [](const er_sampler* s) { return int32_t{reinterpret_cast<const SamplingChain*>(s)->is_greedy() ? 1 : 0}; },
    [](er_sampler* s, const float* logits, int32_t n_vocab, float* probs, er_error* err) {
        if (n_vocab != chain(s)->n_vocab())
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: %d logits for a vocabulary of %d", n_vocab,
                              chain(s)->n_vocab());
        if (!logits || !probs) return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: no logits or no output");
        chain(s)->distribution(logits, probs);
        return er_status{ER_OK};
    },
    [](er_sampler* s) { return chain(s)->uniform(); },
    [](er_sampler* s, int32_t n_tokens, er_error* err) {
        if (n_tokens < 0 || !chain(s)->rollback(size_t(n_tokens)))
            return set_errorf(err, ER_E_INVALID_ARGUMENT, "sampler: cannot take back %d tokens", n_tokens);
        return er_status{ER_OK};
    },
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_SAMPLER, "sampler", "0.1.0",
                           "greedy, temperature, top-k, top-p, min-p, repetition/presence/frequency penalties",
                           &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
