#include "writer.hpp"

#include "cursor.hpp"
#include "gguf_format.hpp"

#include <edgerun/dtype.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <unordered_set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgerun::gguf {

namespace {

constexpr size_t kBufferBytes = 4u << 20;

sdk::Failure usage_error(std::string message) { return sdk::Failure(ER_E_INVALID_ARGUMENT, std::move(message)); }

template <typename T>
void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put_string(std::string& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.append(s);
}

bool is_identifier(std::string_view s) { return !s.empty() && is_printable_utf8(s); }

// The file the output replaces: through a symbolic link to the file it names, so that the
// link stays. A device, FIFO or directory there is refused: linking or renaming over it
// would replace /dev/null itself (run as root) and still report success.
std::string file_to_replace(const std::string& path) {
    struct stat link {};
    if (::lstat(path.c_str(), &link) != 0) return path;  // not there yet: the usual case
    std::string resolved = path;
    if (S_ISLNK(link.st_mode)) {
        std::error_code ec;
        resolved = std::filesystem::weakly_canonical(path, ec).string();
        if (ec) throw sdk::Failure(ER_E_IO, "writer: output path '" + path + "': " + ec.message());
    }
    struct stat file {};
    if (::stat(resolved.c_str(), &file) == 0 && !S_ISREG(file.st_mode))
        throw usage_error("writer: output path '" + path + "' exists and is not a regular file (a directory, device or FIFO)");
    return resolved;
}

std::string_view str_view(const er_str& s, const std::string& what) {
    if (!s.data && s.size) throw usage_error(what + ": string data is NULL");
    return sdk::view(s);
}

// Encodes one scalar (not string, not array) held in `value` as `type`, range-checked.
void put_scalar(std::string& out, int32_t type, const er_meta_value& value, const std::string& what) {
    const auto unsigned_fits = [&](uint64_t max) {
        if (value.v.u64 > max) throw usage_error(what + ": value " + std::to_string(value.v.u64) + " does not fit " + std::string(meta_type_name(type)));
    };
    const auto signed_fits = [&](int64_t min, int64_t max) {
        if (value.v.i64 < min || value.v.i64 > max)
            throw usage_error(what + ": value " + std::to_string(value.v.i64) + " does not fit " + std::string(meta_type_name(type)));
    };
    switch (type) {
        case ER_META_U8: unsigned_fits(UINT8_MAX); put<uint8_t>(out, static_cast<uint8_t>(value.v.u64)); break;
        case ER_META_BOOL: put<uint8_t>(out, value.v.u64 != 0); break;
        case ER_META_U16: unsigned_fits(UINT16_MAX); put<uint16_t>(out, static_cast<uint16_t>(value.v.u64)); break;
        case ER_META_U32: unsigned_fits(UINT32_MAX); put<uint32_t>(out, static_cast<uint32_t>(value.v.u64)); break;
        case ER_META_U64: put<uint64_t>(out, value.v.u64); break;
        case ER_META_I8: signed_fits(INT8_MIN, INT8_MAX); put<int8_t>(out, static_cast<int8_t>(value.v.i64)); break;
        case ER_META_I16: signed_fits(INT16_MIN, INT16_MAX); put<int16_t>(out, static_cast<int16_t>(value.v.i64)); break;
        case ER_META_I32: signed_fits(INT32_MIN, INT32_MAX); put<int32_t>(out, static_cast<int32_t>(value.v.i64)); break;
        case ER_META_I64: put<int64_t>(out, value.v.i64); break;
        case ER_META_F32: put<float>(out, static_cast<float>(value.v.f64)); break;
        case ER_META_F64: put<double>(out, value.v.f64); break;
        default: throw usage_error(what + ": unknown value type " + std::to_string(type));
    }
}

std::string directory_of(const std::filesystem::path& target) {
    return target.has_parent_path() ? target.parent_path().string() : std::string(".");
}

std::string unique_suffix() {
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    return std::to_string(::getpid()) + "." + std::to_string(counter++) + "." + std::to_string(rd());
}

}  // namespace

