#include "report.hpp"
#include "thresholds.hpp"

#include <edgerun/graph.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

namespace edgerun::conformance {

using json = nlohmann::ordered_json;

namespace {

std::string fmt(const char* format, double v) {
    char text[64];
    std::snprintf(text, sizeof text, format, v);
    return text;
}

std::string greedy_cell(const ModelComparison& c) {
    if (c.greedy.identical) return "identical " + std::to_string(c.greedy_tokens);
    return "diverges @" + std::to_string(c.greedy.position) + ": " + std::to_string(c.greedy.cand_token) + " (" +
           fmt("%.2f", c.greedy.cand_margin) + ") vs " + std::to_string(c.greedy.ref_token) + " (" +
           fmt("%.2f", c.greedy.ref_margin) + ")";
}

json comparison_json(const ModelComparison& c) {
    const ModelThresholds& t = model_thresholds(c.kind);
    json j{{"model", c.model}, {"synthesized", c.synthesized}, {"candidate", c.candidate}, {"reference", c.reference},
           {"status", c.status}, {"problems", c.problems}};
    if (c.status == "missing") j["partial"] = c.partial;
    if (c.status == "pass" || c.status == "FAIL") {
        j["comparison"] = c.kind == Comparison::Exact ? "same cache type" : "INT8 vs F16 cache";
        j["teacher_forced"] = json{{"positions", c.teacher.positions},
                                   {"top1_agreement", c.teacher.positions ? double(c.teacher.agree) / c.teacher.positions : 1.0},
                                   {"decisive_positions", c.teacher.decisive},
                                   {"decisive_top1_agreement", c.teacher.decisive_top1()},
                                   {"first_disagreement", c.teacher.first_disagreement},
                                   {"mean_kl", c.teacher.mean_kl},
                                   {"max_kl", c.teacher.max_kl},
                                   {"max_kl_position", c.teacher.max_kl_position},
                                   {"max_logit_diff_sd", c.teacher.max_diff_sd},
                                   {"max_logit_diff_position", c.teacher.max_diff_position},
                                   {"finite", c.teacher.finite}};
        json greedy{{"tokens", c.greedy_tokens}, {"identical", c.greedy.identical}};
        if (!c.greedy.identical)
            greedy["first_divergence"] = json{{"position", c.greedy.position},
                                              {"candidate_token", c.greedy.cand_token},
                                              {"candidate_margin", c.greedy.cand_margin},
                                              {"reference_token", c.greedy.ref_token},
                                              {"reference_margin", c.greedy.ref_margin},
                                              {"near_tie", c.greedy.ref_margin < t.tie_gap}};
        j["greedy"] = greedy;
        j["thresholds"] = json{{"min_top1", t.min_top1}, {"max_mean_kl", t.max_mean_kl}, {"max_kl", t.max_kl},
                               {"max_logit_diff_sd", t.max_logit_diff}, {"tie_gap", t.tie_gap}};
    }
    return j;
}

json ops_json(const OpReport& ops) {
    json cases = json::array();
    for (const OpResult& res : ops.results) {
        json c{{"op", op_name(res.op)}, {"case", res.label}, {"status", res.status}, {"nmse", res.non_finite ? -1.0 : res.nmse},
               {"threshold", res.threshold}, {"max_abs", res.max_abs}, {"non_finite", res.non_finite},
               {"message", res.message}};
        if (!res.first_failing_step.empty()) c["first_failing_step"] = res.first_failing_step;
        cases.push_back(c);
    }
    return json{{"cases", cases}, {"missing", ops.missing}, {"not_tested_by_reference", ops.not_referenced}};
}

json long_json(const LongComparison& c) {
    const ModelThresholds& t = model_thresholds(c.kind);
    json j{{"model", c.model}, {"run", c.run}, {"schedule", c.schedule}, {"candidate", c.candidate},
           {"reference", c.reference}, {"status", c.status}, {"problems", c.problems}};
    if (c.status == "pass" || c.status == "FAIL") {
        j["comparison"] = c.kind == Comparison::Exact ? "same cache type" : "INT8 vs F16 cache";
        j["positions"] = c.positions;
        j["steps"] = c.steps;
        j["step_sizes"] = c.step_sizes;
        j["max_kv_length"] = c.max_kv_length;
        j["decisive_top1_agreement"] = c.summary.decisive_top1();
        j["first_disagreement"] = c.summary.first_disagreement;
        j["mean_kl"] = c.summary.mean_kl;
        j["max_kl"] = c.summary.max_kl;
        j["max_kl_position"] = c.summary.max_kl_position;
        j["max_logit_diff_sd"] = c.summary.max_diff_sd;
        j["max_logit_diff_position"] = c.summary.max_diff_position;
        j["finite"] = c.summary.finite;
        j["first_failing_position"] = c.first_failing;
        if (c.first_failing >= 0) j["first_failing_step"] = c.first_failing_step;
        j["thresholds"] = json{{"min_top1", t.min_top1}, {"max_mean_kl", t.max_mean_kl}, {"max_kl", t.max_kl},
                               {"max_logit_diff_sd", t.max_logit_diff}, {"tie_gap", t.tie_gap}};
    }
    return j;
}

}  // namespace

double SuiteReport::pooled_top1(int32_t* decisive) const {
    int64_t agree = 0, total = 0;
    for (const ModelComparison& c : models)
        if (c.synthesized && c.kind == Comparison::Exact && (c.status == "pass" || c.status == "FAIL"))
            agree += c.teacher.decisive_agree, total += c.teacher.decisive;
    if (decisive) *decisive = int32_t(total);
    return total ? double(agree) / double(total) : 1.0;
}

int32_t SuiteReport::missing_count() const {
    int32_t n = int32_t(ops.missing.size() + long_ops.missing.size());
    for (const ModelComparison& c : models) n += c.status == "missing";
    for (const LongComparison& c : long_models) n += c.status == "missing";
    for (const BatchComparison& c : batch) n += c.status == "missing";
    return n;
}

std::vector<std::string> SuiteReport::problems() const {
    std::vector<std::string> out;
    for (const OpResult& r : ops.results)
        if (r.status != "pass") out.push_back("ops: " + r.label + ": " + r.message);
    for (const ModelComparison& c : models)
        if (c.status == "FAIL" || c.status == "error")
            for (const std::string& p : c.problems) out.push_back("models: " + c.model + " " + c.candidate + " vs " + c.reference + ": " + p);
    for (const OpResult& r : long_ops.results)
        if (r.status != "pass") out.push_back("long: " + r.label + ": " + r.message);
    for (const LongComparison& c : long_models)
        if (c.status == "FAIL" || c.status == "error")
            for (const std::string& p : c.problems)
                out.push_back("long: " + c.model + " " + c.candidate + (c.run.empty() ? "" : " " + c.run) + " vs " +
                              c.reference + ": " + p);
    for (const BatchComparison& c : batch)
        if (c.status == "FAIL" || c.status == "error")
            for (const std::string& p : c.problems) out.push_back("batch: " + c.model + " " + c.candidate + ": " + p);
    const ModelThresholds& t = model_thresholds(Comparison::Exact);
    if (pooled_top1() < t.min_top1)
        out.push_back("models: pooled top-1 agreement over the synthesized presets " + fmt("%.2f%%", 100 * pooled_top1()) +
                      " < " + fmt("%.1f%%", 100 * t.min_top1));
    if (require_full && missing_count() > 0)
        out.push_back("coverage: the candidate lacks " + std::to_string(missing_count()) + " op/type combinations or models (--require-full)");
    return out;
}

void print_comparisons(const std::vector<ModelComparison>& comparisons, std::ostream& out) {
    // Columns as wide as their longest entry (stress models and plugin files have long names).
    int model_w = 34, cand_w = 16, ref_w = 18;
    for (const ModelComparison& c : comparisons) {
        model_w = std::max(model_w, int(c.model.size()));
        cand_w = std::max(cand_w, int(c.candidate.size()));
        ref_w = std::max(ref_w, int(c.reference.size()));
    }
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-*s %-*s %7s %9s %9s %8s  %-38s %s\n", model_w, "model", cand_w, "candidate",
                  ref_w, "reference", "top-1", "mean KL", "max KL", "max|d|sd", "greedy", "status");
    out << line;
    for (const ModelComparison& c : comparisons) {
        if (c.status == "missing" || c.status == "error") {
            std::snprintf(line, sizeof line, "%-*s %-*s %-*s %s\n", model_w, c.model.c_str(), cand_w, c.candidate.c_str(),
                          ref_w, c.reference.c_str(),
                          c.status != "missing" ? "ERROR" : c.partial ? "MISSING (these KV cache types not run)" : "MISSING (not run)");
            out << line;
        } else {
            std::snprintf(line, sizeof line, "%-*s %-*s %-*s %6.2f%% %9.2e %9.2e %8.3f  %-38s %s\n", model_w, c.model.c_str(),
                          cand_w, c.candidate.c_str(), ref_w, c.reference.c_str(), 100 * c.teacher.decisive_top1(),
                          c.teacher.mean_kl, c.teacher.max_kl, c.teacher.max_diff_sd, greedy_cell(c).c_str(), c.status.c_str());
            out << line;
        }
        for (const std::string& p : c.problems) out << "    " << (c.status == "missing" ? "lacks " : "") << p << "\n";
    }
}

