// edgerun serve: an OpenAI-compatible HTTP server (/v1/chat/completions,
// /v1/completions, /v1/models, /health, /metrics) over N slots stepped together.
// serve/ holds the parts: the HTTP layer, the OpenAI request and response shapes, the
// scheduler with its slots, and the metrics.
#include "cli.hpp"
#include "commands.hpp"
#include "engine_options.hpp"
#include "serve/http_server.hpp"
#include "speculation_options.hpp"

#include <edgerun/batch_runner.hpp>
#include <edgerun/text/chat_template.hpp>

#include <cstdio>
#include <filesystem>

namespace edgerun::cli {

int cmd_serve(const std::vector<std::string>& args) {
    CommonOptions common;
    ModelOptions model_options;
    serve::ServerOptions server;
    serve::SchedulerOptions scheduling;
    std::string model_name, reasoning_format = "auto", tool_grammar = "lazy";
    ChatTemplateOptions template_options;
    SpeculationOptions speculation_options;
    int port = server.port;
    int64_t grace_ms = server.shutdown_grace.count();
    int64_t request_timeout_s = server.request_timeout.count();
    int64_t idle_timeout_s = server.idle_timeout.count();
    // Signed, so that -1 is refused rather than read as the largest size.
    int64_t max_body = int64_t(server.max_body_bytes);
    constexpr int64_t kMaxBodyLimit = int64_t(1) << 30;
    po::options_description desc("edgerun serve options");
    add_model_options(desc, model_options);
    desc.add_options()
        ("host", po::value(&server.host)->default_value(server.host), "address to listen on (loopback unless told otherwise)")
        ("port", po::value(&port)->default_value(port), "port (0: any free one; the one taken is printed)")
        ("parallel,np", po::value(&scheduling.n_slots)->default_value(scheduling.n_slots), "slots: requests run at once (each has -c positions of its own)")
        ("chunk", po::value(&scheduling.chunk)->default_value(scheduling.chunk), "most rows (decode rows and prompt tokens) of one step: a long prompt delays the other streams by about one such step (at most -b)")
        ("queue", po::value(&scheduling.queue_limit)->default_value(scheduling.queue_limit), "requests that may wait for a slot; more get 429")
        ("api-key", po::value(&server.api_key), "require 'Authorization: Bearer KEY' on /v1/")
        ("cors-origin", po::value(&server.cors_origins)->composing(),
         "a web page (scheme://host[:port]) besides this machine's that may call the server from a browser; repeatable; "
         "'*': any (requests from other pages get 403)")
        ("model-name", po::value(&model_name), "the model's id in the API (default: the file name without .gguf)")
        ("reasoning-format", po::value(&reasoning_format)->default_value(reasoning_format),
         "auto: a thinking template's <think> block goes to the message's reasoning_content (Qwen3, DeepSeek-R1); "
         "none: it stays in content")
        ("tool-grammar", po::value(&tool_grammar)->default_value(tool_grammar),
         "lazy: with tools and tool_choice auto, a <tool_call> the answer opens is held to the call format and the "
         "functions' parameter schemas; off: calls are written freely (and may not parse)")
        ("max-body", po::value(&max_body)->default_value(max_body), "largest request body in bytes (more: 413)")
        ("max-connections", po::value(&server.max_connections)->default_value(server.max_connections), "connections served at once (more: 503)")
        ("request-timeout", po::value(&request_timeout_s)->default_value(request_timeout_s), "seconds a request may take to arrive whole; a client that stalls mid-request is dropped")
        ("idle-timeout", po::value(&idle_timeout_s)->default_value(idle_timeout_s), "seconds a connection may wait without a request begun (first or next keep-alive one) before it is closed")
        ("shutdown-grace-ms", po::value(&grace_ms)->default_value(grace_ms), "on SIGTERM, how long running requests may finish")
        ("sampler-plugin", po::value(&scheduling.sampler_plugin)->default_value(scheduling.sampler_plugin), "sampler plugin name");
    template_options.add_to(desc);
    add_speculation_options(desc, speculation_options);
    if (!parse(with_long_draft_option(args), desc, common,
               "usage: edgerun serve [-m MODEL] [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX] [--api-key KEY]\n"
               "An OpenAI-compatible HTTP server over --parallel slots stepped together."))
        return 0;
    if (port < 0 || port > 65535) throw Error("--port must be 0 .. 65535", ER_E_INVALID_ARGUMENT);
    if (grace_ms < 0) throw Error("--shutdown-grace-ms must be >= 0", ER_E_INVALID_ARGUMENT);
    if (server.max_connections < 1) throw Error("--max-connections must be at least 1", ER_E_INVALID_ARGUMENT);
    server.port = uint16_t(port);
    server.shutdown_grace = std::chrono::milliseconds(grace_ms);
    if (request_timeout_s < 1) throw Error("--request-timeout must be at least 1 second", ER_E_INVALID_ARGUMENT);
    server.request_timeout = std::chrono::seconds(request_timeout_s);
    if (idle_timeout_s < 1) throw Error("--idle-timeout must be at least 1 second", ER_E_INVALID_ARGUMENT);
    server.idle_timeout = std::chrono::seconds(idle_timeout_s);
    if (max_body < 1 || max_body > kMaxBodyLimit)
        throw Error("--max-body must be 1 to " + std::to_string(kMaxBodyLimit) + " bytes", ER_E_INVALID_ARGUMENT);
    server.max_body_bytes = size_t(max_body);
    serve::HttpServer::check_host(server.host);
    for (const std::string& origin : server.cors_origins) {
        const size_t host = origin.find("://");
        const bool web = host != std::string::npos && host > 0 && origin.size() > host + 3 &&
                         origin.find('/', host + 3) == std::string::npos;
        if (origin != "*" && !web)
            throw Error("--cors-origin: '" + origin + "' is not an origin (scheme://host[:port], no path) or *",
                        ER_E_INVALID_ARGUMENT);
    }
    template_options.read();
    if (reasoning_format != "auto" && reasoning_format != "none")
        throw Error("--reasoning-format: '" + reasoning_format + "' is not auto or none", ER_E_INVALID_ARGUMENT);
    if (tool_grammar != "lazy" && tool_grammar != "off")
        throw Error("--tool-grammar: '" + tool_grammar + "' is not lazy or off", ER_E_INVALID_ARGUMENT);
    if (scheduling.n_slots < 1 || scheduling.n_slots > kMaxBatchSequences)
        throw Error("--parallel must be 1 to " + std::to_string(kMaxBatchSequences), ER_E_INVALID_ARGUMENT);

    EngineOptions engine_options = resolve(model_options);
    if (scheduling.chunk < 1) throw Error("--chunk must be at least 1", ER_E_INVALID_ARGUMENT);
    PluginRegistry registry = load_plugins(common);
    Engine engine(registry, model_options.model, engine_options);
    const text::Vocab vocab = text::Vocab::from_file(engine.model().file());
    text::Tokenizer tokenizer(vocab);
    const text::ChatTemplate chat_template = template_options.resolve(tokenizer);
    if (model_name.empty()) {
        model_name = std::filesystem::path(model_options.model).filename().string();
        if (model_name.size() > 5 && model_name.ends_with(".gguf")) model_name.resize(model_name.size() - 5);
    }

    Speculation speculation = make_speculation(registry, speculation_options, engine, vocab);
    const std::string draft_line = speculation.describe();
    // Each slot drafts in a context of its own: the one made to measure the draft goes.
    speculation.drafter.reset();
    speculation.draft_runner.reset();
    scheduling.new_drafter = [&speculation] { return speculation.new_drafter(); };
    scheduling.speculation = speculation.settings;

    serve::Metrics metrics(scheduling.n_slots);
    serve::Scheduler scheduler(engine, registry, tokenizer, scheduling, metrics);
    const bool split_reasoning = reasoning_format == "auto" && chat_template.thinks();
    serve::OpenAiApi api(tokenizer, chat_template, model_name, scheduler.n_ctx(), split_reasoning, tool_grammar == "lazy");
    std::fprintf(stderr, "serve: %s on %s, %d slots of %d tokens each (%s), template %s%s\n", model_name.c_str(),
                 std::string(engine.backend().plugin().name()).c_str(), scheduling.n_slots, scheduler.n_ctx(),
                 scheduler.batched() ? "stepped together" : "stepped one after the other", chat_template.name().c_str(),
                 split_reasoning ? " (its <think> block in reasoning_content)" : "");
    if (!draft_line.empty()) std::fprintf(stderr, "serve: %s, for each slot\n", draft_line.c_str());
    serve::HttpServer http(server, api, scheduler, metrics);
    http.run();
    std::fprintf(stderr, "serve: stopped\n");
    return 0;
}

}  // namespace edgerun::cli