std::unique_ptr<GgufWriter> GgufWriter::create(const std::string& path) {
    if (path.empty()) throw usage_error("writer: empty output path");
    std::unique_ptr<GgufWriter> w(new GgufWriter());
    if (std::filesystem::path(path).filename().empty())
        throw usage_error("writer: output path '" + path + "' names a directory");
    w->path_ = file_to_replace(path);
    const std::filesystem::path target(w->path_);
    const std::string dir = directory_of(target);

#ifdef O_TMPFILE
    // EDGERUN_GGUF_NO_TMPFILE=1 takes the fallback below, so tests can cover it here.
    const char* no_tmpfile = std::getenv("EDGERUN_GGUF_NO_TMPFILE");
    if (!no_tmpfile || std::string_view(no_tmpfile) != "1")
        w->fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
#endif
    if (w->fd_ < 0) {
        // No O_TMPFILE here (old kernel, or a filesystem without it): a hidden name.
        for (int attempt = 0; attempt < 100 && w->fd_ < 0; ++attempt) {
            w->temp_path_ = dir + "/." + target.filename().string() + "." + unique_suffix() + ".tmp";
            w->fd_ = ::open(w->temp_path_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
            if (w->fd_ < 0 && errno != EEXIST) break;
        }
        if (w->fd_ < 0) {
            const int error = errno;
            w->temp_path_.clear();
            throw sdk::Failure(ER_E_IO, "cannot create a file in '" + dir + "': " + std::strerror(error));
        }
    }
    w->buffer_.reserve(kBufferBytes);
    return w;
}

GgufWriter::~GgufWriter() {
    if (!finished_) discard();
}

void GgufWriter::discard() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
    temp_path_.clear();
}

void GgufWriter::fail_io(const std::string& what, int error) {
    failed_ = true;
    throw sdk::Failure(ER_E_IO, what + " '" + path_ + "': " + std::strerror(error));
}

void GgufWriter::require_open(const char* call) const {
    if (failed_) throw sdk::Failure(ER_E_STATE, std::string(call) + ": the writer failed earlier");
    if (finished_) throw sdk::Failure(ER_E_STATE, std::string(call) + ": the writer is finished");
}

void GgufWriter::require_collecting(const char* call) const {
    require_open(call);
    if (header_written_)
        throw sdk::Failure(ER_E_STATE, std::string(call) + ": metadata and tensors must all be given before tensor data");
}

void GgufWriter::set_meta(std::string_view key, const er_meta_value& value, const void* array_data) {
    require_collecting("writer_set_meta");
    const std::string what = "metadata key " + quote_text(key);
    if (!is_identifier(key)) throw usage_error("metadata key " + quote_text(key) + " is empty or not printable UTF-8");

    std::string encoded;
    put<uint32_t>(encoded, static_cast<uint32_t>(value.type));
    if (value.type == ER_META_STRING) {
        put_string(encoded, str_view(value.v.str, what));
    } else if (value.type == ER_META_ARRAY) {
        const int32_t type = value.array_type;
        if (type == ER_META_ARRAY) throw sdk::Failure(ER_E_UNSUPPORTED, what + ": nested arrays are not written");
        if (!meta_type_known(type)) throw usage_error(what + ": unknown array element type " + std::to_string(type));
        if (value.array_count && !array_data) throw usage_error(what + ": array data is NULL");
        put<uint32_t>(encoded, static_cast<uint32_t>(type));
        put<uint64_t>(encoded, value.array_count);
        if (type == ER_META_STRING) {
            const auto* items = static_cast<const er_str*>(array_data);
            for (uint64_t i = 0; i < value.array_count; ++i) put_string(encoded, str_view(items[i], what));
        } else {
            const uint64_t size = meta_scalar_size(type);
            const auto bytes = checked_mul(value.array_count, size);
            if (!bytes || *bytes > std::numeric_limits<size_t>::max() / 2) throw usage_error(what + ": array too large");
            const size_t at = encoded.size();
            encoded.append(static_cast<const char*>(array_data), static_cast<size_t>(*bytes));
            if (type == ER_META_BOOL)
                for (size_t i = at; i < encoded.size(); ++i) encoded[i] = encoded[i] != 0 ? 1 : 0;
        }
    } else {
        put_scalar(encoded, value.type, value, what);
    }

    if (key == kAlignmentKey) {
        if (value.type != ER_META_U32) throw usage_error("metadata key 'general.alignment' must be u32");
        if (!is_power_of_two(value.v.u64)) throw usage_error("metadata key 'general.alignment' must be a nonzero power of two");
        alignment_ = value.v.u64;
    }
    for (MetaItem& item : meta_)
        if (item.key == key) {
            item.encoded = std::move(encoded);
            return;
        }
    meta_.push_back({std::string(key), std::move(encoded)});
}

