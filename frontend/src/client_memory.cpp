// Client: MAP, UNMAP, LEND, PIN, MAP_TO_GPU and ALLOC, on buffers in the window.
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/probe.hpp>

#include "client_detail.hpp"

namespace xenhsa::frontend {

using detail::bytes_of;
using detail::Clock;
using detail::sys_error;

namespace {

// Ends access to pages the backend should have let go; retries briefly, then leaves
// them to the hypervisor.
void end_access_soon(xen::SharedPages& pages) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (pages.data() != nullptr && !pages.end_access() && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pages = xen::SharedPages{};
}

}  // namespace

// --- memory --------------------------------------------------------------------------

Result<GuestBuffer> Client::allocate(std::size_t pages, bool backend_writable, uint64_t align) {
    if (!session_) {
        return Errc::not_connected;
    }
    if (pages == 0 || pages > XENHSA_MAP_MAX_PAGES) {
        return sys_error(EINVAL);
    }
    const uint64_t bytes = uint64_t{pages} * XENHSA_PAGE_SIZE;
    auto va = allocator_.allocate(bytes, align);
    if (!va) {
        return va.error();
    }
    auto shared = sharer_.share({link_.backend_domid(), pages, backend_writable,
                                 reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va.value()))});
    if (!shared) {
        (void)allocator_.release(va.value(), bytes);
        return shared.error();
    }
    return GuestBuffer(&allocator_, va.value(), std::move(shared.value()));
}

Result<GuestBuffer> Client::share_at(uint64_t va, std::size_t pages, bool backend_writable,
                                     std::byte* at,
                                     void (*copy_bytes)(void*, const void*, std::size_t)) {
    if (!session_) {
        return Errc::not_connected;
    }
    if (pages == 0 || pages > XENHSA_MAP_MAX_PAGES || va % XENHSA_PAGE_SIZE != 0 ||
        !reservation_.contains(va, uint64_t{pages} * XENHSA_PAGE_SIZE)) {
        return sys_error(EINVAL);
    }
    xen::ShareSpec spec{
        link_.backend_domid(), pages, backend_writable,
        at != nullptr ? at : reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va))};
    spec.copy_bytes = at != nullptr ? copy_bytes : nullptr;
    auto shared = sharer_.share(spec);
    if (!shared) {
        return shared.error();
    }
    return GuestBuffer(nullptr, va, std::move(shared.value()));
}

Result<Handle> Client::map(const GuestBuffer& buffer, bool writable) {
    if (!buffer) {
        return sys_error(EINVAL);
    }
    const auto refs = buffer.refs();
    xen::SharedPages indirect;
    if (needs_indirect(refs.size())) {
        if (!granted(XENHSA_FEATURE_INDIRECT)) {
            return status_error(XENHSA_STATUS_UNSUPPORTED);
        }
        const uint32_t n = indirect_pages_for(refs.size());
        auto shared = sharer_.share({link_.backend_domid(), n, false, nullptr});
        if (!shared) {
            return shared.error();
        }
        indirect = std::move(shared.value());
        auto packed = pack_indirect(
            refs, std::span<std::byte>(indirect.data(), std::size_t{n} * XENHSA_PAGE_SIZE));
        if (!packed) {
            return packed.error();
        }
    }
    auto req = make_map_req(buffer.va(), refs, writable, indirect.refs());
    if (!req) {
        return req.error();
    }
    auto reply = expect_ok(XENHSA_CMD_MAP, bytes_of(req.value()));
    // The backend copied the indirect pages once and unmapped them (5.4).
    end_access_soon(indirect);
    if (!reply) {
        return reply.error();
    }
    const Handle handle = reply.value().payload.as<xenhsa_handle_rsp>().handle;
    if (auto added = add_handle(handle, HandleKind::map); !added) {
        return added.error();
    }
    return handle;
}

Result<void> Client::unmap(Handle handle) {
    // A LEND's VA comes back only through unmap(LentBuffer &): its mapping may still
    // be in place here, and a buffer placed over it would be unmapped with it.
    return unmap_handle(handle, false);
}

Result<void> Client::unmap_handle(Handle handle, bool lend_va_is_free) {
    if (auto r = release_handle(XENHSA_CMD_UNMAP, handle); !r) {
        return r;
    }
    if (auto it = lends_.find(handle); it != lends_.end()) {
        if (lend_va_is_free) {
            (void)allocator_.release(it->second.va, uint64_t{it->second.npages} * XENHSA_PAGE_SIZE);
        }
        lends_.erase(it);
        revoked_.erase(handle);
    }
    return boost::outcome_v2::success();
}

Result<LentBuffer> Client::lend(uint32_t npages, bool writable) {
    if (!session_) {
        return Errc::not_connected;
    }
    if (npages == 0 || npages > XENHSA_MAP_MAX_PAGES) {
        return sys_error(EINVAL);
    }
    const uint64_t bytes = uint64_t{npages} * XENHSA_PAGE_SIZE;
    auto va = allocator_.allocate(bytes);
    if (!va) {
        return va.error();
    }
    const std::size_t lends_before = lends_.size();
    auto lent = lend_at(va.value(), npages, writable);
    if (!lent && lends_.size() == lends_before) {
        (void)allocator_.release(va.value(), bytes);  // no LEND left at it
    }
    return lent;
}

