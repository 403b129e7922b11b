// Host logging: spdlog to stderr (stdout carries only generated text and command output).
#pragma once

#include <string>

namespace edgerun {

// Sets up the stderr logger at `level` (trace, debug, info, warn, error, off); throws
// Error naming the value when it is not one of those.
void init_logging(const std::string& level);

}  // namespace edgerun
