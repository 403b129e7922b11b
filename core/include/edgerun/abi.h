/*
 * edgerun plugin ABI.
 *
 * This is the only thing a plugin and the host share at run time. It is plain C on
 * purpose: third parties build plugins with other compilers and other C++ standard
 * libraries, so nothing here is a C++ type, nothing throws, and nothing allocates on
 * one side to be freed on the other.
 *
 * Rules that hold for every struct and call below:
 *  - Versioned structs start with `struct_size` (and the top-level ones with
 *    `abi_version`). The host checks both before it calls anything else; a plugin
 *    built for another ABI is refused with a message, never called.
 *  - Calls return an er_status (ER_OK or an error code). When a call fails and was
 *    given an er_error, it writes a one-line, NUL-terminated message there.
 *  - Handles are opaque. Every object a plugin returns is released through the same
 *    plugin's matching free/destroy entry.
 *  - Entries documented as OPTIONAL may be NULL.
 *  - Strings passed to a plugin are valid only for the duration of the call unless
 *    stated otherwise; strings a plugin returns (er_str) stay valid while the object
 *    they came from is alive.
 */
#ifndef EDGERUN_ABI_H
#define EDGERUN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any incompatible change to a struct or call in this file.
 * 2: multi-sequence contexts and steps (er_context_params.n_seqs, er_step.rows,
 *    er_device_info.max_seqs), plan_argmax over several rows, and the sampler's
 *    distribution / uniform / rollback entries for speculative decoding. */
#define ER_ABI_VERSION 2u

/* The one symbol every plugin library exports (see er_plugin_entry_fn). */
#define ER_ENTRY_SYMBOL "edgerun_plugin_entry"

#if defined(_WIN32)
#define ER_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ER_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------ errors -- */

typedef int32_t er_status;

enum {
    ER_OK = 0,
    ER_E_INVALID_ARGUMENT = 1, /* a caller passed something this call cannot take */
    ER_E_UNSUPPORTED = 2,      /* valid, but this plugin does not implement it */
    ER_E_OUT_OF_MEMORY = 3,
    ER_E_IO = 4,               /* the OS refused: open, read, mmap */
    ER_E_FORMAT = 5,           /* malformed input data (a model file) */
    ER_E_STATE = 6,            /* call not valid in the object's current state */
    ER_E_NOT_FOUND = 7,        /* a lookup by name found nothing */
    ER_E_INTERNAL = 8
};

#define ER_ERROR_MESSAGE_CAP 512

typedef struct er_error {
    er_status code;
    char message[ER_ERROR_MESSAGE_CAP];
} er_error;

/* A byte string that is not necessarily NUL-terminated. */
typedef struct er_str {
    const char* data;
    uint64_t size;
} er_str;

/* ----------------------------------------------------------------- logging -- */

enum { ER_LOG_TRACE = 0, ER_LOG_DEBUG = 1, ER_LOG_INFO = 2, ER_LOG_WARN = 3, ER_LOG_ERROR = 4 };

/* What the host hands every plugin at load. Plugins log only through `log`. */
typedef struct er_host {
    uint32_t struct_size;
    uint32_t abi_version;
    void* user_data;
    void (*log)(void* user_data, int32_t level, const char* plugin_name, const char* message);
    int32_t log_level; /* lowest level the host will print; plugins may skip work below it */
} er_host;

/* --------------------------------------------------------------- plugins -- */

enum { ER_PLUGIN_FORMAT = 1, ER_PLUGIN_BACKEND = 2, ER_PLUGIN_SAMPLER = 3 };

typedef struct er_plugin {
    uint32_t struct_size;
    uint32_t abi_version;
    int32_t kind;            /* ER_PLUGIN_* */
    const char* name;        /* short, unique: "cpu_ref", "formats_gguf" */
    const char* version;     /* the plugin's own version, free form */
    const char* description; /* one line */
    const void* iface;       /* er_format_iface / er_backend_iface / er_sampler_iface by kind */
} er_plugin;

