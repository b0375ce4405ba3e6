// ForeignMemory of the simulated hypervisor (dom0 only): maps a domain's gfns, that is the
// pages of its shared segments, all or nothing. No pins: like privcmd, the mapping keeps
// the memory itself alive (here: the memfd pages) until it goes.
#include <sys/mman.h>

#include <new>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

class SimForeignMapping final : public ForeignMapping {
public:
    SimForeignMapping(std::byte* addr, std::size_t pages) noexcept : addr_(addr), pages_(pages) {}
    SimForeignMapping(const SimForeignMapping&) = delete;
    SimForeignMapping& operator=(const SimForeignMapping&) = delete;
    ~SimForeignMapping() override { client::unmap(addr_, pages_ * kPageSize); }

    [[nodiscard]] std::span<std::byte> bytes() const noexcept override {
        return {addr_, pages_ * kPageSize};
    }

private:
    std::byte* addr_;
    std::size_t pages_;
};

class SimForeignMemory final : public ForeignMemory {
public:
    explicit SimForeignMemory(Channel ch) noexcept : ch_(std::move(ch)) {}

    Result<std::unique_ptr<ForeignMapping>> map(DomId domid, std::span<const uint64_t> gfns,
                                                bool writable) override {
        const std::size_t n = gfns.size();
        if (n == 0 || n > wire::kMaxBatch || domid == kDomIdInvalid) return errno_code(EINVAL);
        wire::ForeignReq req{};
        req.domid = domid;
        req.writable = writable ? 1 : 0;
        req.count = static_cast<uint32_t>(n);
        auto replies =
            ch_.call_multi(wire::Op::foreign_map, wire::as_bytes(req), wire::bytes_of(gfns));
        if (!replies) return replies.error();
        if (auto ok = check(replies.value().front()); !ok) return ok.error();
        auto base = reserve(n * kPageSize);
        if (!base) return base.error();
        std::size_t failed = 0;
        const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
        if (auto mapped = map_runs(base.value(), n, replies.value(), prot, failed); !mapped) {
            client::unmap(base.value(), n * kPageSize);
            return mapped.error();
        }
        try {
            return std::unique_ptr<ForeignMapping>(
                std::make_unique<SimForeignMapping>(base.value(), n));
        } catch (const std::bad_alloc&) {
            client::unmap(base.value(), n * kPageSize);
            return errno_code(ENOMEM);
        }
    }

private:
    Channel ch_;
};

}  // namespace

Result<std::unique_ptr<ForeignMemory>> make_foreign_memory(Channel ch) {
    try {
        return std::unique_ptr<ForeignMemory>(std::make_unique<SimForeignMemory>(std::move(ch)));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
