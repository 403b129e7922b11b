#include <doctest/doctest.h>

#include "check_throws.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace edgerun;
namespace fs = std::filesystem;

namespace {

const PluginFailure* failure_for(const PluginRegistry& registry, const std::string& file_part) {
    for (const auto& f : registry.failures())
        if (f.path.find(file_part) != std::string::npos) return &f;
    return nullptr;
}

}  // namespace

TEST_CASE("the registry finds the in-tree plugins") {
    PluginRegistry registry;
    registry.scan_directory(EDGERUN_BUILD_PLUGIN_DIR);
    CHECK(registry.failures().empty());
    CHECK(registry.find(ER_PLUGIN_FORMAT, "formats_gguf") != nullptr);
    CHECK(registry.find(ER_PLUGIN_BACKEND, "cpu_ref") != nullptr);
    CHECK(registry.find(ER_PLUGIN_SAMPLER, "sampler") != nullptr);
    CHECK(registry.find(ER_PLUGIN_BACKEND, "example") != nullptr);
    CHECK((registry.find(ER_PLUGIN_BACKEND, "cuda_orin") != nullptr) == bool(EDGERUN_HAVE_CUDA));
    for (const Plugin& p : registry.plugins()) CHECK(p.desc->abi_version == ER_ABI_VERSION);
}

TEST_CASE("a plugin written in plain C loads and works through the ABI") {
    PluginRegistry registry;
    registry.scan_directory(EDGERUN_C_PLUGIN_DIR);
    CHECK(registry.failures().empty());
    const Plugin* plugin = registry.find(ER_PLUGIN_SAMPLER, "c_greedy");
    REQUIRE(plugin != nullptr);
    CHECK(std::string(plugin->desc->version) == "1.0.0");

    er_sampler_params params{};
    params.struct_size = sizeof params;
    Sampler sampler(*plugin, params, 5);
    const float logits[5] = {0.5f, -1.0f, 3.25f, 3.0f, -7.0f};
    CHECK(sampler.sample(logits, 5) == 2);
    CHECK(sampler.is_greedy());
    sampler.accept(4);
    CHECK_THROWS_CONTAINING_AS(sampler.accept(5), "c_greedy: token outside the vocabulary", Error);
    CHECK_THROWS_CONTAINING_AS(sampler.sample(logits, 4), "another vocabulary size", Error);
    // The speculative-decoding entries, in C too.
    REQUIRE(sampler.has_speculative_entries());
    float probs[5];
    sampler.distribution(logits, 5, probs);
    CHECK((probs[0] == 0.0f && probs[1] == 0.0f && probs[2] == 1.0f && probs[3] == 0.0f && probs[4] == 0.0f));
    sampler.rollback(1);
    CHECK_THROWS_CONTAINING_AS(sampler.rollback(1), "c_greedy: cannot roll back that far", Error);
}

TEST_CASE("each bad plugin is refused with its own reason and the others still load") {
    PluginRegistry registry;
    const fs::path dir = fs::path(EDGERUN_TEST_TMP) / "registry_bad";
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(EDGERUN_FIXTURE_DIR))
        fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
    std::ofstream(dir / "libedgerun_junk.so") << "this is not an ELF file\n";
    // A good plugin as if built for another CPU: its header's e_machine made RISC-V's.
    std::string foreign;
    for (const auto& entry : fs::directory_iterator(EDGERUN_FIXTURE_DIR))
        if (entry.path().filename().string().find("fixture_good") != std::string::npos) {
            std::ifstream in(entry.path(), std::ios::binary);
            foreign.assign(std::istreambuf_iterator<char>(in), {});
        }
    REQUIRE(foreign.size() > 20);
    foreign[18] = char(243);  // EM_RISCV, little-endian
    foreign[19] = 0;
    std::ofstream(dir / "libedgerun_foreign.so", std::ios::binary) << foreign;

    registry.scan_directory(dir);

    CHECK(registry.find(ER_PLUGIN_SAMPLER, "fixture_good") != nullptr);
    CHECK(registry.plugins().size() == 1);
    CHECK(registry.failures().size() == 8);

    struct Expect {
        const char* file;
        std::string reason_part;
    };
    const Expect expected[] = {
        {"libedgerun_junk.so", "not a loadable shared library"},
        {"libedgerun_foreign.so", "built for riscv64, this host is "},
        {"fixture_no_entry", "no entry symbol 'edgerun_plugin_entry'"},
        {"fixture_factory_fails", "plugin entry failed: fixture: no usable device on this machine"},
        {"fixture_wrong_abi", "built for plugin ABI " + std::to_string(ER_ABI_VERSION - 1) + ", this host speaks ABI " +
                                  std::to_string(ER_ABI_VERSION)},
        {"fixture_descriptor_size", "descriptor struct size is"},
        {"fixture_iface_size", "sampler interface struct size is"},
        {"fixture_missing_entry_fn", "sampler interface lacks the required entry 'sample'"},
    };
    for (const auto& e : expected) {
        CAPTURE(e.file);
        const PluginFailure* f = failure_for(registry, e.file);
        REQUIRE(f != nullptr);
        CHECK(f->reason.find(e.reason_part) != std::string::npos);
        CHECK(f->reason.find('\n') == std::string::npos);
    }
}

TEST_CASE("a plugin's library stays loaded while objects it made are alive") {
    Plugin kept;
    {
        PluginRegistry registry;
        registry.scan_directory(EDGERUN_FIXTURE_DIR);
        const Plugin* good = registry.find(ER_PLUGIN_SAMPLER, "fixture_good");
        REQUIRE(good != nullptr);
        kept = *good;
    }
    // The registry is gone. Calling into the library through the kept handle only works
    // because the handle keeps it mapped (unmapped, this would crash).
    CHECK(kept.library.use_count() == 1);
    CHECK(std::string(kept.desc->name) == "fixture_good");
    CHECK(kept.iface<er_sampler_iface>()->is_greedy(nullptr) == 1);
}

TEST_CASE("the first plugin of a name in the search path wins") {
    PluginRegistry registry;
    registry.scan_directory(EDGERUN_FIXTURE_DIR);
    const size_t loaded = registry.plugins().size();
    registry.scan_directory(EDGERUN_FIXTURE_DIR);
    CHECK(registry.plugins().size() == loaded);
}