/*
 * The entry symbol. The host calls it once after loading the library. The plugin
 * checks the host's ABI version itself and fails with a message on a mismatch.
 * On success *out points at a descriptor that stays valid until the library is
 * unloaded.
 */
typedef er_status (*er_plugin_entry_fn)(const er_host* host, const er_plugin** out, er_error* err);

/* ----------------------------------------------------------------- tensors -- */

/*
 * Tensor element types use GGUF's type ids (0 F32, 1 F16, 2 Q4_0, ... 30 BF16); see
 * edgerun/dtype.hpp for the full table with block sizes.
 */
#define ER_MAX_DIMS 4

typedef struct er_tensor_desc {
    er_str name;
    int32_t dtype;          /* GGUF type id */
    int32_t n_dims;
    int64_t ne[ER_MAX_DIMS]; /* ne[0] is the contiguous dimension (row length) */
    const void* data;       /* host-visible bytes (usually a read-only mapping) */
    uint64_t nbytes;
    uint64_t file_offset;   /* where `data` starts in the file, for reports */
} er_tensor_desc;

/* ------------------------------------------------------------ format plugin -- */

typedef struct er_file er_file;

/* Metadata value types: GGUF's ids, so a GGUF reader passes them through. */
enum {
    ER_META_U8 = 0, ER_META_I8 = 1, ER_META_U16 = 2, ER_META_I16 = 3, ER_META_U32 = 4,
    ER_META_I32 = 5, ER_META_F32 = 6, ER_META_BOOL = 7, ER_META_STRING = 8,
    ER_META_ARRAY = 9, ER_META_U64 = 10, ER_META_I64 = 11, ER_META_F64 = 12
};

typedef struct er_meta_value {
    int32_t type;          /* ER_META_* */
    int32_t array_type;    /* element type when type == ER_META_ARRAY */
    uint64_t array_count;  /* element count when type == ER_META_ARRAY */
    union {
        uint64_t u64;      /* U8..U64 and BOOL */
        int64_t i64;       /* I8..I64 */
        double f64;        /* F32, F64 */
        er_str str;        /* STRING */
    } v;
    const void* array_handle; /* opaque, for meta_array_at */
} er_meta_value;

/*
 * Architecture hyperparameters in neutral form. The format plugin fills what the file
 * says; fields the file does not give are 0 (or -1 for ids). Which fields an
 * architecture requires is checked by the core, which names the missing key.
 */
typedef struct er_model_desc {
    uint32_t struct_size;
    char arch[32];          /* "llama", "qwen2", "qwen3", ... */
    char name[128];
    int64_t n_vocab;
    int64_t n_ctx_train;
    int64_t n_embd;
    int64_t n_layer;
    int64_t n_head;
    int64_t n_head_kv;
    int64_t head_dim_k;     /* from key_length when present, else n_embd / n_head */
    int64_t head_dim_v;
    int64_t n_ff;
    int64_t n_rot;          /* rotary dimensions (rope.dimension_count), else head_dim_k */
    float rms_eps;
    float rope_freq_base;
    float rope_freq_scale; /* 1 / rope.scaling.factor for linear scaling, else 1 */
    int32_t file_type;     /* general.file_type, -1 when absent */
    /* The name of the metadata key each missing required value would come from, so the
     * core can say "missing llama.block_count" rather than "n_layer is 0". */
    char missing_key[128];
} er_model_desc;

/* Tokenizer data in neutral form. */
enum { ER_VOCAB_NONE = 0, ER_VOCAB_SPM = 1, ER_VOCAB_BPE = 2 };

enum {
    ER_TOKEN_UNDEFINED = 0, ER_TOKEN_NORMAL = 1, ER_TOKEN_UNKNOWN = 2, ER_TOKEN_CONTROL = 3,
    ER_TOKEN_USER_DEFINED = 4, ER_TOKEN_UNUSED = 5, ER_TOKEN_BYTE = 6
};

