// Dispatches submitted straight to a software agent in this process: the producer writes
// the AQL packet into a ring in host memory and calls ring_doorbell. No guest, no ring
// protocol, no backend worker: the agent's own cost.
//
// It waits for completion with the guest library's signal wait (spin briefly, yield, then
// sleep: what the guest path does), or, with Wait::poll, by polling the signal as the
// packet-loop baseline's producer does (packet_loop_path.hpp).
#ifndef XENHSA_BENCH_IN_PROCESS_PATH_HPP
#define XENHSA_BENCH_IN_PROCESS_PATH_HPP

#include <memory>
#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

#include "dispatch_path.hpp"

namespace xenhsa::bench {

class InProcessPath final : public DispatchPath {
public:
    enum class Wait : uint8_t { signal_wait, poll };

    explicit InProcessPath(const hsa::SoftAgentOptions& options, Wait wait = Wait::signal_wait);
    ~InProcessPath() override;

    [[nodiscard]] std::string_view name() const override {
        return wait_ == Wait::poll ? "in_process_polling" : "in_process";
    }
    void dispatch_and_wait() override;
    void dispatch_batch_and_wait(uint32_t count) override;

private:
    void wait_zero(uint32_t signal, const char* failure);

    std::unique_ptr<hsa::KfdDevice> device_;
    std::unique_ptr<hsa::soft_testing::GpuBuffer> data_;
    std::unique_ptr<hsa::soft_testing::GpuBuffer> kernarg_;
    std::unique_ptr<hsa::soft_testing::SignalPage> signals_;
    std::unique_ptr<hsa::soft_testing::AqlTestQueue> queue_;
    uint64_t fill_ = 0;
    Wait wait_;
};

}  // namespace xenhsa::bench

#endif
