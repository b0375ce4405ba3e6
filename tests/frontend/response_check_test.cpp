// The guest's response checks: every answer a broken backend may give is caught.
#include <gtest/gtest.h>

#include <xenhsa/frontend/response_check.hpp>

namespace {

using namespace xenhsa::frontend;

template <class Wire>
SentRequest sent(uint32_t cmd, const Wire& req) {
    return SentRequest{cmd, Payload::of_wire(req)};
}

SentRequest sent_handle(uint32_t cmd) { return sent(cmd, xenhsa_handle_req{5}); }

template <class Wire>
xenhsa_rsp_slot rsp(uint32_t status, const Wire& payload) {
    xenhsa_rsp_slot slot{};
    xenhsa_encode_rsp(&slot, 1, status, &payload, sizeof payload);
    return slot;
}

xenhsa_rsp_slot rsp_empty(uint32_t status) {
    xenhsa_rsp_slot slot{};
    xenhsa_encode_rsp(&slot, 1, status, nullptr, 0);
    return slot;
}

constexpr uint64_t kVa = 0x100000000000ull;

TEST(ResponseCheck, HeaderLengthMustMatchTheCommand) {
    auto ok = rsp(XENHSA_STATUS_OK, xenhsa_handle_rsp{3});
    EXPECT_EQ(check_response(ok, sent_handle(XENHSA_CMD_UNMAP)),
              uint32_t{XENHSA_STATUS_BAD_LENGTH});
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_OK), sent_handle(XENHSA_CMD_UNMAP)),
              uint32_t{XENHSA_STATUS_OK});
    // An error carries no payload.
    auto err = rsp(XENHSA_STATUS_BAD_HANDLE, xenhsa_handle_rsp{0});
    EXPECT_EQ(check_response(err, sent_handle(XENHSA_CMD_UNMAP)),
              uint32_t{XENHSA_STATUS_BAD_LENGTH});
}

TEST(ResponseCheck, UnknownStatusAndPadAreBroken) {
    auto bad = rsp_empty(XENHSA_STATUS_COUNT_);
    EXPECT_EQ(check_response(bad, sent_handle(XENHSA_CMD_FREE)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});
    auto pad = rsp_empty(XENHSA_STATUS_OK);
    pad.hdr.pad = 1;
    EXPECT_EQ(check_response(pad, sent_handle(XENHSA_CMD_FREE)), uint32_t{XENHSA_STATUS_BAD_PAD});
}

TEST(ResponseCheck, NewHandlesMustBeNonzero) {
    const xenhsa_pin_req pin{kVa, 4096, 0, 0};
    EXPECT_EQ(
        check_response(rsp(XENHSA_STATUS_OK, xenhsa_handle_rsp{0}), sent(XENHSA_CMD_PIN, pin)),
        uint32_t{XENHSA_STATUS_BAD_HANDLE});
    EXPECT_EQ(
        check_response(rsp(XENHSA_STATUS_OK, xenhsa_handle_rsp{9}), sent(XENHSA_CMD_PIN, pin)),
        uint32_t{XENHSA_STATUS_OK});
}

TEST(ResponseCheck, HelloMustStayInsideTheRequest) {
    const xenhsa_hello_req req{1, 1, XENHSA_FEATURE_GPU, 0, 1ull << 32};
    xenhsa_hello_rsp good{1, 16, XENHSA_FEATURE_GPU, kVa, 1ull << 32, 100, 100, 100, 15};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, good), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    auto extra = good;
    extra.features |= XENHSA_FEATURE_LEND;  // not asked for
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_OK, extra), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    auto version = good;
    version.version = 2;  // outside [1, 1]
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_OK, version), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    auto flight = good;
    flight.max_in_flight = 16;  // must stay below ring_slots
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_OK, flight), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    auto size = good;
    size.va_size = 1ull << 31;
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_OK, size), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
}

TEST(ResponseCheck, HelloErrorsCarryThePayloadAndAValidProposal) {
    const xenhsa_hello_req req{1, 1, 0, kVa, 1ull << 32};
    xenhsa_hello_rsp proposal{};
    proposal.va_base = kVa + (1ull << 32);
    proposal.va_size = 1ull << 32;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_BAD_ADDRESS, proposal), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    proposal.va_base = XENHSA_VA_LIMIT - 4096;  // runs past 2^47
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_BAD_ADDRESS, proposal), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_OK});
    // Every HELLO answer has the 48 bytes, so an empty error is broken.
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_VERSION), sent(XENHSA_CMD_HELLO, req)),
              uint32_t{XENHSA_STATUS_BAD_LENGTH});
}

TEST(ResponseCheck, AllocMustLandWhereAsked) {
    const xenhsa_alloc_req asked{kVa, 8192, 0, 0};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_alloc_rsp{4, kVa}),
                             sent(XENHSA_CMD_ALLOC, asked)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_alloc_rsp{4, kVa + 4096}),
                             sent(XENHSA_CMD_ALLOC, asked)),
              uint32_t{XENHSA_STATUS_BAD_ADDRESS});
    const xenhsa_alloc_req anywhere{0, 8192, 0, 0};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_alloc_rsp{4, kVa + 4096}),
                             sent(XENHSA_CMD_ALLOC, anywhere)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_alloc_rsp{4, kVa + 1}),
                             sent(XENHSA_CMD_ALLOC, anywhere)),
              uint32_t{XENHSA_STATUS_BAD_ADDRESS});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_alloc_rsp{0, kVa}),
                             sent(XENHSA_CMD_ALLOC, anywhere)),
              uint32_t{XENHSA_STATUS_BAD_HANDLE});
}

