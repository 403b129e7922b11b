#include "gguf_file.hpp"

#include "gguf_format.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgerun::gguf {

namespace {

sdk::Failure io_error(const std::string& what, int error) {
    return sdk::Failure(ER_E_IO, what + ": " + std::strerror(error));
}

// A file descriptor closed on scope exit.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Opens `path` for reading if it is a regular file. Checked before the open, because
// opening a FIFO for reading waits for a writer (forever when none comes); O_NONBLOCK and
// the fstat after close the gap where the path is replaced in between.
void open_regular_file(const std::string& path, Fd& file, struct stat& st) {
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw sdk::Failure(ER_E_IO, "not a regular file");
    file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (file.fd < 0) throw io_error("cannot open", errno);
    if (::fstat(file.fd, &st) != 0) throw io_error("cannot stat", errno);
    if (!S_ISREG(st.st_mode)) throw sdk::Failure(ER_E_IO, "not a regular file");
}

std::string magic_text(const uint8_t* p) {
    std::string printable;
    char hex[16];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", p[0], p[1], p[2], p[3]);
    for (int i = 0; i < 4; ++i) printable += (p[i] >= 0x20 && p[i] < 0x7F) ? static_cast<char>(p[i]) : '?';
    return "'" + printable + "' (" + hex + ")";
}

}  // namespace

Mapping::Mapping(const std::string& path) {
    Fd file;
    struct stat st {};
    open_regular_file(path, file, st);
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ == 0) return;  // nothing to map; the parser reports the empty file
    addr_ = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (addr_ == MAP_FAILED) {
        addr_ = nullptr;
        throw io_error("cannot map " + std::to_string(size_) + " bytes", errno);
    }
    fd_ = file.fd;
    file.fd = -1;
}

Mapping::~Mapping() {
    if (addr_) ::munmap(addr_, static_cast<size_t>(size_));
    if (fd_ >= 0) ::close(fd_);
}

void Mapping::release(uint64_t offset, uint64_t length) const {
    if (!addr_ || length == 0 || offset >= size_ || length > size_ - offset) return;
    uint64_t begin = offset, end = offset + length;
    {
        // Merge with the released neighbours: [begin, end) becomes the whole released run.
        const std::lock_guard<std::mutex> lock(released_mutex_);
        auto next = released_.upper_bound(begin);
        if (next != released_.begin() && std::prev(next)->second >= begin) --next;
        while (next != released_.end() && next->first <= end) {
            begin = std::min(begin, next->first);
            end = std::max(end, next->second);
            next = released_.erase(next);
        }
        released_[begin] = end;
    }
    const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t first = (begin + page - 1) / page * page;
    const uint64_t last = end == size_ ? (end + page - 1) / page * page : end / page * page;
    if (last <= first) return;
    // Private read-only file pages: dropping them loses nothing, a later touch re-reads.
    // Unmapping alone leaves them in the page cache; once no mapping holds them,
    // POSIX_FADV_DONTNEED drops them there too (advice: a failure changes nothing).
    ::madvise(static_cast<uint8_t*>(addr_) + first, static_cast<size_t>(last - first), MADV_DONTNEED);
    ::posix_fadvise(fd_, static_cast<off_t>(first), static_cast<off_t>(last - first), POSIX_FADV_DONTNEED);
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->mapping_ = std::make_unique<Mapping>(path);
    file->data_ = file->mapping_->data();
    file->size_ = file->mapping_->size();
    file->parse_all();
    return file;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, uint64_t size) {
    std::unique_ptr<GgufFile> file(new GgufFile());
    file->data_ = data;
    file->size_ = size;
    file->parse_all();
    return file;
}

