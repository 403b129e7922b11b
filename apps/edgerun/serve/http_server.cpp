#include "http_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <poll.h>

#include <csignal>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace edgerun::serve {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kPollSlice = std::chrono::milliseconds(50);

// Compares every byte of the expected key whatever the given one holds, so the time
// taken says nothing about how much of a guess was right.
bool same_key(std::string_view given, std::string_view expected) {
    unsigned diff = given.size() == expected.size() ? 0u : 1u;
    for (size_t i = 0; i < expected.size(); ++i)
        diff |= unsigned(uint8_t(expected[i]) ^ uint8_t(i < given.size() ? given[i] : 0));
    return diff == 0;
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
        boost::beast::error_code ec;
        while (!server_.stopping_) {
            if (buffer_.size() == 0 && !wait_for_request()) break;
            http::request_parser<http::string_body> parser;
            parser.body_limit(server_.options_.max_body_bytes);
            parser.header_limit(64 * 1024);
            read_request(parser, ec);
            if (ec == http::error::body_limit) {
                keep_alive_ = false;
                send_error(ApiError(413, "the body is larger than this server's limit of " +
                                             std::to_string(server_.options_.max_body_bytes) + " bytes", "", "body_too_large"));
                drain();
                break;
            }
            if (ec) break;
            const http::request<http::string_body>& request = parser.get();
            version_ = request.version();
            keep_alive_ = request.keep_alive();
            if (!handle(request) || !keep_alive_) break;
        }
        socket_.shutdown(tcp::socket::shutdown_both, ec);
    }

