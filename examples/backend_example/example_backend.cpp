// The example backend a third party would start from. For now it only shows the
// handshake: it loads, creates a backend object, and runs no op.
#include <edgerun/plugin_sdk.hpp>

#include <cstdio>

namespace {

using edgerun::sdk::set_error;

struct Backend {};

er_status not_yet(er_error* err) { return set_error(err, ER_E_UNSUPPORTED, "example: runs no op yet"); }

const er_backend_iface kIface = {
    sizeof(er_backend_iface),
    [] { return int32_t{1}; },
    [](int32_t device, er_device_info* out, er_error* err) {
        if (device != 0) return set_error(err, ER_E_INVALID_ARGUMENT, "example has one device");
        std::snprintf(out->name, sizeof out->name, "example (host CPU)");
        std::snprintf(out->kind, sizeof out->kind, "cpu");
        out->score = 0;
        return er_status{ER_OK};
    },
    [](const er_backend_params*, er_backend** out, er_error*) {
        *out = reinterpret_cast<er_backend*>(new Backend);
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

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_BACKEND, "example", "0.1.0",
                           "example third-party backend (runs no op yet)", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
