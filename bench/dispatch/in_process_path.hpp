// Dispatches submitted straight to a software agent in this process: the producer writes
// the AQL packet into a ring in host memory and calls ring_doorbell. No guest, no ring
// protocol, no backend worker: the agent's own cost.
#ifndef XENHSA_BENCH_IN_PROCESS_PATH_HPP
#define XENHSA_BENCH_IN_PROCESS_PATH_HPP

#include "dispatch_path.hpp"

#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

#include <memory>

namespace xenhsa::bench {

class InProcessPath final : public DispatchPath {
public:
    explicit InProcessPath(const hsa::SoftAgentOptions &options);
    ~InProcessPath() override;

    [[nodiscard]] std::string_view name() const override { return "in_process"; }
    void dispatch_and_wait() override;
    void dispatch_batch_and_wait(uint32_t count) override;

private:
    void wait_zero(uint32_t signal, const char *failure);

    std::unique_ptr<hsa::KfdDevice> device_;
    std::unique_ptr<hsa::soft_testing::GpuBuffer> data_;
    std::unique_ptr<hsa::soft_testing::GpuBuffer> kernarg_;
    std::unique_ptr<hsa::soft_testing::SignalPage> signals_;
    std::unique_ptr<hsa::soft_testing::AqlTestQueue> queue_;
    uint64_t fill_ = 0;
};

}  // namespace xenhsa::bench

#endif
