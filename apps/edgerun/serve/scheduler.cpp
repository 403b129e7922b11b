#include "scheduler.hpp"

#include <edgerun/constrained_sampling.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgerun::serve {

namespace {

using Clock = std::chrono::steady_clock;

// log softmax(logits)[token], and the `n_top` largest with their tokens.
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int32_t n_top) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(double(l) - max);
    const double log_sum = double(max) + std::log(sum);
    TokenLogprob out;
    out.token = token;
    out.logprob = float(logits[size_t(token)] - log_sum);
    std::vector<std::pair<int32_t, float>>& top = out.top;  // kept sorted, largest first
    for (size_t i = 0; i < logits.size() && n_top > 0; ++i) {
        if (top.size() == size_t(n_top) && logits[i] <= top.back().second) continue;
        const auto at = std::find_if(top.begin(), top.end(), [&](const auto& t) { return logits[i] > t.second; });
        top.insert(at, {int32_t(i), logits[i]});
        if (top.size() > size_t(n_top)) top.pop_back();
    }
    for (auto& [id, value] : top) value = float(value - log_sum);
    return out;
}

// A sampling failure's status: the request's own grammar that cannot go on, or costs too
// much to follow, is the client's (400); anything else is the server's (500).
int sampling_status(const std::exception& e) {
    const auto* error = dynamic_cast<const Error*>(&e);
    return error && error->code() == ER_E_INVALID_ARGUMENT ? 400 : 500;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

}  // namespace

Scheduler::Scheduler(const Engine& engine, const PluginRegistry& registry, const text::Tokenizer& tokenizer,
                     const SchedulerOptions& options, Metrics& metrics)
    : tokenizer_(tokenizer), options_(options), metrics_(metrics) {
    if (options.n_slots < 1) throw Error("--parallel must be at least 1", ER_E_INVALID_ARGUMENT);
    if (options.queue_limit < 0) throw Error("--queue must be >= 0", ER_E_INVALID_ARGUMENT);
    sampler_plugin_ = registry.find(ER_PLUGIN_SAMPLER, options.sampler_plugin);
    if (!sampler_plugin_)
        throw Error("no sampler plugin named '" + options.sampler_plugin + "'", ER_E_INVALID_ARGUMENT);
    options_.chunk = std::max(1, std::min(options.chunk, engine.options().n_batch));
    runner_ = engine.new_batch_runner(options.n_slots);
    slots_.resize(size_t(options.n_slots));
    for (int32_t s = 0; s < options.n_slots; ++s) {
        slots_[size_t(s)].seq = s;
        if (options.new_drafter) slots_[size_t(s)].drafter = options.new_drafter();
    }
    thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() { stop(std::chrono::milliseconds(0)); }

std::shared_ptr<Job> Scheduler::submit(JobSpec spec, Refusal& refusal) {
    Sampler sampler(*sampler_plugin_, spec.sampler, int32_t(runner_->n_vocab()));  // throws on refused parameters
    std::lock_guard lock(mutex_);
    refusal = Refusal::None;
    if (stopping_) {
        refusal = Refusal::Stopping;
        return nullptr;
    }
    // A request that finds a free slot does not count against the queue.
    const size_t free_slots = slots_.size() - std::min(size_t(busy_.load()), slots_.size());
    if (waiting_.size() >= free_slots + size_t(options_.queue_limit)) {
        refusal = Refusal::QueueFull;
        return nullptr;
    }
    auto job = std::make_shared<Job>(std::move(spec), std::move(sampler));
    waiting_.push_back(job);
    metrics_.set_queue_depth(int64_t(waiting_.size()));
    wake_.notify_one();
    return job;
}

void Scheduler::stop(std::chrono::milliseconds grace) {
    {
        std::unique_lock lock(mutex_);
        stopping_ = true;
        wake_.notify_all();
        if (!finished_cv_.wait_for(lock, grace, [&] { return finished_; })) abort_ = true;
        wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
}

void Scheduler::run() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            if (abort_) break;
            assign_waiting();
            const bool active = std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.job != nullptr; });
            if (!active) {
                if (stopping_ && waiting_.empty()) break;
                wake_.wait(lock, [&] { return abort_ || stopping_ || !waiting_.empty(); });
                continue;
            }
        }
        step();
    }
    std::lock_guard lock(mutex_);
    for (Slot& slot : slots_)
        if (slot.job) fail(slot, "the server is shutting down", 503);
    for (auto& job : waiting_) job->push(JobEvent{JobEvent::Kind::Error, "the server is shutting down", "", {}, 503, {}});
    waiting_.clear();
    finished_ = true;
    finished_cv_.notify_all();
}

