// The libhsakmt adapter on Debian's libhsakmt over the KFD shim (label kfd; the program
// starts itself again with the shim preloaded, XENHSA_TEST_KFD): what is KFD's own, which
// the software agent's tests cannot show. Guest memory is mirrored (a USERPTR BO at
// va_addr == mmap_offset), SDMA queues read the caller's pointers, a VM fault stops every
// queue of the process and is reported for each, grant mappings pin in a PVH dom0 but not
// in a PV one, and a closing device releases in the kernel's order.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/hsa/hsakmt_device.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>
#include <xenhsa/hsa/soft_testing/sdma_producer.hpp>

namespace xenhsa::hsa {
namespace {

using namespace std::chrono_literals;
using namespace soft_testing;  // NOLINT: test vocabulary

bool pv() {
    const char* mode = std::getenv("XENHSA_KFD_SHIM_MODE");
    return mode != nullptr && std::string(mode) == "pv";
}

// This process's lines of the shim's log (kfd-shim.log in the working directory, which
// tests running alongside write too: each line starts with its writer's pid) from where
// the test began.
class ShimLog {
public:
    ShimLog() : from_(size()) {}
    [[nodiscard]] std::vector<std::string> lines() const {
        std::ifstream in("kfd-shim.log");
        in.seekg(from_);
        const std::string mine = std::to_string(::getpid()) + ' ';
        std::vector<std::string> out;
        for (std::string line; std::getline(in, line);) {
            if (line.rfind(mine, 0) == 0) {
                out.push_back(line);
            }
        }
        return out;
    }
    [[nodiscard]] std::string text() const {
        std::string out;
        for (const std::string& line : lines()) {
            out += line;
            out += '\n';
        }
        return out;
    }

private:
    static std::streamoff size() {
        std::ifstream in("kfd-shim.log", std::ios::ate);
        return in ? static_cast<std::streamoff>(in.tellg()) : 0;
    }
    std::streamoff from_;
};

// The first line at or after `from` that holds every one of `words`; npos when none.
size_t find_line(const std::vector<std::string>& lines, std::initializer_list<std::string> words,
                 size_t from = 0) {
    for (size_t i = from; i < lines.size(); ++i) {
        if (std::all_of(words.begin(), words.end(), [&](const std::string& w) {
                return lines[i].find(w) != std::string::npos;
            })) {
            return i;
        }
    }
    return std::string::npos;
}

std::string hex(uint64_t v) {
    std::ostringstream out;
    out << "0x" << std::hex << v;
    return out.str();
}

class AdapterOnKfd : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(std::getenv("XENHSA_TEST_DEVICE"), nullptr) << "XENHSA_TEST_KFD preloads";
        std::string message;
        auto opened = open_hsakmt_device(&message);
        ASSERT_TRUE(opened) << message;
        device_ = std::move(opened).value();
        device_->set_fault_handler([this](const GpuFault& fault) {
            std::lock_guard lock(mutex_);
            faults_.push_back(fault);
        });
    }
    void TearDown() override {
        if (device_) {
            device_->set_fault_handler({});
        }
    }
    std::vector<GpuFault> faults_after(std::chrono::milliseconds wait, size_t at_least) {
        const auto until = std::chrono::steady_clock::now() + wait;
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                if (faults_.size() >= at_least || std::chrono::steady_clock::now() > until) {
                    return faults_;
                }
            }
            std::this_thread::sleep_for(5ms);
        }
    }
    KfdDevice& device() { return *device_; }

    ShimLog log_;
    std::unique_ptr<KfdDevice> device_;
    std::mutex mutex_;
    std::vector<GpuFault> faults_;
};

