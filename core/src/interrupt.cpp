#include <edgerun/host_api.hpp>
#include <edgerun/interrupt.hpp>

#include <cstdlib>

namespace edgerun {

namespace {

// Lock-free, so the handler may touch it.
std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_interrupt(int) {
    if (g_requested.exchange(true)) std::_Exit(130);  // the second one: leave now
}

}  // namespace

InterruptGuard::InterruptGuard() {
    g_requested = false;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
}

InterruptGuard::~InterruptGuard() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
}

bool InterruptGuard::requested() { return g_requested; }

void InterruptGuard::throw_if_requested() {
    if (requested()) throw Error("interrupted; no output written", ER_E_STATE);
}

std::atomic<bool>* InterruptGuard::flag() { return &g_requested; }

}  // namespace edgerun
