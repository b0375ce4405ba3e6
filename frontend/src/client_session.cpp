// Client: HELLO (VA-window negotiation) and QUERY.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "client_detail.hpp"

namespace xenhsa::frontend {

using detail::bytes_of;

namespace {

// The struct size each QUERY kind returns.
uint32_t query_result_size(uint32_t kind) {
    switch (kind) {
        case XENHSA_QUERY_VERSION:
            return sizeof(xenhsa_version_info);
        case XENHSA_QUERY_SYSTEM:
            return sizeof(xenhsa_system_props);
        case XENHSA_QUERY_NODE:
            return sizeof(xenhsa_node_props);
        case XENHSA_QUERY_MEM_BANK:
            return sizeof(xenhsa_mem_bank);
        case XENHSA_QUERY_CACHE:
            return sizeof(xenhsa_cache);
        case XENHSA_QUERY_IO_LINK:
            return sizeof(xenhsa_io_link);
        case XENHSA_QUERY_CLOCK:
            return sizeof(xenhsa_clock_counters);
        case XENHSA_QUERY_KERNEL:
            return sizeof(xenhsa_kernel_info);
        case XENHSA_QUERY_TILE_CONFIG:
            return sizeof(xenhsa_tile_config);
        default:
            return 0;
    }
}

template <class Wire>
Result<Wire> as_wire(Result<std::vector<std::byte>> bytes) {
    if (!bytes) {
        return bytes.error();
    }
    Wire out;
    std::memcpy(&out, bytes.value().data(), sizeof out);  // query() checked the size
    return out;
}

}  // namespace

// --- HELLO ---------------------------------------------------------------------------

Result<Session> Client::hello(const HelloOptions& options) {
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
        // BAD_ADDRESS without a proposal refuses the asked window outright (hello.h).
        if ((status != XENHSA_STATUS_OK && status != XENHSA_STATUS_BAD_ADDRESS) ||
            (status == XENHSA_STATUS_BAD_ADDRESS && rsp.va_base == 0)) {
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

Result<std::vector<std::byte>> Client::query(uint32_t kind, uint32_t node, uint32_t index) {
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
        out.insert(out.end(), reinterpret_cast<const std::byte*>(rsp.data),
                   reinterpret_cast<const std::byte*>(rsp.data) + rsp.chunk_len);
        offset += rsp.chunk_len;
    } while (offset < want);
    return out;
}

Result<xenhsa_version_info> Client::query_version() {
    return as_wire<xenhsa_version_info>(query(XENHSA_QUERY_VERSION));
}

Result<xenhsa_system_props> Client::query_system() {
    return as_wire<xenhsa_system_props>(query(XENHSA_QUERY_SYSTEM));
}

Result<xenhsa_node_props> Client::query_node(uint32_t node) {
    return as_wire<xenhsa_node_props>(query(XENHSA_QUERY_NODE, node));
}

Result<xenhsa_tile_config> Client::query_tile_config(uint32_t node) {
    return as_wire<xenhsa_tile_config>(query(XENHSA_QUERY_TILE_CONFIG, node, 0));
}

Result<xenhsa_kernel_info> Client::query_kernel(uint32_t index) {
    return as_wire<xenhsa_kernel_info>(query(XENHSA_QUERY_KERNEL, 0, index));
}

Result<std::optional<xenhsa_kernel_info>> Client::find_kernel(std::string_view name) {
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
        if (std::string_view(reinterpret_cast<const char*>(k.name)) == name) {
            return std::optional<xenhsa_kernel_info>(k);
        }
    }
    return std::optional<xenhsa_kernel_info>{};
}

}  // namespace xenhsa::frontend
