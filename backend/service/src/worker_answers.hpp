// One control answer gathered from several workers: the supervisor asks the worker of
// every device concerned and answers once all of them replied or timed out, with
// {"ok": ..., <key>: [device status...]} and the first worker's failure as "error". A
// status report is answered ok whatever the workers do: a device whose worker does not
// answer (it is ending, or stuck) is listed with what the supervisor knows and "error".
#ifndef XENHSA_BACKEND_SERVICE_WORKER_ANSWERS_HPP
#define XENHSA_BACKEND_SERVICE_WORKER_ANSWERS_HPP

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <xenhsa/backend/service/control_server.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

class WorkerAnswers {
public:
    // `want_handle`: a revoke of one handle, which some worker must report having done.
    // `report`: a status report, which a worker's failure does not fail.
    WorkerAnswers(std::string key, bool want_handle, bool report, ControlServer::Reply reply);

    // A device's entry as the supervisor sees it; returns its index for answer().
    std::size_t add(nlohmann::json offline_entry);
    // One more worker reply to wait for.
    void expect() noexcept { ++left_; }
    // The worker of entry `index` answered (nullopt: it did not, in time).
    void answer(std::size_t index, const DeviceId& id, pid_t pid,
                const std::optional<nlohmann::json>& reply);
    // Called once after every expect(), and once by the asker when it has added all.
    void done();
    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

private:
    std::vector<nlohmann::json> entries_;
    std::size_t left_ = 1;  // the asker's own done()
    std::string error_;     // the first worker's failure
    std::string key_;
    bool want_handle_ = false;
    bool report_ = false;
    bool handle_found_ = false;
    ControlServer::Reply reply_;
};

}  // namespace xenhsa::backend::service

#endif
