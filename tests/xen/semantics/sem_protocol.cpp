#include "sem_protocol.hpp"

#include <xenhsa/xen/store.hpp>

namespace xenhsa::sem {

std::vector<std::string> split_words(std::string_view line) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') {
            ++i;
        }
        const std::size_t start = i;
        while (i < line.size() && line[i] != ' ') {
            ++i;
        }
        if (i > start) {
            words.emplace_back(line.substr(start, i - start));
        }
    }
    return words;
}

std::optional<uint64_t> to_uint(std::string_view word, uint64_t max) {
    auto v = xen::parse_store_uint(word, max);
    if (!v) {
        return std::nullopt;
    }
    return v.value();
}

std::string to_hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0xF]);
    }
    return out.empty() ? std::string("-") : out;  // "-": the empty value, still one word
}

std::optional<std::string> from_hex(std::string_view hex) {
    if (hex == "-") {
        return std::string();
    }
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int hi = nibble(hex[i]);
        const int lo = nibble(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(hi << 4 | lo));
    }
    return out;
}

std::optional<Reply> parse_reply(std::string_view line) {
    auto words = split_words(line);
    if (words.empty()) {
        return std::nullopt;
    }
    Reply r;
    std::size_t first = 1;
    if (words[0] == "err") {
        if (words.size() < 2) {
            return std::nullopt;
        }
        auto e = to_uint(words[1], 4095);
        if (!e || *e == 0) {
            return std::nullopt;
        }
        r.err = static_cast<int>(*e);
        first = 2;
    } else if (words[0] != "ok") {
        return std::nullopt;
    }
    r.words.assign(words.begin() + static_cast<std::ptrdiff_t>(first), words.end());
    return r;
}

}  // namespace xenhsa::sem
