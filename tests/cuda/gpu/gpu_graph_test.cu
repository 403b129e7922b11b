// CUDA Graph readiness of the cuda_orin kernels: a two-layer Llama-3.2-1B-shaped decode
// step (embedding, norms, fused QKV, RoPE+append, split attention, O, SwiGLU, down,
// LM head, step advance) is captured once and replayed for 100 steps with a growing KV
// length, while the same launches run uncaptured on a second copy of the state. Every
// step's logits must be bit-identical: the captured sequence reads position, KV length
// and token id from device memory and has a fixed shape.
//
// Without a CUDA device it prints "skipped: no CUDA device" and exits 0.
#include "cuda_device.hpp"
#include "kernel_checks_attention.hpp"

#include <cmath>
#include <cstring>

using namespace edgerun::cuda_orin;
using namespace edgerun::cuda_orin::testing;

namespace {

constexpr int kEmbd = 2048, kHeads = 32, kKvHeads = 8, kHeadDim = 64, kFf = 8192, kVocab = 64, kLayers = 2;
constexpr int kCtx = 128, kSteps = 100;

struct Layer {
    PackedMatrix q, k, v, o, gate, up, down;
    float* attn_norm;
    float* ffn_norm;
};

struct Weights {
    const void* token_embd;  // GGUF Q8_0 rows
    Layer layers[kLayers];
    float* output_norm;
    PackedMatrix output;
    RopeConfig rope;
};

// Everything one decode sequence writes.
struct State {
    StepCounters* counters;
    float *hidden, *q, *k, *v, *attn, *ff, *logits, *workspace;
    float* act_f;
    int8_t* act_q;
    Words2* act_segments;
    KvCacheLayer cache[kLayers];
};

PackedMatrix device_matrix(CudaDevice& dev, int32_t type, int rows, int cols, std::mt19937& rng) {
    return make_device_matrix(dev, type, rows, cols, rng).view;
}

float* norm_weights(CudaDevice& dev, int n, std::mt19937& rng) {
    std::vector<float> w = random_vector(n, rng, 0.1f);
    for (float& e : w) e += 1.0f;
    return dev.upload_vector(w);
}

State make_state(CudaDevice& dev, int n_splits) {
    State s{};
    s.counters = static_cast<StepCounters*>(dev.alloc(sizeof(StepCounters)));
    const StepCounters start{0, 1, 0};
    dev.upload(s.counters, &start, sizeof start);
    auto floats = [&](size_t n) { return static_cast<float*>(dev.alloc(n * 4)); };
    s.hidden = floats(kEmbd);
    s.q = floats(kHeads * kHeadDim);
    s.k = floats(kKvHeads * kHeadDim);
    s.v = floats(kKvHeads * kHeadDim);
    s.attn = floats(kHeads * kHeadDim);
    s.ff = floats(kFf);
    s.logits = floats(kVocab);
    s.workspace = floats(attention_workspace_floats(kHeads, kHeadDim, n_splits));
    s.act_f = floats(kFf);
    s.act_q = static_cast<int8_t*>(dev.alloc(kFf));
    s.act_segments = static_cast<Words2*>(dev.alloc(kFf / 16 * sizeof(Words2)));
    for (KvCacheLayer& c : s.cache) c = alloc_cache(dev, kKvQ8, kKvHeads, kCtx, kHeadDim);
    return s;
}

Activation prepare(const State& s, const float* x, int n, const float* norm, const float* residual, float* residual_out,
                   cudaStream_t stream) {
    PrepareParams p;
    p.x = x;
    p.n = n;
    p.norm_weight = norm;
    p.norm_eps = 1e-5f;
    p.residual = residual;
    p.residual_out = residual_out;
    p.out_f = s.act_f;
    p.out_q = s.act_q;
    p.out_segments = s.act_segments;
    cuda_check(launch_prepare(p, stream), "prepare");
    return {{reinterpret_cast<const uint8_t*>(s.act_q), s.act_segments}, s.act_f, n, padded_length(n)};
}

void gemv(const Activation& x, std::initializer_list<std::pair<PackedMatrix, float*>> outs, const float* residual,
          int epilogue, int n_sms, cudaStream_t stream) {
    GemvLaunch l;
    l.x = x;
    l.epilogue = epilogue;
    for (const auto& [w, y] : outs) {
        l.out[l.n_outputs].w = w;
        l.out[l.n_outputs].y = y;
        l.out[l.n_outputs].residual = residual;
        ++l.n_outputs;
    }
    cuda_check(launch_gemv(l, n_sms, stream), "gemv");
}

// One decode step: all launches, no copies, no synchronisation.
void enqueue_step(const Weights& w, const State& s, int n_splits, int n_sms, cudaStream_t stream) {
    EmbedParams e;
    e.type = kQ8_0;
    e.table = w.token_embd;
    e.row_bytes = int64_t(gguf_matrix_bytes(kQ8_0, 1, kEmbd));
    e.n_rows = kVocab;
    e.n_cols = kEmbd;
    e.token = &s.counters->token;
    e.out = s.hidden;
    cuda_check(launch_embed(e, stream), "embed");
    for (int i = 0; i < kLayers; ++i) {
        const Layer& L = w.layers[i];
        Activation x = prepare(s, s.hidden, kEmbd, L.attn_norm, nullptr, nullptr, stream);
        gemv(x, {{L.q, s.q}, {L.k, s.k}, {L.v, s.v}}, nullptr, kEpilogueStore, n_sms, stream);
        RopeAppendParams r;
        r.q = s.q;
        r.n_head = kHeads;
        r.k = s.k;
        r.v = s.v;
        r.rope = w.rope;
        r.pos = &s.counters->pos;
        r.cache = s.cache[i];
        cuda_check(launch_rope_append(r, stream), "rope_append");
        AttentionParams a;
        a.q = s.q;
        a.cache = s.cache[i];
        a.kv_len = &s.counters->kv_len;
        a.n_head = kHeads;
        a.scale = 1.0f / std::sqrt(float(kHeadDim));
        a.n_splits = n_splits;
        a.workspace = s.workspace;
        a.out = s.attn;
        cuda_check(launch_attention(a, stream), "attention");
        x = prepare(s, s.attn, kHeads * kHeadDim, nullptr, nullptr, nullptr, stream);
        gemv(x, {{L.o, s.hidden}}, s.hidden, kEpilogueStore, n_sms, stream);
        x = prepare(s, s.hidden, kEmbd, L.ffn_norm, nullptr, nullptr, stream);
        gemv(x, {{L.gate, s.ff}, {L.up, s.ff}}, nullptr, kEpilogueSwiGLU, n_sms, stream);
        x = prepare(s, s.ff, kFf, nullptr, nullptr, nullptr, stream);
        gemv(x, {{L.down, s.hidden}}, s.hidden, kEpilogueStore, n_sms, stream);
    }
    const Activation x = prepare(s, s.hidden, kEmbd, w.output_norm, nullptr, nullptr, stream);
    gemv(x, {{w.output, s.logits}}, nullptr, kEpilogueStore, n_sms, stream);
    cuda_check(launch_advance_step(s.counters, stream), "advance_step");
}

}  // namespace

