#include <doctest/doctest.h>

#include <edgerun/plugin_registry.hpp>
#include <edgerun/runner.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

using namespace edgerun;

namespace {

// Captures the recording backend's "call X" log lines.
struct CallLog {
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100000);
    std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();

    CallLog() {
        auto logger = std::make_shared<spdlog::logger>("calls", sink);
        logger->set_pattern("%v");
        logger->set_level(spdlog::level::trace);
        spdlog::set_default_logger(logger);
        spdlog::set_level(spdlog::level::trace);
        plugin_host();
    }
    ~CallLog() {
        spdlog::set_default_logger(previous);
        spdlog::set_level(spdlog::level::warn);
        plugin_host();
    }
    std::vector<std::string> calls() {
        std::vector<std::string> out;
        for (auto& line : sink->last_formatted()) {
            auto at = line.find("call ");
            if (at != std::string::npos) out.push_back(line.substr(at + 5, line.find_first_of("\r\n", at) - at - 5));
        }
        return out;
    }
    void clear() { sink = nullptr; }
};

struct ToyModel {
    std::vector<float> table = std::vector<float>(4 * 16, 0.0f);
    WeightTable weights;
    ToyModel() {
        er_tensor_desc t{};
        t.name = er_str{"token_embd.weight", 17};
        t.dtype = 0;
        t.n_dims = 2;
        t.ne[0] = 4;
        t.ne[1] = 16;
        t.data = table.data();
        t.nbytes = table.size() * sizeof(float);
        weights = WeightTable({t});
    }
    Graph graph(int32_t max_tokens) const {
        GraphBuilder b(weights, max_tokens);
        b.logits(b.embed(b.tokens(), 0), 0);
        return b.finish();
    }
};

}  // namespace

TEST_CASE("after a context exists, steps ask the backend for no allocation") {
    CallLog log;
    PluginRegistry registry;
    registry.scan_directory(EDGERUN_RECORDING_DIR);
    const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "recording");
    REQUIRE(plugin != nullptr);

    ToyModel toy;
    auto bp = sized<er_backend_params>();
    Backend backend(*plugin, bp);
    auto mp = sized<er_model_params>();
    mp.weights = toy.weights.tensors().data();
    mp.n_weights = toy.weights.size();
    BackendModel model(backend, mp);
    auto cp = sized<er_context_params>();
    cp.n_ctx = 256;
    cp.n_batch = 8;
    Graph prefill = toy.graph(cp.n_batch), decode = toy.graph(1);
    Runner runner(model, cp, prefill, decode);

    const auto setup = log.calls();
    CHECK(std::count(setup.begin(), setup.end(), "context_create") == 1);
    CHECK(std::count(setup.begin(), setup.end(), "plan_create") == 2);
    const size_t setup_calls = setup.size();

    // A 13-token prompt (two prefill chunks), then 150 decode steps, then a rewind and more.
    std::vector<int32_t> prompt(13);
    std::iota(prompt.begin(), prompt.end(), 0);
    runner.feed(prompt);
    int32_t token = 5;
    for (int step = 0; step < 150; ++step) {
        int32_t next = runner.feed_greedy(token);
        CHECK(next == (token + 1) % 16);
        token = next;
    }
    runner.rewind(20);
    runner.feed(std::vector<int32_t>{3});
    CHECK(std::max_element(runner.last_logits().begin(), runner.last_logits().end()) - runner.last_logits().begin() == 4);
    CHECK(runner.position() == 21);

    const auto all = log.calls();
    const std::vector<std::string> steps(all.begin() + setup_calls, all.end());
    const std::vector<std::string> allowed = {"plan_set_input", "plan_execute", "plan_get_output", "plan_argmax"};
    for (const auto& call : steps) {
        CAPTURE(call);
        CHECK(std::find(allowed.begin(), allowed.end(), call) != allowed.end());
    }
    CHECK(std::count(steps.begin(), steps.end(), "plan_execute") == 2 + 150 + 1);
}

TEST_CASE("a prompt that does not fit the context is refused before any work") {
    PluginRegistry registry;
    registry.scan_directory(EDGERUN_RECORDING_DIR);
    const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "recording");
    REQUIRE(plugin != nullptr);
    ToyModel toy;
    Backend backend(*plugin, sized<er_backend_params>());
    auto mp = sized<er_model_params>();
    mp.weights = toy.weights.tensors().data();
    mp.n_weights = toy.weights.size();
    BackendModel model(backend, mp);
    auto cp = sized<er_context_params>();
    cp.n_ctx = 10;
    cp.n_batch = 4;
    Runner runner(model, cp, toy.graph(4), toy.graph(1));
    std::vector<int32_t> prompt(11, 1);
    CHECK_THROWS_WITH_AS(runner.feed(prompt), "context is full: 0 positions used, 11 more do not fit in 10", Error);
    CHECK(runner.position() == 0);
}
