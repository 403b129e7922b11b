// The GGUF writer: what it writes the reader reads back identically; the output appears
// only when finish() succeeds; misuse is refused with a message.
#include "gguf_fixture.hpp"

#include <edgerun/dtype.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include <sys/wait.h>

using namespace gguf_test;
namespace fs = std::filesystem;

namespace {

// A writer handle that aborts when a test leaves it unfinished.
struct Writer {
    er_writer* w = nullptr;
    explicit Writer(const std::string& path) {
        er_error err{};
        REQUIRE(iface().writer_create(path.c_str(), &w, &err) == ER_OK);
    }
    ~Writer() {
        if (w) iface().writer_abort(w);
    }
    er_status meta(const char* key, const er_meta_value& v, const void* array = nullptr, std::string* message = nullptr) {
        er_error err{};
        const er_status s = iface().writer_set_meta(w, key, &v, array, &err);
        if (message) *message = err.message;
        return s;
    }
    er_status add(const char* name, int32_t dtype, std::vector<int64_t> ne, std::string* message = nullptr) {
        er_tensor_desc d{};
        d.name = er_str{name, std::strlen(name)};
        d.dtype = dtype;
        d.n_dims = static_cast<int32_t>(ne.size());
        for (size_t i = 0; i < ne.size() && i < ER_MAX_DIMS; ++i) d.ne[i] = ne[i];
        er_error err{};
        const er_status s = iface().writer_add_tensor(w, &d, &err);
        if (message) *message = err.message;
        return s;
    }
    er_status write(const std::string& data, std::string* message = nullptr) {
        er_error err{};
        const er_status s = iface().writer_write_tensor(w, data.data(), data.size(), &err);
        if (message) *message = err.message;
        return s;
    }
    er_status finish(std::string* message = nullptr) {
        er_error err{};
        const er_status s = iface().writer_finish(w, &err);
        w = nullptr;
        if (message) *message = err.message;
        return s;
    }
};

er_meta_value unsigned_value(int32_t type, uint64_t u) {
    er_meta_value v{};
    v.type = type;
    v.v.u64 = u;
    return v;
}
er_meta_value signed_value(int32_t type, int64_t i) {
    er_meta_value v{};
    v.type = type;
    v.v.i64 = i;
    return v;
}
er_meta_value float_value(int32_t type, double f) {
    er_meta_value v{};
    v.type = type;
    v.v.f64 = f;
    return v;
}
er_meta_value string_value(const std::string& s) {
    er_meta_value v{};
    v.type = ER_META_STRING;
    v.v.str = er_str{s.data(), s.size()};
    return v;
}
er_meta_value array_value(int32_t type, uint64_t count) {
    er_meta_value v{};
    v.type = ER_META_ARRAY;
    v.array_type = type;
    v.array_count = count;
    return v;
}

std::string pattern(size_t n, int seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 13 + seed * 101 + (i >> 9)) & 0xFF);
    return s;
}

