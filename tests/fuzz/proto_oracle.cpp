#include "proto_oracle.hpp"

namespace xenhsa::fuzz::oracle {
namespace {

constexpr uint64_t kPage = 4096;
#if defined(__aarch64__)
constexpr uint64_t kVaLimit = uint64_t{1} << 48;  // arm64's 48-bit user space
#else
constexpr uint64_t kVaLimit = uint64_t{1} << 47;  // x86-64's lower half
#endif
constexpr uint64_t kWindowMin = uint64_t{1} << 30;
constexpr uint64_t kWindowMax = uint64_t{1} << 43;
constexpr uint64_t kWindowFloor = uint64_t{1} << 30;
constexpr uint32_t kInlineGrefs = 52;
constexpr uint32_t kGrefsPerIndirect = 1024;
constexpr uint32_t kMaxPages = kInlineGrefs * kGrefsPerIndirect;  // 53248

enum : uint32_t {
    kHello = 1,
    kQuery,
    kMap,
    kUnmap,
    kLend,
    kPin,
    kUnpin,
    kMapToGpu,
    kUnmapFromGpu,
    kAlloc,
    kFree,
    kQueueCreate,
    kQueueDestroy,
    kEventCreate,
    kEventDestroy,
    kEventSet,
    kEventReset,
    kEventWait,
    kEventWaitCancel
};

bool aligned(uint64_t v) { return v % kPage == 0; }

uint32_t nrefs_for(uint32_t npages, uint32_t flags) {
    return (flags & 2u) != 0 ? (npages + kGrefsPerIndirect - 1) / kGrefsPerIndirect : npages;
}

bool zero_from(std::span<const uint8_t> p, uint32_t begin, uint32_t end) {
    for (uint32_t i = begin; i < end; ++i) {
        if (p[i] != 0) {
            return false;
        }
    }
    return true;
}

// 5.1
uint32_t hello(std::span<const uint8_t> p) {
    const uint64_t vmin = le(p, 0, 4), vmax = le(p, 4, 4);
    const uint64_t base = le(p, 16, 8), size = le(p, 24, 8);
    if (vmin == 0 || vmin > vmax) {
        return kBadArgument;
    }
    if (size < kWindowMin || size > kWindowMax || !aligned(size)) {
        return kBadArgument;
    }
    if (base != 0 && (base < kWindowFloor || !va_range_ok(base, size))) {
        return kBadAddress;
    }
    return kOk;
}

// 5.2
uint32_t query(std::span<const uint8_t> p) {
    const uint64_t kind = le(p, 0, 4), node = le(p, 4, 4), index = le(p, 8, 4);
    const uint64_t offset = le(p, 12, 4);
    if (kind == 0 || kind >= 10) {
        return kBadArgument;
    }
    const bool uses_node = (kind >= 3 && kind <= 7) || kind == 9;
    const bool uses_index = (kind >= 4 && kind <= 6) || kind == 8;
    if ((!uses_node && node != 0) || (!uses_index && index != 0)) {
        return kBadPad;
    }
    if (node >= 64 || index >= 1024 || offset >= 4096) {
        return kBadArgument;
    }
    return kOk;
}

// The page list of 5.4 (MAP requests) and 5.6 (LEND responses): flags, counts, tail.
uint32_t page_list(std::span<const uint8_t> p, uint64_t npages, uint64_t flags, uint64_t nrefs) {
    if ((flags & ~uint64_t{3}) != 0 || npages == 0 || npages > kMaxPages || nrefs > kInlineGrefs ||
        nrefs != nrefs_for(static_cast<uint32_t>(npages), static_cast<uint32_t>(flags))) {
        return kBadArgument;
    }
    if (!zero_from(p, 24 + 4 * static_cast<uint32_t>(nrefs), 24 + 4 * kInlineGrefs)) {
        return kBadPad;
    }
    return kOk;
}

// 5.4
uint32_t map(std::span<const uint8_t> p) {
    if (le(p, 20, 4) != 0) {
        return kBadPad;
    }
    const uint64_t npages = le(p, 8, 4);
    if (const uint32_t s = page_list(p, npages, le(p, 12, 4), le(p, 16, 4)); s != kOk) {
        return s;
    }
    return va_range_ok(le(p, 0, 8), npages * kPage) ? kOk : kBadAddress;
}

// 5.6
uint32_t lend(std::span<const uint8_t> p) {
    const uint64_t npages = le(p, 8, 4), flags = le(p, 12, 4);
    if ((flags & ~uint64_t{1}) != 0 || npages == 0 || npages > kMaxPages) {
        return kBadArgument;
    }
    return va_range_ok(le(p, 0, 8), npages * kPage) ? kOk : kBadAddress;
}

// 5.7
uint32_t pin(std::span<const uint8_t> p) {
    if (le(p, 20, 4) != 0) {
        return kBadPad;
    }
    if ((le(p, 16, 4) & ~uint64_t{3}) != 0) {
        return kBadArgument;
    }
    return va_range_ok(le(p, 0, 8), le(p, 8, 8)) ? kOk : kBadAddress;
}

// 5.9
uint32_t map_to_gpu(std::span<const uint8_t> p) {
    if (le(p, 20, 4) != 0) {
        return kBadPad;
    }
    if (le(p, 0, 8) == 0) {
        return kBadHandle;
    }
    if (le(p, 8, 8) == 0 || (le(p, 16, 4) & ~uint64_t{1}) != 0) {
        return kBadArgument;
    }
    return kOk;
}

// 5.11
uint32_t alloc(std::span<const uint8_t> p) {
    const uint64_t va = le(p, 0, 8), size = le(p, 8, 8);
    if ((le(p, 20, 4) & ~uint64_t{0x1f}) != 0 || le(p, 16, 4) >= 64 || size == 0 ||
        size > kWindowMax || !aligned(size)) {
        return kBadArgument;
    }
    if (va != 0 && !va_range_ok(va, size)) {
        return kBadAddress;
    }
    return kOk;
}

bool pointer_ok(uint64_t va) { return va != 0 && va % 8 == 0 && va < kVaLimit; }

// 5.13
uint32_t queue_create(std::span<const uint8_t> p) {
    const uint64_t node = le(p, 0, 4), type = le(p, 4, 4), percentage = le(p, 8, 4);
    const auto priority = static_cast<int32_t>(static_cast<uint32_t>(le(p, 12, 4)));
    const uint64_t ring_size = le(p, 24, 8);
    // 1 AQL, 2 SDMA (whether SDMA was negotiated is the backend's check)
    if ((type != 1 && type != 2) || node >= 64 || percentage > 100 || priority < -3 ||
        priority > 3 || ring_size < 4096 || ring_size > (uint64_t{4} << 20) ||
        (ring_size & (ring_size - 1)) != 0) {
        return kBadArgument;
    }
    const uint64_t ring = le(p, 16, 8), rptr = le(p, 32, 8), wptr = le(p, 40, 8);
    if (!va_range_ok(ring, ring_size) || !pointer_ok(rptr) || !pointer_ok(wptr)) {
        return kBadAddress;
    }
    // Disjoint: each pointer is one 8-byte word, the ring a page-aligned range.
    const auto in_ring = [&](uint64_t ptr) { return ptr >= ring && ptr - ring < ring_size; };
    if (in_ring(rptr) || in_ring(wptr) || rptr == wptr) {
        return kBadAddress;
    }
    return kOk;
}

// 5.15
uint32_t event_create(std::span<const uint8_t> p) {
    if (le(p, 12, 4) != 0) {
        return kBadPad;
    }
    if (le(p, 0, 4) >= 9 || (le(p, 8, 4) & ~uint64_t{3}) != 0 || le(p, 4, 4) >= 64) {
        return kBadArgument;
    }
    return kOk;
}

// 5.17
uint32_t event_wait(std::span<const uint8_t> p) {
    if (le(p, 12, 4) != 0) {
        return kBadPad;
    }
    const uint64_t count = le(p, 0, 4);
    if (count == 0 || count > 16 || (le(p, 4, 4) & ~uint64_t{1}) != 0) {
        return kBadArgument;
    }
    if (!zero_from(p, 16 + 8 * static_cast<uint32_t>(count), 16 + 8 * 16)) {
        return kBadPad;
    }
    for (uint32_t i = 0; i < count; ++i) {
        if (le(p, 16 + 8 * i, 8) == 0) {
            return kBadHandle;
        }
    }
    return kOk;
}

}  // namespace

uint64_t le(std::span<const uint8_t> bytes, uint32_t offset, uint32_t width) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < width; ++i) {
        v |= uint64_t{bytes[offset + i]} << (8 * i);
    }
    return v;
}

