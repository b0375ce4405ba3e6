#include "queues.hpp"

#include <optional>
#include <xenhsa/frontend/errors.hpp>

#include "log.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

constexpr uint64_t kPointerBytes = 8;

}  // namespace

Queues::~Queues() {
    while (!queues_.empty()) {
        (void)destroy(queues_.begin()->first);
    }
}

Result<void> Queues::create(const QueueSpec& spec, HsaQueueResource& resource) {
    uint32_t type = 0;
    switch (spec.type) {
        case HSA_QUEUE_COMPUTE_AQL:
            type = XENHSA_QUEUE_COMPUTE_AQL;
            break;
        case HSA_QUEUE_SDMA:
            if (!client_.granted(XENHSA_FEATURE_SDMA)) {
                refused_once("hsaKmtCreateQueue(HSA_QUEUE_SDMA)",
                             "the backend's GPU has no SDMA queues (set HSA_ENABLE_SDMA=0)");
                return errc(std::errc::not_supported);
            }
            type = XENHSA_QUEUE_SDMA;
            break;
        default:
            refused_once("hsaKmtCreateQueue(PM4 or XGMI SDMA queue)",
                         "only AQL compute and SDMA queues are forwarded");
            return errc(std::errc::not_supported);
    }
    if (spec.percentage > 100 || spec.priority < HSA_QUEUE_PRIORITY_MINIMUM ||
        spec.priority > HSA_QUEUE_PRIORITY_MAXIMUM) {
        return errc(std::errc::invalid_argument);
    }
    Queue q;
    q.ring = spec.ring;
    if (type == XENHSA_QUEUE_COMPUTE_AQL) {
        q.rptr = resource.QueueRptrValue;
        q.wptr = resource.QueueWptrValue;
    } else {
        HsaMemFlags flags{};
        flags.ui32.HostAccess = 1;
        flags.ui32.Uncached = 1;
        auto page = memory_.alloc(0, XENHSA_PAGE_SIZE, flags, std::nullopt);
        if (!page) {
            return page.error();
        }
        const uint32_t node = spec.node;
        if (auto mapped = memory_.map_to_gpu(page.value(), XENHSA_PAGE_SIZE,
                                             std::span<const uint32_t>(&node, 1));
            !mapped) {
            (void)memory_.free(page.value());
            return mapped.error();
        }
        q.pointers_page = page.value();
        q.rptr = page.value();
        q.wptr = page.value() + kPointerBytes;
    }
    auto give_back = [&](std::error_code e) -> std::error_code {
        if (q.pointers_page != 0) {
            (void)memory_.free(q.pointers_page);
        }
        return e;
    };
    // A clear error here rather than the backend's BAD_ADDRESS.
    if (!memory_.gpu_mapped(q.ring, spec.ring_size, spec.node) ||
        !memory_.gpu_mapped(q.rptr, kPointerBytes, spec.node) ||
        !memory_.gpu_mapped(q.wptr, kPointerBytes, spec.node)) {
        log().warn(
            "hsaKmtCreateQueue: the ring or read/write pointers are not in memory "
            "mapped to GPU node {}",
            spec.node);
        return give_back(errc(std::errc::invalid_argument));
    }
    xenhsa_queue_create_req req{};
    req.node = spec.node;
    req.type = type;
    req.percentage = spec.percentage;
    req.priority = static_cast<int32_t>(spec.priority);
    req.ring_va = q.ring;
    req.ring_size = spec.ring_size;
    req.rptr_va = q.rptr;
    req.wptr_va = q.wptr;
    if (spec.event != nullptr) {
        req.error_event = events_.handle_of(spec.event);
        if (req.error_event == 0) {
            return give_back(errc(std::errc::invalid_argument));
        }
    }
    auto created = client_.queue_create(req);
    if (!created) {
        return give_back(created.error());
    }
    memory_.hold(q.ring);
    memory_.hold(q.rptr);
    memory_.hold(q.wptr);
    const auto& rsp = created.value();
    resource.QueueId = rsp.handle;
    resource.QueueDoorBell = reinterpret_cast<uintptr_t>(&doorbells_.doorbell[rsp.doorbell_index]);
    if (type == XENHSA_QUEUE_SDMA) {
        resource.QueueRptrValue = q.rptr;
        resource.QueueWptrValue = q.wptr;
    }
    q.node = spec.node;
    queues_.emplace(rsp.handle, q);
    log().debug("queue {:#x}: type {} ring [{:#x}, +{:#x}) doorbell {}", rsp.handle, type, q.ring,
                spec.ring_size, rsp.doorbell_index);
    return boost::outcome_v2::success();
}

void Queues::unhold(const Queue& q) noexcept {
    memory_.release_held(q.ring);
    memory_.release_held(q.rptr);
    memory_.release_held(q.wptr);
}

Result<void> Queues::destroy(HSA_QUEUEID id) {
    auto it = queues_.find(id);
    if (it == queues_.end()) {
        return errc(std::errc::invalid_argument);
    }
    const Queue q = it->second;
    queues_.erase(it);
    auto destroyed = client_.queue_destroy(id);
    // After the OK the backend has carried out the releases it deferred for this queue.
    unhold(q);
    if (q.pointers_page != 0) {
        (void)memory_.free(q.pointers_page);
    }
    return destroyed;
}

Result<void> Queues::suspend(HSA_QUEUEID id) const {
    const auto it = queues_.find(id);
    if (it == queues_.end()) {
        return errc(std::errc::invalid_argument);
    }
    const Queue& q = it->second;
    // ROCr's own memory, laid out as an amd_queue_t (proto/queue.h). Whoever made the queue
    // wrote it: each word is read only where this library mapped memory to the queue's GPU,
    // as the backend reads them.
    const auto load = [&](uint64_t va, auto type) -> std::optional<decltype(type)> {
        if (va % sizeof type != 0 || !memory_.gpu_mapped(va, sizeof type, q.node)) {
            return std::nullopt;
        }
        return __atomic_load_n(reinterpret_cast<const decltype(type)*>(va), __ATOMIC_ACQUIRE);
    };
    if (q.pointers_page == 0) {
        const auto offset = load(q.rptr + XENHSA_AMD_QUEUE_OFFSET_FIELD_AFTER_RPTR, uint32_t{});
        const auto signal =
            offset && *offset <= q.rptr
                ? load(q.rptr - *offset + XENHSA_AMD_QUEUE_INACTIVE_SIGNAL_OFFSET, uint64_t{})
                : std::nullopt;
        const auto value = signal && *signal != 0
                               ? load(*signal + XENHSA_AMD_SIGNAL_VALUE_OFFSET, int64_t{})
                               : std::nullopt;
        if (value && *value != 0) {
            log().debug("queue {:#x}: suspended (the device stopped it on an error)", id);
            return boost::outcome_v2::success();
        }
    }
    return errc(std::errc::not_supported);
}

}  // namespace xenhsa::frontend::hsakmt
