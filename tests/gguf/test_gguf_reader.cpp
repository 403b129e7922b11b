// The GGUF reader on valid files, through the plugin's ABI: every metadata type, arrays
// (nested too), tensor tables, data placement, and the edge cases that must load.
#include "gguf_fixture.hpp"

#include <edgerun/model.hpp>

#include <cmath>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace gguf_test;

namespace {

er_meta_value find(const Opened& f, const char* key) {
    er_meta_value v{};
    er_error err{};
    REQUIRE(iface().meta_find(f.file, key, &v, &err) == ER_OK);
    return v;
}

er_meta_value element(const Opened& f, const er_meta_value& array, uint64_t i) {
    er_meta_value v{};
    er_error err{};
    const er_status status = iface().meta_array_at(f.file, &array, i, &v, &err);
    INFO(err.message);
    REQUIRE(status == ER_OK);
    return v;
}

er_tensor_desc tensor(const Opened& f, uint64_t i) {
    er_tensor_desc t{};
    er_error err{};
    REQUIRE(iface().tensor_at(f.file, i, &t, &err) == ER_OK);
    return t;
}

}  // namespace

TEST_CASE("reader: a small llama model opens with every tensor where the builder put it") {
    Layout layout;
    const Builder b = tiny_llama();
    const std::string bytes = b.build(&layout);
    Opened f;
    open_ok(bytes, f);

    CHECK(str_of(iface().describe(f.file)) == "GGUF v3, 11 tensors, 19 metadata keys, alignment 32");
    REQUIRE(iface().meta_count(f.file) == b.kvs.size());
    for (uint64_t i = 0; i < b.kvs.size(); ++i) {
        er_str key{};
        er_meta_value value{};
        er_error err{};
        REQUIRE(iface().meta_at(f.file, i, &key, &value, &err) == ER_OK);
        CHECK(str_of(key) == b.kvs[i].first);
        CHECK(static_cast<uint32_t>(value.type) == b.kvs[i].second.type);
    }

    REQUIRE(iface().tensor_count(f.file) == b.tensors.size());
    for (uint64_t i = 0; i < b.tensors.size(); ++i) {
        CAPTURE(i);
        const er_tensor_desc t = tensor(f, i);
        CHECK(str_of(t.name) == b.tensors[i].name);
        CHECK(static_cast<uint32_t>(t.dtype) == b.tensors[i].type);
        REQUIRE(t.n_dims == static_cast<int32_t>(b.tensors[i].ne.size()));
        for (int d = 0; d < ER_MAX_DIMS; ++d)
            CHECK(t.ne[d] == (d < t.n_dims ? static_cast<int64_t>(b.tensors[i].ne[d]) : 1));
        CHECK(t.nbytes == layout.nbytes[i]);
        CHECK(t.file_offset == layout.data_start + layout.offsets[i]);
        CHECK(t.file_offset % 32 == 0);
        const auto* data = static_cast<const char*>(t.data);
        bool same = true;
        for (uint64_t k = 0; k < t.nbytes; ++k) same = same && data[k] == data_byte(i, k);
        CHECK(same);
    }
    // Sizes from the block layouts: Q8_0 64x8 = 16 blocks x 34; Q4_0 64x64 = 128 x 18.
    CHECK(tensor(f, 0).nbytes == 544);
    CHECK(tensor(f, 2).nbytes == 2304);
}

TEST_CASE("reader: every scalar metadata type decodes") {
    Builder b;
    b.kv("u8", u8(250)).kv("i8", i8(-120)).kv("u16", u16(65000)).kv("i16", i16(-32000))
        .kv("u32", u32(4000000000u)).kv("i32", i32(-2000000000)).kv("u64", u64(~uint64_t{0}))
        .kv("i64", i64(INT64_MIN)).kv("f32", f32(1.5f)).kv("f64", f64(-2.25e300))
        .kv("true", boolean(true)).kv("odd_bool", Value{T_BOOL, std::string(1, '\x07')})
        .kv("str", str(std::string("a\0b", 3))).kv("empty", str(""));
    Opened f;
    open_ok(b.build(), f);
    CHECK(find(f, "u8").v.u64 == 250);
    CHECK(find(f, "i8").v.i64 == -120);
    CHECK(find(f, "u16").v.u64 == 65000);
    CHECK(find(f, "i16").v.i64 == -32000);
    CHECK(find(f, "u32").v.u64 == 4000000000u);
    CHECK(find(f, "i32").v.i64 == -2000000000);
    CHECK(find(f, "u64").v.u64 == ~uint64_t{0});
    CHECK(find(f, "i64").v.i64 == INT64_MIN);
    CHECK(find(f, "f32").v.f64 == 1.5);
    CHECK(find(f, "f64").v.f64 == -2.25e300);
    CHECK(find(f, "true").v.u64 == 1);
    CHECK(find(f, "odd_bool").v.u64 == 1);  // any nonzero byte is true, as in llama.cpp
    CHECK(str_of(find(f, "str").v.str) == std::string("a\0b", 3));
    CHECK(find(f, "empty").v.str.size == 0);
    CHECK(find(f, "f64").type == T_F64);

    er_meta_value v{};
    er_error err{};
    CHECK(iface().meta_find(f.file, "absent", &v, &err) == ER_E_NOT_FOUND);
    CHECK(err.message[0] == '\0');
}

