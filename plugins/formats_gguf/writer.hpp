// Writes GGUF v3 files: metadata and tensor infos first, then tensor data streamed one
// tensor at a time (a multi-gigabyte model is never held in memory).
//
// The output is invisible until finish() succeeds: it is written to an unnamed file in
// the target directory (Linux O_TMPFILE) that is linked into place at the end, so a
// killed process leaves nothing behind. Where O_TMPFILE is not available, a hidden
// temporary name in the same directory is used and renamed over the target at the end
// (a crash may leave that hidden file; abort and failures remove it).
#pragma once

#include <edgerun/abi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::gguf {

class GgufWriter {
public:
    // Throws Failure(ER_E_IO) when the output cannot be created in the target directory.
    static std::unique_ptr<GgufWriter> create(const std::string& path);
    ~GgufWriter();  // discards the output unless finish() succeeded
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Metadata, in the order given; setting a key again replaces its value in place.
    void set_meta(std::string_view key, const er_meta_value& value, const void* array_data);
    void add_tensor(const er_tensor_desc& desc);
    // The data of the next tensor in add_tensor order; nbytes must be its exact size.
    void write_tensor(const void* data, uint64_t nbytes);
    // Writes what is still pending, makes it durable and moves it into place.
    void finish();

private:
    struct MetaItem {
        std::string key;
        std::string encoded;  // type id + value, as GGUF stores them
    };
    struct TensorItem {
        std::string name;
        int32_t dtype;
        int32_t n_dims;
        int64_t ne[ER_MAX_DIMS];
        uint64_t nbytes;
        uint64_t offset;  // in the data section
    };

    GgufWriter() = default;
    void require_open(const char* call) const;
    void require_collecting(const char* call) const;
    void write_header();
    void append(const void* data, uint64_t n);
    void pad_to_alignment();
    void flush();
    void write_fd(const void* data, uint64_t n);
    void link_into_place();
    void discard() noexcept;
    [[noreturn]] void fail_io(const std::string& what, int error);

    std::string path_;
    int fd_ = -1;
    std::string temp_path_;  // hidden temporary name; empty while the file is unnamed (O_TMPFILE)
    bool failed_ = false;
    bool finished_ = false;
    bool header_written_ = false;
    uint64_t alignment_ = 32;
    std::vector<MetaItem> meta_;
    std::vector<TensorItem> tensors_;
    uint64_t next_tensor_ = 0;
    uint64_t file_position_ = 0;  // bytes appended so far (written or buffered)
    std::string buffer_;
};

}  // namespace edgerun::gguf