bool va_range_ok(uint64_t va, uint64_t size) {
    return size != 0 && aligned(va) && aligned(size) && va < kVaLimit && size <= kVaLimit &&
           va + size <= kVaLimit;
}

uint32_t request_size(uint32_t cmd) {
    switch (cmd) {
        case kHello:
            return 32;
        case kQuery:
            return 16;
        case kMap:
            return 232;
        case kLend:
            return 16;
        case kPin:
            return 24;
        case kMapToGpu:
            return 24;
        case kAlloc:
            return 24;
        case kQueueCreate:
            return 56;
        case kEventCreate:
            return 16;
        case kEventWait:
            return 144;
        case kEventWaitCancel:
            return 8;
        case kUnmap:
        case kUnpin:
        case kUnmapFromGpu:
        case kFree:
        case kQueueDestroy:
        case kEventDestroy:
        case kEventSet:
        case kEventReset:
            return 8;
        default:
            return kLenUnknown;
    }
}

uint32_t response_size(uint32_t cmd) {
    switch (cmd) {
        case kHello:
            return 48;
        case kQuery:
            return 232;
        case kMap:
        case kPin:
            return 8;
        case kLend:
            return 232;
        case kMapToGpu:
            return 8;
        case kAlloc:
            return 16;
        case kQueueCreate:
            return 16;
        case kEventCreate:
            return 24;
        case kEventWait:
            return 8;
        case kUnmap:
        case kUnpin:
        case kUnmapFromGpu:
        case kFree:
        case kQueueDestroy:
        case kEventDestroy:
        case kEventSet:
        case kEventReset:
        case kEventWaitCancel:
            return 0;
        default:
            return kLenUnknown;
    }
}

