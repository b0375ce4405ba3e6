#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <xenhsa/xen/sim/grant_table.hpp>

namespace xenhsa::xen::sim {

namespace {

// Xen retries a few times before declaring the entry unstable (grant_table.c).
constexpr int kPinRetries = 4;

// (flags, domid) as the one 32-bit word Xen compares and swaps.
uint32_t* combo_word(grant_entry_v1_t& e) noexcept {
    static_assert(offsetof(grant_entry_v1_t, flags) == 0 && offsetof(grant_entry_v1_t, domid) == 2);
    return reinterpret_cast<uint32_t*>(&e);
}

uint16_t flags_of(uint32_t combo) noexcept { return static_cast<uint16_t>(combo & 0xFFFFu); }
DomId domid_of(uint32_t combo) noexcept { return static_cast<DomId>(combo >> 16); }

[[noreturn]] void grant_bug(const char* what, GrantRef ref) noexcept {
    std::fprintf(stderr, "xenhsa-sim: grant table bug: %s (ref %u)\n", what, ref);
    std::abort();
}

}  // namespace

GrantTable::GrantTable(DomId owner, std::span<grant_entry_v1_t> entries, uint64_t ram_pages)
    : owner_(owner), entries_(entries), ram_pages_(ram_pages), pins_(entries.size()) {}

Result<uint64_t> GrantTable::pin(GrantRef ref, DomId mapper, bool writable) noexcept {
    if (ref >= entries_.size()) {
        return errno_code(EINVAL);
    }
    grant_entry_v1_t& entry = entries_[ref];
    uint32_t* word = combo_word(entry);
    const uint16_t want = static_cast<uint16_t>(GTF_reading | (writable ? GTF_writing : 0));
    uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    for (int attempt = 0;; ++attempt) {
        const uint16_t flags = flags_of(seen);
        if ((flags & GTF_type_mask) != GTF_permit_access || domid_of(seen) != mapper) {
            return errno_code(EPERM);
        }
        if (writable && (flags & GTF_readonly) != 0) {
            return errno_code(EPERM);
        }
        const uint32_t pinned = seen | want;
        if (pinned == seen || __atomic_compare_exchange_n(word, &seen, pinned, false,
                                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (attempt == kPinRetries) {
            return errno_code(EAGAIN);
        }
    }
    // From here the guest can no longer end access; read the frame once.
    const uint64_t frame = __atomic_load_n(&entry.frame, __ATOMIC_ACQUIRE);
    PinCount& count = pins_[ref];
    ++count.readers;
    count.writers += writable ? 1 : 0;
    if (frame >= ram_pages_) {
        unpin(ref, writable);
        return errno_code(EFAULT);
    }
    return frame;
}

Result<void> GrantTable::pin_batch(std::span<const GrantRef> refs, DomId mapper, bool writable,
                                   std::span<uint64_t> frames, std::span<int> status) noexcept {
    const bool report = status.size() == refs.size();
    if (frames.size() != refs.size()) {
        return errno_code(EINVAL);
    }
    for (std::size_t i = 0; i < refs.size(); ++i) {
        auto frame = pin(refs[i], mapper, writable);
        if (!frame) {
            for (std::size_t j = 0; j < i; ++j) {  // undo exactly what succeeded
                unpin(refs[j], writable);
            }
            if (report) {
                std::fill(status.begin(), status.end(), ECANCELED);
                std::fill(status.begin(), status.begin() + static_cast<std::ptrdiff_t>(i), 0);
                status[i] = frame.error().value();
            }
            return frame.error();
        }
        frames[i] = frame.value();
        if (report) {
            status[i] = 0;
        }
    }
    return boost::outcome_v2::success();
}

void GrantTable::unpin(GrantRef ref, bool writable) noexcept {
    if (ref >= entries_.size() || pins_[ref].readers == 0 ||
        (writable && pins_[ref].writers == 0)) {
        grant_bug("unpin of an entry that is not pinned", ref);
    }
    PinCount& count = pins_[ref];
    --count.readers;
    count.writers -= writable ? 1 : 0;
    uint16_t clear = 0;
    if (count.writers == 0) {
        clear |= GTF_writing;
    }
    if (count.readers == 0) {
        clear |= GTF_reading;
    }
    if (clear != 0) {
        __atomic_fetch_and(&entries_[ref].flags, static_cast<uint16_t>(~clear), __ATOMIC_RELEASE);
    }
}

uint32_t GrantTable::pins(GrantRef ref) const noexcept {
    return ref < pins_.size() ? pins_[ref].readers : 0;
}

void GrantTable::grant(grant_entry_v1_t& entry, DomId peer, uint32_t frame,
                       bool readonly) noexcept {
    __atomic_store_n(&entry.domid, peer, __ATOMIC_RELAXED);
    __atomic_store_n(&entry.frame, frame, __ATOMIC_RELAXED);
    // Publish the flags last: the hypervisor must never see permit_access before the rest.
    __atomic_store_n(&entry.flags,
                     static_cast<uint16_t>(GTF_permit_access | (readonly ? GTF_readonly : 0)),
                     __ATOMIC_RELEASE);
}

Result<void> GrantTable::end_access(grant_entry_v1_t& entry) noexcept {
    uint16_t flags = __atomic_load_n(&entry.flags, __ATOMIC_ACQUIRE);
    do {
        if ((flags & (GTF_reading | GTF_writing)) != 0) {
            return errno_code(EBUSY);
        }
    } while (!__atomic_compare_exchange_n(&entry.flags, &flags, uint16_t{0}, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::xen::sim