void Scheduler::assign_waiting() {
    while (!waiting_.empty()) {
        std::shared_ptr<Job> job = waiting_.front();
        if (job->cancelled()) {
            waiting_.pop_front();
            metrics_.cancelled();
            continue;
        }
        // The free slot that already holds the longest prefix of this prompt.
        Slot* best = nullptr;
        size_t best_common = 0;
        for (Slot& slot : slots_) {
            if (slot.job) continue;
            const size_t common = common_prefix(slot.cached, job->spec().prompt);
            if (!best || common > best_common) best = &slot, best_common = common;
        }
        if (!best) break;
        waiting_.pop_front();
        start(*best, std::move(job));
    }
    metrics_.set_queue_depth(int64_t(waiting_.size()));
    count_busy();
}

void Scheduler::count_busy() {
    busy_ = int32_t(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.job != nullptr; }));
    metrics_.set_busy_slots(busy_);
}

void Scheduler::start(Slot& slot, std::shared_ptr<Job> job) {
    const std::vector<int32_t>& prompt = job->spec().prompt;
    // At least the last prompt token is fed again: its logits give the first token. A
    // prompt scored token by token is fed whole: the cache keeps no logits.
    const bool scoring = job->spec().prompt_logprobs;
    const size_t common = scoring ? 0 : std::min(common_prefix(slot.cached, prompt), prompt.size() - 1);
    runner_->rewind(slot.seq, int32_t(common));
    slot.cached.resize(common);
    slot.job = std::move(job);
    slot.prompt_fed = common;
    slot.next_token = -1;
    slot.generated = 0;
    slot.usage = Usage{int32_t(prompt.size()), 0, int32_t(common), {}};
    slot.started = Clock::now();
    slot.sampler.emplace(slot.job->sampler());
    try {
        for (int32_t token : prompt) slot.sampler->accept(token);
    } catch (const std::exception& e) {
        fail(slot, std::string("sampling failed: ") + e.what(), sampling_status(e));
        return;
    }
    slot.decoder.emplace(tokenizer_);
    slot.matcher.emplace(slot.job->spec().stop);
    // A sampling request drafts only with a sampler that can say what it draws from.
    slot.draft.clear();
    slot.draft_length.reset();
    const SpeculationSettings& s = options_.speculation;
    const int32_t max_draft = std::min(s.max_draft, slot.job->spec().draft_max.value_or(s.max_draft));
    if (slot.drafter && max_draft > 0 && (slot.sampler->is_greedy() || slot.sampler->has_speculative_entries())) {
        slot.usage.timings.drafting = true;
        slot.draft_length.emplace(max_draft, s.adaptive, slot.drafter->relative_cost(), s.verify_row_cost);
    }
    slot.constraint.reset();
    if (slot.job->spec().grammar) {
        if (!trie_) trie_ = text::TokenConstraint::build_trie(tokenizer_);
        if (slot.job->spec().grammar_trigger.text.empty())
            slot.constraint.emplace(slot.job->spec().grammar, tokenizer_, trie_);
        else
            slot.constraint.emplace(slot.job->spec().grammar, tokenizer_, trie_, slot.job->spec().grammar_trigger);
    }
    if (scoring)  // the first token has nothing before it to be predicted from
        slot.job->push(JobEvent{JobEvent::Kind::Text, "", "", {}, 0,
                                {TokenLogprob{prompt[0], std::numeric_limits<float>::quiet_NaN(), {}}}});
    metrics_.prompt_tokens(int64_t(prompt.size() - common), int64_t(common));
}