private:
    // Waits until a request starts to arrive: false when the connection stays idle too
    // long, the server stops, or the client closes it.
    bool wait_for_request() {
        const auto deadline = Clock::now() + server_.options_.idle_timeout;
        while (!server_.stopping_ && Clock::now() < deadline) {
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
        socket_.non_blocking(true, ec);
        while (!ec && !parser.is_done()) {
            http::read_some(socket_, buffer_, parser, ec);
            if (!ec) continue;  // parsed some: on with what the buffer holds
            if (ec != net::error::would_block && ec != net::error::try_again) break;
            ec = {};
            if (server_.stopping_ || Clock::now() >= deadline) {
                ec = net::error::timed_out;
                break;
            }
            pollfd p{socket_.native_handle(), POLLIN, 0};
            ::poll(&p, 1, int(kPollSlice.count()));
        }
        boost::beast::error_code ignored;
        socket_.non_blocking(false, ignored);
    }

    // After an early answer (413) to a request whose body was not read: let the client
    // finish sending, so that it reads the answer instead of a reset connection.
    void drain() {
        boost::beast::error_code ec;
        socket_.shutdown(tcp::socket::shutdown_send, ec);
        const auto deadline = Clock::now() + std::chrono::seconds(2);
        char sink[64 * 1024];
        while (Clock::now() < deadline) {
            pollfd p{socket_.native_handle(), POLLIN, 0};
            if (::poll(&p, 1, int(kPollSlice.count())) <= 0) continue;
            if (socket_.read_some(net::buffer(sink), ec) == 0 || ec) break;
        }
    }

    bool send(http::status status, std::string body, const char* content_type, const char* retry_after = nullptr) {
        http::response<http::string_body> response{status, version_};
        response.set(http::field::server, "edgerun");
        response.set(http::field::content_type, content_type);
        if (retry_after) response.set(http::field::retry_after, retry_after);
        response.keep_alive(keep_alive_);
        response.body() = std::move(body);
        response.prepare_payload();
        boost::beast::error_code ec;
        http::write(socket_, response, ec);
        return !ec;
    }

    bool send_json(int status, const json& body, const char* retry_after = nullptr) {
        return send(http::status(status), OpenAiApi::dump(body), "application/json", retry_after);
    }
    bool send_error(const ApiError& e) { return send_json(e.status, e.body(), e.status == 429 ? "1" : nullptr); }

    bool handle(const http::request<http::string_body>& request) {
        std::string_view target(request.target().data(), request.target().size());
        target = target.substr(0, target.find('?'));
        const bool get = request.method() == http::verb::get, post = request.method() == http::verb::post;
        if (target == "/health") {
            if (!get) return send_error(ApiError(405, "use GET", "", "method_not_allowed"));
            return server_.stopping_ ? send_json(503, json{{"status", "shutting down"}}) : send_json(200, json{{"status", "ok"}});
        }
        if (target == "/metrics") {
            if (!get) return send_error(ApiError(405, "use GET", "", "method_not_allowed"));
            return send(http::status::ok, server_.metrics_.prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
        }
        if (target.rfind("/v1/", 0) != 0) return send_error(ApiError(404, "no such endpoint: " + std::string(target), "", "not_found"));
        if (!server_.options_.api_key.empty()) {
            const auto header = request.find(http::field::authorization);
            std::string_view given;
            if (header != request.end()) given = std::string_view(header->value().data(), header->value().size());
            const bool bearer = given.rfind("Bearer ", 0) == 0;
            if (!bearer || !same_key(given.substr(7), server_.options_.api_key))
                return send_error(ApiError(401, header == request.end() ? "no API key given (Authorization: Bearer KEY)"
                                                                        : "the API key is not valid",
                                           "", "invalid_api_key", "authentication_error"));
        }
        if (target == "/v1/models") {
            if (!get) return send_error(ApiError(405, "use GET", "", "method_not_allowed"));
            return send_json(200, server_.api_.models());
        }
        Endpoint endpoint;
        if (target == "/v1/chat/completions")
            endpoint = Endpoint::Chat;
        else if (target == "/v1/completions")
            endpoint = Endpoint::Completion;
        else
            return send_error(ApiError(404, "no such endpoint: " + std::string(target), "", "not_found"));
        if (!post) return send_error(ApiError(405, "use POST", "", "method_not_allowed"));
        return complete(endpoint, request.body());
    }

    bool complete(Endpoint endpoint, const std::string& body) {
        ParsedRequest parsed;
        try {
            parsed = server_.api_.parse(endpoint, body);
        } catch (const ApiError& e) {
            server_.metrics_.request_done(e.status);
            return send_error(e);
        } catch (const std::exception& e) {  // the tokenizer or the chat template refused it
            server_.metrics_.request_done(400);
            return send_error(ApiError(400, e.what(), "", "invalid_value"));
        }
        Scheduler::Refusal refusal;
        std::shared_ptr<Job> job = server_.scheduler_.submit(std::move(parsed.spec), refusal);
        if (!job) {
            const ApiError e = refusal == Scheduler::Refusal::QueueFull
                                   ? ApiError(429, "too many requests: every slot is busy and the queue is full", "",
                                              "rate_limit_exceeded", "rate_limit_error")
                                   : ApiError(503, "the server is shutting down", "", "shutting_down", "server_error");
            server_.metrics_.request_done(e.status);
            return send_error(e);
        }
        const std::string id = OpenAiApi::new_id(endpoint);
        return parsed.stream ? stream(endpoint, *job, id, parsed.include_usage) : whole(endpoint, *job, id);
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

    bool whole(Endpoint endpoint, Job& job, const std::string& id) {
        std::string text;
        std::vector<JobEvent> events;
        while (next_events(job, events)) {
            for (JobEvent& e : events) {
                if (e.kind == JobEvent::Kind::Text) {
                    text += e.text;
                } else if (e.kind == JobEvent::Kind::Done) {
                    server_.metrics_.request_done(200);
                    return send_json(200, server_.api_.response(endpoint, id, text, e.finish_reason, e.usage));
                } else {
                    server_.metrics_.request_done(e.status);
                    return send_error(ApiError(e.status, e.text, "", "", "server_error"));
                }
            }
        }
        server_.metrics_.request_done(499);  // the client closed the connection (nginx's code)
        return false;
    }

    bool write_chunk(const std::string& data, Job& job) {
        boost::beast::error_code ec;
        net::write(socket_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
        if (ec) job.cancel();
        return !ec;
    }

    static std::string event(const json& data) { return "data: " + OpenAiApi::dump(data) + "\n\n"; }

    bool stream(Endpoint endpoint, Job& job, const std::string& id, bool include_usage) {
        http::response<http::empty_body> response{http::status::ok, version_};
        response.set(http::field::server, "edgerun");
        response.set(http::field::content_type, "text/event-stream");
        response.set(http::field::cache_control, "no-cache");
        response.keep_alive(keep_alive_);
        response.chunked(true);
        http::response_serializer<http::empty_body> serializer{response};
        boost::beast::error_code ec;
        http::write_header(socket_, serializer, ec);
        if (ec) {
            job.cancel();
            return false;
        }
        if (endpoint == Endpoint::Chat && !write_chunk(event(server_.api_.chunk(endpoint, id, nullptr, nullptr, true, include_usage)), job))
            return false;
        std::vector<JobEvent> events;
        while (next_events(job, events)) {
            std::string out;  // everything that arrived together goes in one write
            bool end = false;
            for (JobEvent& e : events) {
                if (e.kind == JobEvent::Kind::Text) {
                    out += event(server_.api_.chunk(endpoint, id, &e.text, nullptr, false, include_usage));
                } else if (e.kind == JobEvent::Kind::Done) {
                    out += event(server_.api_.chunk(endpoint, id, nullptr, &e.finish_reason, false, include_usage));
                    if (include_usage) out += event(server_.api_.usage_chunk(endpoint, id, e.usage));
                    out += "data: [DONE]\n\n";
                    server_.metrics_.request_done(200);
                    end = true;
                } else {  // the headers went out already: the error goes as an event
                    out += event(ApiError(e.status, e.text, "", "", "server_error").body());
                    server_.metrics_.request_done(e.status);
                    end = true;
                }
            }
            if (!write_chunk(out, job)) break;
            if (!end) continue;
            net::write(socket_, http::make_chunk_last(), ec);
            return !ec;
        }
        server_.metrics_.request_done(499);
        return false;
    }

    HttpServer& server_;
    tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
    unsigned version_ = 11;
    bool keep_alive_ = true;
};

HttpServer::HttpServer(const ServerOptions& options, OpenAiApi& api, Scheduler& scheduler, Metrics& metrics)
    : options_(options), api_(api), scheduler_(scheduler), metrics_(metrics) {}

void HttpServer::run() {
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not the end of the server
    net::io_context io;
    boost::system::error_code ec;
    const auto address = net::ip::make_address(options_.host, ec);
    if (ec) throw Error("--host: '" + options_.host + "' is not an IP address", ER_E_INVALID_ARGUMENT);
    tcp::acceptor acceptor(io);
    const tcp::endpoint endpoint(address, options_.port);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.bind(endpoint, ec);
    if (ec) throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + ec.message(), ER_E_IO);
    acceptor.listen(net::socket_base::max_listen_connections);

    net::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code&, int) {
        stopping_ = true;
        acceptor.close();
    });
    std::function<void()> accept = [&] {
        acceptor.async_accept([&](const boost::system::error_code& error, tcp::socket socket) {
            if (error) {
                if (!stopping_) accept();
                return;
            }
            std::unique_lock lock(mutex_);
            if (connections_ >= options_.max_connections) {
                lock.unlock();
                // Small and sent at once: the accepting thread does not wait on anyone.
                http::response<http::string_body> response{http::status::service_unavailable, 11};
                response.set(http::field::content_type, "application/json");
                response.set(http::field::retry_after, "1");
                response.keep_alive(false);
                response.body() = OpenAiApi::dump(ApiError(503, "too many connections", "", "too_many_connections", "server_error").body());
                response.prepare_payload();
                boost::system::error_code ignored;
                http::write(socket, response, ignored);
            } else {
                ++connections_;
                std::thread([this, s = std::move(socket)]() mutable {
                    Connection(*this, std::move(s)).serve();
                    std::lock_guard done(mutex_);
                    if (--connections_ == 0) connections_done_.notify_all();
                }).detach();
            }
            accept();
        });
    };
    accept();
    std::fprintf(stderr, "serve: listening on http://%s:%u\n", options_.host.c_str(), unsigned(acceptor.local_endpoint().port()));
    std::fflush(stderr);
    io.run();

    std::fprintf(stderr, "serve: stopping (in-flight requests get %lld ms to finish)\n",
                 static_cast<long long>(options_.shutdown_grace.count()));
    scheduler_.stop(options_.shutdown_grace);
    std::unique_lock lock(mutex_);
    if (!connections_done_.wait_for(lock, std::chrono::seconds(5), [&] { return connections_ == 0; })) {
        // A client that stopped halfway through sending a request (or reading an
        // answer) holds its thread; it must not hold the exit, nor outlive what the
        // threads use.
        std::fprintf(stderr, "serve: %d connections still open; exiting without them\n", connections_);
        std::fflush(stderr);
        std::_Exit(0);
    }
}

}  // namespace edgerun::serve
