#include "op_suite.hpp"
#include "metrics.hpp"
#include "thresholds.hpp"

#include <edgerun/backend_support.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <span>

namespace edgerun::conformance {

Backend BackendSpec::create() const {
    auto params = sized<er_backend_params>();
    params.device = 0;
    params.n_threads = threads;
    params.options = options.empty() ? nullptr : options.c_str();
    return Backend(*plugin, params);
}

EngineOptions BackendSpec::engine_options(int32_t kv_type, int32_t n_batch, int32_t n_ctx) const {
    EngineOptions o;
    o.backend = name();
    o.backend_options = options;
    o.n_threads = threads;
    o.kv_type = kv_type;
    o.n_batch = n_batch;
    o.n_ctx = n_ctx;
    return o;
}

std::vector<float> run_case(const Backend& backend, const OpCase& c, std::vector<size_t>* step_ends) {
    auto model_params = sized<er_model_params>();
    model_params.weights = c.weights->descs().data();
    model_params.n_weights = int64_t(c.weights->descs().size());
    BackendModel model(backend, model_params);
    BackendContext context(model, c.context);
    Plan plan(context, c.graph.view());
    std::vector<float> out;
    for (const OpStep& step : c.steps) {
        for (const auto& [value, data] : step.inputs) plan.set_input(value, data.data(), step.n_tokens);
        for (const auto& [value, ids] : step.token_inputs) plan.set_input(value, ids.data(), step.n_tokens);
        plan.execute(step.n_tokens, step.pos0, step.logits_all);
        for (int32_t value : c.outputs) {
            const bool last_row = c.graph.values[value].flags & ER_VALUE_OUTPUT && value == c.graph.logits_output &&
                                  !step.logits_all;
            const int32_t rows = last_row ? 1 : step.n_tokens;
            const size_t at = out.size();
            out.resize(at + size_t(rows * c.graph.values[value].width));
            plan.get_output(value, out.data() + at, rows);
        }
        if (step_ends) step_ends->push_back(out.size());
    }
    return out;
}

int32_t OpReport::failures() const {
    return int32_t(std::count_if(results.begin(), results.end(), [](const OpResult& r) { return r.status != "pass"; }));
}

namespace {

const int32_t kOps[] = {ER_OP_EMBED, ER_OP_MATMUL, ER_OP_MATMUL_MULTI, ER_OP_LOGITS, ER_OP_RMS_NORM,
                        ER_OP_ROPE, ER_OP_ATTENTION, ER_OP_SWIGLU, ER_OP_ADD};

std::string describe_step(const OpCase& c, size_t index) {
    const OpStep& s = c.steps[index];
    std::string text = std::to_string(s.n_tokens) + (s.n_tokens == 1 ? " token at position " : " tokens at positions ") +
                       std::to_string(s.pos0) + (s.n_tokens == 1 ? "" : ".." + std::to_string(s.pos0 + s.n_tokens - 1));
    if (c.query.op == ER_OP_ATTENTION) text += " (KV length " + std::to_string(s.pos0 + s.n_tokens) + ")";
    return text + ", step " + std::to_string(index + 1) + " of " + std::to_string(c.steps.size());
}

// The first step whose own output fails (non-finite, or NMSE over the threshold), or -1.
int64_t first_failing_step(std::span<const float> got, std::span<const float> want, const std::vector<size_t>& ends,
                           double max_nmse) {
    size_t begin = 0;
    for (size_t i = 0; i < ends.size(); ++i) {
        const OpError e = compare_outputs(got.subspan(begin, ends[i] - begin), want.subspan(begin, ends[i] - begin));
        if (e.non_finite || !(e.nmse <= max_nmse)) return int64_t(i);
        begin = ends[i];
    }
    return -1;
}

OpResult compare_case(const Backend& candidate, const Backend& reference, const OpCase& c) {
    OpResult r;
    r.label = c.label;
    r.op = c.query.op;
    const OpThreshold t = op_threshold(c.query.op, c.query.weight_dtype, c.query.kv_type);
    r.threshold = t.max_nmse;
    if (c.query.op == ER_OP_ATTENTION)
        for (const OpStep& s : c.steps)
            if (s.n_tokens == 1 && std::find(r.kv_lengths.begin(), r.kv_lengths.end(), s.pos0 + 1) == r.kv_lengths.end())
                r.kv_lengths.push_back(s.pos0 + 1);
    std::vector<float> want;
    std::vector<size_t> ends;
    try {
        want = run_case(reference, c, &ends);
    } catch (const std::exception& e) {
        r.status = "error";
        r.message = std::string("the reference failed: ") + e.what();
        return r;
    }
    try {
        const std::vector<float> got = run_case(candidate, c);
        if (got.size() != want.size()) throw Error("output has " + std::to_string(got.size()) + " values, not " + std::to_string(want.size()));
        const OpError e = compare_outputs(got, want);
        r.nmse = e.nmse, r.max_abs = e.max_abs, r.non_finite = e.non_finite;
        const int64_t step = first_failing_step(got, want, ends, t.max_nmse);
        if (step >= 0) r.first_failing_step = describe_step(c, size_t(step));
        const std::string where = step >= 0 ? "; first failing step: " + r.first_failing_step : "";
        if (e.non_finite) {
            r.status = "FAIL";
            r.message = "non-finite values (inf or NaN) where the reference is finite" + where;
        } else if (!(e.nmse <= t.max_nmse)) {
            char text[160];
            std::snprintf(text, sizeof text, "NMSE %.3g > %.0e (max |diff| %.3g)", e.nmse, t.max_nmse, e.max_abs);
            r.status = "FAIL";
            r.message = text + where;
        } else if (c.judge_each_step && step >= 0) {
            char text[160];
            std::snprintf(text, sizeof text, "NMSE %.3g over the whole output, but a step alone is over %.0e", e.nmse, t.max_nmse);
            r.status = "FAIL";
            r.message = text + where;
        } else {
            r.status = "pass";
        }
    } catch (const std::exception& e) {
        r.status = "error";
        r.message = std::string("the candidate failed: ") + e.what();
    }
    return r;
}

}  // namespace

OpReport run_op_level(const BackendSpec& candidate_spec, const BackendSpec& reference_spec,
                      const std::vector<std::string>& only_ops, OpCases which) {
    const Backend candidate = candidate_spec.create();
    const Backend reference = reference_spec.create();
    OpReport report;
    // Descriptions without the head size, with the head sizes (or norm groups) seen.
    std::map<std::string, std::set<int32_t>> missing, not_referenced;
    auto note = [](std::map<std::string, std::set<int32_t>>& into, er_op_query q) {
        const int32_t dim = q.head_dim;
        q.head_dim = 0;
        into[describe_op_query(q)].insert(dim);
    };
    auto listed = [](const std::map<std::string, std::set<int32_t>>& from) {
        std::vector<std::string> out;
        for (const auto& [text, dims] : from) {
            std::string dims_text;
            for (int32_t d : dims)
                if (d > 0) dims_text += (dims_text.empty() ? "" : ", ") + std::to_string(d);
            out.push_back(dims_text.empty() ? text : text + (text.starts_with("RMS_NORM") ? ", groups of " : ", head_dim ") + dims_text);
        }
        return out;
    };
    for (int32_t op : kOps) {
        if (!only_ops.empty() && std::find(only_ops.begin(), only_ops.end(), op_name(op)) == only_ops.end()) continue;
        if (which == OpCases::Long && op != ER_OP_ATTENTION) continue;
        for (int32_t variant : op_variants(op)) {
            const std::vector<OpCase> cases =
                which == OpCases::Long ? make_long_attention_cases(variant) : make_cases(op, variant);
            for (const OpCase& c : cases) {
                if (!reference.supports(c.query)) {
                    note(not_referenced, c.query);
                } else if (!candidate.supports(c.query)) {
                    note(missing, c.query);
                } else {
                    report.results.push_back(compare_case(candidate, reference, c));
                }
            }
        }
    }
    report.missing = listed(missing);
    report.not_referenced = listed(not_referenced);
    return report;
}

}  // namespace edgerun::conformance