uint32_t check_request(std::span<const uint8_t, kSlotSize> slot) {
    const std::span<const uint8_t> s(slot);
    const auto cmd = static_cast<uint32_t>(le(s, 0, 4));
    const uint64_t len = le(s, 4, 4);
    const uint32_t want = request_size(cmd);
    if (want == kLenUnknown) {
        return kBadCommand;
    }
    if (len > kPayloadMax || len != want) {
        return kBadLength;
    }
    if (le(s, 12, 4) != 0) {
        return kBadPad;
    }
    const auto p = s.subspan(16, want);
    switch (cmd) {
        case kHello:
            return hello(p);
        case kQuery:
            return query(p);
        case kMap:
            return map(p);
        case kLend:
            return lend(p);
        case kPin:
            return pin(p);
        case kMapToGpu:
            return map_to_gpu(p);
        case kAlloc:
            return alloc(p);
        case kQueueCreate:
            return queue_create(p);
        case kEventCreate:
            return event_create(p);
        case kEventWait:
            return event_wait(p);
        case kEventWaitCancel:
            return le(p, 4, 4) != 0 ? kBadPad : kOk;
        default:
            return le(p, 0, 8) == 0 ? kBadHandle : kOk;  // the one-handle requests
    }
}

uint32_t check_response_header(std::span<const uint8_t, 16> header, uint32_t cmd) {
    const std::span<const uint8_t> h(header);
    const uint64_t status = le(h, 4, 4), len = le(h, 8, 4);
    const uint32_t full = response_size(cmd);
    if (full == kLenUnknown) {
        return kBadCommand;
    }
    const bool with_payload = status == kOk || cmd == kHello;
    if (len > kPayloadMax || len != (with_payload ? full : 0)) {
        return kBadLength;
    }
    if (status >= kStatusCount) {
        return kBadArgument;
    }
    return le(h, 12, 4) != 0 ? kBadPad : kOk;
}

uint32_t check_hello_response(std::span<const uint8_t> r, std::span<const uint8_t> req) {
    const uint64_t slots = le(r, 4, 4);
    if ((le(r, 8, 8) & ~le(req, 8, 8)) != 0 || slots == 0 || (slots & (slots - 1)) != 0 ||
        slots > 128 || le(r, 44, 4) >= slots) {
        return kBadArgument;
    }
    if (!va_range_ok(le(r, 16, 8), le(r, 24, 8)) || le(r, 16, 8) < kWindowFloor ||
        le(r, 24, 8) != le(req, 24, 8)) {
        return kBadAddress;
    }
    return kOk;
}

uint32_t check_query_response(std::span<const uint8_t> r, std::span<const uint8_t> req) {
    const uint64_t total = le(r, 0, 4), chunk = le(r, 4, 4), offset = le(req, 12, 4);
    if (chunk > 224 || total > 4096 || offset > total || chunk > total - offset) {
        return kBadLength;
    }
    return zero_from(r, 8 + static_cast<uint32_t>(chunk), 232) ? kOk : kBadPad;
}

uint32_t check_lend_response(std::span<const uint8_t> r, std::span<const uint8_t> req) {
    if (le(r, 20, 4) != 0) {
        return kBadPad;
    }
    if (le(r, 0, 8) == 0) {
        return kBadHandle;
    }
    const uint64_t npages = le(r, 8, 4), flags = le(r, 12, 4);
    if (npages != le(req, 8, 4) || (flags & 1) != (le(req, 12, 4) & 1)) {
        return kBadArgument;
    }
    return page_list(r, npages, flags, le(r, 16, 4));
}

uint32_t check_queue_create_response(std::span<const uint8_t> r) {
    if (le(r, 12, 4) != 0) {
        return kBadPad;
    }
    if (le(r, 0, 8) == 0) {
        return kBadHandle;
    }
    return le(r, 8, 4) < 504 ? kOk : kBadArgument;
}

}  // namespace xenhsa::fuzz::oracle
