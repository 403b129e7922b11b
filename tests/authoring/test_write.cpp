// Files the authoring library writes, read back through the format plugin: synthesize()
// gives the same bytes whatever the thread count, a file the runtime opens with the
// planned types; write_requantized() keeps every value a lossless target can hold; an
// interrupt leaves no file.
#include "../build_plugins.hpp"

#include <edgerun/authoring/requantize.hpp>
#include <edgerun/authoring/synthesize.hpp>

#include <edgerun/interrupt.hpp>
#include <edgerun/model.hpp>
#include <edgerun/plugin_registry.hpp>
#include <edgerun/quant/blocks.hpp>

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace edgerun;
using namespace edgerun::authoring;

namespace {

std::string temp_path(const std::string& name) {
    std::filesystem::create_directories(EDGERUN_TEST_TMP "/authoring");
    const std::string path = EDGERUN_TEST_TMP "/authoring/" + name;
    std::filesystem::remove(path);
    return path;
}

std::string bytes_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SynthSpec spec_for(const char* preset, const char* type, int threads) {
    SynthSpec s;
    s.preset = *find_preset(preset);
    s.preset.n_vocab = 4096;
    s.n_layer = 2;
    s.file_type = *file_type_from_name(type);
    s.seed = 3;
    s.threads = threads;
    return s;
}

std::vector<float> values_of(const er_tensor_desc& t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t.n_dims; ++d) n *= t.ne[d];
    std::vector<float> out(static_cast<size_t>(n));
    REQUIRE(quant::dequantize_row(t.dtype, t.data, out.data(), n));
    return out;
}

}  // namespace

TEST_CASE("synthesize: the same bytes on 1 and 3 threads, and the runtime opens it with the planned types") {
    const std::string one = temp_path("qwen2-q4km-1.gguf"), three = temp_path("qwen2-q4km-3.gguf");
    const SynthSummary made = synthesize(build_plugins(), spec_for("qwen2.5-0.5b", "Q4_K_M", 1), one);
    synthesize(build_plugins(), spec_for("qwen2.5-0.5b", "Q4_K_M", 3), three);
    CHECK(bytes_of(one) == bytes_of(three));

    const SynthSpec spec = spec_for("qwen2.5-0.5b", "Q4_K_M", 1);
    const auto tensors = preset_tensors(spec.preset, 2);
    const auto types = synth_tensor_types(spec.preset, tensors, 2, spec.file_type.id);
    CHECK(made.n_tensors == tensors.size());
    CHECK(made.data_bytes == tensor_data_bytes(tensors, types));

    const Model model = Model::open(build_plugins(), one);
    const HParams& hp = model.hparams();
    CHECK(hp.arch == std::string(spec.preset.arch));
    CHECK(hp.n_layer == 2);
    CHECK(hp.n_vocab == 4096);
    CHECK(hp.n_embd == spec.preset.n_embd);
    CHECK(hp.n_head_kv == spec.preset.n_head_kv);
    CHECK(hp.file_type == int32_t(FileType::MOSTLY_Q4_K_M));
    REQUIRE(model.weights().size() == int32_t(tensors.size()));
    for (size_t i = 0; i < tensors.size(); ++i) {
        const er_tensor_desc& t = model.weights()[int32_t(i)];
        CHECK(to_string(t.name) == tensors[i].name);
        CHECK(t.dtype == types[i]);
    }
}

TEST_CASE("requantize: F16 to F32 keeps every value exactly, and the plan's sizes are the written file's") {
    const std::string source = temp_path("smol-f16.gguf"), target = temp_path("smol-f32.gguf");
    synthesize(build_plugins(), spec_for("smollm2-135m", "F16", 2), source);
    const ModelFile in(format_plugin_for(build_plugins(), source), source);
    const RequantizePlan plan = plan_requantize(in, source, *file_type_from_name("F32"), false);
    CHECK(plan.values_to_quantize > 0);
    write_requantized(build_plugins(), in, plan, target, 2);

    const ModelFile out(format_plugin_for(build_plugins(), target), target);
    const auto before = in.tensors(), after = out.tensors();
    REQUIRE(after.size() == before.size());
    uint64_t bytes = 0;
    for (size_t i = 0; i < after.size(); ++i) {
        CAPTURE(to_string(after[i].name));
        CHECK(after[i].dtype == int32_t(DType::F32));
        CHECK(after[i].dtype == plan.types[i]);
        CHECK(values_of(after[i]) == values_of(before[i]));
        bytes += after[i].nbytes;
    }
    CHECK(bytes == plan.bytes_out);
    CHECK(out.meta_find("general.file_type")->v.u64 == uint64_t(FileType::ALL_F32));
}

TEST_CASE("an interrupt stops synthesize with an error and leaves no file") {
    const std::string path = temp_path("interrupted.gguf");
    {
        const InterruptGuard guard;
        std::raise(SIGINT);  // the handler only sets the flag
        CHECK(InterruptGuard::requested());
        CHECK_THROWS_WITH(synthesize(build_plugins(), spec_for("smollm2-135m", "Q8_0", 2), path),
                          "interrupted; no output written");
    }
    CHECK_FALSE(std::filesystem::exists(path));
    const InterruptGuard again;
    CHECK_FALSE(InterruptGuard::requested());  // each guard starts clear
}