int main() {
    if (!cuda_device_present()) {
        std::printf("skipped: no CUDA device\n");
        return 0;
    }
    CudaDevice dev;
    const int n_sms = dev.n_sms(), n_splits = choose_kv_splits(kCtx, kKvHeads, n_sms);
    std::mt19937 rng(5);
    Weights w{};
    w.token_embd = dev.upload_vector(make_weights(kQ8_0, kVocab, kEmbd, rng));
    for (Layer& L : w.layers) {
        L.q = device_matrix(dev, kQ4_K, kHeads * kHeadDim, kEmbd, rng);
        L.k = device_matrix(dev, kQ4_K, kKvHeads * kHeadDim, kEmbd, rng);
        L.v = device_matrix(dev, kQ6_K, kKvHeads * kHeadDim, kEmbd, rng);
        L.o = device_matrix(dev, kQ4_K, kEmbd, kHeads * kHeadDim, rng);
        L.gate = device_matrix(dev, kQ4_K, kFf, kEmbd, rng);
        L.up = device_matrix(dev, kQ4_K, kFf, kEmbd, rng);
        L.down = device_matrix(dev, kQ6_K, kEmbd, kFf, rng);
        L.attn_norm = norm_weights(dev, kEmbd, rng);
        L.ffn_norm = norm_weights(dev, kEmbd, rng);
    }
    w.output_norm = norm_weights(dev, kEmbd, rng);
    w.output = device_matrix(dev, kQ6_K, kVocab, kEmbd, rng);
    w.rope = {kRopeNormal, kHeadDim, kHeadDim, rope_theta_scale(500000.0f, kHeadDim), 1.0f, nullptr};

    const State captured = make_state(dev, n_splits), direct = make_state(dev, n_splits);
    cudaStream_t stream = dev.stream();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    enqueue_step(w, captured, n_splits, n_sms, stream);
    cuda_check(cudaStreamEndCapture(stream, &graph), "end capture");
    cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    size_t n_nodes = 0;
    cudaGraphGetNodes(graph, nullptr, &n_nodes);
    std::printf("captured one decode step: %zu kernel nodes, %d KV splits\n", n_nodes, n_splits);

    int mismatched_steps = 0, unchanged_steps = 0, non_finite = 0;
    std::vector<float> previous(kVocab, 0.0f);
    for (int step = 0; step < kSteps; ++step) {
        const int32_t token = (step * 7 + 3) % kVocab;  // the sampler's choice, written between steps
        cuda_check(cudaMemcpy(&captured.counters->token, &token, 4, cudaMemcpyHostToDevice), "token");
        cuda_check(cudaMemcpy(&direct.counters->token, &token, 4, cudaMemcpyHostToDevice), "token");
        cuda_check(cudaGraphLaunch(exec, stream), "graph launch");
        enqueue_step(w, direct, n_splits, n_sms, stream);
        const std::vector<float> a = dev.download_vector(captured.logits, kVocab);
        const std::vector<float> b = dev.download_vector(direct.logits, kVocab);
        mismatched_steps += std::memcmp(a.data(), b.data(), kVocab * 4) != 0;
        unchanged_steps += a == previous;
        for (float f : a) non_finite += !std::isfinite(f);
        previous = a;
    }
    StepCounters end{};
    dev.download(&end, captured.counters, sizeof end);
    std::printf("%d steps: %d with logits differing from the uncaptured run, %d unchanged from the step before, "
                "%d non-finite values; final position %d, KV length %d\n",
                kSteps, mismatched_steps, unchanged_steps, non_finite, end.pos, end.kv_len);
    const bool ok = mismatched_steps == 0 && unchanged_steps == 0 && non_finite == 0 && end.pos == kSteps &&
                    end.kv_len == kSteps + 1;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    std::printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
    return ok ? 0 : 1;
}