// Files in `dir` (the writer must leave no temporaries behind).
std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = temp_dir() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("writer: round trip of every metadata type and several tensor types") {
    const fs::path dir = fresh_dir("roundtrip");
    const std::string path = (dir / "model.gguf").string();
    const std::string tokens[] = {"<s>", "", "\xc4\xa0hello", std::string("nul\0in", 6)};
    const er_str token_strs[] = {{tokens[0].data(), tokens[0].size()}, {tokens[1].data(), tokens[1].size()},
                                 {tokens[2].data(), tokens[2].size()}, {tokens[3].data(), tokens[3].size()}};
    const float scores[] = {0.0f, -1.5f, 3.25f, -0.0f};
    const int16_t shorts[] = {-32768, 32767};
    const uint8_t flags[] = {1, 0, 1};
    const std::vector<std::string> data = {pattern(544, 1), pattern(256, 2), pattern(2304, 3), pattern(64 * 2 * 4, 4)};
    {
        Writer w(path);
        CHECK(w.meta("general.architecture", string_value("llama")) == ER_OK);
        CHECK(w.meta("u8", unsigned_value(ER_META_U8, 200)) == ER_OK);
        CHECK(w.meta("i8", signed_value(ER_META_I8, -100)) == ER_OK);
        CHECK(w.meta("u16", unsigned_value(ER_META_U16, 60000)) == ER_OK);
        CHECK(w.meta("i16", signed_value(ER_META_I16, -30000)) == ER_OK);
        CHECK(w.meta("u32", unsigned_value(ER_META_U32, 4000000000u)) == ER_OK);
        CHECK(w.meta("i32", signed_value(ER_META_I32, -2000000000)) == ER_OK);
        CHECK(w.meta("u64", unsigned_value(ER_META_U64, ~uint64_t{0})) == ER_OK);
        CHECK(w.meta("i64", signed_value(ER_META_I64, INT64_MIN)) == ER_OK);
        CHECK(w.meta("f32", float_value(ER_META_F32, 0.1)) == ER_OK);
        CHECK(w.meta("f64", float_value(ER_META_F64, 0.1)) == ER_OK);
        CHECK(w.meta("bool", unsigned_value(ER_META_BOOL, 1)) == ER_OK);
        CHECK(w.meta("tokens", array_value(ER_META_STRING, 4), token_strs) == ER_OK);
        CHECK(w.meta("scores", array_value(ER_META_F32, 4), scores) == ER_OK);
        CHECK(w.meta("shorts", array_value(ER_META_I16, 2), shorts) == ER_OK);
        CHECK(w.meta("flags", array_value(ER_META_BOOL, 3), flags) == ER_OK);
        CHECK(w.meta("empty", array_value(ER_META_U32, 0), nullptr) == ER_OK);
        CHECK(w.meta("u8", unsigned_value(ER_META_U8, 201)) == ER_OK);  // replaces in place
        CHECK(w.add("token_embd.weight", 8, {64, 8}) == ER_OK);
        CHECK(w.add("norm", 0, {64}) == ER_OK);
        CHECK(w.add("q", 2, {64, 64}) == ER_OK);
        CHECK(w.add("cube", 1, {16, 4, 2, 2}) == ER_OK);  // F16, 4-D
        for (const auto& d : data) CHECK(w.write(d) == ER_OK);
        CHECK(!fs::exists(path));  // not before finish
        std::string message;
        CHECK(w.finish(&message) == ER_OK);
        INFO(message);
    }
    CHECK(listing(dir) == std::vector<std::string>{"model.gguf"});

    Opened f;
    open_path(path, f);
    INFO(f.message);
    REQUIRE(f.status == ER_OK);
    CHECK(str_of(iface().describe(f.file)) == "GGUF v3, 4 tensors, 17 metadata keys, alignment 32");
    const auto get = [&](const char* key) {
        er_meta_value v{};
        er_error err{};
        REQUIRE(iface().meta_find(f.file, key, &v, &err) == ER_OK);
        return v;
    };
    const auto at = [&](const er_meta_value& a, uint64_t i) {
        er_meta_value v{};
        er_error err{};
        REQUIRE(iface().meta_array_at(f.file, &a, i, &v, &err) == ER_OK);
        return v;
    };
    er_str first_key{};
    er_meta_value first{};
    er_error err{};
    REQUIRE(iface().meta_at(f.file, 1, &first_key, &first, &err) == ER_OK);
    CHECK(str_of(first_key) == "u8");
    CHECK(first.v.u64 == 201);
    CHECK(str_of(get("general.architecture").v.str) == "llama");
    CHECK(get("i8").v.i64 == -100);
    CHECK(get("u16").v.u64 == 60000);
    CHECK(get("i16").v.i64 == -30000);
    CHECK(get("u32").v.u64 == 4000000000u);
    CHECK(get("i32").v.i64 == -2000000000);
    CHECK(get("u64").v.u64 == ~uint64_t{0});
    CHECK(get("i64").v.i64 == INT64_MIN);
    CHECK(get("f32").v.f64 == static_cast<double>(0.1f));
    CHECK(get("f32").type == ER_META_F32);
    CHECK(get("f64").v.f64 == 0.1);
    CHECK(get("bool").v.u64 == 1);
    const er_meta_value toks = get("tokens");
    REQUIRE(toks.array_count == 4);
    for (uint64_t i = 0; i < 4; ++i) CHECK(str_of(at(toks, i).v.str) == tokens[i]);
    const er_meta_value sc = get("scores");
    for (uint64_t i = 0; i < 4; ++i) CHECK(at(sc, i).v.f64 == static_cast<double>(scores[i]));
    CHECK(at(get("shorts"), 0).v.i64 == -32768);
    CHECK(at(get("flags"), 2).v.u64 == 1);
    CHECK(get("empty").array_count == 0);

    REQUIRE(iface().tensor_count(f.file) == 4);
    const char* names[] = {"token_embd.weight", "norm", "q", "cube"};
    for (uint64_t i = 0; i < 4; ++i) {
        er_tensor_desc t{};
        REQUIRE(iface().tensor_at(f.file, i, &t, &err) == ER_OK);
        CHECK(str_of(t.name) == names[i]);
        CHECK(t.nbytes == data[i].size());
        CHECK(t.file_offset % 32 == 0);
        CHECK(std::string(static_cast<const char*>(t.data), t.nbytes) == data[i]);
    }
    er_tensor_desc cube{};
    REQUIRE(iface().tensor_at(f.file, 3, &cube, &err) == ER_OK);
    CHECK((cube.n_dims == 4 && cube.ne[0] == 16 && cube.ne[1] == 4 && cube.ne[2] == 2 && cube.ne[3] == 2));
}