bool Scheduler::step() {
    feeds_.clear();
    fed_slots_.clear();
    for (Slot& slot : slots_)
        if (slot.job && slot.job->cancelled()) {
            metrics_.cancelled();
            slot.job.reset();
            slot.next_token = -1;
        }
    int64_t budget = options_.chunk;
    // Every decoding slot has its row, and waiting prompts their chunks; drafts share what
    // the step has room for besides, so that drafting never delays a first token.
    int64_t spare = budget;
    for (const Slot& slot : slots_)
        if (slot.decoding())
            spare -= 1;
        else if (slot.job)
            spare -= int64_t(slot.job->spec().prompt.size() - slot.prompt_fed);
    for (Slot& slot : slots_) {
        if (!slot.decoding()) continue;
        propose(slot, spare);
        if (!slot.decoding()) continue;  // the drafter failed
        spare -= int64_t(slot.draft.tokens.size());
        slot.step_tokens.assign(1, slot.next_token);
        slot.step_tokens.insert(slot.step_tokens.end(), slot.draft.tokens.begin(), slot.draft.tokens.end());
        float* rows = nullptr;
        if (!slot.draft.tokens.empty()) {
            slot.rows.resize(slot.step_tokens.size() * size_t(runner_->n_vocab()));
            rows = slot.rows.data();
        }
        feeds_.push_back(SequenceFeed{slot.seq, slot.step_tokens, rows});
        fed_slots_.push_back(&slot);
        budget -= int64_t(slot.step_tokens.size());
    }
    // Prompts in the order their requests came, in chunks that fill the step.
    std::vector<Slot*> prefilling;
    for (Slot& slot : slots_)
        if (slot.job && !slot.decoding()) prefilling.push_back(&slot);
    std::sort(prefilling.begin(), prefilling.end(),
              [](const Slot* a, const Slot* b) { return a->job->created() < b->job->created(); });
    for (Slot* slot : prefilling) {
        if (budget <= 0) break;
        const std::vector<int32_t>& prompt = slot->job->spec().prompt;
        const size_t n = std::min(prompt.size() - slot->prompt_fed, size_t(budget));
        float* all_logits = nullptr;
        if (slot->job->spec().prompt_logprobs) {
            slot->prompt_logits.resize(n * size_t(runner_->n_vocab()));
            all_logits = slot->prompt_logits.data();
        }
        feeds_.push_back(SequenceFeed{slot->seq, std::span<const int32_t>(prompt.data() + slot->prompt_fed, n), all_logits});
        fed_slots_.push_back(slot);
        budget -= int64_t(n);
    }
    if (feeds_.empty()) return false;

    try {
        runner_->feed(feeds_);
    } catch (const std::exception& e) {
        for (Slot* slot : fed_slots_) {
            fail(*slot, std::string("the model failed: ") + e.what(), 500);
            runner_->rewind(slot->seq, 0);
            slot->cached.clear();
        }
        return true;
    }

    const auto now = Clock::now();
    int64_t generated = 0;
    for (size_t i = 0; i < fed_slots_.size(); ++i) {
        Slot& slot = *fed_slots_[i];
        if (slot.decoding() && !slot.draft.tokens.empty()) {
            after_draft(slot, now, generated);
            continue;
        }
        slot.cached.insert(slot.cached.end(), feeds_[i].tokens.begin(), feeds_[i].tokens.end());
        if (!slot.decoding()) {
            if (feeds_[i].all_logits) score_prompt(slot, feeds_[i].tokens.size());
            slot.prompt_fed += feeds_[i].tokens.size();
            if (slot.prompt_fed < slot.job->spec().prompt.size()) continue;
        }
        after_row(slot, now, generated);
    }
    metrics_.generated(generated, now);
    count_busy();
    return true;
}

void Scheduler::score_prompt(Slot& slot, size_t n_rows) {
    const JobSpec& spec = slot.job->spec();
    const size_t n_vocab = size_t(runner_->n_vocab());
    std::vector<TokenLogprob> scored;
    for (size_t r = 0; r < n_rows; ++r) {
        const size_t next = slot.prompt_fed + r + 1;  // the prompt token row r predicts
        if (next < spec.prompt.size())
            scored.push_back(token_logprob({slot.prompt_logits.data() + r * n_vocab, n_vocab}, spec.prompt[next],
                                           spec.top_logprobs));
    }
    if (!scored.empty()) slot.job->push(JobEvent{JobEvent::Kind::Text, "", "", {}, 0, std::move(scored)});
    if (slot.prompt_fed + n_rows == spec.prompt.size()) slot.prompt_logits = {};  // a chunk of a vocabulary's rows
}

void Scheduler::propose(Slot& slot, int64_t spare) {
    slot.draft.clear();
    if (!slot.draft_length) return;
    // The draft's tokens must fit the step's spare rows, the context and the token budget
    // (after the next token). No room: no step of the draft length's either, so that a
    // pause lasts as many steps that could have drafted.
    int64_t room = std::min<int64_t>(spare, int64_t(runner_->n_ctx()) - runner_->position(slot.seq) - 1);
    if (const int32_t max_tokens = slot.job->spec().max_tokens; max_tokens >= 0)
        room = std::min<int64_t>(room, max_tokens - slot.generated - 1);
    if (room <= 0) return;
    const int64_t n = std::min<int64_t>(slot.draft_length->next(), room);
    if (n <= 0) return;
    slot.context.assign(slot.cached.begin(), slot.cached.end());
    slot.context.push_back(slot.next_token);
    try {
        RequestSampler target(*slot.sampler, slot.job->spec().logit_bias, slot.constraint ? &*slot.constraint : nullptr,
                              scratch_);
        slot.drafter->propose(slot.context, int32_t(n), target, slot.draft);
        if (slot.constraint) cut_at_refusal(slot.draft, *slot.constraint);
    } catch (const std::exception& e) {
        fail(slot, std::string("drafting failed: ") + e.what(), sampling_status(e));
    }
}

