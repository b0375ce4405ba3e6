#include <spdlog/spdlog.h>

#include <algorithm>
#include <xenhsa/backend/service/control_messages.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

#include "supervisor_impl.hpp"
#include "worker_answers.hpp"

namespace xenhsa::backend::service::supervision {

nlohmann::json Supervisor::cpu_groups_status() const {
    if (!cpu_groups_.enabled()) {
        return {{"enabled", false}, {"why", cpu_groups_.why_disabled()}};
    }
    return {{"enabled", true}, {"dir", cpu_groups_.dir().string()}};
}

void Supervisor::on_control(const nlohmann::json& request, ControlServer::Reply reply) {
    const auto op = json_string(request, "op");
    if (shutting_down_) {
        reply(error_reply("the backend is shutting down"));
    } else if (op == op::status) {
        ask_workers(std::nullopt, nlohmann::json{{"op", op::status}}, "domains",
                    [reply = std::move(reply), total = confinement_violations_,
                     cpu = cpu_groups_status()](nlohmann::json answer) mutable {
                        answer["confinement_violations"] = total;
                        answer["cpu_groups"] = std::move(cpu);
                        reply(std::move(answer));
                    });
    } else if (op == op::revoke) {
        const auto domid = json_uint(request, "domid");
        if (!domid || *domid > kMaxGuestDomId) {
            reply(error_reply("revoke needs a guest domid"));
            return;
        }
        nlohmann::json ask = {{"op", op::revoke}};
        if (request.contains("handle")) {
            const auto handle = json_uint(request, "handle");
            if (!handle) {
                reply(error_reply("bad handle"));
                return;
            }
            ask["handle"] = *handle;
            log_->info("operator revoke of handle {:#x} of domain {}", *handle, *domid);
        } else {
            log_->info("operator revoke of domain {}", *domid);
        }
        ask_workers(static_cast<xen::DomId>(*domid), ask, "revoked", std::move(reply));
    } else if (op == op::quotas) {
        change_quotas(request, std::move(reply));
#if XENHSA_TEST_HOOKS
    } else if (op == op::test_forbidden_syscall || op == op::test_attack) {
        const auto domid = json_uint(request, "domid");
        auto found = std::find_if(devices_.begin(), devices_.end(), [&](const auto& d) {
            return domid && d.first.fe == *domid && d.second.worker;
        });
        if (found == devices_.end()) {
            reply(error_reply("no running worker of that domain"));
            return;
        }
        if (op == op::test_forbidden_syscall) {
            log_->warn("test hook: asking worker {} to break its filter",
                       found->second.worker->pid());
            found->second.worker->request({{"op", op::test_forbidden_syscall}},
                                          options_.worker_answer_timeout,
                                          [](std::optional<nlohmann::json>) {});
            reply({{"ok", true}});
            return;
        }
        log_->warn("test hook: worker {} attempts {}", found->second.worker->pid(),
                   json_string(request, "attempt").value_or("?"));
        found->second.worker->request(
            request, options_.worker_answer_timeout,
            [reply = std::move(reply)](std::optional<nlohmann::json> answer) mutable {
                reply(answer ? std::move(*answer)
                             : error_reply("no answer: the worker ended (a killed attempt)"));
            });
    } else if (op == op::fault_plan) {
        set_fault_plan(request, std::move(reply));
#endif
    } else {
        reply(error_reply("unknown op"));
    }
}

void Supervisor::change_quotas(const nlohmann::json& request, ControlServer::Reply reply) {
    const auto settings = json_settings(request);
    if (!settings || settings->empty()) {
        reply(error_reply("quotas needs a \"set\" list of key=value strings"));
        return;
    }
    std::optional<xen::DomId> domid;
    if (request.contains("domid")) {
        const auto value = json_uint(request, "domid");
        if (!value || *value > kMaxGuestDomId) {
            reply(error_reply("bad domid"));
            return;
        }
        domid = static_cast<xen::DomId>(*value);
        const bool known = std::any_of(devices_.begin(), devices_.end(),
                                       [&](const auto& d) { return d.first.fe == *domid; });
        if (!known) {
            reply(error_reply("domain " + std::to_string(*domid) + " has no device"));
            return;
        }
    }
    SupervisorOptions probe = options_for(domid.value_or(0));
    probe.connector.settings.insert(probe.connector.settings.end(), settings->begin(),
                                    settings->end());
    if (const auto problem = check_connector_config(probe.connector)) {
        reply(error_reply(*problem));
        return;
    }
    auto& remembered = domid ? domain_settings_[*domid] : options_.connector.settings;
    remembered.insert(remembered.end(), settings->begin(), settings->end());
    log_->info("operator quota change{}", domid ? " of domain " + std::to_string(*domid) : "");
    ask_workers(domid, nlohmann::json{{"op", op::quotas}, {"set", *settings}}, "updated",
                std::move(reply));
}

void Supervisor::ask_workers(std::optional<xen::DomId> domid, const nlohmann::json& request,
                             const char* key, ControlServer::Reply reply) {
    if (domid && std::none_of(devices_.begin(), devices_.end(),
                              [&](const auto& d) { return d.first.fe == *domid; })) {
        reply(error_reply("domain " + std::to_string(*domid) + " has no device"));
        return;
    }
    const bool report = request.value("op", "") == op::status;
    auto answers =
        std::make_shared<WorkerAnswers>(key, request.contains("handle"), report, std::move(reply));
    for (auto& [id, dev] : devices_) {
        if (domid && id.fe != *domid) {
            continue;
        }
        const std::size_t index = answers->add(offline_status(dev));
        if (!dev.worker) {
            continue;
        }
        answers->expect();
        const pid_t pid = dev.worker->pid();
        dev.worker->request(request, options_.worker_answer_timeout,
                            [answers, index, id = id, pid](std::optional<nlohmann::json> a) {
                                answers->answer(index, id, pid, a);
                            });
    }
    answers->done();
}

nlohmann::json Supervisor::offline_status(const Device& dev) {
    DeviceStatus s;
    s.id = dev.id;
    if (dev.worker && dev.worker->reported_state()) {
        s.state = *dev.worker->reported_state();
    } else {
        const auto state = read_state(*platform_.store, backend_dir(be_, dev.id));
        s.state = state && state.value() ? *state.value() : XenbusState::unknown;
    }
    nlohmann::json j = to_json(s);
    if (dev.worker) {
        j["worker_pid"] = dev.worker->pid();
    }
    if (dev.confinement_violations != 0) {
        j["confinement_violations"] = dev.confinement_violations;
    }
    if (shares_.admitted(dev.id)) {
        j["lend_share"] = shares_.lend_share();
        j["map_share"] = shares_.map_share();
        j["held_pages"] = dev.held_pages;
    }
    return j;
}

#if XENHSA_TEST_HOOKS
void Supervisor::set_fault_plan(const nlohmann::json& request, ControlServer::Reply reply) {
    const auto worker = json_string(request, "worker");
    const auto own = json_string(request, "supervisor");
    if (!worker && !own) {
        reply(error_reply("fault-plan needs \"worker\" or \"supervisor\""));
        return;
    }
    if (worker) {
        FaultPlan check;
        if (const auto bad = check.arm(worker->starts_with("trace=") ? "" : *worker)) {
            reply(error_reply(*bad));
            return;
        }
        options_.connector.fault_plan = *worker;
        log_->warn("test hook: the next worker started injects seam faults ({})", *worker);
    }
    if (own && options_.faults) {
        if (const auto bad = options_.faults->arm(*own)) {
            reply(error_reply(*bad));
            return;
        }
        log_->warn("test hook: the supervisor injects seam faults ({})", *own);
    }
    reply({{"ok", true}});
}
#endif

}  // namespace xenhsa::backend::service::supervision
