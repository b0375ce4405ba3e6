// In-process stand-ins for a Client's surroundings: a Link over plain memory with a
// scripted backend that serves the ring synchronously whenever the guest kicks or waits,
// and grant sharer/mapper fakes that place pages where the guest asks.
#ifndef XENHSA_TESTS_FRONTEND_FAKE_LINK_HPP
#define XENHSA_TESTS_FRONTEND_FAKE_LINK_HPP

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/link.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::frontend::testing {

// What the scripted backend answers to one request (nullopt handler result: no answer).
struct FakeAnswer {
    uint32_t status = XENHSA_STATUS_OK;
    std::vector<std::byte> payload;

    template <class Wire>
    static FakeAnswer ok(const Wire& wire) {
        const auto* p = reinterpret_cast<const std::byte*>(&wire);
        return {XENHSA_STATUS_OK, std::vector<std::byte>(p, p + sizeof wire)};
    }
    static FakeAnswer status_only(uint32_t status) { return {status, {}}; }
};

using FakeHandler = std::function<std::optional<FakeAnswer>(const xenhsa_req_slot&)>;

class FakeLink final : public Link {
public:
    static constexpr uint32_t kOrder = 0;

    FakeLink() : ring_(std::span<std::byte>(ring_pages_), kOrder) { shared()->be_alive = 1; }

    FrontRing& ring() override { return ring_; }
    std::span<std::byte> notify_page() override { return notify_; }
    xenhsa_doorbell_page& doorbell_page() override {
        return *reinterpret_cast<xenhsa_doorbell_page*>(doorbell_.data());
    }
    [[nodiscard]] xen::DomId backend_domid() const noexcept override { return 0; }
    Result<void> kick() override {
        ++kicks;
        serve();
        return boost::outcome_v2::success();
    }
    Result<void> wait(std::chrono::milliseconds) override {
        serve();
        return check_backend();
    }
    Result<void> check_backend() override {
        if (broken) {
            return Errc::backend_broken;
        }
        if (xenhsa_index_load(&shared()->be_alive) == 0) {
            return Errc::backend_gone;
        }
        return boost::outcome_v2::success();
    }
    void mark_broken() noexcept override { broken = true; }

    // --- the backend's side -------------------------------------------------------------
    // Consumes every published request: the handler's answer, in order (or none).
    void serve() {
        const uint32_t prod = xenhsa_index_load(&shared()->req_prod);
        while (req_cons_ != prod) {
            xenhsa_req_slot copy;
            xenhsa_copy_req(&copy, slot(req_cons_));
            ++req_cons_;
            requests.push_back(copy);
            std::optional<FakeAnswer> answer =
                handler ? handler(copy) : std::optional<FakeAnswer>(default_answer(copy));
            if (answer) {
                respond(copy.hdr.seqno, answer->status, answer->payload);
            }
        }
    }
    void respond(uint32_t seqno, uint32_t status, std::span<const std::byte> payload) {
        xenhsa_encode_rsp(slot(rsp_prod_pvt_), seqno, status, payload.data(),
                          static_cast<uint32_t>(payload.size()));
        ++rsp_prod_pvt_;
        xenhsa_index_store(&shared()->rsp_prod, rsp_prod_pvt_);
    }
    void respond_raw(const xenhsa_rsp_slot& raw) {
        std::memcpy(slot(rsp_prod_pvt_), &raw, sizeof raw);
        ++rsp_prod_pvt_;
        xenhsa_index_store(&shared()->rsp_prod, rsp_prod_pvt_);
    }
    // OK with a zeroed payload of the right length, and fresh handles where one is due.
    FakeAnswer default_answer(const xenhsa_req_slot& req) {
        const uint32_t status = xenhsa_check_req(&req);
        const bool with_payload = status == XENHSA_STATUS_OK || req.hdr.cmd == XENHSA_CMD_HELLO;
        FakeAnswer a{status,
                     std::vector<std::byte>(with_payload ? xenhsa_rsp_len(req.hdr.cmd) : 0)};
        if (status == XENHSA_STATUS_OK && a.payload.size() >= 8 &&
            (req.hdr.cmd == XENHSA_CMD_MAP || req.hdr.cmd == XENHSA_CMD_PIN ||
             req.hdr.cmd == XENHSA_CMD_EVENT_CREATE)) {
            const uint64_t h = next_handle++;
            std::memcpy(a.payload.data(), &h, 8);
        }
        return a;
    }
    void kill_backend() { xenhsa_index_store(&shared()->be_alive, 0); }
    xenhsa_notify_page& notify() { return *reinterpret_cast<xenhsa_notify_page*>(notify_.data()); }
    void post(const xenhsa_notify& record) {
        notify().slot[notify_prod_ & (XENHSA_NOTIFY_SLOTS - 1)] = record;
        xenhsa_index_store(&notify().prod, ++notify_prod_);
    }

    FakeHandler handler;
    std::vector<xenhsa_req_slot> requests;
    uint64_t next_handle = 0x100;
    int kicks = 0;
    bool broken = false;

private:
    xenhsa_sring* shared() { return reinterpret_cast<xenhsa_sring*>(ring_pages_.data()); }
    std::byte* slot(uint32_t i) {
        return ring_pages_.data() + xenhsa_ring_slot_offset(i, XENHSA_RING_SLOTS(kOrder));
    }

    alignas(4096) std::array<std::byte, XENHSA_RING_BYTES(kOrder)> ring_pages_{};
    alignas(4096) std::array<std::byte, XENHSA_PAGE_SIZE> notify_{};
    alignas(4096) std::array<std::byte, XENHSA_PAGE_SIZE> doorbell_{};
    FrontRing ring_;
    uint32_t req_cons_ = 0;
    uint32_t rsp_prod_pvt_ = 0;
    uint32_t notify_prod_ = 0;
};

// Pages placed where the guest asks (MAP_FIXED over its reservation); refs count up and
// the backend can look a page up by ref.
class FakeSharer final : public xen::GrantSharer {
public:
    Result<xen::SharedPages> share(const xen::ShareSpec& spec) override {
        const std::size_t bytes = spec.pages * 4096;
        void* p = spec.at != nullptr ? mmap(spec.at, bytes, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                                     : mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return std::error_code(errno, std::generic_category());
        }
        auto* base = static_cast<std::byte*>(p);
        std::vector<xen::GrantRef> refs(spec.pages);
        for (std::size_t i = 0; i < spec.pages; ++i) {
            refs[i] = next_ref_++;
            pages_[refs[i]] = base + i * 4096;
        }
        fixed_[base] = spec.at != nullptr;
        ++shares;
        return xen::SharedPages(this, base, std::move(refs));
    }
    std::byte* page(xen::GrantRef ref) const {
        auto it = pages_.find(ref);
        return it == pages_.end() ? nullptr : it->second;
    }
    bool busy = false;  // end_access fails EBUSY while set
    int shares = 0;
    int released = 0;

protected:
    Result<void> end_access(std::byte*, std::span<const xen::GrantRef>) noexcept override {
        if (busy) {
            return std::error_code(EBUSY, std::generic_category());
        }
        return boost::outcome_v2::success();
    }
    void release(std::byte* addr, std::span<const xen::GrantRef> refs) noexcept override {
        ++released;
        for (xen::GrantRef r : refs) {
            pages_.erase(r);
        }
        if (fixed_[addr]) {
            mmap(addr, refs.size() * 4096, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        } else {
            munmap(addr, refs.size() * 4096);
        }
        fixed_.erase(addr);
    }
    xen::RevokeEffect revoke(std::byte* addr,
                             std::span<const xen::GrantRef> refs) noexcept override {
        release(addr, refs);
        return xen::RevokeEffect::enforced;
    }

private:
    xen::GrantRef next_ref_ = 8;
    std::map<xen::GrantRef, std::byte*> pages_;
    std::map<std::byte*, bool> fixed_;
};

// The backend's lent pages: one memfd, page i = ref (base + i). Truncating it is the
// simulator's enforced revoke.
class FakeMapper final : public xen::GrantMapper {
public:
    static constexpr xen::GrantRef kBase = 5000;

    explicit FakeMapper(std::size_t pages) : pages_(pages) {
        fd_ = memfd_create("fake-lend", MFD_CLOEXEC);
        (void)ftruncate(fd_, static_cast<off_t>(pages * 4096));
    }
    ~FakeMapper() override { close(fd_); }

    Result<xen::GrantMapping> map(const xen::GrantMapSpec& spec, std::span<int>) override {
        // Contiguous refs from kBase only: enough for the tests.
        if (spec.refs.empty() || spec.refs[0] < kBase ||
            spec.refs[0] - kBase + spec.refs.size() > pages_) {
            return std::error_code(EINVAL, std::generic_category());
        }
        for (std::size_t i = 1; i < spec.refs.size(); ++i) {
            if (spec.refs[i] != spec.refs[0] + i) {
                return std::error_code(EINVAL, std::generic_category());
            }
        }
        const std::size_t bytes = spec.refs.size() * 4096;
        const int prot = PROT_READ | (spec.writable ? PROT_WRITE : 0);
        const int flags = MAP_SHARED | (spec.at != nullptr ? MAP_FIXED : 0);
        void* p = mmap(spec.at, bytes, prot, flags, fd_, (spec.refs[0] - kBase) * 4096);
        if (p == MAP_FAILED) {
            return std::error_code(errno, std::generic_category());
        }
        ++maps;
        return xen::GrantMapping(this, static_cast<std::byte*>(p), spec.refs.size(),
                                 spec.at != nullptr);
    }
    Result<xen::GrantMapping> map_notify(xen::DomId, xen::GrantRef, bool,
                                         const xen::UnmapNotify&) override {
        return std::error_code(ENOSYS, std::generic_category());
    }
    void revoke_all() { (void)ftruncate(fd_, 0); }
    int maps = 0;
    int unmaps = 0;

protected:
    void unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept override {
        ++unmaps;
        if (fixed) {
            mmap(addr, pages * 4096, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        } else {
            munmap(addr, pages * 4096);
        }
    }

private:
    int fd_ = -1;
    std::size_t pages_;
};

}  // namespace xenhsa::frontend::testing

#endif
