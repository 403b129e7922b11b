#include <doctest/doctest.h>

#include <edgerun/plugin_registry.hpp>
#include <edgerun/batch_runner.hpp>
#include <edgerun/runner.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <optional>

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

// The recording backend with ToyModel loaded: what every test here steps. Made after a
// test's CallLog, so that the log sees its calls.
struct RecordedToy {
    PluginRegistry registry;
    ToyModel toy;
    std::optional<Backend> backend;
    std::optional<BackendModel> model;

    RecordedToy() {
        registry.scan_directory(EDGERUN_RECORDING_DIR);
        const Plugin* plugin = registry.find(ER_PLUGIN_BACKEND, "recording");
        REQUIRE(plugin != nullptr);
        backend.emplace(*plugin, sized<er_backend_params>());
        auto mp = sized<er_model_params>();
        mp.weights = toy.weights.tensors().data();
        mp.n_weights = toy.weights.size();
        model.emplace(*backend, mp);
    }
};

}  // namespace

TEST_CASE("after a context exists, steps ask the backend for no allocation") {
    CallLog log;
    RecordedToy recorded;
    const ToyModel& toy = recorded.toy;
    const BackendModel& model = *recorded.model;
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
    RecordedToy recorded;
    const ToyModel& toy = recorded.toy;
    const BackendModel& model = *recorded.model;
    auto cp = sized<er_context_params>();
    cp.n_ctx = 10;
    cp.n_batch = 4;
    Runner runner(model, cp, toy.graph(4), toy.graph(1));
    std::vector<int32_t> prompt(11, 1);
    CHECK_THROWS_WITH_AS(runner.feed(prompt), "context is full: 0 positions used, 11 more do not fit in 10", Error);
    CHECK(runner.position() == 0);
}

TEST_CASE("a backend with one sequence per context still serves several: one context each, stepped one at a time") {
    CallLog log;
    RecordedToy recorded;
    const ToyModel& toy = recorded.toy;
    const BackendModel& model = *recorded.model;
    auto cp = sized<er_context_params>();
    cp.n_ctx = 6;
    cp.n_batch = 4;
    BatchRunner batch(model, cp, 3, toy.graph(4), toy.graph(1));
    CHECK_FALSE(batch.batched());
    const auto setup = log.calls();
    CHECK(std::count(setup.begin(), setup.end(), "context_create") == 3);
    const size_t setup_calls = setup.size();

    auto argmax = [&](int32_t seq) {
        const auto l = batch.logits(seq);
        return std::max_element(l.begin(), l.end()) - l.begin();
    };
    const std::vector<int32_t> a = {1, 2, 3}, b = {7}, c = {9, 10, 11, 12, 13};
    std::vector<float> all_c(c.size() * 16);
    batch.feed(std::vector<SequenceFeed>{{0, a}, {2, c, all_c.data()}, {1, b}});
    CHECK(argmax(0) == 4);
    CHECK(argmax(1) == 8);
    CHECK(argmax(2) == 14);
    for (size_t i = 0; i < c.size(); ++i)  // every row of sequence 2: token + 1
        CHECK(std::max_element(all_c.begin() + i * 16, all_c.begin() + (i + 1) * 16) - (all_c.begin() + i * 16) ==
              c[i] + 1);
    CHECK(batch.position(0) == 3);
    CHECK(batch.position(1) == 1);
    CHECK(batch.position(2) == 5);
    const auto calls = log.calls();
    // Sequence 2's five tokens take two steps of n_batch 4; the others one each.
    CHECK(std::count(calls.begin() + std::ptrdiff_t(setup_calls), calls.end(), "plan_execute") == 4);

    // Refused before any work: an unknown sequence, one fed twice, one that overflows.
    CHECK_THROWS_WITH_AS(batch.feed(std::vector<SequenceFeed>{{0, b}, {3, b}}),
                         "sequence 3 is not one of this batch's 3", Error);
    CHECK_THROWS_WITH_AS(batch.feed(std::vector<SequenceFeed>{{1, b}, {1, b}}), "sequence 1 is fed twice in one call",
                         Error);
    CHECK_THROWS_WITH_AS(batch.feed(std::vector<SequenceFeed>{{0, b}, {2, a}}),
                         "sequence 2: context is full: 5 positions used, 3 more do not fit in 6", Error);
    CHECK(batch.position(0) == 3);
    batch.rewind(2, 1);
    batch.feed(std::vector<SequenceFeed>{{2, b}});
    CHECK(batch.position(2) == 2);
    CHECK(argmax(2) == 8);
}

TEST_CASE("a batch of more sequences than kMaxBatchSequences is refused before any context exists") {
    CallLog log;
    RecordedToy recorded;
    const ToyModel& toy = recorded.toy;
    const BackendModel& model = *recorded.model;
    auto cp = sized<er_context_params>();
    cp.n_ctx = 6;
    cp.n_batch = 4;
    const std::string too_many = "a batch takes 1 to 1024 sequences, not 1025";
    CHECK_THROWS_WITH_AS(BatchRunner(model, cp, kMaxBatchSequences + 1, toy.graph(4), toy.graph(1)), too_many.c_str(),
                         Error);
    CHECK_THROWS_WITH_AS(BatchRunner(model, cp, 0, toy.graph(4), toy.graph(1)),
                         "a batch takes 1 to 1024 sequences, not 0", Error);
    cp.n_seqs = kMaxBatchSequences + 1;
    CHECK_THROWS_WITH_AS(BatchRunner(model, cp, toy.graph(4), toy.graph(1)), too_many.c_str(), Error);
    const auto calls = log.calls();
    CHECK(std::count(calls.begin(), calls.end(), "context_create") == 0);
}
