#include <charconv>
#include <xenhsa/xen/real/grant_limits.hpp>

namespace xenhsa::xen::real {

std::optional<uint32_t> maptrack_frames_from_commandline(std::string_view commandline) noexcept {
    constexpr std::string_view kKey = "gnttab_max_maptrack_frames=";
    std::optional<uint32_t> found;
    std::size_t at = 0;
    while ((at = commandline.find(kKey, at)) != std::string_view::npos) {
        const bool word_start = at == 0 || commandline[at - 1] == ' ';
        at += kKey.size();
        if (!word_start) {
            continue;
        }
        const std::string_view rest = commandline.substr(at);
        const std::string_view value = rest.substr(0, rest.find(' '));
        uint32_t frames = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), frames);
        if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) {
            found = frames;
        } else {
            found.reset();  // Xen refuses a malformed value and keeps its default
        }
    }
    return found;
}

}  // namespace xenhsa::xen::real