typedef struct er_vocab_desc {
    uint32_t struct_size;
    int32_t kind;          /* ER_VOCAB_* */
    er_str model;          /* the file's own name for it ("llama", "gpt2") */
    er_str pre;            /* pre-tokenizer name ("smollm", "qwen2", ...), may be empty */
    uint64_t n_tokens;
    uint64_t n_merges;
    int32_t bos_id, eos_id, eot_id, eom_id, unk_id, pad_id, sep_id; /* -1 when absent */
    int32_t add_bos;       /* -1 when the file does not say */
    int32_t add_eos;
    int32_t add_space_prefix;
    int32_t has_scores;
    er_str chat_template;  /* empty when absent */
} er_vocab_desc;

typedef struct er_writer er_writer;

typedef struct er_format_iface {
    uint32_t struct_size;
    const char* file_extensions; /* space separated, for messages: ".gguf" */

    /* Cheap check of a file's magic: *score 0 = not mine, higher = more confident. */
    er_status (*probe)(const char* path, int32_t* score, er_error* err);
    er_status (*open)(const char* path, er_file** out, er_error* err);
    void (*close)(er_file* file);

    /* One line describing the container, e.g. "GGUF v3, alignment 32". */
    er_str (*describe)(const er_file* file);

    uint64_t (*meta_count)(const er_file* file);
    er_status (*meta_at)(const er_file* file, uint64_t index, er_str* key, er_meta_value* value,
                         er_error* err);
    /* ER_E_NOT_FOUND (without a message) when the key is absent. */
    er_status (*meta_find)(const er_file* file, const char* key, er_meta_value* value,
                           er_error* err);
    er_status (*meta_array_at)(const er_file* file, const er_meta_value* array, uint64_t index,
                               er_meta_value* out, er_error* err);

    uint64_t (*tensor_count)(const er_file* file);
    er_status (*tensor_at)(const er_file* file, uint64_t index, er_tensor_desc* out, er_error* err);

    er_status (*model_desc)(const er_file* file, er_model_desc* out, er_error* err);
    er_status (*vocab_desc)(const er_file* file, er_vocab_desc* out, er_error* err);
    er_status (*vocab_token)(const er_file* file, uint64_t index, er_str* text, float* score,
                             int32_t* type, er_error* err);
    er_status (*vocab_merge)(const er_file* file, uint64_t index, er_str* merge, er_error* err);

    /* OPTIONAL. Tell the reader that [data, data+nbytes) of a tensor was copied elsewhere
     * and its pages may be dropped (unified-memory devices must not hold weights twice). */
    void (*release_range)(er_file* file, const void* data, uint64_t nbytes);

    /*
     * OPTIONAL: writing model files (quantize, synth). Order of calls: writer_set_meta and
     * writer_add_tensor (tensor infos: name, dtype, n_dims, ne; `data` is ignored), then
     * writer_write_tensor once per tensor in the order they were added, then
     * writer_finish. Output goes to a file that is not visible at `path` until
     * writer_finish succeeds, so a failed or interrupted run leaves no partial output;
     * writer_abort discards it. Both free the writer.
     *
     * writer_set_meta: scalars in `value`; for ER_META_ARRAY, `array_data` points at
     * value->array_count contiguous elements of value->array_type (er_str elements for
     * strings; nested arrays are not written).
     */
    er_status (*writer_create)(const char* path, er_writer** out, er_error* err);
    er_status (*writer_set_meta)(er_writer* writer, const char* key, const er_meta_value* value,
                                 const void* array_data, er_error* err);
    er_status (*writer_add_tensor)(er_writer* writer, const er_tensor_desc* desc, er_error* err);
    er_status (*writer_write_tensor)(er_writer* writer, const void* data, uint64_t nbytes,
                                     er_error* err);
    er_status (*writer_finish)(er_writer* writer, er_error* err);
    void (*writer_abort)(er_writer* writer);
} er_format_iface;

/* ------------------------------------------------------------------- graph -- */

/*
 * A graph is the whole forward pass of one phase (prefill of up to N tokens, or decode
 * of one), built once and handed to the backend whole, so it can fuse nodes, plan
 * memory and capture it. Nodes are in execution order; values are single-assignment.
 * Every value is a row-major matrix of [rows, width]: rows is the number of tokens in
 * the step (for LOGITS: the rows the step asks logits of).
 */