void GgufWriter::add_tensor(const er_tensor_desc& desc) {
    require_collecting("writer_add_tensor");
    const std::string_view name = sdk::view(desc.name);
    if (!is_identifier(name)) throw usage_error("tensor name " + quote_text(name) + " is empty or not printable UTF-8");
    if (name.size() > kMaxTensorNameBytes)
        throw usage_error("tensor name " + quote_text(name) + " is longer than " + std::to_string(kMaxTensorNameBytes) + " bytes");
    const std::string label = "tensor " + quote_text(name);
    for (const TensorItem& t : tensors_)
        if (t.name == name) throw usage_error("duplicate " + label);
    const DTypeInfo* info = dtype_info(desc.dtype);
    if (!info) throw usage_error(label + ": " + unknown_dtype_message(desc.dtype));
    if (desc.n_dims < 0 || desc.n_dims > ER_MAX_DIMS)
        throw usage_error(label + ": " + std::to_string(desc.n_dims) + " dimensions, at most 4 are supported");

    TensorItem t{std::string(name), desc.dtype, desc.n_dims, {1, 1, 1, 1}, 0, 0};
    uint64_t elements = 1;
    for (int32_t d = 0; d < desc.n_dims; ++d) {
        if (desc.ne[d] <= 0) throw usage_error(label + ": dimension " + std::to_string(d) + " is " + std::to_string(desc.ne[d]));
        const auto product = checked_mul(elements, static_cast<uint64_t>(desc.ne[d]));
        if (!product || *product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw usage_error(label + ": element count overflows");
        elements = *product;
        t.ne[d] = desc.ne[d];
    }
    if (t.ne[0] % info->block_elems != 0)
        throw usage_error(label + ": row length " + std::to_string(t.ne[0]) + " is not a multiple of " + std::string(info->name) +
                          "'s block size " + std::to_string(info->block_elems));
    const auto nbytes = checked_mul(elements / info->block_elems, static_cast<uint64_t>(info->block_bytes));
    if (!nbytes) throw usage_error(label + ": size overflows");
    if (desc.nbytes != 0 && desc.nbytes != *nbytes)
        throw usage_error(label + ": nbytes is " + std::to_string(desc.nbytes) + ", its shape and type make " + std::to_string(*nbytes));
    t.nbytes = *nbytes;
    tensors_.push_back(std::move(t));
}

void GgufWriter::write_header() {
    // Offsets now that the alignment is final.
    uint64_t offset = 0;
    for (TensorItem& t : tensors_) {
        t.offset = offset;
        const auto end = checked_add(offset, t.nbytes);
        const auto next = end ? align_up(*end, alignment_) : std::nullopt;
        if (!next) throw usage_error("writer: the tensor data exceeds 2^64 bytes");
        offset = *next;
    }
    std::string header;
    header.append(kMagic, sizeof kMagic);
    put<uint32_t>(header, kWriteVersion);
    put<uint64_t>(header, tensors_.size());
    put<uint64_t>(header, meta_.size());
    append(header.data(), header.size());
    for (const MetaItem& item : meta_) {
        header.clear();
        put_string(header, item.key);
        header += item.encoded;
        append(header.data(), header.size());
    }
    for (const TensorItem& t : tensors_) {
        header.clear();
        put_string(header, t.name);
        put<uint32_t>(header, static_cast<uint32_t>(t.n_dims));
        for (int32_t d = 0; d < t.n_dims; ++d) put<uint64_t>(header, static_cast<uint64_t>(t.ne[d]));
        put<uint32_t>(header, static_cast<uint32_t>(t.dtype));
        put<uint64_t>(header, t.offset);
        append(header.data(), header.size());
    }
    header_written_ = true;
    // The data section starts aligned in the file; with no tensors there is nothing to align.
    if (!tensors_.empty()) pad_to_alignment();
}

void GgufWriter::write_tensor(const void* data, uint64_t nbytes) {
    require_open("writer_write_tensor");
    if (!header_written_) write_header();
    if (next_tensor_ >= tensors_.size())
        throw sdk::Failure(ER_E_STATE, "writer_write_tensor: all " + std::to_string(tensors_.size()) + " tensors are written");
    const TensorItem& t = tensors_[next_tensor_];
    if (nbytes != t.nbytes)
        throw usage_error("tensor " + quote_text(t.name) + ": " + std::to_string(nbytes) + " bytes given, it holds " +
                          std::to_string(t.nbytes));
    if (!data) throw usage_error("tensor " + quote_text(t.name) + ": data is NULL");
    append(data, nbytes);
    pad_to_alignment();
    ++next_tensor_;
}

void GgufWriter::finish() {
    require_open("writer_finish");
    if (!header_written_) write_header();
    if (next_tensor_ != tensors_.size())
        throw sdk::Failure(ER_E_STATE, "writer_finish: " + std::to_string(next_tensor_) + " of " + std::to_string(tensors_.size()) +
                                           " tensors were written");
    flush();
    if (::fsync(fd_) != 0) fail_io("cannot sync", errno);
    link_into_place();
    ::close(fd_);
    fd_ = -1;
    finished_ = true;
}

void GgufWriter::link_into_place() {
    if (!temp_path_.empty()) {
        if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail_io("cannot rename the output to", errno);
        temp_path_.clear();
        return;
    }
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW) == 0) return;
    if (errno != EEXIST) fail_io("cannot link the output to", errno);
    // The target exists: link under a hidden name beside it, then replace it atomically.
    const std::filesystem::path target(path_);
    const std::string dir = directory_of(target);
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string hidden = dir + "/." + target.filename().string() + "." + unique_suffix() + ".tmp";
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, hidden.c_str(), AT_SYMLINK_FOLLOW) != 0) {
            if (errno == EEXIST) continue;
            fail_io("cannot link the output beside", errno);
        }
        if (::rename(hidden.c_str(), path_.c_str()) != 0) {
            const int error = errno;
            ::unlink(hidden.c_str());
            fail_io("cannot replace", error);
        }
        return;
    }
    fail_io("cannot find a free temporary name beside", EEXIST);
}