TEST_F(AdapterOnKfd, APinIsAUserptrBoAtTheGuestVaAndTheGpuWritesThere) {
    GpuBuffer data(device(), 16 * kPage);
    GpuBuffer args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    *args.at<xenhsa_kernarg_fill>() = {data.va(), 16 * 1024, 0x77, 0};
    queue.submit(dispatch_packet(XENHSA_BUILTIN_KERNEL_OBJECT(XENHSA_KERNEL_FILL), args.va(),
                                 grid_1d(16 * 1024, 64), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(data.at<uint32_t>()[16 * 1024 - 1], 0x77u);
    const auto lines = log_.lines();
    EXPECT_NE(find_line(lines, {"ALLOC_MEMORY_OF_GPU type=USERPTR", "va=" + hex(data.va()),
                                "cpu=" + hex(data.va()), "-> ok"}),
              std::string::npos)
        << log_.text();
}

TEST_F(AdapterOnKfd, AnSdmaQueueReadsTheCallersReadAndWritePointers) {
    ASSERT_TRUE(device().supports_queue_type(QueueType::sdma));
    GpuBuffer from(device(), 4 * kPage);
    GpuBuffer to(device(), 4 * kPage);
    for (uint32_t i = 0; i < 4096; ++i) {
        from.at<uint32_t>()[i] = i * 3;
    }
    SdmaTestQueue queue(device());
    const uint64_t end = queue.submit(sdma_copy(to.va(), from.va(), 4 * kPage));
    ASSERT_TRUE(queue.wait_read_index(end));
    EXPECT_EQ(to.at<uint32_t>()[4095], 4095u * 3);
    const auto lines = log_.lines();
    EXPECT_NE(find_line(lines, {"CREATE_QUEUE type=SDMA", "rptr=" + hex(queue.rptr_va()),
                                "wptr=" + hex(queue.wptr_va()), "-> ok"}),
              std::string::npos)
        << log_.text();
}

TEST_F(AdapterOnKfd, AVmFaultStopsEveryQueueAndEachIsReportedOnce) {
    HostMemory stray(kPage);  // never given to the GPU
    GpuBuffer data(device(), kPage);
    GpuBuffer args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue faulting(device());
    AqlTestQueue bystander(device());
    *args.at<xenhsa_kernarg_fill>() = {stray.va(), 16, 1, 0};
    faulting.submit(dispatch_packet(XENHSA_BUILTIN_KERNEL_OBJECT(XENHSA_KERNEL_FILL), args.va(),
                                    grid_1d(16, 16), signals.init(0, 1)));
    const auto faults = faults_after(10s, 2);
    ASSERT_EQ(faults.size(), 2u) << "kfd_dqm_evict_pasid: every queue of the process";
    std::vector<QueueId> queues{faults[0].queue, faults[1].queue};
    std::sort(queues.begin(), queues.end());
    std::vector<QueueId> expected{faulting.id(), bystander.id()};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(queues, expected);
    EXPECT_EQ(faults[0].address & ~(kPage - 1), stray.va());
    // The bystander runs nothing any more.
    *args.at<xenhsa_kernarg_fill>(kPage / 2) = {data.va(), 16, 5, 0};
    bystander.submit(dispatch_packet(XENHSA_BUILTIN_KERNEL_OBJECT(XENHSA_KERNEL_FILL),
                                     args.va(kPage / 2), grid_1d(16, 16), signals.init(1, 1)));
    EXPECT_FALSE(signals.wait_eq(1, 0, 300ms));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(faults_after(0ms, 3).size(), 2u) << "reported once";
    EXPECT_NE(log_.text().find("kfd VM_FAULT address="), std::string::npos);
}

// KFD gives an SDMA queue no error event: an engine hung on a packet it cannot decode is
// recovered by a GPU reset, which takes every queue and signals the HW_EXCEPTION events
// (kfd_signal_reset_event, cause GPU_HANG). Each queue is reported once, as a hang.
TEST_F(AdapterOnKfd, AnSdmaQueueHungOnAMalformedPacketResetsTheGpuAndEveryQueueIsReported) {
    SdmaTestQueue hung(device());
    AqlTestQueue bystander(device());
    hung.submit(SdmaPacket{0x3F, 0, 0, 0});
    const auto faults = faults_after(10s, 2);
    ASSERT_EQ(faults.size(), 2u) << log_.text();
    std::vector<QueueId> queues{faults[0].queue, faults[1].queue};
    std::sort(queues.begin(), queues.end());
    std::vector<QueueId> expected{hung.id(), bystander.id()};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(queues, expected);
    for (const GpuFault& fault : faults) {
        EXPECT_TRUE(fault.hang);
        EXPECT_EQ(fault.address, 0u);
    }
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(faults_after(0ms, 3).size(), 2u) << "reported once";
    EXPECT_NE(log_.text().find("kfd GPU_RESET cause=hang stops queues="), std::string::npos);
}

TEST_F(AdapterOnKfd, AGrantMappingPinsInAPvhDom0AndNotInAPvOne) {
    // xenhsa-sim's grant mapping: a memfd of the granting domain, mapped shared; the
    // worker's own pages (what LEND shares) are a memfd of its own domain, 0 here.
    const auto mapping = [](const char* name) {
        const int fd = ::memfd_create(name, MFD_CLOEXEC);
        EXPECT_EQ(::ftruncate(fd, 4 * kPage), 0);
        void* p = ::mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        return reinterpret_cast<Va>(p);
    };
    const Va granted = mapping("xenhsa-sim-d7-gfn4096");
    const Va own = mapping("xenhsa-sim-d0-gfn8192");
    const auto registered = device().register_user(granted, 4 * kPage, false);
    if (pv()) {
        ASSERT_FALSE(registered);
        EXPECT_EQ(registered.error(), std::errc::bad_address);
    } else {
        ASSERT_TRUE(registered) << registered.error().message();
        EXPECT_TRUE(device().deregister_user(granted));
    }
    ASSERT_TRUE(device().register_user(own, 4 * kPage, false)) << "LEND pages always pin";
    EXPECT_TRUE(device().deregister_user(own));
    ::munmap(reinterpret_cast<void*>(granted), 4 * kPage);
    ::munmap(reinterpret_cast<void*>(own), 4 * kPage);
}

// The thunk's host-wide profiling table and its semaphore in /dev/shm, which it created
// or joined at open, are private copies once the device is open: no mapping of either and
// no fd (private_counters.hpp), so a worker shares nothing with another through them.
TEST_F(AdapterOnKfd, TheThunksHostWideCountersAreNotSharedOnceOpen) {
    std::ifstream maps("/proc/self/maps");
    const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all.find("hsakmt_shared_mem"), std::string::npos) << all;
    EXPECT_EQ(all.find("hsakmt_semaphore"), std::string::npos) << all;
    // The thunk's fd of the table is still open, now on /dev/null (the table itself may be
    // gone: a test closing the KFD alongside removes it).
    bool null_fd = false;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
        EXPECT_FALSE(target.starts_with("/dev/shm/")) << fd.path() << " -> " << target;
        null_fd =
            null_fd || (std::stoi(fd.path().filename().string()) > 2 && target == "/dev/null");
    }
    EXPECT_TRUE(null_fd) << "the thunk's fd of its table is not on /dev/null";
}

