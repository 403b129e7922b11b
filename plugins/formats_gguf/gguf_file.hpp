// A parsed GGUF file: header, metadata, tensor table, over a read-only private mapping
// of the file (or, for the fuzzer and tests, over caller-owned bytes). Immutable after
// construction, so every accessor is safe to call from several threads.
#pragma once

#include "metadata.hpp"
#include "tensor_table.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace edgerun::gguf {

// A read-only, private mapping of a whole file, and the file kept open so that pages can
// be dropped from the page cache too; unmapped and closed on destruction.
class Mapping {
public:
    explicit Mapping(const std::string& path);
    ~Mapping();
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;

    const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
    uint64_t size() const { return size_; }
    // Drops [offset, offset + length) of the file, page-aligned inside, from this mapping
    // and from the page cache: a backend that copied the bytes elsewhere (a GPU) leaves
    // one resident copy, not two. The data still reads back (from the file). Thread-safe.
    void release(uint64_t offset, uint64_t length) const;

private:
    int fd_ = -1;
    void* addr_ = nullptr;
    uint64_t size_ = 0;
    // The ranges released so far, merged (begin -> end): the page cache keeps large folios
    // (up to 2 MiB on ext4) that straddle two tensors, and drops them only when advised
    // over a range covering them whole, i.e. once the tensors on both sides are released.
    mutable std::mutex released_mutex_;
    mutable std::map<uint64_t, uint64_t> released_;
};

class GgufFile {
public:
    // Maps and parses `path`. Throws Failure: ER_E_IO when the OS refuses, ER_E_FORMAT
    // naming the field for a malformed file.
    static std::unique_ptr<GgufFile> open(const std::string& path);
    // Parses bytes the caller keeps alive for the object's lifetime.
    static std::unique_ptr<GgufFile> parse(const uint8_t* data, uint64_t size);

    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    const uint8_t* data() const { return data_; }
    uint64_t file_size() const { return size_; }
    const Metadata& metadata() const { return metadata_; }
    const TensorTable& tensors() const { return tensors_; }
    const std::string& description() const { return description_; }

    er_tensor_desc tensor_desc(uint64_t index) const;
    // Drops the pages wholly inside [data, data + nbytes) from memory (they are re-read
    // from the file if touched again). Ignores ranges outside the mapping.
    void release_range(const void* data, uint64_t nbytes) const;

private:
    GgufFile() = default;
    void parse_all();

    std::unique_ptr<Mapping> mapping_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    uint32_t version_ = 0;
    uint64_t alignment_ = 0;
    Metadata metadata_;
    TensorTable tensors_;
    std::string description_;
};

// Reads the first `size` bytes of the regular file `path` into `out`; returns how many
// there were (fewer when the file is shorter). Throws Failure(ER_E_IO) naming the OS's
// reason, or "not a regular file" for anything else (a FIFO would block the open).
uint64_t read_head(const std::string& path, uint8_t* out, uint64_t size);

// Reads the magic and version only: 0 when the file is not GGUF, else a score.
int32_t probe_score(const uint8_t* head, uint64_t size);

}  // namespace edgerun::gguf