TEST(ResponseCheck, LendUsesTheSharedCheck) {
    const xenhsa_lend_req req{kVa, 2, XENHSA_MAP_RW};
    xenhsa_lend_rsp good{};
    good.handle = 3;
    good.npages = 2;
    good.flags = XENHSA_MAP_RW;
    good.nrefs = 2;
    good.gref[0] = 10;
    good.gref[1] = 11;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, good), sent(XENHSA_CMD_LEND, req)),
              uint32_t{XENHSA_STATUS_OK});
    auto ro = good;
    ro.flags = 0;  // RW bit differs from the request
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, ro), sent(XENHSA_CMD_LEND, req)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});
    auto stale = good;
    stale.gref[40] = 1;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, stale), sent(XENHSA_CMD_LEND, req)),
              uint32_t{XENHSA_STATUS_BAD_PAD});
}

TEST(ResponseCheck, QueueCreateDoorbellMustFitThePage) {
    const xenhsa_queue_create_req req{0, 1, 100, 0, kVa, 4096, kVa + 4096, kVa + 4104, 0};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_queue_create_rsp{2, 503, 0}),
                             sent(XENHSA_CMD_QUEUE_CREATE, req)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_queue_create_rsp{2, 504, 0}),
                             sent(XENHSA_CMD_QUEUE_CREATE, req)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});
}

TEST(ResponseCheck, QueryChunkMustStayInsideTheResult) {
    const xenhsa_query_req req{XENHSA_QUERY_NODE, 0, 0, 224};
    xenhsa_query_rsp q{};
    q.total_len = 296;
    q.chunk_len = 72;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, q), sent(XENHSA_CMD_QUERY, req)),
              uint32_t{XENHSA_STATUS_OK});
    q.chunk_len = 73;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, q), sent(XENHSA_CMD_QUERY, req)),
              uint32_t{XENHSA_STATUS_BAD_LENGTH});
    q.chunk_len = 72;
    q.data[100] = 1;  // garbage past chunk_len
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, q), sent(XENHSA_CMD_QUERY, req)),
              uint32_t{XENHSA_STATUS_BAD_PAD});
}

TEST(ResponseCheck, EventCreateAndWaitPayloads) {
    const xenhsa_event_create_req create{0, 0, 0, 0};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_create_rsp{1, 7, 0, kVa}),
                             sent(XENHSA_CMD_EVENT_CREATE, create)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_create_rsp{1, 7, 1, 0}),
                             sent(XENHSA_CMD_EVENT_CREATE, create)),
              uint32_t{XENHSA_STATUS_BAD_PAD});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_create_rsp{1, 7, 0, kVa + 3}),
                             sent(XENHSA_CMD_EVENT_CREATE, create)),
              uint32_t{XENHSA_STATUS_BAD_ADDRESS});

    xenhsa_event_wait_req any{};
    any.count = 3;
    any.event[0] = 1;
    any.event[1] = 2;
    any.event[2] = 3;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_wait_rsp{0b010, 0}),
                             sent(XENHSA_CMD_EVENT_WAIT, any)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_wait_rsp{0b1000, 0}),
                             sent(XENHSA_CMD_EVENT_WAIT, any)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});  // event[3] does not exist
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_wait_rsp{0, 0}),
                             sent(XENHSA_CMD_EVENT_WAIT, any)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});  // OK but nothing fired
    auto all = any;
    all.flags = XENHSA_WAIT_ALL;
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_wait_rsp{0b011, 0}),
                             sent(XENHSA_CMD_EVENT_WAIT, all)),
              uint32_t{XENHSA_STATUS_BAD_ARGUMENT});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_event_wait_rsp{0b111, 0}),
                             sent(XENHSA_CMD_EVENT_WAIT, all)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_TIMEOUT), sent(XENHSA_CMD_EVENT_WAIT, any)),
              uint32_t{XENHSA_STATUS_OK});
}

TEST(ResponseCheck, MapToGpuAddressMustBeAPageAlignedVa) {
    const xenhsa_map_to_gpu_req req{5, 1, 0, 0};
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_map_to_gpu_rsp{kVa}),
                             sent(XENHSA_CMD_MAP_TO_GPU, req)),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_EQ(check_response(rsp(XENHSA_STATUS_OK, xenhsa_map_to_gpu_rsp{XENHSA_VA_LIMIT}),
                             sent(XENHSA_CMD_MAP_TO_GPU, req)),
              uint32_t{XENHSA_STATUS_BAD_ADDRESS});
}

TEST(ResponseCheck, UnknownCommandMayOnlyGetAnError) {
    SentRequest garbage{0x77, {}};
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_BAD_COMMAND), garbage),
              uint32_t{XENHSA_STATUS_OK});
    EXPECT_NE(check_response(rsp_empty(XENHSA_STATUS_OK), garbage), uint32_t{XENHSA_STATUS_OK});
    EXPECT_NE(check_response(rsp(XENHSA_STATUS_BAD_COMMAND, xenhsa_handle_rsp{0}), garbage),
              uint32_t{XENHSA_STATUS_OK});
}

}  // namespace

namespace {

// A raw slot a hostile guest sent that fails its own checks: only an error may answer it.
TEST(ResponseCheck, AnInvalidRawRequestMustNotBeAnsweredOk) {
    SentRequest invalid = sent_handle(XENHSA_CMD_UNMAP);
    invalid.valid = false;
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_OK), invalid), XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_BAD_PAD), invalid), XENHSA_STATUS_OK);
    EXPECT_EQ(check_response(rsp_empty(XENHSA_STATUS_OK), sent_handle(XENHSA_CMD_UNMAP)),
              XENHSA_STATUS_OK);
}

}  // namespace
