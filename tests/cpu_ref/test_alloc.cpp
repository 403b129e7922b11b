// Steps must not allocate. This binary replaces malloc and friends (glibc lets a program
// do so; they forward to glibc's own), so it counts every heap allocation of every
// thread and library in the process, the plugin's included, not just this file's.
#include "helpers.hpp"

#include <edgerun/runner.hpp>

#include <atomic>
#include <cstdlib>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<long> g_allocations{0};
void count() { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

extern "C" {
void* malloc(size_t n) { count(); return __libc_malloc(n); }
void* calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void* realloc(void* p, size_t n) { count(); return __libc_realloc(p, n); }
void* memalign(size_t align, size_t n) { count(); return __libc_memalign(align, n); }
void* aligned_alloc(size_t align, size_t n) { count(); return __libc_memalign(align, n); }
int posix_memalign(void** out, size_t align, size_t n) {
    count();
    *out = __libc_memalign(align, n);
    return *out ? 0 : ENOMEM;
}
}

using namespace cpu_ref_test;

TEST_CASE("after plan creation, prefill and decode steps allocate nothing (any thread, any library)") {
    std::mt19937 rng(5);
    Weights w;
    const int64_t embd = 256, vocab = 500;
    const int32_t tok = w.add_random("tok", 8, embd, vocab, rng);
    const int32_t norm = w.add_f32("norm", embd, 1, std::vector<float>(embd, 1.0f));
    const int32_t wq = w.add_random("wq", 12, embd, 256, rng), wk = w.add_random("wk", 14, embd, 128, rng),
                  wv = w.add_random("wv", 3, embd, 128, rng), wo = w.add_random("wo", 6, embd, embd, rng);
    const WeightTable table = w.table();
    auto graph = [&](int32_t max_tokens) {
        GraphBuilder b(table, max_tokens);
        int32_t x = b.embed(b.tokens(), tok);
        const int32_t h = b.rms_norm(x, norm, 1e-5f);
        auto qkv = b.matmul_multi(h, {{wq}, {wk}, {wv}});
        const er_rope_params rp{ER_ROPE_NEOX, 64, 64, 1e6f, 1.0f};
        const int32_t q = b.rope(qkv[0], rp), k = b.rope(qkv[1], rp);
        const int32_t a = b.attention(q, k, qkv[2], 0, er_attention_params{4, 2, 64, 64, 0.125f});
        x = b.add(x, b.swiglu(b.matmul(a, wo), x));
        b.logits(b.rms_norm(x, norm, 1e-5f), tok);
        return b.finish();
    };
    for (int32_t kv : {ER_KV_F32, ER_KV_Q8}) {
        auto backend = make_backend(3);
        BackendModel model(backend, Session::model_params(w));
        const long before_setup = g_allocations.load();
        Runner runner(model, context_params(128, 16, kv, 1, 2, 64, 64), graph(16), graph(1));
        // The counter does see the plugin: creating the context and plans allocated.
        CHECK(g_allocations.load() > before_setup);

        std::vector<int32_t> prompt(40);
        for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 37) % vocab);
        std::vector<float> all_logits(prompt.size() * vocab);
        const long before_steps = g_allocations.load();
        runner.feed(prompt, all_logits.data());  // three prefill chunks with all logits
        int32_t token = 1;
        for (int i = 0; i < 20; ++i) token = runner.feed_greedy(token);
        runner.rewind(10);
        runner.feed(std::span(prompt.data(), 5));
        CHECK(g_allocations.load() - before_steps == 0);
    }
}