TEST_CASE("reader: arrays of every element type, empty arrays and nested arrays") {
    Builder b;
    b.kv("a_u8", array_of<uint8_t>(T_U8, {1, 255})).kv("a_i16", array_of<int16_t>(T_I16, {-5, 7}))
        .kv("a_u64", array_of<uint64_t>(T_U64, {1, uint64_t{1} << 63})).kv("a_f32", array_of<float>(T_F32, {0.5f, -1.0f}))
        .kv("a_f64", array_of<double>(T_F64, {3.25})).kv("a_bool", array_of<uint8_t>(T_BOOL, {0, 1, 2}))
        .kv("a_str", str_array({"x", "", "yz"})).kv("a_empty", str_array({}))
        .kv("a_nested", nested_array({array_of<uint32_t>(T_U32, {1, 2, 3}), str_array({"in"}), raw_array(T_I8, 0, "")}));
    Value deep = array_of<uint8_t>(T_U8, {42});
    for (int level = 1; level < 8; ++level) deep = nested_array({deep});  // 8 levels: the most allowed
    b.kv("a_deep", deep);
    Opened f;
    open_ok(b.build(), f);

    const er_meta_value a_u8 = find(f, "a_u8");
    CHECK(a_u8.array_type == T_U8);
    CHECK(a_u8.array_count == 2);
    CHECK(element(f, a_u8, 1).v.u64 == 255);
    CHECK(element(f, find(f, "a_i16"), 0).v.i64 == -5);
    CHECK(element(f, find(f, "a_u64"), 1).v.u64 == uint64_t{1} << 63);
    CHECK(element(f, find(f, "a_f32"), 1).v.f64 == -1.0);
    CHECK(element(f, find(f, "a_f64"), 0).v.f64 == 3.25);
    CHECK(element(f, find(f, "a_bool"), 2).v.u64 == 1);
    const er_meta_value a_str = find(f, "a_str");
    CHECK(str_of(element(f, a_str, 0).v.str) == "x");
    CHECK(element(f, a_str, 1).v.str.size == 0);
    CHECK(str_of(element(f, a_str, 2).v.str) == "yz");
    CHECK(find(f, "a_empty").array_count == 0);

    const er_meta_value nested = find(f, "a_nested");
    CHECK(nested.array_type == T_ARRAY);
    REQUIRE(nested.array_count == 3);
    const er_meta_value first = element(f, nested, 0);
    CHECK(first.type == T_ARRAY);
    CHECK(first.array_type == T_U32);
    CHECK(element(f, first, 2).v.u64 == 3);
    CHECK(str_of(element(f, element(f, nested, 1), 0).v.str) == "in");
    CHECK(element(f, nested, 2).array_count == 0);

    er_meta_value v = find(f, "a_deep");
    for (int level = 1; level < 8; ++level) v = element(f, v, 0);
    CHECK(v.array_type == T_U8);
    CHECK(element(f, v, 0).v.u64 == 42);
}

TEST_CASE("reader: array access refuses bad indices and foreign handles") {
    Builder b;
    b.kv("a", array_of<uint32_t>(T_U32, {1, 2})).kv("s", str_array({"x"}));
    Opened f;
    open_ok(b.build(), f);
    er_meta_value out{};
    er_error err{};
    er_meta_value a = find(f, "a");
    CHECK(iface().meta_array_at(f.file, &a, 2, &out, &err) == ER_E_INVALID_ARGUMENT);
    CHECK(std::string(err.message) == "array index 2 is past the end (2 elements)");

    uint32_t elsewhere[2] = {7, 8};
    a.array_handle = elsewhere;
    CHECK(iface().meta_array_at(f.file, &a, 0, &out, &err) == ER_E_INVALID_ARGUMENT);
    CHECK(std::string(err.message) == "array handle does not belong to this file");
    er_meta_value s = find(f, "s");
    s.array_count = 1000;  // a count the index does not hold
    CHECK(iface().meta_array_at(f.file, &s, 999, &out, &err) == ER_E_INVALID_ARGUMENT);
    er_meta_value scalar = find(f, "a");
    scalar.type = T_U32;
    CHECK(iface().meta_array_at(f.file, &scalar, 0, &out, &err) == ER_E_INVALID_ARGUMENT);
}

