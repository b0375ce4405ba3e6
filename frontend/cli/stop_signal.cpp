#include "stop_signal.hpp"

#include <csignal>
#include <cstring>

namespace xenhsa::frontend::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop(int) { g_stop = 1; }

}  // namespace

void catch_stop_signals() {
    struct sigaction act;
    std::memset(&act, 0, sizeof act);
    act.sa_handler = on_stop;
    sigemptyset(&act.sa_mask);
    sigaction(SIGTERM, &act, nullptr);
    sigaction(SIGINT, &act, nullptr);
}

bool stop_requested() { return g_stop != 0; }

}  // namespace xenhsa::frontend::cli
