/* A sampler plugin for the serve tests: greedy, but it refuses top_k above 10 as its
 * own limit, the way a plugin names a parameter it refuses (by its command-line flag).
 * edgerun serve must turn that into a 400 naming the field before any answer starts,
 * streamed or not. */
#include <edgerun/abi.h>

#include <stdio.h>
#include <stdlib.h>

enum { kMaxTopK = 10 };

struct er_sampler {
    int32_t n_vocab;
};

static er_status fail(er_error* err, er_status code, const char* message) {
    if (err) {
        err->code = code;
        snprintf(err->message, sizeof err->message, "%s", message);
    }
    return code;
}

static er_status create(const er_sampler_params* params, int32_t n_vocab, er_sampler** out, er_error* err) {
    er_sampler* s;
    char message[128];
    if (!params || params->struct_size < sizeof(er_sampler_params) || !out || n_vocab <= 0)
        return fail(err, ER_E_INVALID_ARGUMENT, "refusing_sampler: bad arguments to create");
    if (params->top_k > kMaxTopK) {
        snprintf(message, sizeof message, "--top-k must be at most %d (got %d)", kMaxTopK, (int)params->top_k);
        return fail(err, ER_E_INVALID_ARGUMENT, message);
    }
    s = (er_sampler*)malloc(sizeof *s);
    if (!s) return fail(err, ER_E_OUT_OF_MEMORY, "refusing_sampler: out of memory");
    s->n_vocab = n_vocab;
    *out = s;
    return ER_OK;
}

static void destroy(er_sampler* s) { free(s); }

static void reset(er_sampler* s) { (void)s; }

static er_status accept(er_sampler* s, int32_t token, er_error* err) {
    if (token < 0 || token >= s->n_vocab) return fail(err, ER_E_INVALID_ARGUMENT, "refusing_sampler: token outside the vocabulary");
    return ER_OK;
}

static er_status sample(er_sampler* s, const float* logits, int32_t n_vocab, int32_t* token, er_error* err) {
    int32_t best = 0, i;
    if (n_vocab != s->n_vocab) return fail(err, ER_E_INVALID_ARGUMENT, "refusing_sampler: logits of another vocabulary size");
    for (i = 1; i < n_vocab; ++i)
        if (logits[i] > logits[best]) best = i;
    *token = best;
    return ER_OK;
}

static int32_t is_greedy(const er_sampler* s) {
    (void)s;
    return 1;
}

/* The speculative-decoding entries are optional (abi.h): none here. */
static const er_sampler_iface kIface = {sizeof(er_sampler_iface), create, destroy, reset, accept, sample, is_greedy,
                                        NULL, NULL, NULL};

static const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_SAMPLER, "refusing_sampler", "1.0.0",
                                  "greedy; refuses top_k above 10 (serve tests)", &kIface};

ER_PLUGIN_EXPORT er_status edgerun_plugin_entry(const er_host* host, const er_plugin** out, er_error* err) {
    if (!host || host->abi_version != ER_ABI_VERSION) return fail(err, ER_E_UNSUPPORTED, "refusing_sampler: host of another ABI");
    *out = &kPlugin;
    return ER_OK;
}
