#include <edgerun/host_api.hpp>
#include <edgerun/logging.hpp>
#include <edgerun/plugin_registry.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace edgerun {

void init_logging(const std::string& level) {
    static const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
        {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
        {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};
    auto found = std::find_if(std::begin(kLevels), std::end(kLevels),
                              [&](const auto& entry) { return level == entry.first; });
    if (found == std::end(kLevels))
        throw Error("--log-level: '" + level + "' is not one of trace, debug, info, warn, error, off",
                    ER_E_INVALID_ARGUMENT);
    auto logger = spdlog::get("edgerun");
    if (!logger) logger = spdlog::stderr_color_mt("edgerun");
    logger->set_pattern("%^%l%$: %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(found->second);
    plugin_host();  // plugins read the level through their er_host
}

}  // namespace edgerun
