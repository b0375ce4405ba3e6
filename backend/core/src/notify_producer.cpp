#include <xenhsa/proto/ring.h>

#include <cstring>
#include <xenhsa/backend/core/notify_producer.hpp>

namespace xenhsa::backend::core {

NotifyProducer::NotifyProducer(xenhsa_notify_page* page, uint32_t backlog_capacity)
    : page_(page), backlog_(backlog_capacity == 0 ? 1 : backlog_capacity) {}

bool NotifyProducer::post(const xenhsa_notify& record) noexcept {
    if (count_ == backlog_.size()) {
        flush();
        if (count_ == backlog_.size()) {
            overflowed_ = true;
            return false;
        }
    }
    backlog_[(head_ + count_) % backlog_.size()] = record;
    ++count_;
    flush();
    return true;
}

void NotifyProducer::flush() noexcept {
    if (page_ == nullptr || count_ == 0) {
        return;
    }
    const uint32_t cons = xenhsa_index_load(&page_->cons);
    const uint32_t used = prod_pvt_ - cons;  // huge when cons is ahead: counts as full
    if (used >= XENHSA_NOTIFY_SLOTS) {
        return;
    }
    uint32_t room = XENHSA_NOTIFY_SLOTS - used;
    bool published = false;
    while (room != 0 && count_ != 0) {
        // The whole 32-byte record, pads and unused arguments included.
        std::memcpy(&page_->slot[prod_pvt_ % XENHSA_NOTIFY_SLOTS], &backlog_[head_],
                    sizeof(xenhsa_notify));
        head_ = (head_ + 1) % static_cast<uint32_t>(backlog_.size());
        --count_;
        --room;
        ++prod_pvt_;
        published = true;
    }
    if (published) {
        xenhsa_index_store(&page_->prod, prod_pvt_);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (kick_) {
            kick_();
        }
    }
}

xenhsa_notify NotifyProducer::revoked(uint64_t handle, uint64_t va, uint64_t npages) noexcept {
    xenhsa_notify n{};
    n.type = XENHSA_NOTIFY_REVOKED;
    n.handle = handle;
    n.arg0 = va;
    n.arg1 = npages;
    return n;
}

xenhsa_notify NotifyProducer::gpu_fault(uint64_t handle, uint64_t address, bool hang) noexcept {
    xenhsa_notify n{};
    n.type = XENHSA_NOTIFY_GPU_FAULT;
    n.handle = handle;
    n.arg0 = address;
    n.arg1 = hang ? XENHSA_GPU_FAULT_HANG : 0u;
    return n;
}

}  // namespace xenhsa::backend::core