void GgufWriter::append(const void* data, uint64_t n) {
    file_position_ += n;
    if (buffer_.size() + n > kBufferBytes) flush();
    if (n >= kBufferBytes) {
        write_fd(data, n);
        return;
    }
    buffer_.append(static_cast<const char*>(data), static_cast<size_t>(n));
}

void GgufWriter::pad_to_alignment() {
    // The data section starts aligned, so aligning the file position aligns both the
    // section's start and every tensor's offset in it.
    static const char kZeros[256] = {};
    uint64_t pad = (alignment_ - file_position_ % alignment_) % alignment_;
    while (pad > 0) {
        const uint64_t n = pad < sizeof kZeros ? pad : sizeof kZeros;
        append(kZeros, n);
        pad -= n;
    }
}

void GgufWriter::flush() {
    if (buffer_.empty()) return;
    write_fd(buffer_.data(), buffer_.size());
    buffer_.clear();
}

void GgufWriter::write_fd(const void* data, uint64_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        const size_t chunk = n < (1u << 30) ? static_cast<size_t>(n) : (1u << 30);
        const ssize_t written = ::write(fd_, p, chunk);
        if (written < 0) {
            if (errno == EINTR) continue;
            fail_io("cannot write", errno);
        }
        p += written;
        n -= static_cast<uint64_t>(written);
    }
}

}  // namespace edgerun::gguf
