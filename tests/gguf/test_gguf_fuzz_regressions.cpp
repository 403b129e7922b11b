// Inputs from fuzzing (tests/gguf/fuzz_regressions/): crashers, once fixed, and a sample
// of the corpus that reaches deep into the reader. Each must open and read back fully, or
// be refused with one ER_E_FORMAT line; under -DEDGERUN_SANITIZE=ON any bad access fails.
#include "gguf_fixture.hpp"

#include <algorithm>

using namespace gguf_test;
namespace fs = std::filesystem;

namespace {

void walk(er_file* file, const er_meta_value& array) {
    for (uint64_t i = 0; i < array.array_count && i < 4096; ++i) {
        er_meta_value e{};
        er_error err{};
        REQUIRE(iface().meta_array_at(file, &array, i, &e, &err) == ER_OK);
        if (e.type == ER_META_ARRAY) walk(file, e);
    }
}

void read_everything(er_file* file) {
    for (uint64_t i = 0; i < iface().meta_count(file); ++i) {
        er_str key{};
        er_meta_value v{};
        er_error err{};
        REQUIRE(iface().meta_at(file, i, &key, &v, &err) == ER_OK);
        if (v.type == ER_META_ARRAY) walk(file, v);
    }
    unsigned sum = 0;
    for (uint64_t i = 0; i < iface().tensor_count(file); ++i) {
        er_tensor_desc t{};
        er_error err{};
        REQUIRE(iface().tensor_at(file, i, &t, &err) == ER_OK);
        sum += static_cast<const unsigned char*>(t.data)[t.nbytes - 1];
    }
    (void)sum;
    er_error err{};
    auto model = edgerun::sized<er_model_desc>();
    if (iface().model_desc(file, &model, &err) != ER_OK) CHECK(std::string(err.message).find('\n') == std::string::npos);
    auto vocab = edgerun::sized<er_vocab_desc>();
    if (iface().vocab_desc(file, &vocab, &err) == ER_OK)
        for (uint64_t i = 0; i < vocab.n_tokens; ++i) {
            er_str text{};
            float score;
            int32_t type;
            iface().vocab_token(file, i, &text, &score, &type, &err);
        }
}

}  // namespace

TEST_CASE("fuzz regressions: every saved input opens and reads back, or is refused in one line") {
    std::vector<fs::path> inputs;
    for (const auto& entry : fs::directory_iterator(EDGERUN_FUZZ_REGRESSION_DIR))
        if (entry.path().extension() == ".gguf") inputs.push_back(entry.path());
    std::sort(inputs.begin(), inputs.end());
    REQUIRE(inputs.size() >= 16);
    int opened = 0;
    for (const fs::path& input : inputs) {
        CAPTURE(input.filename().string());
        Opened f;
        open_path(input.string(), f);
        if (f.status == ER_OK) {
            ++opened;
            read_everything(f.file);
        } else {
            CHECK(f.status == ER_E_FORMAT);
            CHECK(!f.message.empty());
            CHECK(f.message.find('\n') == std::string::npos);
        }
    }
    CHECK(opened >= 6);  // the sample holds valid files that reach the model and vocab paths
}
