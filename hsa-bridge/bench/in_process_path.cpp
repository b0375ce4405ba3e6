#include "in_process_path.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <cstring>

namespace xenhsa::bench {

using namespace hsa::soft_testing;

namespace {
constexpr uint32_t kWords = 16; // 64 bytes
constexpr uint32_t kRingPackets = 1024;
}  // namespace

InProcessPath::InProcessPath(const hsa::SoftAgentOptions &options)
    : device_(hsa::make_soft_agent(options))
{
    data_ = std::make_unique<GpuBuffer>(*device_, kPage);
    kernarg_ = std::make_unique<GpuBuffer>(*device_, kPage);
    signals_ = std::make_unique<SignalPage>(*device_);
    queue_ = std::make_unique<AqlTestQueue>(*device_, QueueOptions{.packets = kRingPackets});
    fill_ = find_builtin(*device_, XENHSA_KERNEL_NAME_FILL).kernel_object;
    const xenhsa_kernarg_fill args{data_->va(), kWords, 0x600d, 0};
    std::memcpy(kernarg_->at<void>(), &args, sizeof args);
}

InProcessPath::~InProcessPath()
{
    queue_.reset(); // the queue before the memory it holds
    signals_.reset();
    kernarg_.reset();
    data_.reset();
}

void InProcessPath::dispatch_and_wait()
{
    const uint64_t signal = signals_->init(0, 1);
    queue_->submit(dispatch_packet(fill_, kernarg_->va(), grid_1d(kWords, kWords), signal));
    if (!signals_->wait_eq(0, 0)) {
        fail("in-process dispatch did not complete");
    }
}

void InProcessPath::dispatch_batch_and_wait(uint32_t count)
{
    const uint64_t signal = signals_->init(1, count);
    for (uint32_t i = 0; i < count; ++i) {
        queue_->submit(dispatch_packet(fill_, kernarg_->va(), grid_1d(kWords, kWords), signal));
    }
    if (!signals_->wait_eq(1, 0)) {
        fail("in-process batch did not complete");
    }
}

}  // namespace xenhsa::bench