enum {
    ER_OP_EMBED = 1,        /* out = rows of weights[0] picked by in[0] (I32 token ids) */
    ER_OP_MATMUL = 2,       /* out = in[0] · weights[0]ᵀ (+ biases[0]) */
    ER_OP_MATMUL_MULTI = 3, /* out[i] = in[0] · weights[i]ᵀ (+ biases[i]), i < n_outputs;
                               outputs share one input so a backend may fuse them */
    ER_OP_RMS_NORM = 4,     /* out = in[0] / rms(in[0] over groups of params.rms_norm.group)
                               * weights[0] (weights[0] has `group` elements) */
    ER_OP_ROPE = 5,         /* out = in[0] with rotary embedding at each row's position;
                               weights[0] OPTIONAL per-dimension frequency factors */
    ER_OP_ATTENTION = 6,    /* in q, k, v: append each row's k, v to the cache of `layer` at
                               its sequence and position, then causal grouped-query attention
                               of each row over its own sequence's cache */
    ER_OP_SWIGLU = 7,       /* out = silu(in[0]) * in[1] */
    ER_OP_ADD = 8,          /* out = in[0] + in[1] */
    ER_OP_LOGITS = 9,       /* out = in[0] · weights[0]ᵀ for the rows the step asks logits of
                               (the last row, every row, or the rows flagged: er_step) */
    ER_OP_COUNT_ = 10
};

/* The op's name as logs, traces and reports print it; both sides of the ABI use it. */
static inline const char* er_op_name(int32_t op) {
    switch (op) {
        case ER_OP_EMBED: return "EMBED";
        case ER_OP_MATMUL: return "MATMUL";
        case ER_OP_MATMUL_MULTI: return "MATMUL_MULTI";
        case ER_OP_RMS_NORM: return "RMS_NORM";
        case ER_OP_ROPE: return "ROPE";
        case ER_OP_ATTENTION: return "ATTENTION";
        case ER_OP_SWIGLU: return "SWIGLU";
        case ER_OP_ADD: return "ADD";
        case ER_OP_LOGITS: return "LOGITS";
        default: return "?";
    }
}

enum { ER_ROPE_NORMAL = 0, ER_ROPE_NEOX = 2 }; /* GGML's mode numbers */

enum { ER_VALUE_F32 = 0, ER_VALUE_I32 = 1 };

enum { ER_VALUE_INPUT = 1u, ER_VALUE_OUTPUT = 2u }; /* flags: host writes / host reads */

#define ER_NODE_MAX_IO 4

typedef struct er_rms_norm_params {
    float eps;
    int32_t group; /* normalise each run of `group` values (= width, or head_dim per head) */
} er_rms_norm_params;

typedef struct er_rope_params {
    int32_t mode;      /* ER_ROPE_NORMAL (adjacent pairs) or ER_ROPE_NEOX (halves) */
    int32_t head_dim;
    int32_t n_rot;     /* rotated dimensions at the start of each head (<= head_dim) */
    float freq_base;
    float freq_scale;
} er_rope_params;

typedef struct er_attention_params {
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim_k;
    int32_t head_dim_v;
    float scale;       /* usually 1/sqrt(head_dim_k) */
} er_attention_params;

typedef struct er_node {
    int32_t op;        /* ER_OP_* */
    int32_t n_inputs;
    int32_t n_outputs;
    int32_t layer;     /* ATTENTION: the KV cache layer; otherwise the model layer or -1 */
    int32_t inputs[ER_NODE_MAX_IO];
    int32_t outputs[ER_NODE_MAX_IO];
    int32_t weights[ER_NODE_MAX_IO]; /* indices into the model's weight table, -1 for none */
    int32_t biases[ER_NODE_MAX_IO];  /* likewise */
    union {
        er_rms_norm_params rms_norm;
        er_rope_params rope;
        er_attention_params attention;
        float reserved[16];
    } params;
} er_node;

