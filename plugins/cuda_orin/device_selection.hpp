// Which GPUs this build of cuda_orin can run on: a device is usable when the build
// carries machine code (SASS) it can run or PTX the driver can compile for it. Plain C++,
// no CUDA header, so the CPU tests check the rule.
//
//   - SASS built for sm_XY runs on devices of compute capability X.Z with Z >= Y (same
//     major version, same or later minor);
//   - PTX built for compute_XY is compiled by the driver for any device of capability
//     >= X.Y.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace edgerun::cuda_orin {

struct CudaArchitectures {
    std::vector<int> sass;  // 87 = sm_87
    std::vector<int> ptx;   // 87 = compute_87
};

// CMake's CUDA_ARCHITECTURES list joined by commas or semicolons: "87" carries both SASS
// and PTX, "87-real" SASS only, "87-virtual" PTX only.
inline CudaArchitectures parse_cuda_architectures(std::string_view list) {
    CudaArchitectures out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find_first_of(",;", start);
        if (end == std::string_view::npos) end = list.size();
        const std::string item(list.substr(start, end - start));
        start = end + 1;
        if (item.empty()) continue;
        const int arch = std::atoi(item.c_str());
        if (arch <= 0) continue;
        const bool real_only = item.find("-real") != std::string::npos;
        const bool virtual_only = item.find("-virtual") != std::string::npos;
        if (!virtual_only) out.sass.push_back(arch);
        if (!real_only) out.ptx.push_back(arch);
    }
    return out;
}

inline std::string architecture_list(const CudaArchitectures& a) {
    std::string out;
    for (int s : a.sass) out += (out.empty() ? "sm_" : ", sm_") + std::to_string(s);
    for (int p : a.ptx) out += (out.empty() ? "compute_" : ", compute_") + std::to_string(p) + " PTX";
    return out.empty() ? "nothing" : out;
}

// "" when a device of compute capability major.minor can run this build, else why not.
inline std::string unusable_reason(int major, int minor, const CudaArchitectures& built) {
    const int cc = 10 * major + minor;
    for (int s : built.sass)
        if (s / 10 == major && s % 10 <= minor) return "";
    for (int p : built.ptx)
        if (p <= cc) return "";
    return "sm_" + std::to_string(cc) + ": this build carries " + architecture_list(built) + ", none of which runs there";
}

}  // namespace edgerun::cuda_orin