void GgufFile::parse_all() {
    if (size_ < sizeof kMagic)
        throw format_error("not a GGUF file: it is only " + std::to_string(size_) + " bytes long");
    if (std::memcmp(data_, kMagic, sizeof kMagic) != 0)
        throw format_error("not a GGUF file: magic is " + magic_text(data_) + ", expected 'GGUF'");

    Cursor cursor(data_, size_, sizeof kMagic);
    version_ = cursor.read<uint32_t>([] { return std::string("header (version)"); });
    if (const uint32_t swapped = __builtin_bswap32(version_); swapped >= 1 && swapped <= kMaxVersion) {
        throw format_error("big-endian GGUF file (version field reads " + std::to_string(version_) + ", byte-swapped " +
                           std::to_string(swapped) + "): only little-endian files are supported");
    }
    if (version_ == 1) throw format_error("GGUF v1 is not supported (this reader reads v2 and v3)");
    if (version_ < kMinVersion || version_ > kMaxVersion)
        throw format_error("unsupported GGUF version " + std::to_string(version_) + " (this reader reads v2 and v3)");

    const uint64_t tensor_count = cursor.read<uint64_t>([] { return std::string("header (tensor count)"); });
    const uint64_t metadata_count = cursor.read<uint64_t>([] { return std::string("header (metadata count)"); });
    // Each section refuses a count its remaining bytes cannot hold before allocating.
    metadata_.parse(cursor, metadata_count);

    alignment_ = kDefaultAlignment;
    if (const MetaEntry* entry = metadata_.find(kAlignmentKey)) {
        if (entry->value.type != ER_META_U32)
            throw format_error("metadata key 'general.alignment' has type " +
                               std::string(meta_type_name(entry->value.type)) + ", expected u32");
        if (!is_power_of_two(entry->value.v.u64))
            throw format_error("metadata key 'general.alignment' is " + std::to_string(entry->value.v.u64) +
                               ", must be a nonzero power of two");
        alignment_ = entry->value.v.u64;
    }

    tensors_.parse(cursor, tensor_count);
    const auto data_start = align_up(cursor.pos(), alignment_);  // pos <= size < 2^63: no overflow
    tensors_.place(data_start.value_or(size_), size_, alignment_);

    description_ = "GGUF v" + std::to_string(version_) + ", " + std::to_string(tensors_.size()) + " tensors, " +
                   std::to_string(metadata_.size()) + " metadata keys, alignment " + std::to_string(alignment_);
}

er_tensor_desc GgufFile::tensor_desc(uint64_t index) const {
    const TensorInfo& t = tensors_.at(index);
    er_tensor_desc out{};
    out.name = er_str{t.name.data(), t.name.size()};
    out.dtype = t.dtype;
    out.n_dims = t.n_dims;
    for (int d = 0; d < ER_MAX_DIMS; ++d) out.ne[d] = t.ne[d];
    out.file_offset = tensors_.data_start() + t.offset;
    out.data = data_ + out.file_offset;
    out.nbytes = t.nbytes;
    return out;
}

void GgufFile::release_range(const void* data, uint64_t nbytes) const {
    if (!mapping_ || !data) return;
    const auto begin = reinterpret_cast<uintptr_t>(data);
    const auto map_begin = reinterpret_cast<uintptr_t>(data_);
    if (begin < map_begin || begin - map_begin > size_ || nbytes > size_ - (begin - map_begin)) return;
    mapping_->release(begin - map_begin, nbytes);
}

uint64_t read_head(const std::string& path, uint8_t* out, uint64_t size) {
    Fd file;
    struct stat st {};
    open_regular_file(path, file, st);
    uint64_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(file.fd, out + done, static_cast<size_t>(size - done), static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw io_error("cannot read", errno);
        if (n == 0) break;
        done += static_cast<uint64_t>(n);
    }
    return done;
}

int32_t probe_score(const uint8_t* head, uint64_t size) {
    if (size < sizeof kMagic || std::memcmp(head, kMagic, sizeof kMagic) != 0) return 0;
    if (size >= 8) {
        uint32_t version;
        std::memcpy(&version, head + 4, 4);
        if (version >= kMinVersion && version <= kMaxVersion) return 100;
    }
    return 50;  // ours, though open() will refuse it and say why
}

}  // namespace edgerun::gguf
