#include "store_channel.hpp"

#include "sem_protocol.hpp"

namespace xenhsa::sem::channel {

std::string dir(xen::DomId peer) {
    return "/local/domain/" + std::to_string(peer) + "/data/xenhsa-sem";
}

std::string frame(uint64_t seq, std::string_view line) {
    return std::to_string(seq) + " " + std::string(line);
}

std::optional<std::pair<uint64_t, std::string>> unframe(std::string_view value) {
    const auto sp = value.find(' ');
    if (sp == std::string_view::npos) {
        return std::nullopt;
    }
    auto seq = to_uint(value.substr(0, sp), UINT64_MAX);
    if (!seq) {
        return std::nullopt;
    }
    return std::make_pair(*seq, std::string(value.substr(sp + 1)));
}

}  // namespace xenhsa::sem::channel