typedef struct er_value_desc {
    int32_t type;      /* ER_VALUE_F32 or ER_VALUE_I32 */
    uint32_t flags;    /* ER_VALUE_INPUT / ER_VALUE_OUTPUT */
    int64_t width;
} er_value_desc;

typedef struct er_graph {
    uint32_t struct_size;
    int32_t max_tokens;   /* the most rows a step of this graph may have */
    int32_t n_nodes;
    const er_node* nodes;
    int32_t n_values;
    const er_value_desc* values;
} er_graph;

/* --------------------------------------------------------------- backend -- */

typedef struct er_backend er_backend;
typedef struct er_model er_model;
typedef struct er_context er_context;
typedef struct er_plan er_plan;

typedef struct er_device_info {
    uint32_t struct_size;
    char name[128];
    char kind[16];            /* "cpu", "gpu", ... */
    uint64_t memory_total;    /* bytes, 0 when unknown */
    uint64_t memory_free;
    int32_t unified_memory;   /* 1 when the device shares DRAM with the host (Jetson) */
    int32_t score;            /* higher is preferred when the user names no backend */
    /* The most sequences one context may hold (er_context_params.n_seqs); 0 or 1: one.
     * Where it is 1 the runtime still serves several sequences, with one context each,
     * stepped one at a time. */
    int32_t max_seqs;
} er_device_info;

typedef struct er_backend_params {
    uint32_t struct_size;
    int32_t device;           /* index among device_count() */
    int32_t n_threads;        /* host threads the backend may use; <= 0: its own choice */
    const char* options;      /* backend-specific "key=value,key=value", may be NULL */
} er_backend_params;

/* What a weight is used for, so a backend can choose a layout at load. */
enum { ER_USE_EMBED = 1u, ER_USE_MATMUL = 2u, ER_USE_VECTOR = 4u };

typedef struct er_model_params {
    uint32_t struct_size;
    const er_tensor_desc* weights; /* the model's weight table; graphs index into it */
    const uint32_t* usage;         /* OPTIONAL per weight: ER_USE_* bits, 0 = unused */
    int64_t n_weights;
    /* OPTIONAL: the backend calls this once it no longer needs a weight's host bytes. */
    void (*release)(void* user_data, const void* data, uint64_t nbytes);
    void* release_user_data;
} er_model_params;

enum { ER_KV_F32 = 0, ER_KV_F16 = 1, ER_KV_Q8 = 2 }; /* Q8: int8, one f16 scale per 32 */

typedef struct er_context_params {
    uint32_t struct_size;
    int32_t n_ctx;       /* KV cache positions of each sequence */
    int32_t n_batch;     /* the most tokens one step will carry, all sequences together */
    int32_t kv_type;     /* ER_KV_* */
    int32_t n_layer;     /* KV geometry */
    int32_t n_head_kv;
    int32_t head_dim_k;
    int32_t head_dim_v;
    int32_t n_seqs;      /* sequences (0 .. n_seqs - 1), each with its own n_ctx positions of
                            KV cache; <= 1: one. At most the device's max_seqs. */
} er_context_params;

/*
 * Several sequences in one step.
 *
 * A context holds n_seqs sequences (conversations), each with its own KV cache of n_ctx
 * positions; a step carries rows of any of them, and each row says which sequence it
 * belongs to and at which position it sits (er_step_row). Every row of a step is
 * computed exactly as it would be in a step of that sequence alone (attention reads
 * only its own sequence's cache), so batching changes speed, never results; cpu_ref
 * makes that exact, bit for bit, for steps of up to 16 rows.
 *
 * Why one context holding several sequences, not a step over several contexts (the
 * choice llama.cpp makes too):
 *  - A plan belongs to one context and owns the buffers of its steps; a step across
 *    contexts would need a plan that belongs to none, and contexts whose lifetimes the
 *    backend does not control referenced from inside a step.
 *  - The KV cache of all sequences is one allocation, so a row's cache is found from
 *    its sequence index alone (base + seq * stride). The per-row table {seq, pos} is
 *    all that changes from step to step: a device backend copies it into device memory
 *    (16 bytes a row) and replays a captured CUDA Graph with the KV base, position and
 *    attention length of every row read from that table, not baked into the graph.
 *  - Weights are already shared between contexts (er_model), so several contexts
 *    would save nothing; sequences of one context share its scratch too.
 * A backend that runs one sequence per context says max_seqs = 1 (or 0): the runtime
 * then keeps a context per sequence and steps them one at a time.
 */
