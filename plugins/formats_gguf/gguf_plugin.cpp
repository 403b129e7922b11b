// formats_gguf: placeholder until the GGUF reader lands. It loads, and says that it
// reads nothing yet.
#include <edgerun/plugin_sdk.hpp>

namespace {

using edgerun::sdk::set_error;

er_status not_yet(er_error* err) { return set_error(err, ER_E_UNSUPPORTED, "formats_gguf: GGUF reading is not implemented yet"); }

const er_format_iface kIface = {
    sizeof(er_format_iface), ".gguf",
    [](const char*, int32_t* score, er_error*) { *score = 0; return er_status{ER_OK}; },
    [](const char*, er_file** out, er_error* err) { *out = nullptr; return not_yet(err); },
    [](er_file*) {},
    nullptr,
    [](const er_file*) { return uint64_t{0}; },
    [](const er_file*, uint64_t, er_str*, er_meta_value*, er_error* err) { return not_yet(err); },
    [](const er_file*, const char*, er_meta_value*, er_error* err) { return not_yet(err); },
    [](const er_file*, const er_meta_value*, uint64_t, er_meta_value*, er_error* err) { return not_yet(err); },
    [](const er_file*) { return uint64_t{0}; },
    [](const er_file*, uint64_t, er_tensor_desc*, er_error* err) { return not_yet(err); },
    [](const er_file*, er_model_desc*, er_error* err) { return not_yet(err); },
    [](const er_file*, er_vocab_desc*, er_error* err) { return not_yet(err); },
    [](const er_file*, uint64_t, er_str*, float*, int32_t*, er_error* err) { return not_yet(err); },
    [](const er_file*, uint64_t, er_str*, er_error* err) { return not_yet(err); },
    nullptr,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

const er_plugin kPlugin = {sizeof(er_plugin), ER_ABI_VERSION, ER_PLUGIN_FORMAT, "formats_gguf", "0.1.0",
                           "GGUF model files (not implemented yet)", &kIface};

}  // namespace

EDGERUN_DEFINE_PLUGIN(kPlugin)
