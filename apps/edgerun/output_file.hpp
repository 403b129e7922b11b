// A file that appears at its path only when complete: written to a hidden temporary in
// the same folder, renamed over the target by commit(), removed if never committed (an
// error, an exception, Ctrl-C handled by the caller). No partial output is ever left.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace edgerun::cli {

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