Result<LentBuffer> Client::lend_at(uint64_t va, uint32_t npages, bool writable, std::byte* at) {
    if (!session_) {
        return Errc::not_connected;
    }
    if (npages == 0 || npages > XENHSA_MAP_MAX_PAGES || va % XENHSA_PAGE_SIZE != 0 ||
        !reservation_.contains(va, uint64_t{npages} * XENHSA_PAGE_SIZE)) {
        return sys_error(EINVAL);
    }
    const xenhsa_lend_req req{va, npages, writable ? XENHSA_MAP_RW : 0u};
    auto reply = expect_ok(XENHSA_CMD_LEND, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_lend_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::lend); !added) {
        return added.error();
    }
    lends_.emplace(rsp.handle, LendInfo{va, npages});

    // From here a failure gives the LEND back; the VA stays the caller's.
    auto give_back = [&](std::error_code err) -> std::error_code {
        if (!broken_) {
            (void)unmap_handle(rsp.handle, false);  // nothing is mapped at the VA yet
        }
        return err;
    };
    std::vector<GrantRef> refs;
    if ((rsp.flags & XENHSA_MAP_INDIRECT) != 0) {
        auto pages = mapper_.map({link_.backend_domid(),
                                  std::span<const GrantRef>(rsp.gref, rsp.nrefs), false, nullptr});
        if (!pages) {
            return give_back(pages.error());
        }
        std::vector<std::byte> copy(pages.value().size());
        if (auto c = probed_copy(copy.data(), pages.value().data(), copy.size()); !c) {
            return give_back(c.error());
        }
        pages.value().reset();
        auto unpacked = unpack_indirect(copy, npages);
        if (!unpacked) {
            return give_back(fail_broken());
        }
        refs = std::move(unpacked.value());
    } else {
        refs = inline_refs(rsp);
    }
    auto mapping = mapper_.map(
        {link_.backend_domid(), refs, writable,
         at != nullptr ? at : reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va))});
    if (!mapping) {
        return give_back(mapping.error());
    }
    LentBuffer lent;
    lent.handle = rsp.handle;
    lent.va = va;
    lent.npages = npages;
    lent.writable = writable;
    lent.mapping = std::move(mapping.value());
    return lent;
}

Result<void> Client::unmap(LentBuffer& lent) {
    lent.mapping.reset();  // the range stays reserved PROT_NONE
    if (auto r = unmap_handle(lent.handle, true); !r) {
        return r;
    }
    lent.handle = 0;
    return boost::outcome_v2::success();
}

Result<Handle> Client::pin(uint64_t va, uint64_t size, uint32_t flags) {
    const xenhsa_pin_req req{va, size, flags, 0};
    auto reply = expect_ok(XENHSA_CMD_PIN, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const Handle handle = reply.value().payload.as<xenhsa_handle_rsp>().handle;
    if (auto added = add_handle(handle, HandleKind::pin); !added) {
        return added.error();
    }
    object_va_[handle] = va;
    return handle;
}

Result<void> Client::unpin(Handle handle) { return release_handle(XENHSA_CMD_UNPIN, handle); }

Result<uint64_t> Client::map_to_gpu(Handle handle, uint64_t node_mask, uint32_t flags) {
    const xenhsa_map_to_gpu_req req{handle, node_mask, flags, 0};
    auto reply = expect_ok(XENHSA_CMD_MAP_TO_GPU, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const uint64_t gpu_va = reply.value().payload.as<xenhsa_map_to_gpu_rsp>().gpu_va;
    // xenhsa mirrors: the GPU sees the guest's VA (5.9).
    if (auto it = object_va_.find(handle); it != object_va_.end() && it->second != gpu_va) {
        return fail_broken();
    }
    return gpu_va;
}

Result<void> Client::unmap_from_gpu(Handle handle) {
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_UNMAP_FROM_GPU, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    return boost::outcome_v2::success();
}

Result<xenhsa_alloc_rsp> Client::alloc(uint64_t size, uint32_t node, uint32_t flags,
                                       bool backend_places) {
    if (!session_) {
        return Errc::not_connected;
    }
    uint64_t va = 0;
    if (!backend_places) {
        auto placed = allocator_.allocate(size);
        if (!placed) {
            return placed.error();
        }
        va = placed.value();
    }
    const xenhsa_alloc_req req{va, size, node, flags};
    auto reply = expect_ok(XENHSA_CMD_ALLOC, bytes_of(req));
    if (!reply) {
        if (va != 0) {
            (void)allocator_.release(va, size);
        }
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_alloc_rsp>();
    // A backend-placed range must lie in the window and clear of everything we placed.
    if (backend_places && !allocator_.claim(rsp.va, size)) {
        return fail_broken();
    }
    if (auto added = add_handle(rsp.handle, HandleKind::alloc); !added) {
        return added.error();
    }
    object_va_[rsp.handle] = rsp.va;
    return rsp;
}

Result<xenhsa_alloc_rsp> Client::alloc_at(uint64_t va, uint64_t size, uint32_t node,
                                          uint32_t flags) {
    if (!session_) {
        return Errc::not_connected;
    }
    if (va == 0 || !reservation_.contains(va, size)) {
        return sys_error(EINVAL);
    }
    const xenhsa_alloc_req req{va, size, node, flags};
    auto reply = expect_ok(XENHSA_CMD_ALLOC, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_alloc_rsp>();
    if (rsp.va != va) {
        return fail_broken();  // an ALLOC at a given VA is placed exactly there (5.11)
    }
    if (auto added = add_handle(rsp.handle, HandleKind::alloc); !added) {
        return added.error();
    }
    object_va_[rsp.handle] = rsp.va;
    return rsp;
}

Result<void> Client::free(Handle handle) {
    // The VA stays out of use: the backend may defer the free while a queue holds the
    // memory (5.20), so placing something new there could collide.
    return release_handle(XENHSA_CMD_FREE, handle);
}

}  // namespace xenhsa::frontend
