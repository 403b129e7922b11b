// STATUS: run on an H200 (2026-11-25: 523.6 MiB for the context, NVML's figures). The
// figures it feeds into the memory report are checked in CI on the emulated device, which
// reports a context share of its own (tests/cuda/emu/emulated_device.cpp).
#include "context_memory.hpp"
#include "cuda_check.hpp"

#include <edgerun/plugin_sdk.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

namespace edgerun::cuda_orin {

uint64_t host_mem_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

namespace {

// The NVML entries used, declared here: nvml.h is not part of every CUDA Toolkit install
// (the library comes with the driver). nvmlReturn_t is an enum of int size, 0 = success;
// nvmlMemory_t is {total, free, used} in bytes.
using NvmlReturn = int;
struct NvmlMemory {
    unsigned long long total, free, used;
};
using NvmlDevice = struct nvmlDevice_st*;

// libnvidia-ml.so.1, initialised for as long as the object lives.
class Nvml {
public:
    Nvml() {
        library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!library_) {
            const char* e = dlerror();
            why_ = std::string("no NVML (") + (e ? e : "libnvidia-ml.so.1 not found") + ")";
            return;
        }
        init_ = reinterpret_cast<NvmlReturn (*)()>(dlsym(library_, "nvmlInit_v2"));
        shutdown_ = reinterpret_cast<NvmlReturn (*)()>(dlsym(library_, "nvmlShutdown"));
        by_uuid_ = reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(dlsym(library_, "nvmlDeviceGetHandleByUUID"));
        memory_info_ = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(dlsym(library_, "nvmlDeviceGetMemoryInfo"));
        error_string_ = reinterpret_cast<const char* (*)(NvmlReturn)>(dlsym(library_, "nvmlErrorString"));
        if (!init_ || !shutdown_ || !by_uuid_ || !memory_info_ || !error_string_) {
            why_ = "NVML lacks nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByUUID, nvmlDeviceGetMemoryInfo or nvmlErrorString";
            return;
        }
        if (const NvmlReturn r = init_(); r != 0) {
            why_ = std::string("nvmlInit failed: ") + error_string_(r);
            return;
        }
        initialised_ = true;
    }
    ~Nvml() {
        if (initialised_) shutdown_();
        if (library_) dlclose(library_);
    }
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    const std::string& why() const { return why_; }

    // Free memory of the GPU (or MIG instance) with this CUDA UUID; 0 with *why.
    uint64_t free_memory(const cudaUUID_t& uuid, std::string* why) {
        if (!initialised_) {
            *why = why_;
            return 0;
        }
        const unsigned char* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
        char hex[64];
        std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                      b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        NvmlDevice device = nullptr;
        NvmlReturn r = by_uuid_((std::string("GPU-") + hex).c_str(), &device);
        if (r != 0) r = by_uuid_((std::string("MIG-") + hex).c_str(), &device);  // a MIG instance
        if (r != 0) {
            *why = std::string("NVML does not know the device's UUID: ") + error_string_(r);
            return 0;
        }
        NvmlMemory m{};
        if (r = memory_info_(device, &m); r != 0) {
            *why = std::string("nvmlDeviceGetMemoryInfo failed: ") + error_string_(r);
            return 0;
        }
        return m.free;
    }

private:
    void* library_ = nullptr;
    bool initialised_ = false;
    std::string why_;
    NvmlReturn (*init_)() = nullptr;
    NvmlReturn (*shutdown_)() = nullptr;
    NvmlReturn (*by_uuid_)(const char*, NvmlDevice*) = nullptr;
    NvmlReturn (*memory_info_)(NvmlDevice, NvmlMemory*) = nullptr;
    const char* (*error_string_)(NvmlReturn) = nullptr;
};

// Whether the driver holds an active primary context for the device already (one made
// before cuda_orin opened it cannot be measured). The runtime has loaded and initialised
// libcuda by now (cudaGetDeviceCount); if it cannot be asked, the answer is no.
bool primary_context_active(int32_t index) {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!library) return false;
    const auto device_get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(library, "cuDeviceGet"));
    const auto get_state = reinterpret_cast<decltype(&cuDevicePrimaryCtxGetState)>(dlsym(library, "cuDevicePrimaryCtxGetState"));
    CUdevice device = 0;
    unsigned flags = 0;
    int active = 0;
    const bool known = device_get && get_state && device_get(&device, index) == CUDA_SUCCESS &&
                       get_state(device, &flags, &active) == CUDA_SUCCESS;
    dlclose(library);  // NOLOAD took a reference: give it back
    return known && active != 0;
}

}  // namespace

ContextMemory make_context_measured(int32_t index, bool integrated) {
    static std::mutex mutex;
    static std::map<int32_t, ContextMemory> measured;  // per device, for the process
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = measured.find(index); it != measured.end()) {
        check(cudaSetDevice(index), "cudaSetDevice");
        return it->second;
    }
    ContextMemory result;
    const bool existed = primary_context_active(index);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
    std::optional<Nvml> nvml;
    std::string why;
    auto free_now = [&]() -> uint64_t {
        if (integrated) {
            const uint64_t available = host_mem_available();
            if (!available) why = "/proc/meminfo has no MemAvailable";
            return available;
        }
        return nvml->free_memory(prop.uuid, &why);
    };
    if (!integrated) nvml.emplace();
    const uint64_t before = free_now();
    // cudaSetDevice makes the primary context from CUDA 12 on; cudaFree(0) makes it on
    // any version.
    check(cudaSetDevice(index), "cudaSetDevice");
    check(cudaFree(nullptr), "cudaFree (making the CUDA context)");
    const uint64_t after = before ? free_now() : 0;
    if (existed)
        result.unmeasured = "the CUDA context existed before cuda_orin opened the device";
    else if (!before || !after)
        result.unmeasured = why;
    else
        result.bytes = before > after ? before - after : 0;
    measured[index] = result;
    return result;
}

}  // namespace edgerun::cuda_orin
