#include <cerrno>
#include <utility>
#include <xenhsa/hsa/faulty_device.hpp>

namespace xenhsa::hsa {

namespace {

// What the thunk returns there (HSAKMT_STATUS_*), as status_map.cpp turns it into errno.
constexpr int kTopologyErrnos[] = {EINVAL, EIO};
constexpr int kKernelErrnos[] = {EIO};
constexpr int kAllocErrnos[] = {ENOMEM, EINVAL, EIO};
constexpr int kReleaseErrnos[] = {EINVAL, EIO};
constexpr int kRegisterErrnos[] = {ENOMEM, EINVAL, EFAULT, EBUSY, EIO};
constexpr int kDeregisterErrnos[] = {ENOENT, EIO};
constexpr int kMapErrnos[] = {ENOMEM, EINVAL, EIO};
constexpr int kCreateQueueErrnos[] = {ENOMEM, EINVAL, EBUSY, EIO};
constexpr int kDoorbellErrnos[] = {EIO};
constexpr int kCreateEventErrnos[] = {ENOMEM, EINVAL, EIO};
constexpr int kEventErrnos[] = {EINVAL, EIO};
constexpr int kWaitErrnos[] = {EIO, EINVAL};

class FaultyDevice final : public KfdDevice {
public:
    FaultyDevice(std::unique_ptr<KfdDevice> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    Result<xenhsa_version_info> version() override {
        return call("kfd.version", kTopologyErrnos, [&] { return inner_->version(); });
    }
    Result<xenhsa_system_props> system() override {
        return call("kfd.system", kTopologyErrnos, [&] { return inner_->system(); });
    }
    Result<xenhsa_node_props> node(uint32_t n) override {
        return call("kfd.node", kTopologyErrnos, [&] { return inner_->node(n); });
    }
    Result<xenhsa_mem_bank> mem_bank(uint32_t n, uint32_t i) override {
        return call("kfd.mem_bank", kTopologyErrnos, [&] { return inner_->mem_bank(n, i); });
    }
    Result<xenhsa_cache> cache(uint32_t n, uint32_t i) override {
        return call("kfd.cache", kTopologyErrnos, [&] { return inner_->cache(n, i); });
    }
    Result<xenhsa_io_link> io_link(uint32_t n, uint32_t i) override {
        return call("kfd.io_link", kTopologyErrnos, [&] { return inner_->io_link(n, i); });
    }
    Result<xenhsa_clock_counters> clock(uint32_t n) override {
        return call("kfd.clock", kTopologyErrnos, [&] { return inner_->clock(n); });
    }
    Result<xenhsa_tile_config> tile_config(uint32_t n) override {
        return call("kfd.tile_config", kTopologyErrnos, [&] { return inner_->tile_config(n); });
    }
    Result<xenhsa_kernel_info> kernel(uint32_t i) override {
        return call("kfd.kernel", kKernelErrnos, [&] { return inner_->kernel(i); });
    }

    Result<void> alloc(uint32_t n, Va va, uint64_t size, uint32_t flags) override {
        return call("kfd.alloc", kAllocErrnos, [&] { return inner_->alloc(n, va, size, flags); });
    }
    Result<void> free(Va va) override {
        return call("kfd.free", kReleaseErrnos, [&] { return inner_->free(va); });
    }
    Result<void> register_user(Va va, uint64_t size, bool read_only) override {
        return call("kfd.register_user", kRegisterErrnos,
                    [&] { return inner_->register_user(va, size, read_only); });
    }
    Result<void> deregister_user(Va va) override {
        return call("kfd.deregister_user", kDeregisterErrnos,
                    [&] { return inner_->deregister_user(va); });
    }
    Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only) override {
        return call("kfd.map_to_gpu", kMapErrnos,
                    [&] { return inner_->map_to_gpu(va, node_mask, read_only); });
    }
    Result<void> unmap_from_gpu(Va va) override {
        return call("kfd.unmap_from_gpu", kReleaseErrnos,
                    [&] { return inner_->unmap_from_gpu(va); });
    }

    bool supports_queue_type(QueueType type) noexcept override {
        return inner_->supports_queue_type(type);
    }
    Result<QueueId> create_queue(const QueueSpec& spec) override {
        return call("kfd.create_queue", kCreateQueueErrnos,
                    [&] { return inner_->create_queue(spec); });
    }
    Result<void> destroy_queue(QueueId queue) override {
        return call("kfd.destroy_queue", kReleaseErrnos,
                    [&] { return inner_->destroy_queue(queue); });
    }
    Result<void> ring_doorbell(QueueId queue, uint64_t value) override {
        return call("kfd.ring_doorbell", kDoorbellErrnos,
                    [&] { return inner_->ring_doorbell(queue, value); });
    }
    bool track_kicks(uint32_t* kick_requested) noexcept override {
        return inner_->track_kicks(kick_requested);
    }
    [[nodiscard]] std::optional<uint64_t> packets_taken() const noexcept override {
        return inner_->packets_taken();
    }

    Result<EventInfo> create_event(const EventSpec& spec) override {
        return call("kfd.create_event", kCreateEventErrnos,
                    [&] { return inner_->create_event(spec); });
    }
    Result<void> destroy_event(EventId event) override {
        return call("kfd.destroy_event", kEventErrnos,
                    [&] { return inner_->destroy_event(event); });
    }
    Result<void> set_event(EventId event) override {
        return call("kfd.set_event", kEventErrnos, [&] { return inner_->set_event(event); });
    }
    Result<void> reset_event(EventId event) override {
        return call("kfd.reset_event", kEventErrnos, [&] { return inner_->reset_event(event); });
    }
    Result<uint32_t> wait_events(std::span<const EventId> events, bool all,
                                 uint32_t timeout_ms) override {
        return call("kfd.wait_events", kWaitErrnos,
                    [&] { return inner_->wait_events(events, all, timeout_ms); });
    }

    void set_fault_handler(FaultHandler handler) override {
        inner_->set_fault_handler(std::move(handler));
    }

private:
    template <class Call>
    auto call(std::string_view site, std::span<const int> errnos, Call&& make) -> decltype(make()) {
        if (const int e = hook_(site, errnos); e != 0) {
            return std::error_code(e, std::generic_category());
        }
        return make();
    }

    std::unique_ptr<KfdDevice> inner_;
    FaultHook hook_;
};

}  // namespace

std::unique_ptr<KfdDevice> with_faults(std::unique_ptr<KfdDevice> device, FaultHook hook) {
    return std::make_unique<FaultyDevice>(std::move(device), std::move(hook));
}

}  // namespace xenhsa::hsa