namespace {

void print_ops(const OpReport& ops, std::ostream& out, bool verbose) {
    std::map<int32_t, std::vector<const OpResult*>> by_op;
    for (const OpResult& res : ops.results) by_op[res.op].push_back(&res);
    char line[256];
    std::snprintf(line, sizeof line, "%-13s %6s %6s %6s   %s\n", "op", "cases", "pass", "fail", "worst NMSE (threshold)");
    out << line;
    for (const auto& [op, results] : by_op) {
        int pass = 0;
        const OpResult* worst = results.front();
        for (const OpResult* res : results) {
            pass += res->status == "pass";
            if (res->nmse / res->threshold > worst->nmse / worst->threshold || res->status != "pass") worst = res;
        }
        std::snprintf(line, sizeof line, "%-13s %6zu %6d %6zu   %.2e (%.0e) %s\n", op_name(op), results.size(), pass,
                      results.size() - size_t(pass), worst->nmse, worst->threshold, worst->label.c_str());
        out << line;
    }
    for (const OpResult& res : ops.results)
        if (res.status != "pass" || verbose)
            out << "  " << (res.status == "pass" ? "pass " : res.status + " ") << res.label << ": "
                << (res.status == "pass" ? fmt("NMSE %.2e", res.nmse) : res.message) << "\n";
    if (!ops.missing.empty()) {
        out << "missing coverage (the candidate says it does not run these):\n";
        for (const auto& m : ops.missing) out << "  " << m << "\n";
    }
    if (!ops.not_referenced.empty()) {
        out << "not tested (the reference does not run these either):\n";
        for (const auto& m : ops.not_referenced) out << "  " << m << "\n";
    }
}

void print_long(const SuiteReport& r, std::ostream& out, bool verbose) {
    const LongSettings& s = r.long_settings;
    out << "\n== long: KV caches past every power of two to 4096; models fed one token per step and in chunks of ";
    for (size_t i = 0; i < s.chunks.size(); ++i) out << (i ? ", " : "") << s.chunks[i];
    out << " over " << s.positions << " positions, and rewound from " << s.rewind_from << " to " << s.rewind_to << " ==\n";
    if (!r.long_ops.results.empty() || !r.long_ops.missing.empty()) print_ops(r.long_ops, out, verbose);
    int model_w = 34, cand_w = 16;
    for (const LongComparison& c : r.long_models) {
        model_w = std::max(model_w, int(c.model.size()));
        cand_w = std::max(cand_w, int(c.candidate.size()));
    }
    char line[1024];
    std::snprintf(line, sizeof line, "%-*s %-*s %-7s %9s %6s %7s %9s %9s %8s  %s\n", model_w, "model", cand_w, "candidate",
                  "run", "positions", "steps", "top-1", "mean KL", "max KL", "max|d|sd", "status");
    out << line;
    for (const LongComparison& c : r.long_models) {
        if (c.status == "missing" || c.status == "error") {
            std::snprintf(line, sizeof line, "%-*s %-*s %-7s %s\n", model_w, c.model.c_str(), cand_w, c.candidate.c_str(),
                          c.run.c_str(), c.status == "missing" ? "MISSING (not run)" : "ERROR");
        } else {
            std::snprintf(line, sizeof line, "%-*s %-*s %-7s %9d %6d %6.2f%% %9.2e %9.2e %8.3f  %s\n", model_w, c.model.c_str(),
                          cand_w, c.candidate.c_str(), c.run.c_str(), c.positions, c.steps, 100 * c.summary.decisive_top1(),
                          c.summary.mean_kl, c.summary.max_kl, c.summary.max_diff_sd, c.status.c_str());
        }
        out << line;
        for (const std::string& p : c.problems) out << "    " << (c.status == "missing" ? "lacks " : "") << p << "\n";
    }
    for (const LongComparison& c : r.long_models)
        if (!c.reference.empty()) {
            out << "reference: " << c.reference << "\n";
            break;
        }
    for (const LongCoverage& m : long_coverage(r.long_models)) {
        out << "covered: " << m.model << ": positions 0.." << m.positions - 1 << ", KV lengths 1.." << m.max_kv_length
            << ", " << m.steps << " candidate steps of ";
        for (size_t i = 0; i < m.step_sizes.size(); ++i) out << (i ? ", " : "") << m.step_sizes[i];
        out << " tokens\n";
    }
    for (const OpResult& res : r.long_ops.results) {
        out << "covered: " << res.label << ": single-token steps at KV lengths";
        for (size_t i = 0; i < res.kv_lengths.size(); ++i) out << (i ? ", " : " ") << res.kv_lengths[i];
        out << "\n";
    }
}

}  // namespace

