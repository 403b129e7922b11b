// The subcommands of the edgerun binary.
#pragma once

#include <string>
#include <vector>

namespace edgerun::cli {

int cmd_generate(const std::vector<std::string>& args);
int cmd_chat(const std::vector<std::string>& args);
int cmd_plugins(const std::vector<std::string>& args);
int cmd_eval(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);
int cmd_inspect(const std::vector<std::string>& args);
int cmd_tokenize(const std::vector<std::string>& args);
int cmd_quantize(const std::vector<std::string>& args);
int cmd_synth(const std::vector<std::string>& args);
int cmd_serve(const std::vector<std::string>& args);

}  // namespace edgerun::cli
