#include "format_iface.hpp"

#include "descriptions.hpp"
#include "writer.hpp"

#include <edgerun/plugin_sdk.hpp>

using edgerun::sdk::Failure;
using edgerun::sdk::guard;

struct er_file {
    std::unique_ptr<edgerun::gguf::GgufFile> gguf;
    edgerun::gguf::VocabArrays vocab;
};

struct er_writer {
    std::unique_ptr<edgerun::gguf::GgufWriter> writer;
};

namespace edgerun::gguf {

namespace {

template <typename T>
void require(T* pointer, const char* what) {
    if (!pointer) throw Failure(ER_E_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

const GgufFile& file_of(const er_file* file) {
    require(file, "file");
    return *file->gguf;
}

template <typename Desc>
void require_struct(Desc* out, const char* what) {
    require(out, what);
    if (out->struct_size < sizeof(Desc))
        throw Failure(ER_E_INVALID_ARGUMENT, std::string(what) + " struct_size " + std::to_string(out->struct_size) +
                                                 " is smaller than this plugin's " + std::to_string(sizeof(Desc)));
}

er_status probe(const char* path, int32_t* score, er_error* err) {
    return guard(err, [&] {
        require(path, "path");
        require(score, "score");
        *score = 0;
        uint8_t head[8];
        *score = probe_score(head, read_head(path, head, sizeof head));
    });
}

er_status open_file(const char* path, er_file** out, er_error* err) {
    return guard(err, [&] {
        require(path, "path");
        require(out, "out");
        *out = nullptr;
        *out = wrap_file(GgufFile::open(path));
    });
}

void close_file(er_file* file) { delete file; }

er_str describe(const er_file* file) {
    if (!file) return er_str{"", 0};
    return sdk::make_str(file->gguf->description());
}

uint64_t meta_count(const er_file* file) { return file ? file->gguf->metadata().size() : 0; }

er_status meta_at(const er_file* file, uint64_t index, er_str* key, er_meta_value* value, er_error* err) {
    return guard(err, [&] {
        const Metadata& m = file_of(file).metadata();
        if (index >= m.size())
            throw Failure(ER_E_INVALID_ARGUMENT, "metadata index " + std::to_string(index) + " is past the end (" +
                                                     std::to_string(m.size()) + " keys)");
        const MetaEntry& entry = m.at(index);
        if (key) *key = sdk::make_str(entry.key);
        if (value) *value = entry.value;
    });
}

er_status meta_find(const er_file* file, const char* key, er_meta_value* value, er_error* err) {
    return guard(err, [&]() -> er_status {
        require(key, "key");
        const MetaEntry* entry = file_of(file).metadata().find(key);
        if (!entry) return ER_E_NOT_FOUND;  // without a message, as the ABI says
        if (value) *value = entry->value;
        return ER_OK;
    });
}

er_status meta_array_at(const er_file* file, const er_meta_value* array, uint64_t index, er_meta_value* out,
                        er_error* err) {
    return guard(err, [&] {
        require(array, "array");
        require(out, "out");
        *out = file_of(file).metadata().element(*array, index);
    });
}

uint64_t tensor_count(const er_file* file) { return file ? file->gguf->tensors().size() : 0; }

er_status tensor_at(const er_file* file, uint64_t index, er_tensor_desc* out, er_error* err) {
    return guard(err, [&] {
        require(out, "out");
        const GgufFile& f = file_of(file);
        if (index >= f.tensors().size())
            throw Failure(ER_E_INVALID_ARGUMENT, "tensor index " + std::to_string(index) + " is past the end (" +
                                                     std::to_string(f.tensors().size()) + " tensors)");
        *out = f.tensor_desc(index);
    });
}

er_status model_desc(const er_file* file, er_model_desc* out, er_error* err) {
    return guard(err, [&] {
        require_struct(out, "er_model_desc");
        fill_model_desc(file_of(file), *out);
    });
}

er_status vocab_desc(const er_file* file, er_vocab_desc* out, er_error* err) {
    return guard(err, [&] {
        require_struct(out, "er_vocab_desc");
        fill_vocab_desc(file_of(file), *out);
    });
}

er_status vocab_token_at(const er_file* file, uint64_t index, er_str* text, float* score, int32_t* type, er_error* err) {
    return guard(err, [&] { vocab_token(file_of(file), file->vocab, index, text, score, type); });
}

er_status vocab_merge_at(const er_file* file, uint64_t index, er_str* merge, er_error* err) {
    return guard(err, [&] {
        require(merge, "merge");
        *merge = vocab_merge(file_of(file), file->vocab, index);
    });
}

void release_range(er_file* file, const void* data, uint64_t nbytes) {
    if (file) file->gguf->release_range(data, nbytes);
}

er_status writer_create(const char* path, er_writer** out, er_error* err) {
    return guard(err, [&] {
        require(path, "path");
        require(out, "out");
        *out = nullptr;
        auto writer = GgufWriter::create(path);
        *out = new er_writer{std::move(writer)};
    });
}

er_status writer_set_meta(er_writer* writer, const char* key, const er_meta_value* value, const void* array_data,
                          er_error* err) {
    return guard(err, [&] {
        require(writer, "writer");
        require(key, "key");
        require(value, "value");
        writer->writer->set_meta(key, *value, array_data);
    });
}

er_status writer_add_tensor(er_writer* writer, const er_tensor_desc* desc, er_error* err) {
    return guard(err, [&] {
        require(writer, "writer");
        require(desc, "desc");
        writer->writer->add_tensor(*desc);
    });
}

er_status writer_write_tensor(er_writer* writer, const void* data, uint64_t nbytes, er_error* err) {
    return guard(err, [&] {
        require(writer, "writer");
        writer->writer->write_tensor(data, nbytes);
    });
}

er_status writer_finish(er_writer* writer, er_error* err) {
    const er_status status = guard(err, [&] {
        require(writer, "writer");
        writer->writer->finish();
    });
    delete writer;  // frees on success and failure alike; an unfinished output is discarded
    return status;
}

void writer_abort(er_writer* writer) { delete writer; }

const er_format_iface kIface = {
    sizeof(er_format_iface),
    ".gguf",
    probe,
    open_file,
    close_file,
    describe,
    meta_count,
    meta_at,
    meta_find,
    meta_array_at,
    tensor_count,
    tensor_at,
    model_desc,
    vocab_desc,
    vocab_token_at,
    vocab_merge_at,
    release_range,
    writer_create,
    writer_set_meta,
    writer_add_tensor,
    writer_write_tensor,
    writer_finish,
    writer_abort,
};

}  // namespace

const er_format_iface& format_iface() { return kIface; }

er_file* wrap_file(std::unique_ptr<GgufFile> file) {
    er_file* out = new er_file{std::move(file), {}};
    out->vocab = find_vocab_arrays(out->gguf->metadata());
    return out;
}

}  // namespace edgerun::gguf
