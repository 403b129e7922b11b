#include <doctest/doctest.h>

#include "check_throws.hpp"

#include <edgerun/host_api.hpp>
#include <edgerun/plugin_registry.hpp>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
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

// The bytes of the fixture plugin whose file name contains `name_part`.
std::string fixture_bytes(const std::string& name_part) {
    for (const auto& entry : fs::directory_iterator(EDGERUN_FIXTURE_DIR))
        if (entry.path().filename().string().find(name_part) != std::string::npos) {
            std::ifstream in(entry.path(), std::ios::binary);
            return std::string(std::istreambuf_iterator<char>(in), {});
        }
    FAIL("no fixture " << name_part);
    return {};
}

// A folder of its own for one test case (ctest runs them in parallel processes).
fs::path fresh_dir(const std::string& name) {
    const fs::path dir = fs::path(EDGERUN_TEST_TMP) / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// What the registry must say of `library` cut to its first `cut` bytes, worked out here
// from the full file's own headers: the first part that no longer fits, in the order
// the loader meets them (header, program header table, segments, section header table).
std::string expected_truncation(const std::string& library, uint64_t cut) {
    ElfW(Ehdr) header;
    std::memcpy(&header, library.data(), sizeof header);
    auto ends = [&](const std::string& what, uint64_t end) -> std::string {
        return "truncated ELF: " + what + " ends at byte " + std::to_string(end) + " of a " + std::to_string(cut) +
               "-byte file";
    };
    if (cut < sizeof header) return ends("the ELF header", sizeof header);
    const uint64_t program_table_end = header.e_phoff + uint64_t{header.e_phnum} * header.e_phentsize;
    if (cut < program_table_end) return ends("the program header table", program_table_end);
    for (int i = 0; i < header.e_phnum; ++i) {
        ElfW(Phdr) segment;
        std::memcpy(&segment, library.data() + header.e_phoff + size_t(i) * sizeof segment, sizeof segment);
        if (segment.p_type != PT_NULL && cut < segment.p_offset + segment.p_filesz)
            return ends("segment " + std::to_string(i), segment.p_offset + segment.p_filesz);
    }
    return ends("the section header table", header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize);
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
    std::string foreign = fixture_bytes("fixture_good");
    REQUIRE(foreign.size() > 20);
    foreign[18] = char(243);  // EM_RISCV, little-endian
    foreign[19] = 0;
    std::ofstream(dir / "libedgerun_foreign.so", std::ios::binary) << foreign;

    registry.scan_directory(dir);

    CHECK(registry.find(ER_PLUGIN_SAMPLER, "fixture_good") != nullptr);
    CHECK(registry.plugins().size() == 1);
    CHECK(registry.failures().size() == 9);

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
        {"fixture_control_name", "descriptor's name holds a control character (byte 27)"},
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

TEST_CASE("a truncated plugin is refused before dlopen, naming what lies past its end") {
    // dlopen maps a segment past the end of the file and dies of SIGBUS touching it: each
    // cut must be refused by the headers, with the others still loading.
    const std::string good = fixture_bytes("fixture_good");
    REQUIRE(good.size() > 4096);
    const fs::path dir = fresh_dir("registry_truncated");
    write_bytes(dir / "libedgerun_fixture_good.so", good);
    const fs::path cut_file = dir / "libedgerun_truncated.so";
    size_t segment_messages = 0;
    for (uint64_t cut = 20; cut < good.size(); cut += cut < 1024 ? 13 : 97) {
        CAPTURE(cut);
        write_bytes(cut_file, good.substr(0, cut));
        PluginRegistry registry;
        CHECK_FALSE(registry.load_file(cut_file));
        REQUIRE(registry.failures().size() == 1);
        CHECK(registry.failures()[0].reason == expected_truncation(good, cut));
        segment_messages += registry.failures()[0].reason.find("segment ") != std::string::npos;
    }
    CHECK(segment_messages > 10);  // the cuts that crashed dlopen are named by their segment

    write_bytes(cut_file, good.substr(0, 4096));
    PluginRegistry registry;
    registry.scan_directory(dir);
    CHECK(registry.find(ER_PLUGIN_SAMPLER, "fixture_good") != nullptr);
    REQUIRE(registry.failures().size() == 1);
    CHECK(registry.failures()[0].path == cut_file.string());
    CHECK(registry.failures()[0].reason == expected_truncation(good, 4096));
}

TEST_CASE("a plugin that dlopen refuses carries dlopen's reason, not a stale errno") {
    const fs::path dir = fresh_dir("registry_dlopen_reason");
    write_bytes(dir / "libedgerun_short.so", "this is not an ELF file\n");
    write_bytes(dir / "libedgerun_text.so", std::string(200, 'x'));
    PluginRegistry registry;
    registry.scan_directory(dir);
    REQUIRE(registry.failures().size() == 2);
    CHECK(failure_for(registry, "libedgerun_short.so")->reason == "not a loadable shared library: file too short");
    CHECK(failure_for(registry, "libedgerun_text.so")->reason == "not a loadable shared library: invalid ELF header");
}

TEST_CASE("a plugin of the other byte order or word size is named so, not by a byte-swapped machine number") {
    const std::string good = fixture_bytes("fixture_good");
    const bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    std::string swapped = good, narrow = good, no_class = good;
    swapped[EI_DATA] = char(little ? ELFDATA2MSB : ELFDATA2LSB);
    narrow[EI_CLASS] = char(ELFCLASS32);
    no_class[EI_CLASS] = char(ELFCLASSNONE);
    const fs::path dir = fresh_dir("registry_byte_order");
    write_bytes(dir / "libedgerun_swapped.so", swapped);
    write_bytes(dir / "libedgerun_narrow.so", narrow);
    write_bytes(dir / "libedgerun_no_class.so", no_class);
    PluginRegistry registry;
    registry.scan_directory(dir);
    REQUIRE(registry.failures().size() == 3);
    const std::string host = std::string(" (") + (little ? "little" : "big") + "-endian)";
    const std::string swapped_reason = failure_for(registry, "swapped")->reason;
    CHECK(swapped_reason.rfind(std::string("built for a ") + (little ? "big" : "little") +
                                   "-endian CPU (the other byte order), this host is ",
                               0) == 0);
    CHECK(swapped_reason.size() > host.size());
    CHECK(swapped_reason.compare(swapped_reason.size() - host.size(), host.size(), host) == 0);
    CHECK(swapped_reason.find("ELF machine") == std::string::npos);
    CHECK(failure_for(registry, "narrow")->reason.find(", 32-bit, this host is ") != std::string::npos);
    CHECK(failure_for(registry, "no_class")->reason ==
          "invalid ELF header: its word size (EI_CLASS) is 0, neither 1 nor 2");
}

TEST_CASE("a plugin path that is not a regular file is refused without opening it") {
    const fs::path dir = fresh_dir("registry_not_regular");
    const fs::path fifo = dir / "libedgerun_fifo.so";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Held open for writing with bytes in it, so that a regression reads junk and fails
    // with another reason rather than blocking the test forever: more than a stream's
    // buffer takes, less than the pipe holds (64 KiB).
    const int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    const std::string junk(60000, 'x');
    REQUIRE(::write(writer, junk.data(), junk.size()) == ssize_t(junk.size()));
    fs::create_directories(dir / "libedgerun_folder.so");
    PluginRegistry registry;
    registry.scan_directory(dir);
    ::close(writer);
    REQUIRE(registry.failures().size() == 2);
    CHECK(failure_for(registry, "libedgerun_fifo.so")->reason == "not a regular file");
    CHECK(failure_for(registry, "libedgerun_folder.so")->reason == "not a regular file");
}
