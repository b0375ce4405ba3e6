#include <cstring>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/notify_consumer.hpp>

namespace xenhsa::frontend {

Result<std::vector<xenhsa_notify>> NotifyConsumer::poll() {
    if (broken_ || page_.size() < sizeof(xenhsa_notify_page)) {
        broken_ = true;
        return Errc::backend_broken;
    }
    xenhsa_notify_page* page = shared();
    const uint32_t prod = xenhsa_index_load(&page->prod);
    const uint32_t ahead = prod - cons_;
    if (ahead > XENHSA_NOTIFY_SLOTS) {
        broken_ = true;
        return Errc::backend_broken;
    }
    std::vector<xenhsa_notify> out(ahead);
    for (uint32_t i = 0; i < ahead; ++i) {
        std::memcpy(&out[i], &page->slot[(cons_ + i) & (XENHSA_NOTIFY_SLOTS - 1)], sizeof out[i]);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);  // the copies are all that is used
    for (const xenhsa_notify& copy : out) {
        if (copy.type == 0 || copy.type >= XENHSA_NOTIFY_TYPE_COUNT_ || copy.pad != 0) {
            broken_ = true;
            return Errc::backend_broken;
        }
    }
    cons_ = prod;
    xenhsa_index_store(&page->cons, cons_);
    return out;
}

}  // namespace xenhsa::frontend
