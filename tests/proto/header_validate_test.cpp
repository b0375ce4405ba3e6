// Request and response headers: every malformed header is rejected with its status.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

namespace {

xenhsa_req_hdr header(uint32_t cmd, uint32_t len, uint32_t pad = 0) {
    return xenhsa_req_hdr{cmd, len, 1, pad};
}

TEST(ProtoReqHeader, AcceptsEveryCommandAtItsLength) {
    for (uint32_t cmd = 1; cmd < XENHSA_CMD_COUNT_; ++cmd) {
        const auto h = header(cmd, xenhsa_req_len(cmd));
        EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_OK) << xenhsa_cmd_name(cmd);
    }
}

TEST(ProtoReqHeader, RejectsUnknownCommands) {
    for (uint32_t cmd : {0u, uint32_t{XENHSA_CMD_COUNT_}, 0x100u, 0xFFFFFFFFu}) {
        const auto h = header(cmd, 8);
        EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_COMMAND) << cmd;
    }
}

TEST(ProtoReqHeader, RejectsShortLength) {
    for (uint32_t cmd = 1; cmd < XENHSA_CMD_COUNT_; ++cmd) {
        const uint32_t want = xenhsa_req_len(cmd);
        for (uint32_t len : {0u, want - 1, want - 8}) {
            if (len >= want) {
                continue;
            }
            const auto h = header(cmd, len);
            EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_LENGTH)
                << xenhsa_cmd_name(cmd) << " len " << len;
        }
    }
}

TEST(ProtoReqHeader, RejectsLongerThanTheCommand) {
    const auto h = header(XENHSA_CMD_UNMAP, xenhsa_req_len(XENHSA_CMD_UNMAP) + 8);
    EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_LENGTH);
}

TEST(ProtoReqHeader, RejectsLengthPastTheSlot) {
    for (uint32_t len : {XENHSA_SLOT_PAYLOAD_MAX + 1, XENHSA_SLOT_SIZE, 0x10000u, 0xFFFFFFFFu}) {
        const auto h = header(XENHSA_CMD_MAP, len);
        EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_LENGTH) << len;
    }
}

TEST(ProtoReqHeader, RejectsNonzeroPad) {
    for (uint32_t pad : {1u, 0x80000000u, 0xFFFFFFFFu}) {
        const auto h = header(XENHSA_CMD_HELLO, xenhsa_req_len(XENHSA_CMD_HELLO), pad);
        EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_PAD) << pad;
    }
}

TEST(ProtoReqHeader, FirstViolationDecidesTheStatus) {
    // Unknown command beats a bad length; a bad length beats a bad pad.
    auto h = header(0xDEADu, 0xFFFFu, 1);
    EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_COMMAND);
    h = header(XENHSA_CMD_QUERY, 3, 1);
    EXPECT_EQ(xenhsa_check_req_hdr(&h), XENHSA_STATUS_BAD_LENGTH);
}

TEST(ProtoRspHeader, AcceptsSuccessWithTheCommandsPayload) {
    for (uint32_t cmd = 1; cmd < XENHSA_CMD_COUNT_; ++cmd) {
        const xenhsa_rsp_hdr h{1, XENHSA_STATUS_OK, xenhsa_rsp_len(cmd), 0};
        EXPECT_EQ(xenhsa_check_rsp_hdr(&h, cmd), XENHSA_STATUS_OK) << xenhsa_cmd_name(cmd);
    }
}

TEST(ProtoRspHeader, ErrorsCarryNoPayloadExceptHello) {
    const xenhsa_rsp_hdr map_err{1, XENHSA_STATUS_QUOTA, 0, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&map_err, XENHSA_CMD_MAP), XENHSA_STATUS_OK);
    const xenhsa_rsp_hdr map_err_payload{1, XENHSA_STATUS_QUOTA, 8, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&map_err_payload, XENHSA_CMD_MAP), XENHSA_STATUS_BAD_LENGTH);
    const xenhsa_rsp_hdr hello_err{1, XENHSA_STATUS_BAD_ADDRESS, uint32_t{sizeof(xenhsa_hello_rsp)},
                                   0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&hello_err, XENHSA_CMD_HELLO), XENHSA_STATUS_OK);
    const xenhsa_rsp_hdr hello_short{1, XENHSA_STATUS_BAD_ADDRESS, 0, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&hello_short, XENHSA_CMD_HELLO), XENHSA_STATUS_BAD_LENGTH);
}

TEST(ProtoRspHeader, RejectsUnknownStatusPadAndOversizedLength) {
    const xenhsa_rsp_hdr bad_status{1, XENHSA_STATUS_COUNT_, 0, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&bad_status, XENHSA_CMD_UNMAP), XENHSA_STATUS_BAD_ARGUMENT);
    const xenhsa_rsp_hdr bad_pad{1, XENHSA_STATUS_OK, 0, 2};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&bad_pad, XENHSA_CMD_UNMAP), XENHSA_STATUS_BAD_PAD);
    const xenhsa_rsp_hdr too_long{1, XENHSA_STATUS_OK, XENHSA_SLOT_PAYLOAD_MAX + 8, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&too_long, XENHSA_CMD_QUERY), XENHSA_STATUS_BAD_LENGTH);
    const xenhsa_rsp_hdr unknown_cmd{1, XENHSA_STATUS_OK, 0, 0};
    EXPECT_EQ(xenhsa_check_rsp_hdr(&unknown_cmd, 0), XENHSA_STATUS_BAD_COMMAND);
}

}  // namespace
