#include "golden.hpp"

#include <edgerun/engine.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace edgerun::conformance {

using json = nlohmann::ordered_json;

namespace {

constexpr const char* kFormat = "edgerun-golden-trace";
constexpr int kVersion = 1;

}  // namespace

std::string file_checksum(const std::string& path, uint64_t* bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open", ER_E_IO);
    uint64_t h = 0xCBF29CE484222325ull, total = 0;
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), std::streamsize(buffer.size()));
        const std::streamsize n = in.gcount();
        for (std::streamsize i = 0; i < n; ++i) h = (h ^ uint8_t(buffer[size_t(i)])) * 0x100000001B3ull;
        total += uint64_t(n);
    }
    if (bytes) *bytes = total;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

GoldenTrace record_trace(const PluginRegistry& registry, const BackendSpec& reference, const std::string& model_path,
                         int32_t kv_type, const SequenceSettings& settings, int32_t k) {
    GoldenTrace t;
    t.model_file = std::filesystem::path(model_path).filename().string();
    t.model_checksum = file_checksum(model_path, &t.model_bytes);
    t.reference = reference.name();
    t.kv_type = kv_type;
    t.sequence = settings;
    t.top_k = k;
    const Model model = Model::open(registry, model_path);
    t.tokens = sequence_tokens(model, settings.teacher_tokens);
    const BackendRun run = run_model(registry, reference, model_path, kv_type, settings, t.tokens);
    t.device = run.device;
    for (size_t i = 0; i < t.tokens.size(); ++i) {
        const std::span<const float> row(run.logits.data() + i * run.n_vocab, size_t(run.n_vocab));
        t.positions.push_back({top_k(row, k), logit_sd(row)});
    }
    t.greedy = run.greedy;
    return t;
}

void write_trace(const GoldenTrace& t, const std::string& path) {
    // One top-level key per line and one position per line: small, and readable in a diff.
    std::ostringstream out;
    auto line = [&](const char* key, const json& value, bool last = false) {
        out << "  \"" << key << "\": " << value.dump() << (last ? "\n" : ",\n");
    };
    out << "{\n";
    line("format", kFormat);
    line("version", kVersion);
    line("model", json{{"file", t.model_file}, {"bytes", t.model_bytes}, {"fnv1a64", t.model_checksum}});
    line("reference", json{{"backend", t.reference}, {"device", t.device}});
    line("settings", json{{"kv_type", kv_type_name(t.kv_type)},
                          {"n_batch", t.sequence.n_batch},
                          {"teacher_tokens", t.sequence.teacher_tokens},
                          {"prompt_tokens", t.sequence.prompt_tokens},
                          {"greedy_tokens", t.sequence.greedy_tokens},
                          {"top_k", t.top_k}});
    line("tokens", t.tokens);
    line("greedy", json{{"tokens", t.greedy.tokens}, {"margins", t.greedy.margins}});
    out << "  \"positions\": [\n";
    for (size_t i = 0; i < t.positions.size(); ++i) {
        const GoldenPosition& p = t.positions[i];
        json top = json::array();
        for (size_t k = 0; k < p.top.ids.size(); ++k) top.push_back(json::array({p.top.ids[k], p.top.logits[k]}));
        out << "    " << json{{"log_z", p.top.log_z}, {"sd", p.sd}, {"top", top}}.dump()
            << (i + 1 < t.positions.size() ? ",\n" : "\n");
    }
    out << "  ]\n}\n";
    const std::string tmp = path + ".tmp";
    {
        std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
        file << out.str();
        if (!file) throw Error(path + ": cannot write", ER_E_IO);
    }
    std::filesystem::rename(tmp, path);
}