TEST_F(AdapterOnKfd, AQueueOnACpuNodeIsRefused) {
    GpuBuffer ring(device(), kPage);
    GpuBuffer pointers(device(), kPage);
    QueueSpec spec;
    spec.node = 0;  // thunk 5.2.3 would divide by its SIMDs per CU (0): SIGFPE
    spec.ring = ring.va();
    spec.ring_size = kPage;
    spec.rptr = pointers.va();
    spec.wptr = pointers.va(8);
    auto queue = device().create_queue(spec);
    ASSERT_FALSE(queue);
    EXPECT_EQ(queue.error(), std::errc::invalid_argument);
}

// The handle the shim gave the BO at `va` (its ALLOC line), "" when none.
std::string handle_at(const std::vector<std::string>& lines, Va va) {
    const size_t at = find_line(lines, {"ALLOC_MEMORY_OF_GPU", "va=" + hex(va) + " ", "-> ok"});
    if (at == std::string::npos) {
        return "";
    }
    return lines[at].substr(lines[at].find("handle=") + 7);
}

TEST_F(AdapterOnKfd, ClosingReleasesInTheKernelsOrder) {
    // Left behind on purpose, as a dying worker's context would: a queue over its ring,
    // and GPU-mapped memory. Plain host memory: nothing here calls the device once gone.
    HostMemory ring(kPage);
    HostMemory pointers(kPage);
    HostMemory data(4 * kPage);
    for (const HostMemory* m : {&ring, &pointers, &data}) {
        ASSERT_TRUE(device().register_user(m->va(), m->size(), false));
        ASSERT_TRUE(device().map_to_gpu(m->va(), kGpuNodeMask, false));
    }
    QueueSpec spec;
    spec.node = kSoftGpuNode;
    spec.ring = ring.va();
    spec.ring_size = kPage;
    spec.rptr = pointers.va();
    spec.wptr = pointers.va(8);
    ASSERT_TRUE(device().create_queue(spec));
    device_.reset();  // the worker's device goes: release_everything, hsaKmtCloseKFD
    const auto lines = log_.lines();
    const size_t destroy = find_line(lines, {"kfd DESTROY_QUEUE", "-> ok"});
    ASSERT_NE(destroy, std::string::npos) << log_.text();
    size_t last_unmap = 0;
    size_t first_free = lines.size();
    for (const HostMemory* m : {&ring, &pointers, &data}) {
        const std::string handle = handle_at(lines, m->va());
        ASSERT_FALSE(handle.empty()) << log_.text();
        const size_t unmap = find_line(lines, {"UNMAP_MEMORY_FROM_GPU handle=" + handle, "-> ok"});
        const size_t free = find_line(lines, {"FREE_MEMORY_OF_GPU handle=" + handle, "-> ok"});
        ASSERT_NE(unmap, std::string::npos) << handle << "\n" << log_.text();
        ASSERT_NE(free, std::string::npos) << handle << "\n" << log_.text();
        EXPECT_LT(destroy, unmap) << "the queue before its memory leaves the GPU";
        last_unmap = std::max(last_unmap, unmap);
        first_free = std::min(first_free, free);
    }
    EXPECT_LT(last_unmap, first_free) << "every GPU unmap before the first free";
    // What is left when the KFD closes is the thunk's own signal page, which thunk 5.2.3
    // frees only with the process (the kernel does then).
    const size_t closed = find_line(lines, {"close kfd", "queues=0 events=0"});
    ASSERT_NE(closed, std::string::npos) << log_.text();
    EXPECT_NE(lines[closed].find("bos=1 held=GTT:signal-page"), std::string::npos) << lines[closed];
}

}  // namespace
}  // namespace xenhsa::hsa
