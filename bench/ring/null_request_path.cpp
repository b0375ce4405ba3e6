#include "null_request_path.hpp"

#include <stdexcept>

#include "placement.hpp"

namespace xenhsa::bench {

namespace {

constexpr std::size_t kRingGuestRamPages = 1024;  // the ring and its buffers only

ServiceArgs backend_spin(NullRequestPath::Mode mode) {
    ServiceArgs args;
    args.backend = {"--ring-spin-us", mode == NullRequestPath::Mode::polling ? "50" : "0"};
    return args;
}

frontend::ClientOptions client_spin(NullRequestPath::Mode mode) {
    frontend::ClientOptions options;
    options.timeout = kGuestTimeout;
    options.reply_spin = mode == NullRequestPath::Mode::polling ? std::chrono::microseconds(50)
                                                                : std::chrono::microseconds(0);
    return options;
}

}  // namespace

NullRequestPath::NullRequestPath(const std::filesystem::path& bin_dir, Mode mode)
    : name_(mode == Mode::polling ? "null_polling" : "null_event_driven"),
      services_(bin_dir, backend_spin(mode)),
      guest_(std::make_unique<GuestDomain>(services_.sim_dir(), kRingGuestRamPages,
                                           client_spin(mode))) {}

void NullRequestPath::pin_worker(int cpu) {
    const auto workers = children_of(services_.backend_pid());
    if (workers.empty()) {
        throw std::runtime_error(name_ + ": the backend has no worker");
    }
    for (const pid_t worker : workers) {
        pin_process(worker, cpu);
    }
}

RoundTrips NullRequestPath::measure(uint32_t iterations, uint32_t warmup) {
    frontend::Client& client = guest_->client();
    return time_round_trips(name_, iterations, warmup,
                            [&client] { (void)take(client.query_version(), "QUERY VERSION"); });
}

}  // namespace xenhsa::bench
