// Encoding into slots and copying out of them.
#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <array>
#include <cstring>

#include "test_slots.hpp"

namespace {

using xenhsa::test::valid_map_req;

TEST(ProtoCodec, RequestRoundTripsThroughASharedSlot) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    const auto req = valid_map_req();
    ASSERT_EQ(xenhsa_encode_req(shared.data(), XENHSA_CMD_MAP, 99, &req, sizeof req), 0);

    xenhsa_req_slot copy{};
    xenhsa_copy_req(&copy, shared.data());
    EXPECT_EQ(copy.hdr.cmd, uint32_t{XENHSA_CMD_MAP});
    EXPECT_EQ(copy.hdr.seqno, 99u);
    EXPECT_EQ(copy.hdr.len, sizeof req);
    EXPECT_EQ(xenhsa_check_req(&copy), XENHSA_STATUS_OK);
    const auto decoded = xenhsa::proto::payload_as<xenhsa_map_req>(copy);
    EXPECT_EQ(std::memcmp(&decoded, &req, sizeof req), 0);
}

TEST(ProtoCodec, TheCopyIsImmuneToLaterWritesByThePeer) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    const auto req = valid_map_req();
    ASSERT_EQ(xenhsa_encode_req(shared.data(), XENHSA_CMD_MAP, 1, &req, sizeof req), 0);
    xenhsa_req_slot copy{};
    xenhsa_copy_req(&copy, shared.data());
    // A hostile guest rewrites the slot after the copy (the double-fetch of XSA-155).
    shared.fill(0xFF);
    EXPECT_EQ(xenhsa_check_req(&copy), XENHSA_STATUS_OK);
    EXPECT_EQ(xenhsa::proto::payload_as<xenhsa_map_req>(copy).npages, 3u);
}

TEST(ProtoCodec, ResponseOverwritesEveryStaleByte) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    shared.fill(0xAB);  // the request that was in the slot, or anything else
    const xenhsa_handle_rsp rsp{0x1234};
    ASSERT_EQ(xenhsa_encode_rsp(shared.data(), 5, XENHSA_STATUS_OK, &rsp, sizeof rsp), 0);
    xenhsa_rsp_slot copy{};
    xenhsa_copy_rsp(&copy, shared.data());
    EXPECT_EQ(copy.hdr.seqno, 5u);
    EXPECT_EQ(copy.hdr.pad, 0u);
    EXPECT_EQ(xenhsa_check_rsp_hdr(&copy.hdr, XENHSA_CMD_MAP), XENHSA_STATUS_OK);
    EXPECT_EQ(xenhsa::proto::payload_as<xenhsa_handle_rsp>(copy).handle, 0x1234u);
    EXPECT_TRUE(xenhsa_all_zero(copy.payload + sizeof rsp, XENHSA_SLOT_PAYLOAD_MAX - sizeof rsp));
}

TEST(ProtoCodec, ErrorResponseHasNoPayloadBytes) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    shared.fill(0x5A);
    ASSERT_EQ(xenhsa_encode_rsp(shared.data(), 9, XENHSA_STATUS_BAD_PAD, nullptr, 0), 0);
    xenhsa_rsp_slot copy{};
    xenhsa_copy_rsp(&copy, shared.data());
    EXPECT_EQ(copy.hdr.status, uint32_t{XENHSA_STATUS_BAD_PAD});
    EXPECT_EQ(xenhsa_check_rsp_hdr(&copy.hdr, XENHSA_CMD_PIN), XENHSA_STATUS_OK);
    EXPECT_TRUE(xenhsa_all_zero(copy.payload, XENHSA_SLOT_PAYLOAD_MAX));
}

TEST(ProtoCodec, EncodersRefusePayloadsLargerThanASlot) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    shared.fill(0x11);
    std::array<uint8_t, XENHSA_SLOT_PAYLOAD_MAX + 8> big{};
    EXPECT_EQ(xenhsa_encode_req(shared.data(), XENHSA_CMD_MAP, 1, big.data(), uint32_t{big.size()}),
              -1);
    EXPECT_EQ(xenhsa_encode_rsp(shared.data(), 1, 0, big.data(), uint32_t{big.size()}), -1);
    EXPECT_EQ(shared[0], 0x11) << "a refused encode leaves the slot alone";
}

TEST(ProtoCodec, MalformedSlotFromTheWireIsRejectedNotDecoded) {
    alignas(8) std::array<uint8_t, XENHSA_SLOT_SIZE> shared{};
    const xenhsa_req_hdr hdr{XENHSA_CMD_QUERY, 12, 3, 0};  // short: QUERY needs 16
    std::memcpy(shared.data(), &hdr, sizeof hdr);
    xenhsa_req_slot copy{};
    xenhsa_copy_req(&copy, shared.data());
    EXPECT_EQ(xenhsa_check_req(&copy), XENHSA_STATUS_BAD_LENGTH);
}

}  // namespace
