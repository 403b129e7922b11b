// cuda_orin: placeholder until the kernels are wired in. It loads, counts CUDA devices,
// and says for every op that it does not run it.
#include <edgerun/plugin_sdk.hpp>

#include <cuda_runtime.h>

#include <cstdio>

namespace {

using edgerun::sdk::set_error;

struct Backend {
    int device;
};

int32_t device_count() {
    int count = 0;
    // No driver or no GPU is not an error here: there are simply no devices.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

er_status device_info(int32_t device, er_device_info* out, er_error* err) {
    if (device < 0 || device >= device_count())
        return edgerun::sdk::set_errorf(err, ER_E_INVALID_ARGUMENT, "cuda_orin: no CUDA device %d", device);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess)
        return set_error(err, ER_E_INTERNAL, "cuda_orin: cudaGetDeviceProperties failed");
    std::snprintf(out->name, sizeof out->name, "%s", prop.name);
    std::snprintf(out->kind, sizeof out->kind, "gpu");
    out->memory_total = prop.totalGlobalMem;
    out->unified_memory = prop.integrated ? 1 : 0;
    out->score = 0;  // not preferred until it runs something
    return ER_OK;
}

er_status not_yet(er_error* err) { return set_error(err, ER_E_UNSUPPORTED, "cuda_orin: not implemented yet"); }

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    device_count,
    device_info,
    [](const er_backend_params* params, er_backend** out, er_error* err) {
        *out = nullptr;
        if (params->device < 0 || params->device >= device_count())
            return set_error(err, ER_E_UNSUPPORTED, "cuda_orin: no CUDA device available");
        *out = reinterpret_cast<er_backend*>(new Backend{params->device});
        return er_status{ER_OK};
    },
    [](er_backend* b) { delete reinterpret_cast<Backend*>(b); },
    [](er_backend*, const er_op_query*) { return int32_t{0}; },
    [](er_backend*, const er_model_params*, er_model** out, er_error* err) { *out = nullptr; return not_yet(err); },
    [](er_model*) {},
    [](er_model*, const er_context_params*, er_context** out, er_error* err) { *out = nullptr; return not_yet(err); },
    [](er_context*) {},
    [](er_context*, const er_graph*, er_plan** out, er_error* err) { *out = nullptr; return not_yet(err); },
    [](er_plan*) {},
    [](er_plan*, int32_t, const void*, int64_t, er_error* err) { return not_yet(err); },
    [](er_plan*, const er_step*, er_error* err) { return not_yet(err); },
    [](er_plan*, int32_t, float*, int64_t, er_error* err) { return not_yet(err); },
    nullptr,
    nullptr,
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, "cuda_orin", "0.1.0",
                           "CUDA backend for Jetson Orin (not implemented yet)", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
