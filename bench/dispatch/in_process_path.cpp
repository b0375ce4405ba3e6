#include "in_process_path.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <chrono>
#include <cstring>
#include <xenhsa/frontend/signal.hpp>

namespace xenhsa::bench {

using namespace hsa::soft_testing;

namespace {
constexpr uint32_t kWords = 16;  // 64 bytes
constexpr uint32_t kRingPackets = 1024;
}  // namespace

InProcessPath::InProcessPath(const hsa::SoftAgentOptions& options, Wait wait)
    : device_(hsa::make_soft_agent(options)), wait_(wait) {
    data_ = std::make_unique<GpuBuffer>(*device_, kPage);
    kernarg_ = std::make_unique<GpuBuffer>(*device_, kPage);
    signals_ = std::make_unique<SignalPage>(*device_);
    queue_ = std::make_unique<AqlTestQueue>(*device_, QueueOptions{.packets = kRingPackets});
    fill_ = find_builtin(*device_, XENHSA_KERNEL_NAME_FILL).kernel_object;
    const xenhsa_kernarg_fill args{data_->va(), kWords, 0x600d, 0};
    std::memcpy(kernarg_->at<void>(), &args, sizeof args);
}

InProcessPath::~InProcessPath() {
    queue_.reset();  // the queue before the memory it holds
    signals_.reset();
    kernarg_.reset();
    data_.reset();
}

// The guest library's wait, so that both paths wait for completion the same way.
void InProcessPath::wait_zero(uint32_t signal, const char* failure) {
    // The signal handle is its address (in-process, GPU VA = host VA).
    const auto& s = *reinterpret_cast<const amd_signal_t*>(signals_->signal(signal));
    if (wait_ == Wait::poll) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (uint32_t i = 1; frontend::aql::signal_load(s) != 0; ++i) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if (i % 1024 == 0 && std::chrono::steady_clock::now() > deadline) {
                fail(failure);
            }
        }
        return;
    }
    if (!frontend::aql::signal_wait(s, HSA_SIGNAL_CONDITION_EQ, 0, std::chrono::seconds(10))) {
        fail(failure);
    }
}

void InProcessPath::dispatch_and_wait() {
    const uint64_t signal = signals_->init(0, 1);
    queue_->submit(dispatch_packet(fill_, kernarg_->va(), grid_1d(kWords, kWords), signal));
    wait_zero(0, "in-process dispatch did not complete");
}

void InProcessPath::dispatch_batch_and_wait(uint32_t count) {
    const uint64_t signal = signals_->init(1, count);
    // The best an in-process producer can do: every packet written, then one write-index
    // publication and one doorbell for the batch.
    const auto packet = dispatch_packet(fill_, kernarg_->va(), grid_1d(kWords, kWords), signal);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t index = queue_->reserve();
        queue_->write_body(index, packet);
        queue_->publish_header(index, packet);
    }
    queue_->publish_write_index();
    wait_zero(1, "in-process batch did not complete");
}

}  // namespace xenhsa::bench
