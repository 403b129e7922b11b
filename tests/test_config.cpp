#include <doctest/doctest.h>

#include <edgerun/config.hpp>
#include <edgerun/host_api.hpp>

#include <filesystem>
#include <fstream>

using namespace edgerun;
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct Fixture {
    int threads = 1;
    float temp = 0.8f;
    std::string backend = "cpu_ref";
    bool verbose = false;
    std::vector<std::string> dirs;
    po::options_description desc{"test"};
    po::variables_map vm;

    Fixture() {
        desc.add_options()("help", "")("config", po::value<std::string>(), "")(
            "threads", po::value(&threads)->default_value(1), "")("temp", po::value(&temp)->default_value(0.8f), "")(
            "backend", po::value(&backend)->default_value("cpu_ref"), "")("verbose", po::bool_switch(&verbose), "")(
            "plugin-dir", po::value(&dirs)->composing(), "");
    }

    void parse_cli(std::vector<std::string> args) { po::store(po::command_line_parser(args).options(desc).run(), vm); }

    fs::path write(const std::string& name, const std::string& text) {
        fs::path dir = fs::path(EDGERUN_TEST_TMP) / "config";
        fs::create_directories(dir);
        std::ofstream(dir / name) << text;
        return dir / name;
    }

    std::string error_of(const fs::path& file) {
        try {
            apply_config_file(file, desc, vm);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    }
};

}  // namespace

TEST_CASE("config values fill what the command line left unset") {
    Fixture f;
    f.parse_cli({"--threads", "4"});
    apply_config_file(f.write("ok.toml", "threads = 8\ntemp = 0.25\nbackend = \"example\"\nverbose = true\n"
                                         "plugin-dir = [\"/a\", \"/b\"]\n"),
                      f.desc, f.vm);
    po::notify(f.vm);
    CHECK(f.threads == 4);  // command line wins
    CHECK(f.temp == doctest::Approx(0.25f));
    CHECK(f.backend == "example");
    CHECK(f.verbose);
    CHECK(f.dirs == std::vector<std::string>{"/a", "/b"});
}

TEST_CASE("defaults stand when neither the file nor the command line sets a value") {
    Fixture f;
    f.parse_cli({});
    apply_config_file(f.write("empty.toml", "# nothing\n"), f.desc, f.vm);
    po::notify(f.vm);
    CHECK(f.threads == 1);
    CHECK(f.backend == "cpu_ref");
}

TEST_CASE("an integer key accepts no float, and a float key accepts an integer") {
    Fixture f;
    CHECK(f.error_of(f.write("int.toml", "threads = 2.5\n")).find("key 'threads' must be an integer") !=
          std::string::npos);
    Fixture g;
    CHECK(g.error_of(g.write("real.toml", "temp = 1\n")).empty());
}

TEST_CASE("config errors name the file, line and key") {
    Fixture f;
    std::string unknown = f.error_of(f.write("unknown.toml", "threads = 2\n\nbogus = 1\n"));
    CHECK(unknown.find("unknown.toml:3: unknown key 'bogus'") != std::string::npos);

    std::string wrong = f.error_of(f.write("wrong.toml", "backend = 3\n"));
    CHECK(wrong.find("wrong.toml:1: key 'backend' must be a string") != std::string::npos);

    std::string bad_bool = f.error_of(f.write("bool.toml", "verbose = \"yes\"\n"));
    CHECK(bad_bool.find("bool.toml:1: key 'verbose' must be true or false") != std::string::npos);

    std::string syntax = f.error_of(f.write("syntax.toml", "threads = \n"));
    CHECK(syntax.find("syntax.toml:1:") != std::string::npos);

    std::string not_allowed = f.error_of(f.write("help.toml", "help = true\n"));
    CHECK(not_allowed.find("unknown key 'help'") != std::string::npos);
}
