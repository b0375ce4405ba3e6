// The backend's end of the notify page (docs/protocol.md §6): REVOKED and GPU_FAULT
// records. The producer index is private and never read back; `cons` is read once per
// batch and never trusted (ahead of the producer, or more than 64 behind: full). While
// the page is full, records wait in a private backlog, in order: nothing is dropped.
// The backlog is allocated once; a guest that lets it fill up is not consuming its
// notifications at all, and post() reports that so the caller can disconnect it.
#ifndef XENHSA_BACKEND_CORE_NOTIFY_PRODUCER_HPP
#define XENHSA_BACKEND_CORE_NOTIFY_PRODUCER_HPP

#include <xenhsa/proto/notify.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace xenhsa::backend::core {

class NotifyProducer {
public:
    // `page` may be null (no notify page yet: everything waits in the backlog).
    // `backlog_capacity` bounds the private queue; it is allocated here, once.
    NotifyProducer(xenhsa_notify_page* page, uint32_t backlog_capacity);

    // Called after records were published, to kick the event channel.
    void set_kick(std::function<void()> kick) { kick_ = std::move(kick); }
    void attach(xenhsa_notify_page* page) noexcept { page_ = page; }

    // Queues one record and publishes what fits. Never allocates. false when the backlog
    // is full: the record is NOT queued and the guest must be disconnected.
    [[nodiscard]] bool post(const xenhsa_notify& record) noexcept;
    // Publishes what fits now (call it on every wake-up while backlog() != 0).
    void flush() noexcept;

    [[nodiscard]] uint32_t backlog() const noexcept { return count_; }
    [[nodiscard]] uint32_t published() const noexcept { return prod_pvt_; }
    [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }

    static xenhsa_notify revoked(uint64_t handle, uint64_t va, uint64_t npages) noexcept;
    static xenhsa_notify gpu_fault(uint64_t handle, uint64_t address, bool hang = false) noexcept;

private:
    xenhsa_notify_page* page_;
    std::vector<xenhsa_notify> backlog_;
    uint32_t head_ = 0;
    uint32_t count_ = 0;
    uint32_t prod_pvt_ = 0;
    bool overflowed_ = false;
    std::function<void()> kick_;
};

}  // namespace xenhsa::backend::core

#endif
