// The peer command protocol: one text line per command and per reply.
//
// A command is space-separated words (numbers in decimal, store values in hex). A reply
// is "ok <words...>" or "err <errno> <words...>". See peer_executor.hpp for the commands.
#ifndef XENHSA_TESTS_SEM_PROTOCOL_HPP
#define XENHSA_TESTS_SEM_PROTOCOL_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::sem {

std::vector<std::string> split_words(std::string_view line);

// Strict unsigned decimal (parse_store_uint's rules).
std::optional<uint64_t> to_uint(std::string_view word, uint64_t max);

std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view hex);

struct Reply {
    int err = 0;  // 0: "ok"
    std::vector<std::string> words;
};
std::optional<Reply> parse_reply(std::string_view line);

}  // namespace xenhsa::sem

#endif
