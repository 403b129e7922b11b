#include <edgerun/config.hpp>
#include <edgerun/host_api.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace po = boost::program_options;

namespace edgerun {
namespace {

enum class Kind { Integer, Real, Text, Boolean, TextList, Unknown };

// The option's C++ type decides which TOML types it accepts: the options description is
// the schema, so a new option is configurable without a second table to keep in sync.
Kind kind_of(const po::value_semantic* semantic) {
    if (dynamic_cast<const po::typed_value<int>*>(semantic) ||
        dynamic_cast<const po::typed_value<long>*>(semantic) ||
        dynamic_cast<const po::typed_value<long long>*>(semantic) ||
        dynamic_cast<const po::typed_value<unsigned>*>(semantic) ||
        dynamic_cast<const po::typed_value<unsigned long>*>(semantic) ||
        dynamic_cast<const po::typed_value<unsigned long long>*>(semantic))
        return Kind::Integer;
    if (dynamic_cast<const po::typed_value<float>*>(semantic) || dynamic_cast<const po::typed_value<double>*>(semantic))
        return Kind::Real;
    if (dynamic_cast<const po::typed_value<std::string>*>(semantic)) return Kind::Text;
    if (dynamic_cast<const po::typed_value<bool>*>(semantic)) return Kind::Boolean;
    if (dynamic_cast<const po::typed_value<std::vector<std::string>>*>(semantic)) return Kind::TextList;
    return Kind::Unknown;
}

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::Integer: return "an integer";
        case Kind::Real: return "a number";
        case Kind::Text: return "a string";
        case Kind::Boolean: return "true or false";
        case Kind::TextList: return "an array of strings";
        default: return "a value";
    }
}

std::string scalar_text(const toml::node& node, Kind kind) {
    if (kind == Kind::Integer && node.is_integer()) return std::to_string(node.as_integer()->get());
    if (kind == Kind::Real && node.is_floating_point()) {
        std::ostringstream out;
        out.precision(17);
        out << node.as_floating_point()->get();
        return out.str();
    }
    if (kind == Kind::Real && node.is_integer()) return std::to_string(node.as_integer()->get());
    if ((kind == Kind::Text || kind == Kind::TextList) && node.is_string()) return node.as_string()->get();
    if (kind == Kind::Boolean && node.is_boolean()) return node.as_boolean()->get() ? "true" : "false";
    throw std::invalid_argument("wrong type");
}

}  // namespace

std::optional<std::filesystem::path> default_config_path() {
    std::filesystem::path base;
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
        base = xdg;
    else if (const char* home = std::getenv("HOME"); home && *home)
        base = std::filesystem::path(home) / ".config";
    else
        return std::nullopt;
    auto file = base / "edgerun" / "edgerun.toml";
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) return file;
    return std::nullopt;
}

void apply_config_file(const std::filesystem::path& file, const po::options_description& desc,
                       po::variables_map& vm, const std::vector<std::string>& not_configurable,
                       const std::set<std::string>& other_commands_keys) {
    const std::string name = file.string();
    toml::table table;
    try {
        table = toml::parse_file(name);
    } catch (const toml::parse_error& e) {
        throw Error(name + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()),
                    ER_E_INVALID_ARGUMENT);
    }

    po::parsed_options parsed(&desc);
    for (const auto& [key_node, node] : table) {
        const std::string key(key_node.str());
        const std::string where = name + ":" + std::to_string(node.source().begin.line) + ": ";
        const po::option_description* option = desc.find_nothrow(key, false);
        bool excluded = std::find(not_configurable.begin(), not_configurable.end(), key) != not_configurable.end();
        if (!option && !excluded && other_commands_keys.count(key)) continue;
        if (!option || excluded) throw Error(where + "unknown key '" + key + "'", ER_E_INVALID_ARGUMENT);

        Kind kind = kind_of(option->semantic().get());
        po::option value;
        value.string_key = key;
        try {
            if (kind == Kind::TextList && node.is_array()) {
                for (const auto& element : *node.as_array()) value.value.push_back(scalar_text(element, kind));
            } else {
                value.value.push_back(scalar_text(node, kind));
            }
        } catch (const std::invalid_argument&) {
            throw Error(where + "key '" + key + "' must be " + kind_name(kind), ER_E_INVALID_ARGUMENT);
        }
        // The option's own parser still checks the value (a range, a choice).
        try {
            boost::any probe;
            option->semantic()->parse(probe, value.value, true);
        } catch (const std::exception& e) {
            throw Error(where + "key '" + key + "': " + e.what(), ER_E_INVALID_ARGUMENT);
        }
        parsed.options.push_back(std::move(value));
    }
    po::store(parsed, vm);  // never overrides what the command line already set
}

}  // namespace edgerun