TEST_CASE("reader: a GGUF v2 file loads") {
    Builder b = tiny_llama();
    b.version = 2;
    Opened f;
    open_ok(b.build(), f);
    CHECK(str_of(iface().describe(f.file)) == "GGUF v2, 11 tensors, 19 metadata keys, alignment 32");
}

TEST_CASE("reader: a file with no tensors and no metadata loads") {
    Builder b;
    Opened f;
    open_ok(b.build(), f);
    CHECK(iface().tensor_count(f.file) == 0);
    CHECK(iface().meta_count(f.file) == 0);
    CHECK(str_of(iface().describe(f.file)) == "GGUF v3, 0 tensors, 0 metadata keys, alignment 32");
}

TEST_CASE("reader: alignment 64 places data on 64-byte boundaries") {
    Builder b = tiny_llama();
    b.alignment = 64;
    b.kv("general.alignment", u32(64));
    Layout layout;
    Opened f;
    open_ok(b.build(&layout), f);
    CHECK(str_of(iface().describe(f.file)) == "GGUF v3, 11 tensors, 20 metadata keys, alignment 64");
    for (uint64_t i = 0; i < iface().tensor_count(f.file); ++i) {
        CHECK(tensor(f, i).file_offset % 64 == 0);
        CHECK(tensor(f, i).file_offset == layout.data_start + layout.offsets[i]);
    }
}

TEST_CASE("reader: tensors in any data order, with gaps, load") {
    Builder b = tiny_llama();
    Layout packed;
    b.build(&packed);
    // Reverse the data order and leave 64 bytes between tensors.
    uint64_t offset = 0;
    for (size_t i = b.tensors.size(); i-- > 0;) {
        b.tensors[i].offset = offset;
        offset += (packed.nbytes[i] + 31) / 32 * 32 + 64;
    }
    Layout layout;
    Opened f;
    open_ok(b.build(&layout), f);
    for (uint64_t i = 0; i < b.tensors.size(); ++i) {
        const er_tensor_desc t = tensor(f, i);
        CHECK(t.file_offset == layout.data_start + layout.offsets[i]);
        CHECK(static_cast<const char*>(t.data)[t.nbytes - 1] == data_byte(i, t.nbytes - 1));
    }
}

TEST_CASE("reader: a zero-dimensional tensor is a scalar") {
    Builder b;
    b.tensor("scale", 0, {});
    Opened f;
    open_ok(b.build(), f);
    const er_tensor_desc t = tensor(f, 0);
    CHECK(t.n_dims == 0);
    CHECK(t.nbytes == 4);
    CHECK(t.ne[0] == 1);
}

TEST_CASE("reader: tensor_at past the end is an argument error") {
    Opened f;
    open_ok(tiny_llama().build(), f);
    er_tensor_desc t{};
    er_error err{};
    CHECK(iface().tensor_at(f.file, 11, &t, &err) == ER_E_INVALID_ARGUMENT);
    CHECK(std::string(err.message) == "tensor index 11 is past the end (11 tensors)");
}

TEST_CASE("reader: release_range drops pages but the data reads back the same") {
    Builder b;
    b.tensor("big", 0, {64 * 1024});  // 256 KiB of F32: whole pages inside
    Opened f;
    open_ok(b.build(), f);
    const er_tensor_desc t = tensor(f, 0);
    REQUIRE(bool(iface().release_range));
    iface().release_range(f.file, t.data, t.nbytes);
    iface().release_range(f.file, nullptr, 5);                 // ignored
    iface().release_range(f.file, &t, sizeof t);                // outside the mapping: ignored
    const auto* data = static_cast<const char*>(t.data);
    bool same = true;
    for (uint64_t k = 0; k < t.nbytes; ++k) same = same && data[k] == data_byte(0, k);
    CHECK(same);
}

// Pages of [offset, offset + length) of `path` held in the page cache, seen through a
// mapping of our own (mincore reports the cache, not who mapped the page).
static size_t resident_pages(const std::string& path, uint64_t offset, uint64_t length) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t first = offset / page * page, end = offset + length;
    const size_t n = static_cast<size_t>((end - first + page - 1) / page);
    void* map = ::mmap(nullptr, static_cast<size_t>(end - first), PROT_READ, MAP_SHARED, fd, static_cast<off_t>(first));
    REQUIRE(map != MAP_FAILED);
    std::vector<unsigned char> in_core(n);
    REQUIRE(::mincore(map, static_cast<size_t>(end - first), in_core.data()) == 0);
    ::munmap(map, static_cast<size_t>(end - first));
    ::close(fd);
    size_t resident = 0;
    for (unsigned char c : in_core) resident += c & 1;
    return resident;
}

