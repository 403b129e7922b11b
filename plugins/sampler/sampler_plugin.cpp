// sampler: placeholder until the sampling chain lands. It loads, and samples nothing yet.
#include <edgerun/plugin_sdk.hpp>

namespace {

const er_sampler_iface kIface = {
    sizeof(er_sampler_iface),
    [](const er_sampler_params*, int32_t, er_sampler** out, er_error* err) {
        *out = nullptr;
        return edgerun::sdk::set_error(err, ER_E_UNSUPPORTED, "sampler: not implemented yet");
    },
    [](er_sampler*) {},
    [](er_sampler*) {},
    [](er_sampler*, int32_t, er_error* err) { return edgerun::sdk::set_error(err, ER_E_STATE, "no sampler"); },
    [](er_sampler*, const float*, int32_t, int32_t*, er_error* err) {
        return edgerun::sdk::set_error(err, ER_E_STATE, "no sampler");
    },
    [](const er_sampler*) { return int32_t{0}; },
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_SAMPLER, "sampler", "0.1.0",
                           "token sampling (not implemented yet)", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
