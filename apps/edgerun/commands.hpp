// The subcommands of the edgerun binary.
#pragma once

#include <string>
#include <vector>

namespace edgerun::cli {

int cmd_plugins(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_inspect(const std::vector<std::string>& args);

}  // namespace edgerun::cli