TEST_CASE("writer: general.alignment sets the data alignment") {
    const fs::path dir = fresh_dir("align");
    const std::string path = (dir / "a64.gguf").string();
    {
        Writer w(path);
        CHECK(w.meta("general.alignment", unsigned_value(ER_META_U32, 64)) == ER_OK);
        CHECK(w.add("a", 0, {3}) == ER_OK);
        CHECK(w.add("b", 0, {5}) == ER_OK);
        CHECK(w.write(pattern(12, 1)) == ER_OK);
        CHECK(w.write(pattern(20, 2)) == ER_OK);
        CHECK(w.finish() == ER_OK);
    }
    Opened f;
    open_path(path, f);
    REQUIRE(f.status == ER_OK);
    CHECK(str_of(iface().describe(f.file)) == "GGUF v3, 2 tensors, 1 metadata keys, alignment 64");
    er_tensor_desc a{}, b{};
    er_error err{};
    REQUIRE(iface().tensor_at(f.file, 0, &a, &err) == ER_OK);
    REQUIRE(iface().tensor_at(f.file, 1, &b, &err) == ER_OK);
    CHECK(a.file_offset % 64 == 0);
    CHECK(b.file_offset == a.file_offset + 64);
}

TEST_CASE("writer: a file with only metadata (vocabulary-only) round-trips") {
    const fs::path dir = fresh_dir("vocab_only");
    const std::string path = (dir / "v.gguf").string();
    {
        Writer w(path);
        CHECK(w.meta("tokenizer.ggml.model", string_value("gpt2")) == ER_OK);
        CHECK(w.finish() == ER_OK);
    }
    Opened f;
    open_path(path, f);
    REQUIRE(f.status == ER_OK);
    CHECK(iface().tensor_count(f.file) == 0);
    CHECK(fs::file_size(path) == 24 + 8 + 20 + 4 + 8 + 4);  // no padding after the last key
}

TEST_CASE("writer: abort, or a failed finish, leaves nothing behind") {
    const fs::path dir = fresh_dir("abort");
    {
        Writer w((dir / "aborted.gguf").string());
        CHECK(w.add("a", 0, {4}) == ER_OK);
        CHECK(w.write(pattern(16, 1)) == ER_OK);
    }  // writer_abort
    {
        Writer w((dir / "short.gguf").string());
        CHECK(w.add("a", 0, {4}) == ER_OK);
        CHECK(w.add("b", 0, {4}) == ER_OK);
        CHECK(w.write(pattern(16, 1)) == ER_OK);
        std::string message;
        CHECK(w.finish(&message) == ER_E_STATE);
        CHECK(message == "writer_finish: 1 of 2 tensors were written");
    }
    CHECK(listing(dir).empty());
}

