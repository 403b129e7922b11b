// The HTTP side of `edgerun serve`, on Boost.Beast: one thread accepts, each connection
// gets a thread of its own (at most max_connections; past that a 503 comes at once), so
// /health, /metrics and 429 answers come while every slot is busy. A connection waiting
// for its job polls its socket, so a client that goes away, streaming or not, cancels
// the job at the scheduler's next step. SIGTERM or SIGINT: stop accepting, let the
// running jobs finish for up to shutdown_grace (meanwhile a request on an open
// connection gets a 503), end the rest with an error, return.
#pragma once

#include "metrics.hpp"
#include "openai_api.hpp"
#include "scheduler.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace edgerun::serve {

struct ServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;                  // 0: any free port (the one taken is printed)
    std::string api_key;                   // empty: none asked for
    size_t max_body_bytes = 8u << 20;      // bigger bodies get 413
    int32_t max_connections = 64;
    std::chrono::milliseconds shutdown_grace{10000};
    std::chrono::seconds idle_timeout{5};      // a connection with no request begun this long is closed
    std::chrono::seconds request_timeout{30};  // a request not whole this long after it began is dropped
    // Web pages (Origin headers) besides this machine's that may call the server ("*": any).
    std::vector<std::string> cors_origins;
};

class HttpServer {
public:
    HttpServer(const ServerOptions& options, OpenAiApi& api, Scheduler& scheduler, Metrics& metrics);
    // Throws Error unless `host` is an IP address to listen on: checked before the model
    // loads, so a mistyped --host costs no loading time.
    static void check_host(const std::string& host);
    // Binds (throws when it cannot), prints "listening on http://HOST:PORT" to stderr,
    // and serves until SIGTERM or SIGINT.
    void run();

private:
    class Connection;
    struct Refused;

    // Past max_connections: a 503, then a lingering close (accepting thread, asynchronous).
    void refuse(boost::asio::ip::tcp::socket socket);
    // One connection's requests until it closes (its own thread; http_connection.cpp).
    void serve_connection(boost::asio::ip::tcp::socket socket);

    ServerOptions options_;
    OpenAiApi& api_;
    Scheduler& scheduler_;
    Metrics& metrics_;
    std::atomic<bool> stopping_{false};  // SIGTERM: no new connections, answers close theirs
    std::atomic<bool> closing_{false};   // the scheduler is done: connections waiting for a request close
    int32_t lingering_ = 0;              // refused connections being drained (accepting thread only)
    std::mutex mutex_;
    std::condition_variable connections_done_;
    int32_t connections_ = 0;
};

}  // namespace edgerun::serve