void print_report(const SuiteReport& r, std::ostream& out, bool verbose) {
    out << "edgerun conformance: candidate " << r.candidate << " (" << r.candidate_device << ")\n"
        << "                     reference " << r.reference << " (" << r.reference_device << ")\n";
    if (r.ops_run) {
        out << "\n== ops: every supported op and type against the reference (NMSE over whole outputs) ==\n";
        print_ops(r.ops, out, verbose);
    }
    if (r.models_run) {
        out << "\n== models: teacher-forced " << r.sequence.teacher_tokens << " tokens; greedy " << r.sequence.greedy_tokens
            << " tokens after a prompt of " << r.sequence.prompt_tokens << " ==\n";
        print_comparisons(r.models, out);
        int32_t decisive = 0;
        const double pooled = r.pooled_top1(&decisive);
        if (decisive > 0) out << "pooled top-1 agreement over the synthesized presets: " << fmt("%.2f%%", 100 * pooled) << " of " << decisive << " decisive positions\n";
    }
    if (r.long_run) print_long(r, out, verbose);
    if (r.batch_run) {
        out << "\n";
        print_batch_report(r.batch, out);
    }
    const auto problems = r.problems();
    out << "\n";
    if (r.missing_count() > 0) out << "coverage: " << r.missing_count() << " op/type combinations or models not run by the candidate (listed above)\n";
    out << (problems.empty() ? "PASS" : "FAIL") << ": " << problems.size() << " problem" << (problems.size() == 1 ? "" : "s") << "\n";
    for (const auto& p : problems) out << "  " << p << "\n";
}

