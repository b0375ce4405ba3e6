#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/grant_list.hpp>
#include <xenhsa/frontend/probe.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace xenhsa::frontend {

namespace {

using Clock = std::chrono::steady_clock;
// A wait never sleeps longer than this between liveness checks (be_alive is memory, so
// a dead backend is noticed even when no event arrives).
constexpr std::chrono::milliseconds kPollSlice{100};

std::error_code sys_error(int e)
{
    return {e, std::generic_category()};
}

template <class Wire>
std::span<const std::byte> bytes_of(const Wire &wire)
{
    return std::as_bytes(std::span(&wire, 1));
}

// The struct size each QUERY kind returns.
uint32_t query_result_size(uint32_t kind)
{
    switch (kind) {
        case XENHSA_QUERY_VERSION: return sizeof(xenhsa_version_info);
        case XENHSA_QUERY_SYSTEM: return sizeof(xenhsa_system_props);
        case XENHSA_QUERY_NODE: return sizeof(xenhsa_node_props);
        case XENHSA_QUERY_MEM_BANK: return sizeof(xenhsa_mem_bank);
        case XENHSA_QUERY_CACHE: return sizeof(xenhsa_cache);
        case XENHSA_QUERY_IO_LINK: return sizeof(xenhsa_io_link);
        case XENHSA_QUERY_CLOCK: return sizeof(xenhsa_clock_counters);
        case XENHSA_QUERY_KERNEL: return sizeof(xenhsa_kernel_info);
        default: return 0;
    }
}

template <class Wire>
Result<Wire> as_wire(Result<std::vector<std::byte>> bytes)
{
    if (!bytes) {
        return bytes.error();
    }
    Wire out;
    std::memcpy(&out, bytes.value().data(), sizeof out);  // query() checked the size
    return out;
}

// Ends access to pages the backend should have let go; retries briefly, then leaves
// them to the hypervisor.
void end_access_soon(xen::SharedPages &pages)
{
    const auto deadline = Clock::now() + std::chrono::milliseconds(500);
    while (pages.data() != nullptr && !pages.end_access() && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pages = xen::SharedPages{};
}

}  // namespace

Client::Client(Link &link, xen::GrantSharer &sharer, xen::GrantMapper &mapper,
               ClientOptions options)
    : link_(link), sharer_(sharer), mapper_(mapper), options_(options), notify_(link.notify_page())
{
}

Client::~Client() = default;

std::error_code Client::fail_broken() noexcept
{
    if (!broken_) {
        broken_ = true;
        link_.mark_broken();
    }
    return Errc::backend_broken;
}

uint32_t Client::next_seqno() noexcept
{
    // Unique among outstanding requests and replies not yet taken (2.5).
    do {
        ++seqno_;
    } while (seqno_ == 0 || outstanding_.count(seqno_) != 0 || ready_.count(seqno_) != 0);
    return seqno_;
}

Result<uint32_t> Client::submit(const SentRequest &sent, const xenhsa_req_slot *raw)
{
    if (broken_) {
        return Errc::backend_broken;
    }
    FrontRing &ring = link_.ring();
    const auto deadline = Clock::now() + options_.timeout;
    while (ring.outstanding() >= ring.slots()) {  // no credit: wait for a response
        if (auto d = drain(); !d) {
            return d.error();
        }
        if (ring.outstanding() < ring.slots()) {
            break;
        }
        if (Clock::now() >= deadline) {
            return sys_error(ETIMEDOUT);
        }
        if (!ring.final_check()) {
            if (auto w = link_.wait(kPollSlice); !w) {
                return w.error();
            }
        }
    }
    const uint32_t seqno = next_seqno();
    Result<void> pushed = boost::outcome_v2::success();
    if (raw != nullptr) {
        xenhsa_req_slot slot = *raw;
        slot.hdr.seqno = seqno;
        pushed = ring.push_raw(slot);
    } else {
        pushed = ring.push(sent.cmd, seqno,
                           std::span<const std::byte>(sent.payload.bytes.data(), sent.payload.len));
    }
    if (!pushed) {
        return pushed.error();
    }
    outstanding_.emplace(seqno, Outstanding{sent, false});
    if (ring.publish()) {
        if (auto k = link_.kick(); !k) {
            return k.error();
        }
    }
    return seqno;
}

Result<void> Client::drain()
{
    if (broken_) {
        return Errc::backend_broken;
    }
    FrontRing &ring = link_.ring();
    for (;;) {
        auto popped = ring.pop();
        if (!popped) {
            return fail_broken();
        }
        if (!popped.value()) {
            break;
        }
        const xenhsa_rsp_slot &rsp = *popped.value();
        auto it = outstanding_.find(rsp.hdr.seqno);
        if (it == outstanding_.end() || check_response(rsp, it->second.sent) != XENHSA_STATUS_OK) {
            return fail_broken();
        }
        if (!it->second.abandoned) {
            Reply reply;
            reply.status = rsp.hdr.status;
            reply.payload = Payload::of(
                std::as_bytes(std::span(rsp.payload))
                    .first(std::min<std::size_t>(rsp.hdr.len, XENHSA_SLOT_PAYLOAD_MAX)));
            ready_.emplace(rsp.hdr.seqno, reply);
        }
        outstanding_.erase(it);
    }
    auto records = notify_.poll();
    if (!records) {
        return fail_broken();
    }
    for (const xenhsa_notify &record : records.value()) {
        if (auto h = handle_notify(record); !h) {
            return h;
        }
    }
    return boost::outcome_v2::success();
}

Result<void> Client::handle_notify(const xenhsa_notify &record)
{
    if (record.type == XENHSA_NOTIFY_REVOKED) {
        // A REVOKED for a LEND already unmapped crossed our UNMAP: nothing to do.
        auto it = lends_.find(record.handle);
        if (it != lends_.end()) {
            if (record.arg0 != it->second.va || record.arg1 != it->second.npages ||
                !revoked_.insert(record.handle).second) {
                return fail_broken();  // another range, or a second REVOKED (section 6)
            }
        }
    } else if (record.type == XENHSA_NOTIFY_GPU_FAULT) {
        auto it = handles_.find(record.handle);
        if (it != handles_.end() && it->second == HandleKind::queue &&
            !faulted_.insert(record.handle).second) {
            return fail_broken();
        }
    }
    notifications_.push_back(record);
    if (on_notify_) {
        on_notify_(record);
    }
    return boost::outcome_v2::success();
}

Result<Reply> Client::receive(uint32_t seqno)
{
    return receive(seqno, Clock::now() + options_.timeout);
}

Result<Reply> Client::receive(uint32_t seqno, Clock::time_point deadline)
{
    FrontRing &ring = link_.ring();
    for (;;) {
        if (auto d = drain(); !d) {
            return d.error();
        }
        if (auto it = ready_.find(seqno); it != ready_.end()) {
            Reply reply = it->second;
            ready_.erase(it);
            return reply;
        }
        auto pending = outstanding_.find(seqno);
        if (pending == outstanding_.end()) {
            return sys_error(EINVAL);  // never sent, or already taken
        }
        if (auto alive = link_.check_backend(); !alive) {
            return alive.error();
        }
        if (ring.final_check()) {
            continue;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            pending->second.abandoned = true;
            return sys_error(ETIMEDOUT);
        }
        const auto slice = std::min<Clock::duration>(deadline - now, kPollSlice);
        if (auto w = link_.wait(std::chrono::ceil<std::chrono::milliseconds>(slice)); !w) {
            return w.error();
        }
    }
}

Result<uint32_t> Client::send(uint32_t cmd, std::span<const std::byte> payload)
{
    if (payload.size() > XENHSA_SLOT_PAYLOAD_MAX) {
        return sys_error(EMSGSIZE);
    }
    return submit(SentRequest{cmd, Payload::of(payload)}, nullptr);
}

Result<uint32_t> Client::send_raw(const xenhsa_req_slot &slot)
{
    // The payload check needs the request as the backend will see it.
    SentRequest sent{slot.hdr.cmd, Payload::of(std::as_bytes(std::span(slot.payload)))};
    return submit(sent, &slot);
}

Result<Reply> Client::call(uint32_t cmd, std::span<const std::byte> payload)
{
    auto seqno = send(cmd, payload);
    if (!seqno) {
        return seqno.error();
    }
    return receive(seqno.value());
}

Result<Reply> Client::call_raw(const xenhsa_req_slot &slot)
{
    auto seqno = send_raw(slot);
    if (!seqno) {
        return seqno.error();
    }
    return receive(seqno.value());
}

Result<Reply> Client::expect_ok(uint32_t cmd, std::span<const std::byte> payload)
{
    auto reply = call(cmd, payload);
    if (!reply) {
        return reply.error();
    }
    if (reply.value().status != XENHSA_STATUS_OK) {
        return status_error(reply.value().status);
    }
    return reply;
}

Result<void> Client::add_handle(Handle handle, HandleKind kind)
{
    // The backend never reuses a handle value within a connection (3.6).
    if (!handles_.emplace(handle, kind).second) {
        return fail_broken();
    }
    return boost::outcome_v2::success();
}

Result<void> Client::release_handle(uint32_t cmd, Handle handle)
{
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(cmd, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    handles_.erase(handle);
    object_va_.erase(handle);
    faulted_.erase(handle);
    return boost::outcome_v2::success();
}

// --- HELLO ---------------------------------------------------------------------------

Result<Session> Client::hello(const HelloOptions &options)
{
    xenhsa_hello_req req{XENHSA_PROTO_VERSION, XENHSA_PROTO_VERSION, options.features,
                         options.va_base, options.va_size};
    VaReservation held;
    if (options.va_base != 0) {
        auto r = VaReservation::reserve_at(options.va_base, options.va_size);
        if (!r) {
            return r.error();
        }
        held = std::move(r.value());
    }
    // A range of our own, different from `avoid` (which stays held meanwhile).
    auto own_range = [&](VaReservation avoid) -> Result<VaReservation> {
        auto r = VaReservation::reserve(options.va_size);
        avoid.reset();
        return r;
    };
    for (uint32_t attempt = 0; attempt < XENHSA_HELLO_MAX_ATTEMPTS; ++attempt) {
        auto reply = call(XENHSA_CMD_HELLO, bytes_of(req));
        if (!reply) {
            return reply.error();
        }
        const auto rsp = reply.value().payload.as<xenhsa_hello_rsp>();
        const uint32_t status = reply.value().status;
        if (status == XENHSA_STATUS_OK && rsp.ring_slots != link_.ring().slots()) {
            return fail_broken();
        }
        if (status == XENHSA_STATUS_OK && req.va_base != 0) {
            if (rsp.va_base != req.va_base) {
                return fail_broken();
            }
            reservation_ = std::move(held);
            allocator_ = VaAllocator(rsp.va_base, rsp.va_size);
            session_ = rsp;
            return rsp;
        }
        if (status != XENHSA_STATUS_OK && status != XENHSA_STATUS_BAD_ADDRESS) {
            return status_error(status);
        }
        // A proposal (OK to va_base 0, or BAD_ADDRESS): take it if it is free here.
        auto same = VaReservation::reserve_at(rsp.va_base, rsp.va_size);
        if (same) {
            held = std::move(same.value());
        } else {
            auto own = own_range(std::move(held));
            if (!own) {
                return own.error();
            }
            held = std::move(own.value());
        }
        req.va_base = held.base();
    }
    return status_error(XENHSA_STATUS_BAD_STATE);
}

// --- QUERY ---------------------------------------------------------------------------

Result<std::vector<std::byte>> Client::query(uint32_t kind, uint32_t node, uint32_t index)
{
    const uint32_t want = query_result_size(kind);
    std::vector<std::byte> out;
    uint32_t offset = 0;
    do {
        const xenhsa_query_req req{kind, node, index, offset};
        auto reply = expect_ok(XENHSA_CMD_QUERY, bytes_of(req));
        if (!reply) {
            return reply.error();
        }
        const auto rsp = reply.value().payload.as<xenhsa_query_rsp>();
        // A result of another size, or a chunk that does not advance, is a broken backend.
        if (rsp.total_len != want || rsp.chunk_len == 0) {
            return fail_broken();
        }
        out.insert(out.end(), reinterpret_cast<const std::byte *>(rsp.data),
                   reinterpret_cast<const std::byte *>(rsp.data) + rsp.chunk_len);
        offset += rsp.chunk_len;
    } while (offset < want);
    return out;
}

Result<xenhsa_version_info> Client::query_version()
{
    return as_wire<xenhsa_version_info>(query(XENHSA_QUERY_VERSION));
}

Result<xenhsa_system_props> Client::query_system()
{
    return as_wire<xenhsa_system_props>(query(XENHSA_QUERY_SYSTEM));
}

Result<xenhsa_node_props> Client::query_node(uint32_t node)
{
    return as_wire<xenhsa_node_props>(query(XENHSA_QUERY_NODE, node));
}

Result<xenhsa_kernel_info> Client::query_kernel(uint32_t index)
{
    return as_wire<xenhsa_kernel_info>(query(XENHSA_QUERY_KERNEL, 0, index));
}

Result<std::optional<xenhsa_kernel_info>> Client::find_kernel(std::string_view name)
{
    auto system = query_system();
    if (!system) {
        return system.error();
    }
    const uint32_t count = std::min(system.value().num_kernels, uint32_t{XENHSA_QUERY_MAX_INDEX});
    for (uint32_t i = 0; i < count; ++i) {
        auto info = query_kernel(i);
        if (!info) {
            return info.error();
        }
        xenhsa_kernel_info k = info.value();
        k.name[XENHSA_KERNEL_NAME_SIZE - 1] = 0;  // the sender's NUL is not trusted
        if (std::string_view(reinterpret_cast<const char *>(k.name)) == name) {
            return std::optional<xenhsa_kernel_info>(k);
        }
    }
    return std::optional<xenhsa_kernel_info>{};
}

// --- memory --------------------------------------------------------------------------

Result<GuestBuffer> Client::allocate(std::size_t pages, bool backend_writable, uint64_t align)
{
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
    auto shared =
        sharer_.share({link_.backend_domid(), pages, backend_writable,
                       reinterpret_cast<std::byte *>(static_cast<uintptr_t>(va.value()))});
    if (!shared) {
        (void)allocator_.release(va.value(), bytes);
        return shared.error();
    }
    return GuestBuffer(&allocator_, va.value(), std::move(shared.value()));
}

Result<Handle> Client::map(const GuestBuffer &buffer, bool writable)
{
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

Result<void> Client::unmap(Handle handle)
{
    // A LEND's VA comes back only through unmap(LentBuffer &): its mapping may still
    // be in place here, and a buffer placed over it would be unmapped with it.
    return unmap_handle(handle, false);
}

Result<void> Client::unmap_handle(Handle handle, bool lend_va_is_free)
{
    if (auto r = release_handle(XENHSA_CMD_UNMAP, handle); !r) {
        return r;
    }
    if (auto it = lends_.find(handle); it != lends_.end()) {
        if (lend_va_is_free) {
            (void)allocator_.release(it->second.va,
                                     uint64_t{it->second.npages} * XENHSA_PAGE_SIZE);
        }
        lends_.erase(it);
        revoked_.erase(handle);
    }
    return boost::outcome_v2::success();
}

Result<LentBuffer> Client::lend(uint32_t npages, bool writable)
{
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
    const xenhsa_lend_req req{va.value(), npages, writable ? XENHSA_MAP_RW : 0u};
    auto reply = expect_ok(XENHSA_CMD_LEND, bytes_of(req));
    if (!reply) {
        (void)allocator_.release(va.value(), bytes);
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_lend_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::lend); !added) {
        return added.error();
    }
    lends_.emplace(rsp.handle, LendInfo{va.value(), npages});

    // From here a failure gives the LEND back (and the VA with it).
    auto give_back = [&](std::error_code err) -> std::error_code {
        if (!broken_) {
            (void)unmap_handle(rsp.handle, true);  // nothing is mapped at the VA yet
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
    auto mapping = mapper_.map({link_.backend_domid(), refs, writable,
                                reinterpret_cast<std::byte *>(static_cast<uintptr_t>(va.value()))});
    if (!mapping) {
        return give_back(mapping.error());
    }
    LentBuffer lent;
    lent.handle = rsp.handle;
    lent.va = va.value();
    lent.npages = npages;
    lent.writable = writable;
    lent.mapping = std::move(mapping.value());
    return lent;
}

Result<void> Client::unmap(LentBuffer &lent)
{
    lent.mapping.reset();  // the range stays reserved PROT_NONE
    if (auto r = unmap_handle(lent.handle, true); !r) {
        return r;
    }
    lent.handle = 0;
    return boost::outcome_v2::success();
}

Result<Handle> Client::pin(uint64_t va, uint64_t size, uint32_t flags)
{
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

Result<void> Client::unpin(Handle handle)
{
    return release_handle(XENHSA_CMD_UNPIN, handle);
}

Result<uint64_t> Client::map_to_gpu(Handle handle, uint64_t node_mask, uint32_t flags)
{
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

Result<void> Client::unmap_from_gpu(Handle handle)
{
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_UNMAP_FROM_GPU, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    return boost::outcome_v2::success();
}

Result<xenhsa_alloc_rsp> Client::alloc(uint64_t size, uint32_t node, uint32_t flags,
                                       bool backend_places)
{
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

Result<void> Client::free(Handle handle)
{
    // The VA stays out of use: the backend may defer the free while a queue holds the
    // memory (5.20), so placing something new there could collide.
    return release_handle(XENHSA_CMD_FREE, handle);
}

// --- queues and events ---------------------------------------------------------------

Result<xenhsa_queue_create_rsp> Client::queue_create(const xenhsa_queue_create_req &req)
{
    auto reply = expect_ok(XENHSA_CMD_QUEUE_CREATE, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_queue_create_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::queue); !added) {
        return added.error();
    }
    return rsp;
}

Result<void> Client::queue_destroy(Handle handle)
{
    return release_handle(XENHSA_CMD_QUEUE_DESTROY, handle);
}

Result<xenhsa_event_create_rsp> Client::event_create(uint32_t type, uint32_t node, uint32_t flags)
{
    const xenhsa_event_create_req req{type, node, flags, 0};
    auto reply = expect_ok(XENHSA_CMD_EVENT_CREATE, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_event_create_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::event); !added) {
        return added.error();
    }
    return rsp;
}

Result<void> Client::event_destroy(Handle handle)
{
    return release_handle(XENHSA_CMD_EVENT_DESTROY, handle);
}

Result<void> Client::event_set(Handle handle)
{
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_EVENT_SET, bytes_of(req));
    return reply ? Result<void>(boost::outcome_v2::success()) : Result<void>(reply.error());
}

Result<void> Client::event_reset(Handle handle)
{
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_EVENT_RESET, bytes_of(req));
    return reply ? Result<void>(boost::outcome_v2::success()) : Result<void>(reply.error());
}

Result<uint32_t> Client::event_wait_async(std::span<const Handle> events, bool all,
                                          uint32_t timeout_ms)
{
    if (events.empty() || events.size() > XENHSA_WAIT_MAX_EVENTS) {
        return sys_error(EINVAL);
    }
    xenhsa_event_wait_req req{};
    req.count = static_cast<uint32_t>(events.size());
    req.flags = all ? XENHSA_WAIT_ALL : 0u;
    req.timeout_ms = timeout_ms;
    std::copy(events.begin(), events.end(), req.event);
    return send(XENHSA_CMD_EVENT_WAIT, bytes_of(req));
}

Result<uint32_t> Client::finish_wait(uint32_t seqno)
{
    auto it = outstanding_.find(seqno);
    if (it == outstanding_.end() && ready_.count(seqno) == 0) {
        return sys_error(EINVAL);
    }
    auto deadline = Clock::time_point::max();
    if (it != outstanding_.end()) {
        const uint32_t timeout_ms = it->second.sent.payload.as<xenhsa_event_wait_req>().timeout_ms;
        if (timeout_ms != XENHSA_WAIT_INFINITE) {
            deadline = Clock::now() + std::chrono::milliseconds(timeout_ms) + options_.timeout;
        }
    }
    auto reply = receive(seqno, deadline);
    if (!reply) {
        return reply.error();
    }
    if (reply.value().status != XENHSA_STATUS_OK) {
        return status_error(reply.value().status);
    }
    return reply.value().payload.as<xenhsa_event_wait_rsp>().signaled_mask;
}

Result<uint32_t> Client::event_wait(std::span<const Handle> events, bool all, uint32_t timeout_ms)
{
    auto seqno = event_wait_async(events, all, timeout_ms);
    if (!seqno) {
        return seqno.error();
    }
    return finish_wait(seqno.value());
}

Result<void> Client::event_wait_cancel(uint32_t wait_seqno)
{
    const xenhsa_event_wait_cancel_req req{wait_seqno, 0};
    auto reply = call(XENHSA_CMD_EVENT_WAIT_CANCEL, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const uint32_t status = reply.value().status;
    if (status != XENHSA_STATUS_OK && status != XENHSA_STATUS_BAD_ARGUMENT) {
        return status_error(status);
    }
    return boost::outcome_v2::success();
}

// --- notifications -------------------------------------------------------------------

std::vector<xenhsa_notify> Client::take_notifications()
{
    std::vector<xenhsa_notify> out(notifications_.begin(), notifications_.end());
    notifications_.clear();
    return out;
}

Result<void> Client::pump(std::chrono::milliseconds timeout)
{
    if (auto d = drain(); !d) {
        return d;
    }
    if (auto alive = link_.check_backend(); !alive) {
        return alive;
    }
    if (!link_.ring().final_check()) {
        if (auto w = link_.wait(timeout); !w) {
            return w;
        }
    }
    return drain();
}

Result<xenhsa_notify> Client::wait_notification(uint32_t type, Handle handle,
                                                std::chrono::milliseconds timeout)
{
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        for (auto it = notifications_.begin(); it != notifications_.end(); ++it) {
            if (it->type == type && it->handle == handle) {
                const xenhsa_notify found = *it;
                notifications_.erase(it);
                return found;
            }
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return sys_error(ETIMEDOUT);
        }
        const auto slice = std::min<Clock::duration>(deadline - now, kPollSlice);
        if (auto p = pump(std::chrono::ceil<std::chrono::milliseconds>(slice)); !p) {
            return p.error();
        }
    }
}

}  // namespace xenhsa::frontend
