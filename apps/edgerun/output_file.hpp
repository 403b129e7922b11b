// A file that appears at its path only when complete: written to a hidden temporary in
// the same folder, renamed over the target by commit(), removed if never committed (an
// error, an exception, Ctrl-C handled by the caller). No partial output is ever left.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace edgerun::cli {

// Where a file written to `target` goes: through symbolic links to the file they name, so
// that the link stays and its file is replaced. Throws Error when a directory, device or
// FIFO is there: renaming over it would replace /dev/null itself (run as root) and still
// report success. OutputFile calls it; a command calls it first to refuse before any work.
std::filesystem::path file_to_replace(const std::filesystem::path& target);

class OutputFile {
public:
    explicit OutputFile(const std::filesystem::path& target);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    std::ofstream& stream() { return stream_; }
    void commit();  // throws Error when writing or renaming failed

private:
    std::filesystem::path target_;
    std::filesystem::path temporary_;
    std::ofstream stream_;
    bool committed_ = false;
};

// A float32 NumPy .npy file of shape [rows, cols].
void write_npy(const std::filesystem::path& target, const float* data, int64_t rows, int64_t cols);

}  // namespace edgerun::cli