TEST_CASE("writer: a process killed while writing leaves nothing behind") {
    const fs::path dir = fresh_dir("killed");
    const std::string path = (dir / "killed.gguf").string();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        er_writer* w = nullptr;
        er_error err{};
        if (iface().writer_create(path.c_str(), &w, &err) != ER_OK) ::_exit(3);
        // Two tensors of 16 MiB of F32; the first is written (past the write buffer, so
        // bytes reach the file system) before the kill.
        er_tensor_desc d{};
        d.n_dims = 1;
        d.ne[0] = 4 << 20;
        d.name = er_str{"first", 5};
        iface().writer_add_tensor(w, &d, &err);
        d.name = er_str{"second", 6};
        iface().writer_add_tensor(w, &d, &err);
        const std::string data = pattern(16 << 20, 1);
        if (iface().writer_write_tensor(w, data.data(), data.size(), &err) != ER_OK) ::_exit(5);
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(listing(dir).empty());
}

TEST_CASE("writer: finishing replaces an existing file atomically") {
    const fs::path dir = fresh_dir("replace");
    const std::string path = (dir / "m.gguf").string();
    std::ofstream(path) << "old contents";
    {
        Writer w(path);
        CHECK(w.meta("k", unsigned_value(ER_META_U32, 7)) == ER_OK);
        CHECK(w.finish() == ER_OK);
    }
    CHECK(listing(dir) == std::vector<std::string>{"m.gguf"});
    Opened f;
    open_path(path, f);
    CHECK(f.status == ER_OK);
}

TEST_CASE("writer: misuse is refused with a message") {
    const fs::path dir = fresh_dir("misuse");
    Writer w((dir / "x.gguf").string());
    std::string m;
    CHECK(w.meta("bad_alignment", unsigned_value(ER_META_U32, 1)) == ER_OK);
    CHECK(w.meta("general.alignment", unsigned_value(ER_META_U32, 24), nullptr, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "metadata key 'general.alignment' must be a nonzero power of two");
    CHECK(w.meta("general.alignment", unsigned_value(ER_META_U64, 32), nullptr, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "metadata key 'general.alignment' must be u32");
    CHECK(w.meta("u8", unsigned_value(ER_META_U8, 256), nullptr, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "metadata key 'u8': value 256 does not fit u8");
    CHECK(w.meta("nested", array_value(ER_META_ARRAY, 1), "x", &m) == ER_E_UNSUPPORTED);
    CHECK(m == "metadata key 'nested': nested arrays are not written");
    CHECK(w.meta("", unsigned_value(ER_META_U8, 1), nullptr, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(w.add("t", 77, {32}, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "tensor 't': unknown tensor type id 77");
    CHECK(w.add("t", 2, {48}, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "tensor 't': row length 48 is not a multiple of Q4_0's block size 32");
    CHECK(w.add("t", 0, {4, 0}, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(w.add("t", 0, {4}) == ER_OK);
    CHECK(w.add("t", 0, {4}, &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "duplicate tensor 't'");
    CHECK(w.write(pattern(12, 0), &m) == ER_E_INVALID_ARGUMENT);
    CHECK(m == "tensor 't': 12 bytes given, it holds 16");
    CHECK(w.meta("late", unsigned_value(ER_META_U8, 1), nullptr, &m) == ER_E_STATE);
    CHECK(m == "writer_set_meta: metadata and tensors must all be given before tensor data");
    CHECK(w.write(pattern(16, 0)) == ER_OK);
    CHECK(w.write(pattern(16, 0), &m) == ER_E_STATE);
    CHECK(m == "writer_write_tensor: all 1 tensors are written");
}

TEST_CASE("writer: cannot create in a missing directory") {
    er_writer* w = nullptr;
    er_error err{};
    CHECK(iface().writer_create((temp_dir() / "no" / "such" / "dir.gguf").c_str(), &w, &err) == ER_E_IO);
    CHECK(w == nullptr);
    CHECK(std::string(err.message).find("No such file or directory") != std::string::npos);
}
