// The guest libhsakmt's Memory over a scripted in-process backend (fake_link.hpp): a record
// goes only once the backend confirmed its release, so a release the backend refuses can
// be made again, and nothing the backend still holds is forgotten.
#include <gtest/gtest.h>

#include <map>
#include <memory.hpp>
#include <topology.hpp>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "fake_link.hpp"

namespace {

using namespace xenhsa::frontend;
using namespace xenhsa::frontend::hsakmt;
using namespace xenhsa::frontend::testing;
using namespace std::chrono_literals;

constexpr uint64_t kWindow = 1ull << 30;
constexpr uint32_t kGpu = 1;

template <class Wire>
Wire req_as(const xenhsa_req_slot& slot) {
    return xenhsa::proto::payload_as<Wire>(slot);
}

// A CPU node and a GPU node, as QUERY would give them.
Topology two_nodes() {
    Topology t;
    t.nodes.resize(2);
    t.nodes[0].props.NumCPUCores = 2;
    t.nodes[kGpu].props.NumFComputeCores = 8;
    t.system.NumNodes = 2;
    return t;
}

class HsakmtMemoryTest : public ::testing::Test {
protected:
    HsakmtMemoryTest() {
        link_.handler = [this](const xenhsa_req_slot& r) { return answer(r); };
        auto s = client_.hello({XENHSA_FEATURES_V1, kWindow, 0});
        EXPECT_TRUE(s) << s.error().message();
    }

    // ALLOC at the asked VA, MAP_TO_GPU at the object's VA; each command's status may be
    // scripted (refuse_), else OK.
    std::optional<FakeAnswer> answer(const xenhsa_req_slot& req) {
        ++sent_[req.hdr.cmd];
        if (auto it = refuse_.find(req.hdr.cmd); it != refuse_.end() && it->second > 0) {
            --it->second;
            return FakeAnswer::status_only(XENHSA_STATUS_DEVICE);
        }
        switch (req.hdr.cmd) {
            case XENHSA_CMD_HELLO: {
                const auto hello = req_as<xenhsa_hello_req>(req);
                const uint64_t base = hello.va_base == 0 ? 0x300000000000ull : hello.va_base;
                return FakeAnswer::ok(xenhsa_hello_rsp{1, XENHSA_RING_SLOTS(FakeLink::kOrder),
                                                       hello.features, base, kWindow, 4096, 4096,
                                                       256, 15});
            }
            case XENHSA_CMD_ALLOC: {
                const auto alloc = req_as<xenhsa_alloc_req>(req);
                va_of_[++next_handle_] = alloc.va;
                return FakeAnswer::ok(xenhsa_alloc_rsp{next_handle_, alloc.va});
            }
            case XENHSA_CMD_MAP_TO_GPU:
                return FakeAnswer::ok(
                    xenhsa_map_to_gpu_rsp{va_of_[req_as<xenhsa_map_to_gpu_req>(req).handle]});
            default:
                return link_.default_answer(req);
        }
    }

    static HsaMemFlags scratch_flags() {
        HsaMemFlags f{};
        f.ui32.Scratch = 1;
        f.ui32.HostAccess = 0;
        return f;
    }