typedef struct er_step_row {
    int32_t seq;      /* the sequence this row belongs to, 0 .. n_seqs - 1 */
    int32_t pos;      /* its position in that sequence */
    int32_t logits;   /* 1: LOGITS computes this row; 0: it does not */
    int32_t reserved; /* 0 */
} er_step_row;

/*
 * One step of a plan: n_tokens rows.
 *
 * rows == NULL: the rows are positions pos0 .. pos0 + n_tokens - 1 of sequence 0, and
 * LOGITS computes the last row, or every row with logits_all.
 * rows != NULL: n_tokens entries, one per row in step order; pos0 and logits_all are
 * ignored. The rows of one sequence have consecutive, increasing positions in step
 * order (they need not be adjacent), and LOGITS computes the rows that ask, in step
 * order (none may ask: then LOGITS has no rows).
 *
 * Each row's key and value are appended to its sequence's cache at its position, then
 * it attends to positions [0, pos] of its own sequence. A sequence's cache holds
 * positions [0, last + 1) after a step whose last row of it is at `last`, and anything
 * past that is stale, so rewinding a conversation is simply a step at a smaller
 * position. A sequence's first row may not lie past the end of what its cache holds
 * (a gap would leave positions never written); a backend refuses such a step, or a
 * sequence index outside the context, with ER_E_INVALID_ARGUMENT.
 */
typedef struct er_step {
    uint32_t struct_size;
    int32_t n_tokens;
    int32_t pos0;
    int32_t logits_all;  /* LOGITS computes every row instead of only the last */
    const er_step_row* rows; /* NULL for a single-sequence step; see above */
} er_step;

typedef struct er_op_query {
    uint32_t struct_size;
    int32_t op;           /* ER_OP_* */
    int32_t weight_dtype; /* GGUF type id of the weight involved, -1 when none */
    int32_t kv_type;      /* ATTENTION: ER_KV_* */
    int32_t head_dim;     /* ATTENTION, ROPE, per-head RMS_NORM: head dimension */
} er_op_query;

typedef struct er_memory_stats {
    uint32_t struct_size;
    uint64_t weights_bytes;  /* held by the backend for weights */
    uint64_t kv_bytes;
    uint64_t scratch_bytes;
    uint64_t device_peak_bytes; /* 0 when the backend cannot tell */
} er_memory_stats;

typedef struct er_backend_iface {
    uint32_t struct_size;

    int32_t (*device_count)(void);
    er_status (*device_info)(int32_t device, er_device_info* out, er_error* err);

    er_status (*create)(const er_backend_params* params, er_backend** out, er_error* err);
    void (*destroy)(er_backend* backend);

    /* 1 when the backend runs this op with these types, 0 when it does not. */
    int32_t (*supports)(er_backend* backend, const er_op_query* query);

    /* Place the weights (copy, repack, or keep pointers to the host bytes). */
    er_status (*model_load)(er_backend* backend, const er_model_params* params, er_model** out,
                            er_error* err);
    void (*model_free)(er_model* model);

    /* Allocates everything a context needs: KV cache and any per-context state. */
    er_status (*context_create)(er_model* model, const er_context_params* params,
                                er_context** out, er_error* err);
    void (*context_free)(er_context* ctx);

    /* Compile a graph for this context: the backend's chance to fuse, plan buffers and
     * allocate them. Steps of a plan must not allocate. */
    er_status (*plan_create)(er_context* ctx, const er_graph* graph, er_plan** out,
                             er_error* err);
    void (*plan_free)(er_plan* plan);

    /* Copy `n_rows` rows of an ER_VALUE_INPUT value into the backend before a step. */
    er_status (*plan_set_input)(er_plan* plan, int32_t value, const void* data, int64_t n_rows,
                                er_error* err);
    er_status (*plan_execute)(er_plan* plan, const er_step* step, er_error* err);
    /* Copy `n_rows` rows of an ER_VALUE_OUTPUT value from the last step to host floats. */
    er_status (*plan_get_output)(er_plan* plan, int32_t value, float* dst, int64_t n_rows,
                                 er_error* err);

    /* OPTIONAL: argmax on the device of each of the first `n_rows` rows the last step
     * left in an output, into tokens[0 .. n_rows) (ties: lowest id; a NaN or infinite
     * logit is an error naming the row and token, never a silent pick). */
    er_status (*plan_argmax)(er_plan* plan, int32_t value, int32_t* tokens, int64_t n_rows, er_error* err);
    /* OPTIONAL */
    er_status (*memory_stats)(er_context* ctx, er_memory_stats* out, er_error* err);
} er_backend_iface;

