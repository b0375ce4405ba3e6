// A software agent per test, with its GPU faults recorded, and small helpers.
#ifndef XENHSA_TESTS_HSA_SOFT_FIXTURE_HPP
#define XENHSA_TESTS_HSA_SOFT_FIXTURE_HPP

#include <gtest/gtest.h>
#include <xenhsa/hsa/builtin_kernels.h>
#include <xenhsa/proto/common.h>
#include <xenhsa/proto/event.h>
#include <xenhsa/proto/memory.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/hsa/hsakmt_device.hpp>
#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

namespace xenhsa::hsa::soft_test {

using namespace xenhsa::hsa::soft_testing;  // NOLINT: test vocabulary

inline constexpr uint32_t kWaitMs = 10'000;  // bounded waits only guard against hangs
inline const std::error_code kNoEnt = std::make_error_code(std::errc::no_such_file_or_directory);
inline const std::error_code kInval = std::make_error_code(std::errc::invalid_argument);

// The protection of the mapping holding `va`, as /proc/self/maps shows it ("rw-p").
inline std::string protection_at(Va va) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range;
        std::string perms;
        fields >> range >> perms;
        const auto dash = range.find('-');
        const Va start = std::stoull(range.substr(0, dash), nullptr, 16);
        const Va end = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (va >= start && va < end) {
            return perms;
        }
    }
    return "unmapped";
}

// Records GpuFaults; outlives the device that reports to it.
class FaultLog {
public:
    KfdDevice::FaultHandler handler() {
        return [this](const GpuFault& fault) {
            std::lock_guard lock(mutex_);
            faults_.push_back(fault);
            cv_.notify_all();
        };
    }
    std::vector<GpuFault> faults() {
        std::lock_guard lock(mutex_);
        return faults_;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<GpuFault> faults_;
};

// With XENHSA_TEST_DEVICE=kfd (ctest's label kfd) the tests run on the libhsakmt adapter
// over Debian's libhsakmt and the KFD shim, which ctest preloads into the test.
inline bool on_kfd() {
    const char* device = std::getenv("XENHSA_TEST_DEVICE");
    return device != nullptr && std::string_view(device) == "kfd";
}

inline std::unique_ptr<KfdDevice> device_under_test(const SoftAgentOptions& options) {
    if (!on_kfd()) {
        return make_soft_agent(options);
    }
    std::string message;
    auto device = open_hsakmt_device(&message);
    if (!device) {
        fail("open_hsakmt_device: " + message);
    }
    return std::move(device).value();
}

class SoftAgentTest : public ::testing::Test {
protected:
    explicit SoftAgentTest(SoftAgentOptions options = {}) : device_(device_under_test(options)) {
        device_->set_fault_handler(log_.handler());
    }

    KfdDevice& device() { return *device_; }
    FaultLog& log() { return log_; }

    // A KFD reports no built-in kernels: the shim's GPU runs them at their documented
    // kernel_object values (builtin_kernels.h).
    uint64_t kernel_object(const char* name) {
        if (!on_kfd()) {
            return find_builtin(*device_, name).kernel_object;
        }
        const char* names[] = {XENHSA_KERNEL_NAME_FILL,       XENHSA_KERNEL_NAME_COPY,
                               XENHSA_KERNEL_NAME_VECTOR_ADD, XENHSA_KERNEL_NAME_SAXPY,
                               XENHSA_KERNEL_NAME_CHECKSUM,   XENHSA_KERNEL_NAME_OOB_READ};
        for (int i = 0; i < XENHSA_KERNEL_COUNT_; ++i) {
            if (std::string_view(names[i]) == name) {
                return XENHSA_BUILTIN_KERNEL_OBJECT(i);
            }
        }
        fail(std::string("no built-in kernel ") + name);
    }

    EventId make_event(bool manual_reset = false, bool signaled = false) {
        EventSpec spec;
        spec.manual_reset = manual_reset;
        spec.signaled = signaled;
        auto info = device_->create_event(spec);
        check(info, "create_event");
        return info.value().id;
    }

    // True when `event` fires within the guard timeout.
    bool fired(EventId event, uint32_t timeout_ms = kWaitMs) {
        const EventId events[] = {event};
        auto mask = device_->wait_events(events, false, timeout_ms);
        return mask && mask.value() == 1;
    }

    template <class Args>
    Va put_kernarg(GpuBuffer& buffer, uint64_t offset, const Args& args) {
        std::memcpy(buffer.at<std::byte>(offset), &args, sizeof args);
        return buffer.va(offset);
    }

private:
    FaultLog log_;  // before the device: the device reports until it is gone
    std::unique_ptr<KfdDevice> device_;
};

}  // namespace xenhsa::hsa::soft_test

#endif