GoldenTrace read_trace(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open", ER_E_IO);
    GoldenTrace t;
    try {
        const json j = json::parse(in);
        if (j.at("format") != kFormat) throw Error("not an edgerun golden trace");
        if (j.at("version") != kVersion) throw Error("version " + j.at("version").dump() + ", this build reads " + std::to_string(kVersion));
        t.model_file = j.at("model").at("file");
        t.model_bytes = j.at("model").at("bytes");
        t.model_checksum = j.at("model").at("fnv1a64");
        t.reference = j.at("reference").at("backend");
        t.device = j.at("reference").at("device");
        const json& s = j.at("settings");
        t.kv_type = parse_kv_type(s.at("kv_type").get<std::string>());
        t.sequence.n_batch = s.at("n_batch");
        t.sequence.teacher_tokens = s.at("teacher_tokens");
        t.sequence.prompt_tokens = s.at("prompt_tokens");
        t.sequence.greedy_tokens = s.at("greedy_tokens");
        t.top_k = s.at("top_k");
        t.tokens = j.at("tokens").get<std::vector<int32_t>>();
        t.greedy.tokens = j.at("greedy").at("tokens").get<std::vector<int32_t>>();
        t.greedy.margins = j.at("greedy").at("margins").get<std::vector<double>>();
        for (const json& p : j.at("positions")) {
            GoldenPosition g;
            g.top.log_z = p.at("log_z");
            g.sd = p.at("sd");
            for (const json& e : p.at("top")) {
                g.top.ids.push_back(e.at(0));
                g.top.logits.push_back(e.at(1).get<float>());
            }
            t.positions.push_back(std::move(g));
        }
    } catch (const Error& e) {
        throw Error(path + ": " + e.what(), ER_E_FORMAT);
    } catch (const std::exception& e) {
        throw Error(path + ": not a valid golden trace (" + std::string(e.what()) + ")", ER_E_FORMAT);
    }
    const size_t n = size_t(t.sequence.teacher_tokens);
    if (t.tokens.size() != n || t.positions.size() != n || t.greedy.tokens.size() != size_t(t.sequence.greedy_tokens) ||
        t.greedy.margins.size() != t.greedy.tokens.size() || t.sequence.prompt_tokens < 1 ||
        t.sequence.prompt_tokens > int32_t(n) || t.sequence.n_batch < 1)
        throw Error(path + ": the trace's counts of tokens, positions and greedy steps do not agree", ER_E_FORMAT);
    return t;
}

ModelComparison check_trace(const PluginRegistry& registry, const BackendSpec& candidate, const GoldenTrace& t,
                            const std::string& model_path, int32_t kv_type) {
    uint64_t bytes = 0;
    const std::string checksum = file_checksum(model_path, &bytes);
    if (checksum != t.model_checksum || bytes != t.model_bytes)
        throw Error(model_path + " is not the model the trace was recorded on (" + t.model_file + ", fnv1a64 " +
                        t.model_checksum + "; this file has " + checksum + ")",
                    ER_E_INVALID_ARGUMENT);
    if (kv_type < 0) kv_type = t.kv_type;
    const BackendRun run = run_model(registry, candidate, model_path, kv_type, t.sequence, t.tokens);
    const Comparison kind = (kv_type == ER_KV_Q8) != (t.kv_type == ER_KV_Q8) ? Comparison::KvQuantized : Comparison::Exact;
    const ModelThresholds& th = model_thresholds(kind);
    std::vector<PositionStats> positions;
    for (size_t i = 0; i < t.positions.size(); ++i) {
        const std::span<const float> row(run.logits.data() + i * run.n_vocab, size_t(run.n_vocab));
        positions.push_back(compare_position_topk(row, t.positions[i].top, t.positions[i].sd));
    }
    ModelComparison c;
    c.model = std::filesystem::path(model_path).filename().string();
    c.candidate = candidate.name() + " kv=" + kv_type_name(kv_type);
    c.reference = "trace of " + t.reference + " kv=" + kv_type_name(t.kv_type);
    c.kind = kind;
    c.teacher = summarize(positions, th.tie_gap);
    c.greedy = first_divergence(run.greedy, t.greedy);
    c.greedy_tokens = int32_t(t.greedy.tokens.size());
    c.problems = judge(c.teacher, c.greedy, th);
    c.status = c.problems.empty() ? "pass" : "FAIL";
    return c;
}

}  // namespace edgerun::conformance
