// One client connection of `edgerun serve`, on its own thread, request after request:
// reading a request within its limits, routing it (CORS, the API key, the endpoints),
// answering whole or streamed; and the connections refused past --max-connections.
#include "http_server.hpp"

#include "answer_parts.hpp"
#include "request_fields.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <utility>

namespace edgerun::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kPollSlice = std::chrono::milliseconds(50);
constexpr size_t kHeaderLimit = 64 * 1024;
// A lingering close (after an answer sent before the request was read whole): how long,
// and how many bytes, the client's rest is read and dropped so that it reads the answer
// rather than a reset connection.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr int32_t kMaxLingering = 64;  // refused connections drained at once; past that, closed at once

struct Header {
    http::field field;
    boost::beast::string_view value;
};

http::response<http::string_body> make_response(http::status status, std::string body, boost::beast::string_view content_type,
                                                unsigned version, bool keep_alive,
                                                std::initializer_list<Header> headers = {}) {
    http::response<http::string_body> response{status, version};
    response.set(http::field::server, "edgerun");
    response.set(http::field::content_type, content_type);
    for (const Header& h : headers) response.set(h.field, h.value);
    response.keep_alive(keep_alive);
    response.body() = std::move(body);
    response.prepare_payload();
    return response;
}

bool peer_gone(int fd) {
    pollfd p{fd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

}  // namespace

// One client connection, served on its own thread, request after request.
class HttpServer::Connection {
public:
    Connection(HttpServer& server, tcp::socket socket) : server_(server), socket_(std::move(socket)) {}

    void serve() {
        while (buffer_.size() > 0 || wait_for_request()) {
            http::request_parser<http::string_body> parser;
            parser.body_limit(server_.options_.max_body_bytes);
            parser.header_limit(kHeaderLimit);
            boost::beast::error_code ec;
            read_request(parser, ec);
            if (ec) {
                answer_unreadable(ec);
                break;
            }
            const http::request<http::string_body>& request = parser.get();
            version_ = request.version();
            // Shutting down: this answer is the connection's last.
            keep_alive_ = request.keep_alive() && !server_.stopping_;
            if (!handle(request) || !keep_alive_) break;
        }
        boost::beast::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
    }

private:
    // Waits until a request starts to arrive: false when none begins within idle_timeout
    // (an idle client must not hold a connection thread), the server is closing, or the
    // client closes the connection. Between keep-alive requests too.
    bool wait_for_request() {
        const auto deadline = Clock::now() + server_.options_.idle_timeout;
        while (!server_.closing_ && Clock::now() < deadline) {
            pollfd p{socket_.native_handle(), POLLIN, 0};
            if (::poll(&p, 1, int(kPollSlice.count())) > 0) return true;
        }
        return false;
    }

    // Reads one request, giving up when the client stops sending before it is whole
    // (request_timeout from its start): a stalled sender must not hold its thread. The
    // socket is non-blocking meanwhile, so a read with nothing to take returns at once.
    void read_request(http::request_parser<http::string_body>& parser, boost::beast::error_code& ec) {
        const auto deadline = Clock::now() + server_.options_.request_timeout;
        bool header_seen = false;
        socket_.non_blocking(true, ec);
        while (!ec && !parser.is_done()) {
            http::read_some(socket_, buffer_, parser, ec);
            if (!ec) {  // parsed some: on with what the buffer holds
                if (!header_seen && parser.is_header_done()) {
                    header_seen = true;
                    continue_if_expected(parser);
                }
                continue;
            }
            if (ec != net::error::would_block && ec != net::error::try_again) break;
            ec = {};
            if (server_.closing_ || Clock::now() >= deadline) {
                ec = net::error::timed_out;
                break;
            }
            pollfd p{socket_.native_handle(), POLLIN, 0};
            ::poll(&p, 1, int(kPollSlice.count()));
        }
        boost::beast::error_code ignored;
        socket_.non_blocking(false, ignored);
    }

    // "Expect: 100-continue": the client waits for this before sending its body. Only
    // once the header passed the size check (a body over the limit got its 413 instead).
    void continue_if_expected(const http::request_parser<http::string_body>& parser) {
        const auto& request = parser.get();
        const auto expect = request.find(http::field::expect);
        if (request.version() < 11 || expect == request.end() || parser.is_done() ||
            !boost::beast::iequals(expect->value(), "100-continue"))
            return;
        boost::beast::error_code ec;
        socket_.non_blocking(false, ec);
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        net::write(socket_, net::buffer(kContinue), ec);
        socket_.non_blocking(true, ec);
    }

    // A request that could not be read: too big or malformed gets its answer (then a
    // lingering close); a client that went away or stalled gets nothing.
    void answer_unreadable(const boost::beast::error_code& ec) {
        std::optional<ApiError> error;
        const auto limit = [](size_t bytes) { return "this server's limit of " + std::to_string(bytes) + " bytes"; };
        if (ec == http::error::body_limit)
            error.emplace(413, "the body is larger than " + limit(server_.options_.max_body_bytes), "", "body_too_large");
        else if (ec == http::error::header_limit)
            error.emplace(431, "the request's header is larger than " + limit(kHeaderLimit), "", "header_too_large");
        else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message)
            error.emplace(400, "malformed HTTP request: " + ec.message(), "", "bad_request");
        if (!error) return;
        version_ = 11;
        keep_alive_ = false;
        send_error(*error);
        drain();
    }

    // After an answer to a request that was not read whole: let the client finish
    // sending (bounded in time and size), so that it reads the answer instead of a reset.
    void drain() {
        boost::beast::error_code ec;
        socket_.shutdown(tcp::socket::shutdown_send, ec);
        const auto deadline = Clock::now() + kLingerTime;
        size_t left = server_.options_.max_body_bytes + kHeaderLimit;
        char sink[64 * 1024];
        while (Clock::now() < deadline) {
            pollfd p{socket_.native_handle(), POLLIN, 0};
            if (::poll(&p, 1, int(kPollSlice.count())) <= 0) continue;
            const size_t n = socket_.read_some(net::buffer(sink), ec);
            if (n == 0 || ec || n >= left) break;
            left -= n;
        }
    }

    // Every answer but a stream's goes out here, and is counted by its status.
    bool send(http::status status, std::string body, boost::beast::string_view content_type,
              std::initializer_list<Header> headers = {}) {
        server_.metrics_.request_done(int(status));
        boost::beast::error_code ec;
        auto response = make_response(status, std::move(body), content_type, version_, keep_alive_, headers);
        allow_origin(response);
        http::write(socket_, response, ec);
        return !ec;
    }

    // A browser's request from an allowed page: the answer says the page may read it.
    template <typename Response>
    void allow_origin(Response& response) const {
        if (origin_.empty()) return;
        response.set(http::field::access_control_allow_origin, origin_);
        response.set(http::field::vary, "Origin");
    }

    // The Origin of a browser's request: false (and a 403 sent) for a page that may not
    // call the server; a CORS preflight (OPTIONS) answered. `answered`: nothing more to do.
    bool check_origin(const http::request<http::string_body>& request, bool& answered) {
        origin_.clear();
        answered = false;
        const auto origin = request.find(http::field::origin);
        if (origin == request.end()) return true;
        const std::string_view value(origin->value().data(), origin->value().size());
        if (!origin_allowed(value, server_.options_.cors_origins)) {
            answered = true;
            return send_error(ApiError(403, "requests from the web page at '" + std::string(value) +
                                                "' are not allowed (edgerun serve --cors-origin ORIGIN allows them)",
                                       "", "origin_not_allowed"));
        }
        origin_ = value;
        if (request.method() != http::verb::options) return true;
        answered = true;
        const auto asked = request.find(http::field::access_control_request_headers);
        const std::string headers = asked == request.end() ? "Authorization, Content-Type" : std::string(asked->value());
        return send(http::status::no_content, "", "text/plain",
                    {{http::field::access_control_allow_methods, "GET, POST, OPTIONS"},
                     {http::field::access_control_allow_headers, headers},
                     {http::field::access_control_max_age, "600"}});
    }

    bool send_json(int status, const json& body, std::initializer_list<Header> headers = {}) {
        return send(http::status(status), OpenAiApi::dump(body), "application/json", headers);
    }
    bool send_error(const ApiError& e) {
        if (e.status == 429) return send_json(e.status, e.body(), {{http::field::retry_after, "1"}});
        return send_json(e.status, e.body());
    }
    bool refuse_method(const char* allowed) {
        return send_json(405, ApiError(405, std::string("use ") + allowed, "", "method_not_allowed").body(),
                         {{http::field::allow, allowed}});
    }

    bool handle(const http::request<http::string_body>& request) {
        bool answered = false;
        if (const bool ok = check_origin(request, answered); answered) return ok;
        std::string_view target(request.target().data(), request.target().size());
        target = target.substr(0, target.find('?'));
        const bool get = request.method() == http::verb::get, post = request.method() == http::verb::post;
        if (target == "/health") {
            if (!get) return refuse_method("GET");
            return server_.stopping_ ? send_json(503, json{{"status", "shutting down"}}) : send_json(200, json{{"status", "ok"}});
        }
        if (target == "/metrics") {
            if (!get) return refuse_method("GET");
            return send(http::status::ok, server_.metrics_.prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
        }
        using Utility = json (OpenAiApi::*)(std::string_view) const;
        static constexpr std::pair<std::string_view, Utility> kUtilities[] = {
            {"/apply-template", &OpenAiApi::apply_template},
            {"/tokenize", &OpenAiApi::tokenize},
            {"/detokenize", &OpenAiApi::detokenize}};
        const auto utility = std::find_if(std::begin(kUtilities), std::end(kUtilities),
                                          [&](const auto& u) { return u.first == target; });
        if (target.rfind("/v1/", 0) != 0 && utility == std::end(kUtilities))
            return send_error(ApiError(404, "no such endpoint: " + std::string(target), "", "not_found"));
        if (!server_.options_.api_key.empty()) {
            const auto header = request.find(http::field::authorization);
            std::optional<std::string_view> token;
            if (header != request.end()) token = bearer_token(std::string_view(header->value().data(), header->value().size()));
            if (!token || !same_key(*token, server_.options_.api_key))
                return send_error(ApiError(401, header == request.end() ? "no API key given (Authorization: Bearer KEY)"
                                                                        : "the API key is not valid",
                                           "", "invalid_api_key", "authentication_error"));
        }
        if (target == "/v1/models") {
            if (!get) return refuse_method("GET");
            return send_json(200, server_.api_.models());
        }
        if (constexpr std::string_view kModel = "/v1/models/"; target.rfind(kModel, 0) == 0) {
            if (!get) return refuse_method("GET");
            try {
                return send_json(200, server_.api_.model(percent_decoded(target.substr(kModel.size()))));
            } catch (const ApiError& e) {
                return send_error(e);
            }
        }
        Endpoint endpoint;
        if (utility != std::end(kUtilities)) {
            if (!post) return refuse_method("POST");
            try {
                return send_json(200, (server_.api_.*(utility->second))(request.body()));
            } catch (const ApiError& e) {
                return send_error(e);
            } catch (const std::exception& e) {  // the chat template refused the conversation
                return send_error(ApiError(400, e.what(), "", "invalid_value"));
            }
        }
        if (target == "/v1/chat/completions")
            endpoint = Endpoint::Chat;
        else if (target == "/v1/completions")
            endpoint = Endpoint::Completion;
        else
            return send_error(ApiError(404, "no such endpoint: " + std::string(target), "", "not_found"));
        if (!post) return refuse_method("POST");
        return complete(endpoint, request.body());
    }

    bool complete(Endpoint endpoint, const std::string& body) {
        ParsedRequest parsed;
        try {
            parsed = server_.api_.parse(endpoint, body);
        } catch (const ApiError& e) {
            return send_error(e);
        } catch (const std::exception& e) {  // the tokenizer or the chat template refused it
            return send_error(ApiError(400, e.what(), endpoint == Endpoint::Chat ? "messages" : "prompt", "invalid_value"));
        }
        Scheduler::Refusal refusal;
        std::shared_ptr<Job> job;
        try {
            job = server_.scheduler_.submit(std::move(parsed.spec), refusal);
        } catch (const std::exception& e) {  // the sampler plugin refused the parameters: before any header
            return send_error(OpenAiApi::sampling_refused(e.what()));
        }
        if (!job) {
            return send_error(refusal == Scheduler::Refusal::QueueFull
                                  ? ApiError(429, "too many requests: every slot is busy and the queue is full", "",
                                             "rate_limit_exceeded", "rate_limit_error")
                                  : ApiError(503, "the server is shutting down", "", "shutting_down", "server_error"));
        }
        const std::string id = OpenAiApi::new_id(endpoint);
        AnswerParts parts(parsed.split_reasoning, parsed.reasoning_open, parsed.tool_calls);
        return parsed.stream ? stream(endpoint, *job, id, parsed.include_usage, parts, parsed.echo)
                             : whole(endpoint, *job, id, parts, parsed.echo);
    }

    // Waits for the job's next events; false (and the job cancelled) when the client
    // went away meanwhile.
    bool next_events(Job& job, std::vector<JobEvent>& events) {
        events.clear();
        while (true) {
            const bool arrived = job.wait(events, kPollSlice);
            // Checked whether events came or not: a job that keeps sending text never
            // lets the wait time out.
            if (peer_gone(socket_.native_handle())) {
                job.cancel();
                return false;
            }
            if (arrived) return true;
        }
    }

    // A job's error event as the API says it: the request's fault below 500.
    static ApiError job_error(const JobEvent& e) {
        return ApiError(e.status, e.text, "", "", e.status < 500 ? "invalid_request_error" : "server_error");
    }

    // A chat's answer that ends in tool calls ends for them, unless it was cut short.
    static std::string finish_reason(const JobEvent& done, const std::vector<ParsedToolCall>& calls) {
        return calls.empty() || done.finish_reason != "stop" ? done.finish_reason : "tool_calls";
    }

    // echo: the text that goes before the answer's (completions' echo of the prompt).
    bool whole(Endpoint endpoint, Job& job, const std::string& id, AnswerParts& parts, const std::string& echo) {
        std::string text = echo, thoughts;
        std::vector<TokenLogprob> logprobs;
        const auto take = [&](const AnswerParts::Text& t) {
            thoughts += t.reasoning;
            text += t.content;
        };
        std::vector<JobEvent> events;
        while (next_events(job, events)) {
            for (JobEvent& e : events) {
                if (e.kind == JobEvent::Kind::Text) {
                    take(parts.feed(e.text));
                    logprobs.insert(logprobs.end(), e.logprobs.begin(), e.logprobs.end());
                } else if (e.kind == JobEvent::Kind::Done) {
                    std::vector<ParsedToolCall> calls;
                    take(parts.finish(calls));
                    json response =
                        server_.api_.response(endpoint, id, text, thoughts, calls, finish_reason(e, calls), e.usage);
                    int64_t text_offset = 0;
                    if (job.spec().top_logprobs >= 0)
                        response["choices"][0]["logprobs"] = server_.api_.logprobs(endpoint, logprobs, text_offset);
                    return send_json(200, response);
                } else
                    return send_error(job_error(e));
            }
        }
        server_.metrics_.request_done(499);  // the client closed the connection (nginx's code)
        return false;
    }

    // A piece of a stream's body: a chunk, or (HTTP/1.0, which has no chunks) the bytes.
    bool write_body(const std::string& data, Job& job) {
        boost::beast::error_code ec;
        const net::const_buffer bytes(data.data(), data.size());
        if (chunked_)
            net::write(socket_, http::make_chunk(bytes), ec);
        else
            net::write(socket_, bytes, ec);
        if (ec) job.cancel();
        return !ec;
    }

    static std::string event(const json& data) { return "data: " + OpenAiApi::dump(data) + "\n\n"; }

    bool stream(Endpoint endpoint, Job& job, const std::string& id, bool include_usage, AnswerParts& parts,
                std::string echo) {
        // HTTP/1.0 forbids chunked encoding: its stream's body ends when the connection closes.
        chunked_ = version_ >= 11;
        if (!chunked_) keep_alive_ = false;
        http::response<http::empty_body> response{http::status::ok, version_};
        response.set(http::field::server, "edgerun");
        response.set(http::field::content_type, "text/event-stream");
        response.set(http::field::cache_control, "no-cache");
        response.keep_alive(keep_alive_);
        response.chunked(chunked_);
        allow_origin(response);
        http::response_serializer<http::empty_body> serializer{response};
        boost::beast::error_code ec;
        http::write_header(socket_, serializer, ec);
        if (ec) {
            job.cancel();
            return false;
        }
        if (endpoint == Endpoint::Chat && !write_body(event(server_.api_.chunk(endpoint, id, nullptr, nullptr, true, include_usage)), job))
            return false;
        // Logprobs go with the next chunk out: text the stop strings or the splitters hold
        // back has its tokens' logprobs wait with it.
        std::vector<TokenLogprob> logprobs;
        int64_t text_offset = 0;
        const auto with_logprobs = [&](json chunk) {
            if (job.spec().top_logprobs >= 0 && !logprobs.empty()) {
                chunk["choices"][0]["logprobs"] = server_.api_.logprobs(endpoint, logprobs, text_offset);
                logprobs.clear();
            }
            return chunk;
        };
        std::vector<JobEvent> events;
        while (next_events(job, events)) {
            std::string out;  // everything that arrived together goes in one write
            // The echoed prompt goes out with the first text, or alone at the end.
            const auto send = [&](const std::string& text, Delta delta) {
                if (text.empty() && (echo.empty() || delta == Delta::Reasoning)) return;
                const std::string piece = std::exchange(echo, {}) + text;
                out += event(with_logprobs(server_.api_.chunk(endpoint, id, &piece, nullptr, false, include_usage, delta)));
            };
            const auto send_parts = [&](const AnswerParts::Text& t) {
                send(t.reasoning, Delta::Reasoning);
                send(t.content, Delta::Content);
            };
            bool end = false;
            for (JobEvent& e : events) {
                if (e.kind == JobEvent::Kind::Text) {
                    logprobs.insert(logprobs.end(), e.logprobs.begin(), e.logprobs.end());
                    send_parts(parts.feed(e.text));
                } else if (e.kind == JobEvent::Kind::Done) {
                    std::vector<ParsedToolCall> calls;
                    send_parts(parts.finish(calls));
                    send("", Delta::Content);  // an echo with nothing generated after it
                    if (!calls.empty()) out += event(server_.api_.tool_calls_chunk(id, calls, include_usage));
                    const std::string reason = finish_reason(e, calls);
                    json last = with_logprobs(server_.api_.chunk(endpoint, id, nullptr, &reason, false, include_usage));
                    last["timings"] = OpenAiApi::timings(e.usage);
                    out += event(last);
                    if (include_usage) out += event(server_.api_.usage_chunk(endpoint, id, e.usage));
                    out += "data: [DONE]\n\n";
                    server_.metrics_.request_done(200);
                    end = true;
                } else {  // the headers went out already: the error goes as an event
                    out += event(job_error(e).body());
                    server_.metrics_.request_done(e.status);
                    end = true;
                }
            }
            // Nothing to send when the splitters hold all that came (an empty chunk would
            // end the chunked body).
            if (!out.empty() && !write_body(out, job)) break;
            if (!end) continue;
            if (chunked_) net::write(socket_, http::make_chunk_last(), ec);
            return !ec;
        }
        server_.metrics_.request_done(499);
        return false;
    }

    HttpServer& server_;
    tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
    std::string origin_;  // the allowed Origin of the request being answered; empty: none
    unsigned version_ = 11;
    bool keep_alive_ = true;
    bool chunked_ = true;  // the stream being sent
};

// A connection refused for want of a thread, drained on the accepting thread's
// io_context: the 503 goes out, the sending side is shut, and what the client still
// sends is read and dropped until it closes, kLingerTime passes or enough came.
struct HttpServer::Refused : std::enable_shared_from_this<Refused> {
    Refused(HttpServer& server, tcp::socket socket)
        : server(server), socket(std::move(socket)), deadline(this->socket.get_executor()) {}

    void start() {
        auto self = shared_from_this();
        auto response = std::make_shared<http::response<http::string_body>>(make_response(
            http::status::service_unavailable,
            OpenAiApi::dump(ApiError(503, "too many connections", "", "too_many_connections", "server_error").body()),
            "application/json", 11, false, {{http::field::retry_after, "1"}}));
        http::async_write(socket, *response, [self, response](const boost::system::error_code& ec, size_t) {
            boost::system::error_code ignored;
            self->socket.shutdown(tcp::socket::shutdown_send, ignored);
            if (ec || self->server.lingering_ > kMaxLingering) return self->close();
            self->deadline.expires_after(kLingerTime);
            self->deadline.async_wait([self](const boost::system::error_code& error) {
                if (!error) self->close();  // not cancelled: time is up
            });
            self->drain();
        });
    }

    void drain() {
        auto self = shared_from_this();
        socket.async_read_some(net::buffer(sink), [self](const boost::system::error_code& ec, size_t n) {
            self->left -= std::min(n, self->left);
            if (ec || self->left == 0) return self->close();
            self->drain();
        });
    }

    void close() {
        if (closed) return;
        closed = true;
        --server.lingering_;
        boost::system::error_code ignored;
        deadline.cancel();
        socket.close(ignored);
    }

    HttpServer& server;
    tcp::socket socket;
    net::steady_timer deadline;
    std::array<char, 16 * 1024> sink;
    size_t left = server.options_.max_body_bytes + kHeaderLimit;
    bool closed = false;
};

void HttpServer::refuse(tcp::socket socket) {
    metrics_.request_done(503);
    ++lingering_;
    std::make_shared<Refused>(*this, std::move(socket))->start();
}

void HttpServer::serve_connection(tcp::socket socket) { Connection(*this, std::move(socket)).serve(); }

}  // namespace edgerun::serve
