// Debian's unmodified libhsakmt over the KFD shim, in one process (ctest preloads the
// shim): open, the MI25's topology as the thunk reads it (sysfs and libdrm's marketing
// name), memory of every kind, an AQL queue running a built-in kernel, events, and a VM
// fault; the shim's log (XENHSA_KFD_SHIM_LOG) shows what the "kernel" saw.
#include <gtest/gtest.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <sys/mman.h>
#include <xenhsa/hsa/builtin_kernels.h>
#include <xenhsa/hsa/hsakmt_include.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kGpu = 1;  // the MI25's node

std::string marketing_name(const HsaNodeProperties& props) {
    std::string out;
    for (const HSAuint16 c : props.MarketingName) {
        if (c == 0) {
            break;
        }
        out += static_cast<char>(c);
    }
    return out;
}

// The shim's log from `from` on (each test runs in a process of its own; the log grows).
std::string shim_log(std::streamoff from = 0) {
    std::ifstream in(XENHSA_KFD_SHIM_TEST_LOG);
    in.seekg(from);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::streamoff log_size() {
    std::ifstream in(XENHSA_KFD_SHIM_TEST_LOG, std::ios::ate);
    return in ? static_cast<std::streamoff>(in.tellg()) : 0;
}

class Thunk : public ::testing::Test {
protected:
    void SetUp() override {
        log_from_ = log_size();
        ASSERT_NE(std::getenv("LD_PRELOAD"), nullptr) << "XENHSA_TEST_KFD=pvh preloads the shim";
        ASSERT_EQ(hsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
        ASSERT_EQ(hsaKmtAcquireSystemProperties(&system_), HSAKMT_STATUS_SUCCESS);
    }
    void TearDown() override {
        EXPECT_EQ(hsaKmtReleaseSystemProperties(), HSAKMT_STATUS_SUCCESS);
        EXPECT_EQ(hsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
    }

    // Host memory the GPU can reach (the thunk: a USERPTR BO at the same address).
    void* host(HSAuint64 bytes) {
        HsaMemFlags flags{};
        flags.ui32.HostAccess = 1;
        flags.ui32.ExecuteAccess = 1;
        void* p = nullptr;
        EXPECT_EQ(hsaKmtAllocMemory(0, bytes, flags, &p), HSAKMT_STATUS_SUCCESS);
        HSAuint64 gpu_va = 0;
        EXPECT_EQ(hsaKmtMapMemoryToGPU(p, bytes, &gpu_va), HSAKMT_STATUS_SUCCESS);
        EXPECT_TRUE(gpu_va == 0 || gpu_va == reinterpret_cast<HSAuint64>(p));  // 0: the same
        return p;
    }
    static void release(void* p, HSAuint64 bytes) {
        (void)bytes;
        EXPECT_EQ(hsaKmtUnmapMemoryToGPU(p), HSAKMT_STATUS_SUCCESS);
        EXPECT_EQ(hsaKmtFreeMemory(p, bytes), HSAKMT_STATUS_SUCCESS);
    }

    [[nodiscard]] std::string log() const { return shim_log(log_from_); }

    HsaSystemProperties system_{};
    std::streamoff log_from_ = 0;
};

TEST_F(Thunk, SeesTheMi25WithItsRealNameAndIsa) {
    ASSERT_EQ(system_.NumNodes, 2u);
    HsaNodeProperties cpu{};
    HsaNodeProperties gpu{};
    ASSERT_EQ(hsaKmtGetNodeProperties(0, &cpu), HSAKMT_STATUS_SUCCESS);
    ASSERT_EQ(hsaKmtGetNodeProperties(kGpu, &gpu), HSAKMT_STATUS_SUCCESS);
    EXPECT_GT(cpu.NumCPUCores, 0u);
    EXPECT_EQ(cpu.NumFComputeCores, 0u);
    EXPECT_EQ(gpu.DeviceId, 0x6860u);
    EXPECT_EQ(gpu.VendorId, 0x1002u);
    EXPECT_EQ(gpu.NumFComputeCores, 256u);
    EXPECT_EQ(gpu.EngineId.ui32.Major, 9u);
    EXPECT_EQ(gpu.EngineId.ui32.Minor, 0u);
    EXPECT_EQ(gpu.EngineId.ui32.Stepping, 0u);
    EXPECT_EQ(gpu.DrmRenderMinor, 128);
    // The name comes from libdrm: DEV_INFO's device and PCI revision, in amdgpu.ids.
    EXPECT_EQ(marketing_name(gpu), "AMD Radeon Instinct MI25");
    HsaMemoryProperties bank{};
    ASSERT_EQ(hsaKmtGetNodeMemoryProperties(kGpu, 1, &bank), HSAKMT_STATUS_SUCCESS);
    const HSA_HEAPTYPE heap = bank.HeapType;  // copies: the struct is packed
    const HSAuint64 bytes = bank.SizeInBytes;
    EXPECT_EQ(heap, HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC);
    EXPECT_EQ(bytes, 17163091968ull);
    const std::string log = this->log();
    EXPECT_NE(log.find("kfd GET_VERSION -> ok 1."), std::string::npos) << log;
    EXPECT_NE(log.find("kfd ACQUIRE_VM"), std::string::npos) << log;
    EXPECT_NE(log.find("drm AMDGPU_INFO"), std::string::npos) << log;
}

TEST_F(Thunk, AllocatesMapsAndFreesVramAndHostMemory) {
    HsaMemFlags vram{};
    vram.ui32.HostAccess = 1;
    vram.ui32.NonPaged = 1;
    void* device = nullptr;
    ASSERT_EQ(hsaKmtAllocMemory(kGpu, 1 << 20, vram, &device), HSAKMT_STATUS_SUCCESS);
    HSAuint64 gpu_va = 0;
    ASSERT_EQ(hsaKmtMapMemoryToGPU(device, 1 << 20, &gpu_va), HSAKMT_STATUS_SUCCESS);
    EXPECT_TRUE(gpu_va == 0 || gpu_va == reinterpret_cast<HSAuint64>(device));  // 0: the same
    std::memset(device, 0x5a, 1 << 20);  // host access: the CPU mapping the thunk made
    EXPECT_EQ(static_cast<unsigned char*>(device)[12345], 0x5a);
    EXPECT_EQ(hsaKmtFreeMemory(device, 1 << 20), HSAKMT_STATUS_ERROR) << "still GPU-mapped";
    EXPECT_EQ(hsaKmtUnmapMemoryToGPU(device), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(hsaKmtFreeMemory(device, 1 << 20), HSAKMT_STATUS_SUCCESS);

    void* p = host(64 * 4096);
    static_cast<uint32_t*>(p)[100] = 7;
    release(p, 64 * 4096);
    const std::string log = this->log();
    EXPECT_NE(log.find("FREE_MEMORY_OF_GPU"), std::string::npos);
    EXPECT_NE(log.find("-> EBUSY"), std::string::npos) << "the free of a mapped BO";
}

TEST_F(Thunk, RegisteredMemoryGetsAGpuVaOfTheThunksOwnNotTheCpuAddress) {
    // What the adapter must not rely on (issue #24): on a dGPU, thunk 5.2.3 registers user
    // memory at an address of its SVM aperture. Shared pages (as grant mappings are).
    const size_t bytes = 16 * 4096;
    void* shared =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(shared, MAP_FAILED);
    static_cast<uint32_t*>(shared)[5] = 0xfeed;
    ASSERT_EQ(hsaKmtRegisterMemory(shared, bytes), HSAKMT_STATUS_SUCCESS);
    HSAuint64 gpu_va = 0;
    ASSERT_EQ(hsaKmtMapMemoryToGPU(shared, bytes, &gpu_va), HSAKMT_STATUS_SUCCESS);
    EXPECT_NE(gpu_va, reinterpret_cast<HSAuint64>(shared)) << "no mirror through the thunk";
    // The GPU VA reaches the same pages (the shim aliases them there).
    EXPECT_EQ(reinterpret_cast<const uint32_t*>(gpu_va)[5], 0xfeedu);
    EXPECT_EQ(hsaKmtUnmapMemoryToGPU(shared), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(hsaKmtDeregisterMemory(shared), HSAKMT_STATUS_SUCCESS);
    ::munmap(shared, bytes);
}

TEST_F(Thunk, AnAqlQueueRunsABuiltInKernelAndSignalsItsEvent) {
    HsaEventDescriptor desc{};
    desc.EventType = HSA_EVENTTYPE_SIGNAL;
    desc.NodeId = kGpu;
    HsaEvent* event = nullptr;
    ASSERT_EQ(hsaKmtCreateEvent(&desc, false, false, &event), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(hsaKmtWaitOnEvent(event, 10), HSAKMT_STATUS_WAIT_TIMEOUT);

    constexpr uint32_t kPackets = 64;
    constexpr uint32_t kWords = 1 << 16;
    auto* ring = static_cast<hsa_kernel_dispatch_packet_t*>(host(kPackets * 64));
    auto* pointers = static_cast<uint64_t*>(host(4096));  // read index, write index
    auto* data = static_cast<uint32_t*>(host(kWords * 4 + 4096));
    auto* args = reinterpret_cast<xenhsa_kernarg_fill*>(data + kWords);
    auto* signal = reinterpret_cast<amd_signal_t*>(reinterpret_cast<char*>(args) + 256);
    for (uint32_t i = 0; i < kPackets; ++i) {
        ring[i].header = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
    }
    *args = {reinterpret_cast<uint64_t>(data), kWords, 0xabcd1234u, 0};
    signal->kind = AMD_SIGNAL_KIND_USER;
    signal->value = 1;
    signal->event_mailbox_ptr = event->EventData.HWData2;
    signal->event_id = static_cast<uint32_t>(event->EventData.HWData1);

    HsaQueueResource queue{};
    queue.QueueRptrValue = reinterpret_cast<HSAuint64>(&pointers[0]);
    queue.QueueWptrValue = reinterpret_cast<HSAuint64>(&pointers[8]);
    ASSERT_EQ(hsaKmtCreateQueue(kGpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
                                kPackets * 64, nullptr, &queue),
              HSAKMT_STATUS_SUCCESS);
    hsa_kernel_dispatch_packet_t& p = ring[0];
    std::memset(reinterpret_cast<char*>(&p) + 4, 0, sizeof p - 4);
    p.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    p.workgroup_size_x = 64;
    p.workgroup_size_y = p.workgroup_size_z = 1;
    p.grid_size_x = kWords;
    p.grid_size_y = p.grid_size_z = 1;
    p.kernel_object = XENHSA_BUILTIN_KERNEL_OBJECT(XENHSA_KERNEL_FILL);
    p.kernarg_address = args;
    p.completion_signal.handle = reinterpret_cast<uint64_t>(signal);
    const uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n(&p.header, header, __ATOMIC_RELEASE);
    __atomic_store_n(&pointers[8], uint64_t{1}, __ATOMIC_RELEASE);
    *reinterpret_cast<volatile uint64_t*>(queue.Queue_DoorBell) = 0;  // as ROCr rings it

    // The completion writes the event id into the mailbox and raises the event.
    EXPECT_EQ(hsaKmtWaitOnEvent(event, 10000), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(__atomic_load_n(&signal->value, __ATOMIC_ACQUIRE), 0);
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < kWords; ++i) {
        wrong += data[i] == 0xabcd1234u ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(hsaKmtDestroyQueue(queue.QueueId), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(hsaKmtDestroyEvent(event), HSAKMT_STATUS_SUCCESS);
    release(data, kWords * 4 + 4096);
    release(pointers, 4096);
    release(ring, kPackets * 64);
    const std::string log = this->log();
    const auto destroyed = log.find("kfd DESTROY_QUEUE");
    const auto ring_unmapped = log.find("UNMAP_MEMORY_FROM_GPU", destroyed);
    EXPECT_NE(destroyed, std::string::npos) << log;
    EXPECT_NE(ring_unmapped, std::string::npos) << "the ring's BO after its queue";
}

TEST_F(Thunk, AGpuAccessOutsideEveryBoIsAVmFaultWithItsAddress) {
    HsaEventDescriptor desc{};
    desc.EventType = HSA_EVENTTYPE_MEMORY;
    desc.NodeId = kGpu;
    HsaEvent* fault = nullptr;
    ASSERT_EQ(hsaKmtCreateEvent(&desc, true, false, &fault), HSAKMT_STATUS_SUCCESS);
    constexpr uint32_t kPackets = 64;
    auto* ring = static_cast<hsa_kernel_dispatch_packet_t*>(host(kPackets * 64));
    auto* pointers = static_cast<uint64_t*>(host(4096));
    auto* data = static_cast<uint32_t*>(host(4096));
    auto* args = reinterpret_cast<xenhsa_kernarg_oob_read*>(data + 64);
    const uint64_t index = (1ull << 30) / 4;
    *args = {reinterpret_cast<uint64_t>(data), index, reinterpret_cast<uint64_t>(data + 1)};
    for (uint32_t i = 0; i < kPackets; ++i) {
        ring[i].header = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
    }
    HsaQueueResource queue{};
    queue.QueueRptrValue = reinterpret_cast<HSAuint64>(&pointers[0]);
    queue.QueueWptrValue = reinterpret_cast<HSAuint64>(&pointers[8]);
    ASSERT_EQ(hsaKmtCreateQueue(kGpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
                                kPackets * 64, nullptr, &queue),
              HSAKMT_STATUS_SUCCESS);
    hsa_kernel_dispatch_packet_t& p = ring[0];
    std::memset(reinterpret_cast<char*>(&p) + 4, 0, sizeof p - 4);
    p.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    p.workgroup_size_x = p.workgroup_size_y = p.workgroup_size_z = 1;
    p.grid_size_x = p.grid_size_y = p.grid_size_z = 1;
    p.kernel_object = XENHSA_BUILTIN_KERNEL_OBJECT(XENHSA_KERNEL_OOB_READ);
    p.kernarg_address = args;
    __atomic_store_n(
        &p.header, static_cast<uint16_t>(HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE),
        __ATOMIC_RELEASE);
    __atomic_store_n(&pointers[8], uint64_t{1}, __ATOMIC_RELEASE);

    ASSERT_EQ(hsaKmtWaitOnEvent(fault, 10000), HSAKMT_STATUS_SUCCESS);
    const HsaMemoryAccessFault& f = fault->EventData.EventData.MemoryAccessFault;
    const uint64_t bad = reinterpret_cast<uint64_t>(data) + index * 4;
    EXPECT_TRUE(f.VirtualAddress == bad || f.VirtualAddress == (bad & ~4095ull))
        << std::hex << f.VirtualAddress << " vs " << bad;
    EXPECT_EQ(f.NodeId, kGpu);
    EXPECT_EQ(hsaKmtDestroyQueue(queue.QueueId), HSAKMT_STATUS_SUCCESS);
    EXPECT_EQ(hsaKmtDestroyEvent(fault), HSAKMT_STATUS_SUCCESS);
    release(data, 4096);
    release(pointers, 4096);
    release(ring, kPackets * 64);
    EXPECT_NE(log().find("kfd VM_FAULT address="), std::string::npos);
}

}  // namespace
