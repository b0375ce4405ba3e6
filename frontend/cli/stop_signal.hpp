// SIGTERM/SIGINT as a flag, for scenarios that hold resources until told to stop.
#ifndef XENHSA_FRONTEND_CLI_STOP_SIGNAL_HPP
#define XENHSA_FRONTEND_CLI_STOP_SIGNAL_HPP

namespace xenhsa::frontend::cli {

// Installs the handlers (without SA_RESTART, so a blocking poll returns).
void catch_stop_signals();
[[nodiscard]] bool stop_requested();

}  // namespace xenhsa::frontend::cli

#endif
