#include "worker_answers.hpp"

#include <xenhsa/backend/service/control_messages.hpp>

namespace xenhsa::backend::service {

WorkerAnswers::WorkerAnswers(std::string key, bool want_handle, bool report,
                             ControlServer::Reply reply)
    : key_(std::move(key)), want_handle_(want_handle), report_(report), reply_(std::move(reply)) {}

std::size_t WorkerAnswers::add(nlohmann::json offline_entry) {
    entries_.push_back(std::move(offline_entry));
    return entries_.size() - 1;
}

void WorkerAnswers::answer(std::size_t index, const DeviceId& id, pid_t pid,
                           const std::optional<nlohmann::json>& reply) {
    auto& entry = entries_[index];
    std::optional<DeviceStatus> status;
    std::string failure = "worker not answering";
    if (reply && json_bool(*reply, "ok") == true && reply->contains("status")) {
        status = device_status_from_json((*reply)["status"]);
    } else if (reply) {
        failure = std::string(json_string(*reply, "error").value_or("worker refused"));
    }
    if (reply && json_bool(*reply, "revoked_handle") == true) {
        handle_found_ = true;
    }
    if (status) {
        status->id = id;  // a worker speaks for its device only
        const nlohmann::json offline = entry;
        entry = to_json(*status);
        // What the supervisor knows better than the worker.
        for (const char* key :
             {"confinement_violations", "lend_share", "map_share", "held_pages"}) {
            if (const auto value = json_uint(offline, key)) {
                entry[key] = *value;
            }
        }
        entry["worker_pid"] = pid;
        if (const auto n = json_uint((*reply)["status"], "revoked")) {
            entry["revoked"] = *n;
        }
    } else {
        entry["error"] = failure;
        if (error_.empty() && !report_) {
            error_ = "device " + to_string(id) + ": " + failure;
        }
    }
    done();
}

void WorkerAnswers::done() {
    if (--left_ != 0) {
        return;
    }
    if (want_handle_ && !handle_found_ && error_.empty()) {
        error_ = "no device of the domain has that MAP or LEND handle";
    }
    nlohmann::json answer = {{"ok", error_.empty()}, {key_, entries_}};
    if (!error_.empty()) {
        answer["error"] = error_;
    }
    reply_(answer);
}

}  // namespace xenhsa::backend::service
