// The command channel between dom0 and the domU on real Xen: two xenstore nodes in the
// domU's writable area, each "<seq> <line>". dom0 writes cmd; the peer, watching it, runs
// each new seq once and writes reply with the same seq; dom0 watches reply.
#ifndef XENHSA_TESTS_SEM_STORE_CHANNEL_HPP
#define XENHSA_TESTS_SEM_STORE_CHANNEL_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::sem::channel {

// /local/domain/<peer>/data/xenhsa-sem; the nodes are <dir>/cmd, <dir>/reply, <dir>/ready.
std::string dir(xen::DomId peer);

std::string frame(uint64_t seq, std::string_view line);
std::optional<std::pair<uint64_t, std::string>> unframe(std::string_view value);

}  // namespace xenhsa::sem::channel

#endif
