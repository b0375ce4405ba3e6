// An independent reference of the wire protocol's syntactic checks, written from
// docs/protocol.md (sections 3.3, 3.5, 5.x "Validation" and "Frontend check") rather than
// from validate.h: field offsets, sizes and limits are the document's numbers, read
// byte by byte from the message. The proto fuzz target compares validate.h against it.
#ifndef XENHSA_TESTS_FUZZ_PROTO_ORACLE_HPP
#define XENHSA_TESTS_FUZZ_PROTO_ORACLE_HPP

#include <cstdint>
#include <span>

namespace xenhsa::fuzz::oracle {

inline constexpr uint32_t kOk = 0;
inline constexpr uint32_t kBadCommand = 1;
inline constexpr uint32_t kBadLength = 2;
inline constexpr uint32_t kBadPad = 3;
inline constexpr uint32_t kBadArgument = 4;
inline constexpr uint32_t kBadHandle = 5;
inline constexpr uint32_t kBadAddress = 6;
inline constexpr uint32_t kStatusCount = 18;

inline constexpr uint32_t kSlotSize = 248;
inline constexpr uint32_t kPayloadMax = 232;
inline constexpr uint32_t kLenUnknown = 0xFFFFFFFFu;

// Section 4's table: request and OK-response payload sizes, kLenUnknown for other cmds.
uint32_t request_size(uint32_t cmd);
uint32_t response_size(uint32_t cmd);

// A whole request slot (248 bytes): header (3.3), then the command's payload checks.
uint32_t check_request(std::span<const uint8_t, kSlotSize> slot);
// A response header against the command the frontend sent (3.5).
uint32_t check_response_header(std::span<const uint8_t, 16> header, uint32_t cmd);
// Frontend payload checks (3.7); `request` is the request payload the frontend sent.
uint32_t check_hello_response(std::span<const uint8_t> rsp, std::span<const uint8_t> req);
uint32_t check_query_response(std::span<const uint8_t> rsp, std::span<const uint8_t> req);
uint32_t check_lend_response(std::span<const uint8_t> rsp, std::span<const uint8_t> req);
uint32_t check_queue_create_response(std::span<const uint8_t> rsp);

// [va, va + size): nonempty, page aligned, below 2^47.
bool va_range_ok(uint64_t va, uint64_t size);

uint64_t le(std::span<const uint8_t> bytes, uint32_t offset, uint32_t width);

}  // namespace xenhsa::fuzz::oracle

#endif
