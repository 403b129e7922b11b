#include "tensor_table.hpp"

#include "gguf_format.hpp"

#include <edgerun/dtype.hpp>

#include <algorithm>
#include <limits>

namespace edgerun::gguf {

namespace {

std::string tensor_label(uint64_t index, std::string_view name) {
    return "tensor " + (name.empty() ? std::to_string(index) : quote_text(name));
}

std::string shape_text(const TensorInfo& t) {
    std::string s = "[";
    for (int32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

bool name_is_acceptable(std::string_view name) {
    if (!is_valid_utf8(name)) return false;
    for (char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return false;
    return true;
}

}  // namespace

void TensorTable::parse(Cursor& cursor, uint64_t count) {
    if (count > cursor.remaining() / kMinTensorInfoBytes)
        throw format_error("tensor count " + std::to_string(count) + " cannot fit in the " +
                           std::to_string(cursor.remaining()) + " bytes left for tensor infos");
    tensors_.reserve(static_cast<size_t>(count));
    by_name_.reserve(static_cast<size_t>(count));

    for (uint64_t i = 0; i < count; ++i) {
        TensorInfo t;
        t.name = cursor.string([&] { return "tensor " + std::to_string(i) + " (name)"; });
        if (t.name.empty()) throw format_error("tensor " + std::to_string(i) + " has an empty name");
        if (!name_is_acceptable(t.name))
            throw format_error("tensor " + std::to_string(i) + ": name " + quote_text(t.name) + " is not printable UTF-8");
        if (t.name.size() > kMaxTensorNameBytes)
            throw format_error("tensor " + std::to_string(i) + ": name " + quote_text(t.name) + " is longer than " +
                               std::to_string(kMaxTensorNameBytes) + " bytes");
        const std::string label = tensor_label(i, t.name);
        const auto where = [&] { return label; };
        if (auto it = by_name_.find(t.name); it != by_name_.end())
            throw format_error("duplicate tensor name " + quote_text(t.name) + " (tensors " + std::to_string(it->second) +
                               " and " + std::to_string(i) + ")");

        const uint32_t n_dims = cursor.read<uint32_t>(where);
        if (n_dims > ER_MAX_DIMS)
            throw format_error(label + ": " + std::to_string(n_dims) + " dimensions, at most " +
                               std::to_string(ER_MAX_DIMS) + " are supported");
        t.n_dims = static_cast<int32_t>(n_dims);
        uint64_t elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t ne = cursor.read<uint64_t>(where);
            if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                throw format_error(label + ": dimension " + std::to_string(d) + " is " +
                                   std::to_string(static_cast<int64_t>(ne)) + ", must be positive");
            const auto product = checked_mul(elements, ne);
            if (!product || *product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                throw format_error(label + ": the element count of its dimensions overflows 64 bits");
            elements = *product;
            t.ne[d] = static_cast<int64_t>(ne);
        }

        const uint32_t type = cursor.read<uint32_t>(where);
        const DTypeInfo* info = type <= static_cast<uint32_t>(std::numeric_limits<int32_t>::max())
                                    ? dtype_info(static_cast<int32_t>(type))
                                    : nullptr;
        if (!info) throw format_error(label + ": unknown tensor type id " + std::to_string(type));
        t.dtype = static_cast<int32_t>(type);
        if (t.ne[0] % info->block_elems != 0)
            throw format_error(label + ": row length " + std::to_string(t.ne[0]) + " is not a multiple of " +
                               std::string(info->name) + "'s block size " + std::to_string(info->block_elems));
        // elements is a multiple of block_elems because ne[0] is.
        const auto nbytes = checked_mul(elements / info->block_elems, static_cast<uint64_t>(info->block_bytes));
        if (!nbytes) throw format_error(label + ": its size in bytes overflows 64 bits " + shape_text(t));
        t.nbytes = *nbytes;
        t.offset = cursor.read<uint64_t>(where);

        by_name_.emplace(t.name, i);
        tensors_.push_back(t);
    }
}

void TensorTable::place(uint64_t data_start, uint64_t file_size, uint64_t alignment) {
    data_start_ = data_start;
    const uint64_t data_size = data_start <= file_size ? file_size - data_start : 0;
    for (uint64_t i = 0; i < tensors_.size(); ++i) {
        const TensorInfo& t = tensors_[i];
        const std::string label = tensor_label(i, t.name);
        if (t.offset % alignment != 0)
            throw format_error(label + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                               std::to_string(alignment));
        if (t.offset > data_size || t.nbytes > data_size - t.offset) {
            const auto end = checked_add(t.offset, t.nbytes);
            throw format_error(label + ": data [" + std::to_string(t.offset) + ", " +
                               (end ? std::to_string(*end) : std::string("2^64+")) + ") of the data section lies outside the file (the data section holds " +
                               std::to_string(data_size) + " bytes)");
        }
    }
    // Tensors may come in any order with gaps between them, but must not share bytes.
    std::vector<uint64_t> order(tensors_.size());
    for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return tensors_[a].offset < tensors_[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& prev = tensors_[order[k - 1]];
        const TensorInfo& next = tensors_[order[k]];
        if (prev.offset + prev.nbytes > next.offset)  // both ends are inside the file: no overflow
            throw format_error("tensors " + quote_text(prev.name) + " and " + quote_text(next.name) + " overlap in the data section (" +
                               std::to_string(prev.offset) + " + " + std::to_string(prev.nbytes) + " > " +
                               std::to_string(next.offset) + ")");
    }
}

const TensorInfo* TensorTable::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace edgerun::gguf
