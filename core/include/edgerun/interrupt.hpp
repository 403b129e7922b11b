// Ctrl-C (SIGINT) and SIGTERM as a request to stop, for every command that runs long:
// generation ends its reply and prints the summary, the model writers discard their
// unfinished file. While a guard is alive the first signal only sets a flag that the work
// polls; a second one ends the process at once (exit 130), for work that is stuck.
#pragma once

#include <atomic>
#include <csignal>

namespace edgerun {

class InterruptGuard {
public:
    InterruptGuard();   // clears the flag and installs the handlers
    ~InterruptGuard();  // puts back the handlers that were there before
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    static bool requested();
    // Error("interrupted; no output written", ER_E_STATE) once a stop was requested.
    static void throw_if_requested();
    // The flag itself, for loops that take a cancel flag (generate.hpp); storing false
    // re-arms it (a chat goes on after an interrupted reply).
    static std::atomic<bool>* flag();

private:
    struct sigaction previous_int_ {}, previous_term_ {};
};

}  // namespace edgerun