    // The backend's script first: Memory's destructor still talks to it.
    std::map<uint32_t, int> sent_;
    std::map<uint32_t, int> refuse_;
    std::map<uint64_t, uint64_t> va_of_;
    uint64_t next_handle_ = 0;
    FakeLink link_;
    FakeSharer sharer_;
    FakeMapper mapper_{64};
    Client client_{link_, sharer_, mapper_, ClientOptions{2000ms}};
    Topology topology_ = two_nodes();
    Memory memory_{client_, topology_, [] { return MemoryLimits{}; }};
};

// ROCr's scratch: a reservation whose pieces become device memory when mapped. A piece
// whose FREE the backend refuses keeps its record: its unmap can be made again, and the
// second time it is not unmapped twice.
TEST_F(HsakmtMemoryTest, AScratchPieceIsForgottenOnlyOnceTheBackendFreedIt) {
    auto va = memory_.alloc(kGpu, 4u << 20, scratch_flags(), std::nullopt);
    ASSERT_TRUE(va) << va.error().message();
    auto gpu = memory_.map_to_gpu(va.value(), 64 << 10, {});
    ASSERT_TRUE(gpu) << gpu.error().message();
    EXPECT_EQ(gpu.value(), va.value());
    EXPECT_EQ(sent_[XENHSA_CMD_ALLOC], 1);
    EXPECT_EQ(sent_[XENHSA_CMD_MAP_TO_GPU], 1);

    refuse_[XENHSA_CMD_FREE] = 1;
    EXPECT_FALSE(memory_.unmap_from_gpu(va.value()));
    EXPECT_EQ(sent_[XENHSA_CMD_UNMAP_FROM_GPU], 1);
    EXPECT_EQ(sent_[XENHSA_CMD_FREE], 1);

    // Again: only the FREE is left to make.
    EXPECT_TRUE(memory_.unmap_from_gpu(va.value()));
    EXPECT_EQ(sent_[XENHSA_CMD_UNMAP_FROM_GPU], 1);
    EXPECT_EQ(sent_[XENHSA_CMD_FREE], 2);
    // Gone now, and the same piece can be mapped anew.
    EXPECT_FALSE(memory_.unmap_from_gpu(va.value()));
    EXPECT_TRUE(memory_.map_to_gpu(va.value(), 64 << 10, {}));
    EXPECT_EQ(sent_[XENHSA_CMD_ALLOC], 2);
}

// A piece whose UNMAP_FROM_GPU the backend refuses keeps everything: the next unmap makes
// both requests.
TEST_F(HsakmtMemoryTest, AScratchPieceTheBackendStillMapsIsKept) {
    auto va = memory_.alloc(kGpu, 4u << 20, scratch_flags(), std::nullopt);
    ASSERT_TRUE(va) << va.error().message();
    ASSERT_TRUE(memory_.map_to_gpu(va.value(), 64 << 10, {}));
    refuse_[XENHSA_CMD_UNMAP_FROM_GPU] = 1;
    EXPECT_FALSE(memory_.unmap_from_gpu(va.value()));
    EXPECT_EQ(sent_[XENHSA_CMD_FREE], 0);
    // Mapping it again is refused: the record still holds it.
    EXPECT_FALSE(memory_.map_to_gpu(va.value(), 64 << 10, {}));
    EXPECT_TRUE(memory_.unmap_from_gpu(va.value()));
    EXPECT_EQ(sent_[XENHSA_CMD_UNMAP_FROM_GPU], 2);
    EXPECT_EQ(sent_[XENHSA_CMD_FREE], 1);
}

// Mapping memory for more GPUs takes an unmap first (the backend maps a handle once); a
// remap the backend refuses gives the old GPUs their mapping back, and the record says so.
TEST_F(HsakmtMemoryTest, AWiderRemapThatFailsKeepsTheOldMapping) {
    topology_.nodes.resize(3);
    topology_.nodes[2].props.NumFComputeCores = 8;
    HsaMemFlags device{};
    auto va = memory_.alloc(kGpu, 1u << 20, device, std::nullopt);
    ASSERT_TRUE(va) << va.error().message();
    const uint32_t first[] = {kGpu};
    ASSERT_TRUE(memory_.map_to_gpu(va.value(), 1u << 20, first));
    refuse_[XENHSA_CMD_MAP_TO_GPU] = 1;
    const uint32_t both[] = {kGpu, 2};
    EXPECT_FALSE(memory_.map_to_gpu(va.value(), 1u << 20, both));
    EXPECT_EQ(sent_[XENHSA_CMD_UNMAP_FROM_GPU], 1);
    EXPECT_EQ(sent_[XENHSA_CMD_MAP_TO_GPU], 3);  // the first, the wider one, the old again
    auto info = memory_.pointer_info(va.value());
    ASSERT_TRUE(info);
    ASSERT_EQ(info.value().NMappedNodes, 1u);
    EXPECT_EQ(info.value().MappedNodes[0], kGpu);
    // Still mapped for the first GPU: nothing to ask the backend.
    EXPECT_TRUE(memory_.map_to_gpu(va.value(), 1u << 20, first));
    EXPECT_EQ(sent_[XENHSA_CMD_MAP_TO_GPU], 3);
}

// hsaKmtAvailableMemory: the GPU node's local heap less this process's device memory; a
// CPU node has none to tell.
TEST_F(HsakmtMemoryTest, AvailableMemoryIsTheHeapLessWhatThisProcessHolds) {
    HsaMemoryProperties heap{};
    heap.HeapType = HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE;
    heap.SizeInBytes = 64u << 20;
    topology_.nodes[kGpu].banks.push_back(heap);
    EXPECT_EQ(memory_.available(kGpu).value(), 64u << 20);
    HsaMemFlags device{};
    auto va = memory_.alloc(kGpu, 8u << 20, device, std::nullopt);
    ASSERT_TRUE(va) << va.error().message();
    EXPECT_EQ(memory_.available(kGpu).value(), 56u << 20);
    EXPECT_FALSE(memory_.available(0));
    ASSERT_TRUE(memory_.free(va.value()));
    EXPECT_EQ(memory_.available(kGpu).value(), 64u << 20);
}

// hsaKmtAllocMemoryAlign: the address honours the alignment; a bad one, and ROCm 6's
// address-only or memory-only allocations, are refused.
TEST_F(HsakmtMemoryTest, AlignedAllocationsAndRefusedVirtualMemoryFlags) {
    HsaMemFlags device{};
    auto va = memory_.alloc(kGpu, 4096, device, std::nullopt, 64u << 20);
    ASSERT_TRUE(va) << va.error().message();
    EXPECT_EQ(va.value() % (64u << 20), 0u);
    EXPECT_FALSE(memory_.alloc(kGpu, 4096, device, std::nullopt, 3 * 4096));
    HsaMemFlags only_address{};
    only_address.Value = 1u << 19;
    EXPECT_EQ(memory_.alloc(kGpu, 4096, only_address, std::nullopt).error(),
              std::errc::not_supported);
}

}  // namespace
