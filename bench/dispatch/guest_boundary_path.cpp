#include "guest_boundary_path.hpp"

#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/hsa/builtin_kernels.h>
#include <xenhsa/xen/sim/client.hpp>

#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace xenhsa::bench {

namespace {

constexpr uint32_t kWords = 16;         // 64 bytes, as the in-process path
constexpr uint32_t kRingPackets = 1024;  // as the in-process path
constexpr std::size_t kArenaPages = 2;  // data, kernel arguments and signals
constexpr std::size_t kGuestRamPages = 4096;

template <class T>
T take(frontend::Result<T> r, const char *what)
{
    if (!r) {
        throw std::runtime_error(std::string("guest boundary: ") + what + ": " +
                                 r.error().message());
    }
    return std::move(r.value());
}

void ensure(frontend::Result<void> r, const char *what)
{
    if (!r) {
        throw std::runtime_error(std::string("guest boundary: ") + what + ": " +
                                 r.error().message());
    }
}

// Creates the guest domain and plugs its device as the toolstack would; attached to dom0
// only for that step.
xen::Platform attach_guest(const std::filesystem::path &sim_dir)
{
    const xen::DomId domid = take(
        xen::sim::create_domain(sim_dir, "bench-" + std::to_string(getpid()), kGuestRamPages),
        "create domain");
    {
        xen::Platform dom0 = take(xen::sim::attach(sim_dir, 0), "attach dom0");
        (void)take(frontend::add_device(*dom0.store, 0, domid, 0), "plug device");
    }
    return take(xen::sim::attach(sim_dir, domid), "attach guest");
}

}  // namespace

GuestBoundaryPath::GuestBoundaryPath(const std::filesystem::path &bin_dir)
    : services_(bin_dir), platform_(attach_guest(services_.sim_dir()))
{
    frontend::DeviceConfig config;
    config.timeout = timeout_;
    device_ = std::make_unique<frontend::GuestDevice>(platform_, config);
    ensure(device_->connect(), "xenbus connect");
    client_ = std::make_unique<frontend::Client>(*device_, *platform_.sharer, *platform_.grants,
                                                 frontend::ClientOptions{timeout_});
    frontend::HelloOptions hello;
    hello.features = XENHSA_FEATURES_V1;
    (void)take(client_->hello(hello), "hello");
    if (!client_->granted(XENHSA_FEATURE_GPU)) {
        throw std::runtime_error("guest boundary: the backend did not grant the GPU feature");
    }
    const auto node = take(frontend::aql::find_gpu_node(*client_), "find GPU node");
    if (!node) {
        throw std::runtime_error("guest boundary: the backend reports no GPU node");
    }
    const auto kernel = take(client_->find_kernel(XENHSA_KERNEL_NAME_FILL), "find fill kernel");
    if (!kernel) {
        throw std::runtime_error("guest boundary: no built-in fill kernel");
    }
    memory_ = take(frontend::aql::GpuMemory::create(*client_, kArenaPages, *node), "GPU memory");
    frontend::aql::QueueOptions q;
    q.node = *node;
    q.packets = kRingPackets;
    queue_ = take(frontend::aql::AqlQueue::create(*client_, q), "queue create");

    auto *data = take(memory_.carve(kWords * sizeof(uint32_t)), "carve data");
    auto *kernarg = take(memory_.carve_array<xenhsa_kernarg_fill>(1), "carve kernarg");
    done_ = take(memory_.carve_array<amd_signal_t>(1), "carve signal");
    *kernarg = xenhsa_kernarg_fill{reinterpret_cast<uintptr_t>(data), kWords, 0x600d, 0};
    frontend::aql::signal_init(*done_, 0);

    fill_.kernel_object = kernel->kernel_object;
    fill_.kernarg_address = reinterpret_cast<uintptr_t>(kernarg);
    fill_.completion_signal = frontend::aql::signal_handle(*done_);
    fill_.grid[0] = kWords;
    fill_.workgroup[0] = kWords;
    fill_.private_segment_size = kernel->private_segment_size;
    fill_.group_segment_size = kernel->group_segment_size;
}

GuestBoundaryPath::~GuestBoundaryPath()
{
    // The queue before the memory it reads; then the session, then the services.
    (void)queue_.destroy();
    if (client_) {
        (void)memory_.release(*client_);
    }
    client_.reset();
    device_.reset();
}

void GuestBoundaryPath::dispatch_and_wait()
{
    frontend::aql::signal_store(*done_, 1);
    (void)take(queue_.dispatch(fill_, timeout_), "dispatch");
    (void)take(frontend::aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_EQ, 0, timeout_),
               "wait for the dispatch");
}

void GuestBoundaryPath::dispatch_batch_and_wait(uint32_t count)
{
    frontend::aql::signal_store(*done_, count);
    // As the in-process path: every packet written, then one write-index publication and
    // one doorbell for the batch.
    uint64_t last = 0;
    for (uint32_t i = 0; i < count; ++i) {
        last = take(queue_.reserve(timeout_), "reserve");
        frontend::aql::write_dispatch(queue_.slot(last), fill_);
    }
    ensure(queue_.submit(last), "submit");
    (void)take(frontend::aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_EQ, 0, timeout_),
               "wait for the batch");
}

}  // namespace xenhsa::bench
