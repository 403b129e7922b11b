// The tensor-info section of a GGUF file and where each tensor's bytes lie. Every shape,
// type, size and offset is validated before a tensor is handed out: a tensor from this
// table always lies wholly inside the file.
#pragma once

#include "cursor.hpp"

#include <edgerun/abi.h>

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edgerun::gguf {

struct TensorInfo {
    std::string_view name;
    int32_t dtype = 0;
    int32_t n_dims = 0;
    int64_t ne[ER_MAX_DIMS] = {1, 1, 1, 1};
    uint64_t offset = 0;  // relative to the data section, as stored
    uint64_t nbytes = 0;
};

class TensorTable {
public:
    // Parses `count` tensor infos at the cursor.
    void parse(Cursor& cursor, uint64_t count);
    // Checks every tensor's data against the data section, which starts at `data_start`
    // in a file of `file_size` bytes, and against each other (no overlaps).
    void place(uint64_t data_start, uint64_t file_size, uint64_t alignment);

    uint64_t size() const { return tensors_.size(); }
    const TensorInfo& at(uint64_t index) const { return tensors_[index]; }
    const TensorInfo* find(std::string_view name) const;
    uint64_t data_start() const { return data_start_; }

private:
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string_view, uint64_t> by_name_;
    uint64_t data_start_ = 0;
};

}  // namespace edgerun::gguf