/* --------------------------------------------------------------- sampler -- */

typedef struct er_sampler er_sampler;

typedef struct er_sampler_params {
    uint32_t struct_size;
    float temperature;        /* <= 0: greedy */
    int32_t top_k;            /* <= 0: off */
    float top_p;              /* >= 1: off */
    float min_p;              /* <= 0: off */
    float repeat_penalty;     /* 1: off */
    float presence_penalty;   /* 0: off */
    float frequency_penalty;  /* 0: off */
    int32_t penalty_last_n;   /* window of recent tokens the penalties see */
    uint64_t seed;
} er_sampler_params;

typedef struct er_sampler_iface {
    uint32_t struct_size;
    er_status (*create)(const er_sampler_params* params, int32_t n_vocab, er_sampler** out,
                        er_error* err);
    void (*destroy)(er_sampler* sampler);
    /* Forget the token history (a new conversation); the random state is kept. */
    void (*reset)(er_sampler* sampler);
    /* Record a token (prompt or generated) in the history the penalties use. */
    er_status (*accept)(er_sampler* sampler, int32_t token, er_error* err);
    /* Pick the next token from one row of logits. Does not accept it. A logit of -infinity
     * is a token the host rules out (constrained decoding: a grammar allows only some
     * tokens next) and must never be picked; at least one logit is finite. */
    er_status (*sample)(er_sampler* sampler, const float* logits, int32_t n_vocab, int32_t* token,
                        er_error* err);
    /* 1 when sample() is a plain argmax of the logits (so a device argmax may replace it). */
    int32_t (*is_greedy)(const er_sampler* sampler);

    /* For speculative decoding, which accepts or rejects a draft's tokens against the
     * target's distributions with the sampler's own random numbers, then takes the
     * rejected tokens back. All three OPTIONAL (a sampler without them still samples). */

    /* The distribution sample() draws from for these logits, after the whole chain
     * (penalties over the history, top-k, top-p, min-p, temperature): n_vocab
     * probabilities into `probs`, 0 for every token the chain removed, summing to 1
     * (greedy: 1 at the token sample() returns). A logit of -infinity is a ruled-out token,
     * as in sample(), and gets 0. Draws no random number, changes nothing. */
    er_status (*distribution)(er_sampler* sampler, const float* logits, int32_t n_vocab, float* probs,
                              er_error* err);
    /* The next number of the sampler's seeded stream (the one sample() draws from),
     * uniform in [0, 1). */
    double (*uniform)(er_sampler* sampler);
    /* Forget the last `n_tokens` accepted tokens, as if they had never been accepted
     * (the penalties see the history as it was before them). ER_E_INVALID_ARGUMENT when
     * fewer were accepted since reset. The random stream is not rewound. */
    er_status (*rollback)(er_sampler* sampler, int32_t n_tokens, er_error* err);
} er_sampler_iface;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGERUN_ABI_H */