TEST_CASE("reader: release_range drops the pages from the page cache too, so a GPU copy is the only resident one") {
    Builder b;
    b.tensor("a", 0, {768 * 1024});   // 3 MiB of F32
    b.tensor("b", 0, {1280 * 1024});  // 5 MiB, up to the end of the file
    const std::string path = write_file(b.build(), "release.gguf");
    {  // written back to disk first: the kernel never drops dirty pages on advice
        const int fd = ::open(path.c_str(), O_RDONLY);
        REQUIRE(fd >= 0);
        REQUIRE(::fsync(fd) == 0);
        ::close(fd);
    }
    Opened f;
    open_path(path, f);
    REQUIRE(f.status == ER_OK);
    const er_tensor_desc ta = tensor(f, 0), tb = tensor(f, 1);
    const uint64_t file_size = tb.file_offset + tb.nbytes;
    long sum = 0;
    for (const er_tensor_desc* t : {&ta, &tb}) {
        const auto* data = static_cast<const volatile char*>(t->data);
        for (uint64_t k = 0; k < t->nbytes; k += 512) sum += data[k];  // read: every page cached
    }
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const size_t all = static_cast<size_t>((file_size + page - 1) / page);
    REQUIRE(resident_pages(path, 0, file_size) == all);
    iface().release_range(f.file, ta.data, ta.nbytes);
    iface().release_range(f.file, tb.data, tb.nbytes);
    // What stays is at most the page-cache folio holding the header (the kernel caches a
    // file in folios of up to 2 MiB and drops only those wholly released): the folio that
    // straddles the two tensors goes once both are released.
    const size_t header_folio = static_cast<size_t>(2 * 1024 * 1024 / page);
    CHECK(resident_pages(path, 0, file_size) <= header_folio);
    const auto* a = static_cast<const char*>(ta.data);
    bool same = true;  // and the data reads back the same, from the file
    for (uint64_t k = 0; k < ta.nbytes; k += 4093) same = same && a[k] == data_byte(0, k);
    CHECK(same);
    CHECK(sum == sum);  // the reads above are not optimised away (volatile)
}

TEST_CASE("reader: probe scores GGUF files and refuses others") {
    int32_t score = -1;
    er_error err{};
    REQUIRE(iface().probe(write_file(tiny_llama().build(), "probe.gguf").c_str(), &score, &err) == ER_OK);
    CHECK(score == 100);
    REQUIRE(iface().probe(write_file("not a model at all", "probe.txt").c_str(), &score, &err) == ER_OK);
    CHECK(score == 0);
    REQUIRE(iface().probe(write_file("GGUF\1\0\0\0", "probe_v1.gguf").c_str(), &score, &err) == ER_OK);
    CHECK(score == 50);  // ours, but open() will refuse it and say why
    CHECK(iface().probe((temp_dir() / "missing.gguf").c_str(), &score, &err) == ER_E_IO);
}

TEST_CASE("reader: open reports OS errors as ER_E_IO") {
    Opened f;
    open_path((temp_dir() / "missing.gguf").string(), f);
    CHECK(f.status == ER_E_IO);
    CHECK(f.message == "cannot open: No such file or directory");
    Opened d;
    open_path(temp_dir().string(), d);
    CHECK(d.status == ER_E_IO);
    CHECK(d.message == "not a regular file");
}

TEST_CASE("reader: a FIFO is refused before it is opened, by probe, open and the host") {
    // Opening a FIFO for reading waits for a writer: `edgerun -m FIFO` hung forever.
    const std::string fifo = (temp_dir() / "model_fifo.gguf").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // A writer holding it, with a GGUF header and more in it (more than each stdio read
    // takes, less than the pipe holds), so that a regression reads those and fails the
    // checks below instead of blocking the test.
    const int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    const std::string bytes = std::string("GGUF\3\0\0\0", 8) + std::string(60000, 'x');
    REQUIRE(::write(writer, bytes.data(), bytes.size()) == ssize_t(bytes.size()));

    int32_t score = -1;
    er_error err{};
    CHECK(iface().probe(fifo.c_str(), &score, &err) == ER_E_IO);
    CHECK(std::string(err.message) == "not a regular file");
    CHECK(score == 0);
    Opened f;
    open_path(fifo, f);
    CHECK(f.status == ER_E_IO);
    CHECK(f.message == "not a regular file");
    CHECK_THROWS_WITH_AS(edgerun::format_plugin_for(build_plugins(), fifo), (fifo + ": not a regular file").c_str(),
                         edgerun::Error);
    ::close(writer);
}

TEST_CASE("reader: the vocabulary-only test files open") {
    for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"}) {
        CAPTURE(name);
        Opened f;
        open_path(std::string(EDGERUN_VOCAB_DIR) + "/" + name, f);
        INFO(f.message);
        REQUIRE(f.status == ER_OK);
        CHECK(iface().tensor_count(f.file) == 0);
        CHECK(iface().meta_count(f.file) > 10);
    }
}
