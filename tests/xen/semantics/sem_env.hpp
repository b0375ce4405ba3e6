// Where the semantics tests run: "self" is a Platform of this process (dom0, the backend
// side) and "peer" is another domain the test drives with protocol commands.
//
//   sim: xenhsa-sim (a fresh daemon per test); the peer is a forked child attached as a
//        guest domain, commands over a socketpair; peer death = SIGKILL of the child.
//   xen: real Xen in the xen-qemu tier; self is dom0 over the libxen* adapters, the peer
//        is the domU's xen_semantics_peer, commands over xenstore; peer death = `xl
//        destroy` (the domU is gone for the rest of the run: that test runs last).
#ifndef XENHSA_TESTS_SEM_ENV_HPP
#define XENHSA_TESTS_SEM_ENV_HPP

#include <memory>
#include <string>
#include <string_view>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::sem {

enum class Tier : uint8_t { sim, xen };

class SemEnv {
public:
    virtual ~SemEnv() = default;
    [[nodiscard]] virtual Tier tier() const noexcept = 0;
    virtual xen::Platform& self() noexcept = 0;
    [[nodiscard]] virtual xen::DomId peer_domid() const noexcept = 0;
    // A domain that is neither self nor the peer (the target of a "foreign" grant).
    [[nodiscard]] virtual xen::DomId other_domid() const noexcept = 0;
    // One command to the peer, its reply line; an error only when the transport failed.
    virtual xen::Result<std::string> command(std::string_view line) = 0;
    // Kills the peer domain (it dies: no clean-up of its own).
    virtual xen::Result<void> kill_peer() = 0;
};

// Defined by the environment linked in (sim_env.cpp or xen_env.cpp). Called at the
// start of every test: the sim gives a fresh environment, Xen the one of the run.
// nullptr (and `why`) when it cannot be set up.
std::shared_ptr<SemEnv> open_env(std::string& why);

}  // namespace xenhsa::sem

#endif
