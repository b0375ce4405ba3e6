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
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

namespace xenhsa::hsa::soft_test {

using namespace xenhsa::hsa::soft_testing;  // NOLINT: test vocabulary

inline constexpr uint32_t kWaitMs = 10'000;  // bounded waits only guard against hangs

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

class SoftAgentTest : public ::testing::Test {
protected:
    explicit SoftAgentTest(SoftAgentOptions options = {}) : device_(make_soft_agent(options)) {
        device_->set_fault_handler(log_.handler());
    }

    KfdDevice& device() { return *device_; }
    FaultLog& log() { return log_; }

    uint64_t kernel_object(const char* name) { return find_builtin(*device_, name).kernel_object; }

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
