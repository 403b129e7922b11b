// The backend's options (er_backend_params.options, "key=value,key=value"): one table of
// every key with the values it takes (backend_options.cpp), so that an unknown key gets
// one line listing the known ones and a wrong value one line naming the values of its key.
#pragma once

#include "backend.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace edgerun::cuda_orin {

// What the options ask for beyond the Backend's fields, for create() once the device is open.
struct OpenOptions {
    std::optional<bool> weights_shared;  // weights=shared|device; unset: the device's default
    std::string profile_skip;            // the profile_skip item, for its warning
};

// Sets `backend`'s fields from `options` and checks how they combine; throws sdk::Failure
// (ER_E_INVALID_ARGUMENT) with one line naming the first item that is wrong.
OpenOptions apply_backend_options(std::string_view options, Backend& backend);

}  // namespace edgerun::cuda_orin
