#include "tool_calls.hpp"

#include <edgerun/text/held_text.hpp>
#include <edgerun/text/json_text.hpp>

#include <atomic>
#include <cstdio>
#include <random>
#include <utility>

namespace edgerun::serve {

namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";  // Llama 3.1 may open a call with it

void write_json(std::string& out, const json& value) {
    if (value.is_object()) {
        out += '{';
        bool first = true;
        for (const auto& [key, item] : value.items()) {
            if (!first) out += ", ";
            first = false;
            out += text::json_quote(key);
            out += ": ";
            write_json(out, item);
        }
        out += '}';
    } else if (value.is_array()) {
        out += '[';
        for (size_t i = 0; i < value.size(); ++i) {
            if (i) out += ", ";
            write_json(out, value[i]);
        }
        out += ']';
    } else if (value.is_string()) {
        out += text::json_quote(value.get_ref<const std::string&>());
    } else {
        out += value.dump();  // numbers (shortest round trip, as Python's repr), true, false, null
    }
}

using text::is_ascii_space;

std::string new_call_id() {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    char hex[25];
    std::snprintf(hex, sizeof hex, "%08x%016llx", unsigned(salt >> 40),
                  static_cast<unsigned long long>(salt ^ (++counter * 0x9E3779B97F4A7C15ull)));
    return std::string("call_") + hex;
}

// A call's JSON: {"name": "...", "arguments" (or Llama's "parameters"): {...} or "{...}"}.
bool read_call(std::string_view text, std::vector<ParsedToolCall>& calls) {
    const json call = json::parse(text, nullptr, false);
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return false;
    const char* key = call.contains("arguments") ? "arguments" : "parameters";
    json arguments = call.contains(key) ? call[key] : json::object();
    if (arguments.is_string())  // some models write the API's form, JSON text
        arguments = json::parse(arguments.get<std::string>(), nullptr, false);
    if (!arguments.is_object()) return false;
    calls.push_back({new_call_id(), call["name"].get<std::string>(), arguments.dump()});
    return true;
}

// The held text as calls: blocks with only whitespace around them. False when any part
// is not a call.
bool read_tagged_calls(std::string_view text, std::vector<ParsedToolCall>& calls) {
    size_t at = 0;
    while (true) {
        while (at < text.size() && is_ascii_space(text[at])) ++at;
        if (at == text.size()) return !calls.empty();
        if (text.substr(at, kOpen.size()) != kOpen) return false;
        const size_t close = text.find(kClose, at);
        if (close == std::string_view::npos) return false;
        if (!read_call(text.substr(at + kOpen.size(), close - at - kOpen.size()), calls)) return false;
        at = close + kClose.size();
    }
}

}  // namespace

std::string template_json(const json& value) {
    std::string out;
    write_json(out, value);
    return out;
}

std::string ToolCallSplitter::feed(std::string_view text) {
    held_ += text;
    if (in_calls_) return {};
    return format_ == ToolCallFormat::TaggedBlocks ? feed_tagged() : feed_json();
}

std::string ToolCallSplitter::feed_json() {
    if (content_) return std::exchange(held_, {});
    size_t start = 0;
    while (start < held_.size() && is_ascii_space(held_[start])) ++start;
    const std::string_view rest = std::string_view(held_).substr(start);
    if (rest.empty()) return {};
    if (rest.front() == '{' || rest.substr(0, kPythonTag.size()) == kPythonTag) {
        in_calls_ = true;
        return {};
    }
    if (rest.size() < kPythonTag.size() && kPythonTag.substr(0, rest.size()) == rest) return {};  // a cut tag
    content_ = true;
    return std::exchange(held_, {});
}

std::string ToolCallSplitter::feed_tagged() {
    if (const size_t open = held_.find(kOpen); open != std::string::npos) {
        in_calls_ = true;
        size_t end = open;  // the whitespace before the calls: dropped with them, kept if they are not calls
        while (end > 0 && is_ascii_space(held_[end - 1])) --end;
        std::string content = held_.substr(0, end);
        held_.erase(0, end);
        return content;
    }
    // Held: a cut "<tool_call" at the end, and the whitespace before it.
    const size_t keep_from = text::held_from(held_, kOpen);
    std::string content = held_.substr(0, keep_from);
    held_.erase(0, keep_from);
    return content;
}

ToolCallSplitter::End ToolCallSplitter::finish() {
    End end;
    bool read = false;
    if (in_calls_ && format_ == ToolCallFormat::TaggedBlocks) {
        read = read_tagged_calls(held_, end.calls);
    } else if (in_calls_) {
        std::string_view call = held_;
        while (!call.empty() && is_ascii_space(call.front())) call.remove_prefix(1);
        if (call.substr(0, kPythonTag.size()) == kPythonTag) call.remove_prefix(kPythonTag.size());
        read = read_call(call, end.calls);
    }
    if (!read) {
        end.calls.clear();
        end.content = std::move(held_);
    }
    held_.clear();
    return end;
}

}  // namespace edgerun::serve