void write_json_report(const SuiteReport& r, const std::string& path) {
    json j;
    j["candidate"] = json{{"backend", r.candidate}, {"device", r.candidate_device}};
    j["reference"] = json{{"backend", r.reference}, {"device", r.reference_device}};
    const auto problems = r.problems();
    j["passed"] = problems.empty();
    j["problems"] = problems;
    j["thresholds"] = describe_thresholds();
    if (r.ops_run) j["ops"] = ops_json(r.ops);
    if (r.models_run) {
        json models = json::array();
        for (const ModelComparison& c : r.models) models.push_back(comparison_json(c));
        int32_t decisive = 0;
        const double pooled = r.pooled_top1(&decisive);
        j["models"] = json{{"teacher_tokens", r.sequence.teacher_tokens}, {"prompt_tokens", r.sequence.prompt_tokens},
                           {"greedy_tokens", r.sequence.greedy_tokens}, {"pooled_top1_synthesized", pooled},
                           {"pooled_decisive_positions", decisive}, {"comparisons", models}};
    }
    if (r.long_run) {
        json models = json::array();
        for (const LongComparison& c : r.long_models) models.push_back(long_json(c));
        json coverage = json::array();
        for (const LongCoverage& m : long_coverage(r.long_models))
            coverage.push_back(json{{"model", m.model}, {"positions", m.positions}, {"max_kv_length", m.max_kv_length},
                                    {"steps", m.steps}, {"step_sizes", m.step_sizes}});
        json op_coverage = json::array();
        for (const OpResult& res : r.long_ops.results) op_coverage.push_back(json{{"case", res.label}, {"kv_lengths", res.kv_lengths}});
        j["long"] = json{{"positions", r.long_settings.positions}, {"chunks", r.long_settings.chunks},
                         {"rewind_from", r.long_settings.rewind_from}, {"rewind_to", r.long_settings.rewind_to},
                         {"ops", ops_json(r.long_ops)}, {"comparisons", models},
                         {"coverage", json{{"models", coverage}, {"ops", op_coverage}}}};
    }
    if (r.batch_run) {
        json batch = json::array();
        for (const BatchComparison& c : r.batch)
            batch.push_back(json{{"model", c.model}, {"candidate", c.candidate}, {"steps", c.steps}, {"exact", c.exact},
                                 {"sequences", c.sequences}, {"rows", c.rows}, {"differing_rows", c.differing_rows}, {"non_finite_rows", c.non_finite_rows},
                                 {"worst_nmse", c.worst_nmse}, {"status", c.status}, {"problems", c.problems}});
        j["batch"] = json{{"comparisons", batch}};
    }
    std::ofstream out(path);
    out << j.dump(1) << "\n";
    if (!out) throw Error(path + ": cannot write the JSON report", ER_E_IO);
}

}  // namespace edgerun::conformance