void Scheduler::after_row(Slot& slot, Clock::time_point now, int64_t& generated) {
    if (slot.job->spec().max_tokens == 0) {  // the prompt only (scored, echoed)
        finish(slot, "length");
        return;
    }
    int32_t token = -1;
    const std::span<const float> logits = runner_->logits(slot.seq);
    try {
        token = sample_token(*slot.sampler, logits, slot.job->spec().logit_bias,
                             slot.constraint ? &*slot.constraint : nullptr, scratch_);
    } catch (const std::exception& e) {
        fail(slot, std::string("sampling failed: ") + e.what(), sampling_status(e));
        return;
    }
    take(slot, token, logits, now, generated);
}

void Scheduler::after_draft(Slot& slot, Clock::time_point now, int64_t& generated) {
    const auto k = int32_t(slot.draft.tokens.size());
    const size_t n_vocab = size_t(runner_->n_vocab());
    Verdict verdict;
    try {
        RequestSampler target(*slot.sampler, slot.job->spec().logit_bias, slot.constraint ? &*slot.constraint : nullptr,
                              scratch_);
        verdict = verify(slot.draft, slot.rows, int32_t(n_vocab), target);
    } catch (const std::exception& e) {
        fail(slot, std::string("sampling failed: ") + e.what(), sampling_status(e));
        return;
    }
    slot.draft_length->record(k, verdict.accepted);
    metrics_.drafted(k, verdict.accepted);
    slot.usage.timings.draft_tokens += k;
    slot.usage.timings.draft_accepted += verdict.accepted;
    // The cache keeps the next token and the accepted draft; the verdict's token is next.
    const int32_t kept = 1 + verdict.accepted;
    runner_->rewind(slot.seq, runner_->position(slot.seq) - (k + 1) + kept);
    slot.cached.insert(slot.cached.end(), slot.step_tokens.begin(), slot.step_tokens.begin() + kept);
    for (int32_t i = 0; i <= verdict.accepted; ++i) {
        const int32_t token = i < verdict.accepted ? slot.draft.tokens[size_t(i)] : verdict.next;
        if (!take(slot, token, {slot.rows.data() + size_t(i) * n_vocab, n_vocab}, now, generated)) return;
    }
}

bool Scheduler::take(Slot& slot, int32_t token, std::span<const float> logits, Clock::time_point now,
                     int64_t& generated) {
    try {
        if (slot.constraint) slot.constraint->accept(token);  // an end-of-generation token reads as nothing
    } catch (const std::exception& e) {
        fail(slot, std::string("sampling failed: ") + e.what(), sampling_status(e));
        return false;
    }
    if (tokenizer_.is_eog(token)) {
        finish(slot, "stop");
        return false;
    }
    std::vector<TokenLogprob> logprob;
    if (const int32_t n_top = slot.job->spec().top_logprobs; n_top >= 0) logprob.push_back(token_logprob(logits, token, n_top));
    slot.sampler->accept(token);
    ++generated;
    if (++slot.generated == 1) {
        metrics_.time_to_first_token(std::chrono::duration<double>(now - slot.job->created()).count());
        slot.first_token = now;
        slot.usage.timings.prompt_ms = std::chrono::duration<double, std::milli>(now - slot.started).count();
    }
    slot.usage.completion_tokens = slot.generated;
    if (std::string text = slot.matcher->push(slot.decoder->push(token)); !text.empty() || !logprob.empty())
        slot.job->push(JobEvent{JobEvent::Kind::Text, std::move(text), "", {}, 0, std::move(logprob)});
    const int32_t max_tokens = slot.job->spec().max_tokens;
    if (slot.matcher->stopped() || (slot.constraint && slot.constraint->must_end())) {
        finish(slot, "stop");
        return false;
    }
    if ((max_tokens >= 0 && slot.generated >= max_tokens) || runner_->position(slot.seq) >= runner_->n_ctx()) {
        finish(slot, "length");
        return false;
    }
    slot.next_token = token;
    return true;
}

void Scheduler::finish(Slot& slot, const std::string& finish_reason) {
    Timings& timings = slot.usage.timings;
    const auto now = Clock::now();
    if (slot.generated == 0)
        timings.prompt_ms = std::chrono::duration<double, std::milli>(now - slot.started).count();
    else
        timings.predicted_ms = std::chrono::duration<double, std::milli>(now - slot.first_token).count();
    std::string rest = slot.matcher->push(slot.decoder->flush());
    rest += slot.matcher->flush();
    if (!rest.empty()) slot.job->push(JobEvent{JobEvent::Kind::Text, std::move(rest), "", {}, 0, {}});
    slot.job->push(JobEvent{JobEvent::Kind::Done, "", finish_reason, slot.usage, 0, {}});
    slot.job.reset();
    slot.next_token = -1;
}

void Scheduler::fail(Slot& slot, const std::string& message, int status) {
    slot.job->push(JobEvent{JobEvent::Kind::Error, message, "", {}, status, {}});
    slot.job.reset();
    slot.next_token = -1;
}

}  // namespace edgerun::serve
