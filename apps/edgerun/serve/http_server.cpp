// `edgerun serve`'s listening socket: accepting connections (each served on a thread of
// its own, http_connection.cpp), and the shutdown on SIGTERM.
#include "http_server.hpp"

#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace edgerun::serve {

namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpServer::HttpServer(const ServerOptions& options, OpenAiApi& api, Scheduler& scheduler, Metrics& metrics)
    : options_(options), api_(api), scheduler_(scheduler), metrics_(metrics) {}

void HttpServer::check_host(const std::string& host) {
    boost::system::error_code ec;
    net::ip::make_address(host, ec);
    if (ec) throw Error("--host: '" + host + "' is not an IP address", ER_E_INVALID_ARGUMENT);
}

void HttpServer::run() {
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not the end of the server
    net::io_context io;
    check_host(options_.host);
    boost::system::error_code ec;
    const auto address = net::ip::make_address(options_.host, ec);
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
        io.stop();  // refused connections still lingering are not waited for
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
                refuse(std::move(socket));
            } else {
                ++connections_;
                std::thread([this, s = std::move(socket)]() mutable {
                    serve_connection(std::move(s));
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
    closing_ = true;
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
