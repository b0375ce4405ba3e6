// QUERY (§5.2) through the recording device: chunks, host arguments, sanitising.
#include <cstring>

#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

std::optional<xenhsa_query_rsp> query(RequestsHarness& h, uint32_t kind, uint32_t node,
                                      uint32_t index, uint32_t offset, uint32_t* status) {
    xenhsa_query_req q{};
    q.kind = kind;
    q.node = node;
    q.index = index;
    q.offset = offset;
    auto r = h.send(XENHSA_CMD_QUERY, q);
    *status = r ? r->status : 0xFFFFFFFFu;
    if (!r || r->status != XENHSA_STATUS_OK) {
        return std::nullopt;
    }
    const auto rsp = payload_of<xenhsa_query_rsp>(*r);
    EXPECT_EQ(xenhsa_check_query_rsp(&rsp, &q), XENHSA_STATUS_OK);
    return rsp;
}

TEST(Query, VersionAndSystem) {
    GpuHarness h;
    uint32_t st = 0;
    auto v = query(h, XENHSA_QUERY_VERSION, 0, 0, 0, &st);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->total_len, sizeof(xenhsa_version_info));
    xenhsa_version_info info{};
    std::memcpy(&info, v->data, sizeof info);
    EXPECT_EQ(info.proto_version, XENHSA_PROTO_VERSION);
    EXPECT_EQ(info.gpu_backend, XENHSA_GPU_BACKEND_SOFT);

    auto s = query(h, XENHSA_QUERY_SYSTEM, 0, 0, 0, &st);
    ASSERT_TRUE(s);
    xenhsa_system_props props{};
    std::memcpy(&props, s->data, sizeof props);
    EXPECT_EQ(props.num_nodes, 2u);
    EXPECT_EQ(props.xnack_enabled, 0u);  // always off, whatever the device says
}

TEST(Query, NodeInTwoChunksWithTerminatedNames) {
    GpuHarness h;
    uint32_t st = 0;
    auto first = query(h, XENHSA_QUERY_NODE, 1, 0, 0, &st);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->total_len, 296u);
    EXPECT_EQ(first->chunk_len, 224u);
    auto second = query(h, XENHSA_QUERY_NODE, 1, 0, 224, &st);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->chunk_len, 72u);
    uint8_t whole[296];
    std::memcpy(whole, first->data, 224);
    std::memcpy(whole + 224, second->data, 72);
    xenhsa_node_props node{};
    std::memcpy(&node, whole, sizeof node);
    EXPECT_EQ(node.num_fcompute_cores, 64u);
    EXPECT_EQ(node.marketing_name[63], 0u);
    EXPECT_EQ(node.amd_name[63], 0u);
    EXPECT_EQ(node.marketing_name[0], 'M');
    // Offsets past the result.
    query(h, XENHSA_QUERY_NODE, 1, 0, 296, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
    query(h, XENHSA_QUERY_VERSION, 0, 0, 16, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(Query, IndicesMustExistOnThisHost) {
    GpuHarness h;
    uint32_t st = 0;
    EXPECT_TRUE(query(h, XENHSA_QUERY_MEM_BANK, 1, 1, 0, &st));
    query(h, XENHSA_QUERY_MEM_BANK, 1, 2, 0, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
    query(h, XENHSA_QUERY_CACHE, 0, 0, 0, &st);  // the CPU node has no caches here
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
    EXPECT_TRUE(query(h, XENHSA_QUERY_IO_LINK, 1, 0, 0, &st));
    query(h, XENHSA_QUERY_CLOCK, 2, 0, 0, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
    auto k = query(h, XENHSA_QUERY_KERNEL, 0, 0, 0, &st);
    ASSERT_TRUE(k);
    xenhsa_kernel_info info{};
    std::memcpy(&info, k->data, sizeof info);
    EXPECT_EQ(info.name[XENHSA_KERNEL_NAME_SIZE - 1], 0u);
    query(h, XENHSA_QUERY_KERNEL, 0, 1, 0, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
}

TEST(Query, WithoutAGpuSeam) {
    HarnessOptions o;
    o.gpu = false;
    RequestsHarness h(o);
    h.connect();
    uint32_t st = 0;
    auto v = query(h, XENHSA_QUERY_VERSION, 0, 0, 0, &st);
    ASSERT_TRUE(v);
    xenhsa_version_info info{};
    std::memcpy(&info, v->data, sizeof info);
    EXPECT_EQ(info.gpu_backend, XENHSA_GPU_BACKEND_NONE);
    EXPECT_EQ(info.proto_version, 1u);
    auto s = query(h, XENHSA_QUERY_SYSTEM, 0, 0, 0, &st);
    ASSERT_TRUE(s);
    query(h, XENHSA_QUERY_NODE, 0, 0, 0, &st);
    EXPECT_EQ(st, XENHSA_STATUS_BAD_ARGUMENT);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
