#include "output_file.hpp"

#include <edgerun/host_api.hpp>

#include <unistd.h>

namespace edgerun::cli {

std::filesystem::path file_to_replace(const std::filesystem::path& target) {
    std::error_code ec;  // a target that does not exist yet sets it: that is the usual case
    std::filesystem::path resolved = target;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec))) {
        resolved = std::filesystem::weakly_canonical(target, ec);
        if (ec) throw Error(target.string() + ": " + ec.message(), ER_E_IO);
    }
    const std::filesystem::file_status status = std::filesystem::status(resolved, ec);
    if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        throw Error(target.string() + ": exists and is not a regular file (a directory, device or FIFO)",
                    ER_E_INVALID_ARGUMENT);
    return resolved;
}

OutputFile::OutputFile(const std::filesystem::path& target) : target_(file_to_replace(target)) {
    std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        throw Error(target.string() + ": folder " + dir.string() + " does not exist", ER_E_IO);
    std::string hidden_name = ".";
    hidden_name += target_.filename().string() + ".tmp." + std::to_string(::getpid());
    temporary_ = dir / hidden_name;
    stream_.open(temporary_, std::ios::binary | std::ios::trunc);
    if (!stream_) throw Error(target.string() + ": cannot write in " + dir.string(), ER_E_IO);
}

OutputFile::~OutputFile() {
    if (committed_) return;
    stream_.close();
    std::error_code ec;
    std::filesystem::remove(temporary_, ec);
}

void OutputFile::commit() {
    stream_.flush();
    stream_.close();
    if (!stream_) throw Error(target_.string() + ": write failed (disk full?)", ER_E_IO);
    std::error_code ec;
    std::filesystem::rename(temporary_, target_, ec);
    if (ec) throw Error(target_.string() + ": " + ec.message(), ER_E_IO);
    committed_ = true;
}

void write_npy(const std::filesystem::path& target, const float* data, int64_t rows, int64_t cols) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "), }";
    // The format wants magic + version + 2-byte length + header to be a multiple of 64,
    // the header ending in a newline.
    const size_t preamble = 10;
    header.append(63 - (preamble + header.size()) % 64, ' ');
    header += '\n';
    OutputFile file(target);
    auto& out = file.stream();
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t length = uint16_t(header.size());
    const char length_bytes[2] = {char(length & 0xFF), char(length >> 8)};
    out.write(length_bytes, 2);
    out.write(header.data(), std::streamsize(header.size()));
    out.write(reinterpret_cast<const char*>(data), std::streamsize(sizeof(float) * rows * cols));
    file.commit();
}

}  // namespace edgerun::cli
