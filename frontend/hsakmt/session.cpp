#include "session.hpp"

#include "config.hpp"
#include "kernels_env.hpp"
#include "log.hpp"

namespace xenhsa::frontend::hsakmt {

std::unique_ptr<Session> Session::open(std::mutex& mutex, std::string& why) {
    const ConfigResult config = load_config();
    if (!config.config) {
        why = config.error;
        return nullptr;
    }
    set_log_level(config.config->log_level);
    std::unique_ptr<Session> s(new Session());
    s->connection_ = Connection::open(*config.config, mutex, why);
    if (!s->connection_) {
        return nullptr;
    }
    auto topology = fetch_topology(s->connection_->client());
    if (!topology) {
        why = "reading the topology (QUERY) failed: " + topology.error().message();
        return nullptr;
    }
    s->topology_ = std::move(topology.value());
    s->memory_ =
        std::make_unique<Memory>(s->connection_->client(), s->topology_,
                                 [c = s->connection_.get()] { return c->memory_limits(); });
    s->events_ = std::make_unique<Events>(s->connection_->client(), *s->memory_, s->topology_);
    s->queues_ = std::make_unique<Queues>(s->connection_->client(), *s->memory_, *s->events_,
                                          s->connection_->doorbell_page());
    export_kernels(s->topology_.kernels);
    log().info("{} nodes, KFD interface {}.{}, {} built-in kernels", s->topology_.nodes.size(),
               s->topology_.version.KernelInterfaceMajorVersion,
               s->topology_.version.KernelInterfaceMinorVersion, s->topology_.kernels.size());
    return s;
}

}  // namespace xenhsa::frontend::hsakmt
