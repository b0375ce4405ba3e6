// Opening and closing the KFD: the factory, XNACK off, the topology snapshot, and the
// release of whatever the caller left behind (queues first, as the kernel requires).
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <new>

#include "hsakmt_device.hpp"
#include "kfd_gpu_ids.hpp"
#include "kmt_call.hpp"
#include "private_counters.hpp"

namespace xenhsa::hsa {

namespace kmt {

namespace {

// The KFD context belongs to the process: one device at a time.
std::atomic<bool> g_open{false};

std::string describe(HSAKMT_STATUS status) {
    return "status " + std::to_string(static_cast<int>(status)) + " (" +
           hsakmt_status_error(static_cast<int>(status)).message() + ")";
}

Result<std::unique_ptr<KfdDevice>> fail(std::string* message, std::error_code error,
                                        std::string text) {
    spdlog::warn("hsakmt: {}", text);
    if (message != nullptr) {
        *message = std::move(text);
    }
    return error;
}

}  // namespace

Result<std::unique_ptr<KfdDevice>> HsakmtDevice::open(std::string* message) {
    if (g_open.exchange(true)) {
        return fail(message, errc(std::errc::device_or_resource_busy),
                    "a libhsakmt device is already open in this process");
    }
    const HSAKMT_STATUS opened = hsaKmtOpenKFD();
    if (opened != HSAKMT_STATUS_SUCCESS) {
        g_open = false;
        if (opened == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) {
            return fail(message, errc(std::errc::no_such_device),
                        "no /dev/kfd: hsaKmtOpenKFD returned "
                        "HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED (20); load amdgpu with "
                        "KFD support and let the worker open /dev/kfd, or use --gpu soft");
        }
        return fail(message, hsakmt_status_error(static_cast<int>(opened)),
                    "hsaKmtOpenKFD failed: " + describe(opened));
    }

    std::unique_ptr<HsakmtDevice> device(new (std::nothrow) HsakmtDevice());
    if (!device) {
        hsaKmtCloseKFD();
        g_open = false;
        return errc(std::errc::not_enough_memory);
    }
    // From here on the destructor closes the KFD and clears g_open.

    if (const std::string failed = keep_thunk_counters_private(); !failed.empty()) {
        return fail(message, errc(std::errc::io_error), failed);
    }

    // xenhsa pins everything; it never relies on GPU page-fault retry.
    if (hsaKmtSetXNACKMode(0) != HSAKMT_STATUS_SUCCESS) {
        HSAint32 xnack = 0;
        if (hsaKmtGetXNACKMode(&xnack) == HSAKMT_STATUS_SUCCESS && xnack != 0) {
            return fail(message, errc(std::errc::operation_not_supported),
                        "XNACK is on and cannot be switched off (queues already exist?)");
        }
        // Kernels and GPUs without XNACK support refuse the call: XNACK is off there.
    }
    if (const HSAKMT_STATUS s = hsaKmtAcquireSystemProperties(&device->system_);
        s != HSAKMT_STATUS_SUCCESS) {
        return fail(message, hsakmt_status_error(static_cast<int>(s)),
                    "hsaKmtAcquireSystemProperties failed: " + describe(s));
    }
    const auto gpu_ids = gpu_ids_by_render_minor();
    for (uint32_t node = 0; node < device->system_.NumNodes; ++node) {
        HsaNodeProperties props{};
        if (hsaKmtGetNodeProperties(node, &props) == HSAKMT_STATUS_SUCCESS &&
            props.NumFComputeCores != 0) {
            if (auto it = gpu_ids.find(props.DrmRenderMinor); it != gpu_ids.end()) {
                device->gpus_.emplace(node, it->second);
            }
        }
    }
    if (device->gpus_.empty()) {
        return fail(message, errc(std::errc::no_such_device),
                    "the KFD lists no GPU node (a CPU-only topology)");
    }
    // Memory at the guest's VA and SDMA queues go through a descriptor of our own.
    auto kfd = KfdFd::open();
    if (!kfd) {
        return fail(message, kfd.error(),
                    "cannot open /dev/kfd a second time: " + kfd.error().message());
    }
    device->kfd_ = std::move(kfd).value();
    spdlog::info("hsakmt: /dev/kfd open, {} topology nodes, {} GPU", device->system_.NumNodes,
                 device->gpus_.size());
    return std::unique_ptr<KfdDevice>(std::move(device));
}

HsakmtDevice::~HsakmtDevice() {
    stop_fault_thread();
    release_everything();
    hsaKmtReleaseSystemProperties();
    hsaKmtCloseKFD();
    g_open = false;
}

// What a context left behind, in teardown order: queues, events, GPU mappings, memory.
void HsakmtDevice::release_everything() noexcept {
    std::lock_guard lock(mutex_);
    for (auto& [id, queue] : queues_) {
        std::error_code e;
        if (queue.raw) {
            auto r = kfd_.destroy_queue(queue.raw_id);
            e = r ? std::error_code() : r.error();
        } else {
            const auto thunk_id = queue.id;
            e = call([&] { return hsaKmtDestroyQueue(thunk_id); });
        }
        if (e) {
            spdlog::error("hsakmt: destroying queue {} at close: {}", id, e.message());
        }
    }
    queues_.clear();
    for (auto& [id, ev] : events_) {
        hsaKmtDestroyEvent(ev.event);
    }
    events_.clear();
    for (auto& [va, mem] : memory_) {
        if (!mem.mapped_to.empty()) {
            (void)kfd_.unmap(mem.handle, mem.mapped_to);
        }
    }
    for (auto& [va, mem] : memory_) {
        (void)kfd_.free(mem.handle);
    }
    memory_.clear();
}

}  // namespace kmt

Result<std::unique_ptr<KfdDevice>> open_hsakmt_device(std::string* message) {
    return kmt::HsakmtDevice::open(message);
}

}  // namespace xenhsa::hsa
