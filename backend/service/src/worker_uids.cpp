#include <charconv>
#include <fstream>
#include <limits>
#include <string>
#include <vector>
#include <xenhsa/backend/service/worker_uids.hpp>

namespace xenhsa::backend::service {

namespace {

constexpr uint64_t kFirstNonSystem = 1000;

template <class T>
std::optional<T> number(std::string_view text) {
    T value{};
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) {
        return std::nullopt;
    }
    return value;
}

}  // namespace

std::optional<WorkerUidRange> parse_worker_uids(std::string_view text) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const auto first = number<uint64_t>(text.substr(0, colon));
    const auto count = number<uint64_t>(text.substr(colon + 1));
    // The last uid must stay below (uid_t)-1.
    const uint64_t limit = std::numeric_limits<uid_t>::max();
    if (!first || !count || *count == 0 || *first < kFirstNonSystem || *first >= limit ||
        *count > limit - *first) {
        return std::nullopt;
    }
    return WorkerUidRange{static_cast<uid_t>(*first), static_cast<uint32_t>(*count)};
}

std::optional<uid_t> WorkerUids::take() {
    if (used_.size() >= range_.count) {
        return std::nullopt;
    }
    for (uint32_t tried = 0; tried < range_.count; ++tried) {
        const uint32_t offset = (next_ + tried) % range_.count;
        const uid_t uid = range_.first + offset;
        if (!used_.contains(uid)) {
            used_.insert(uid);
            next_ = (offset + 1) % range_.count;
            return uid;
        }
    }
    return std::nullopt;
}

void WorkerUids::hold(uid_t uid) {
    if (range_.contains(uid)) {
        used_.insert(uid);
    }
}

void WorkerUids::give_back(uid_t uid) noexcept { used_.erase(uid); }

std::optional<uid_t> worker_uid_argument(const std::vector<std::string>& args) {
    constexpr std::string_view kOption = "--worker-uid";
    std::optional<uid_t> uid;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == kOption && i + 1 < args.size()) {
            uid = number<uid_t>(args[++i]);
        } else if (arg.size() > kOption.size() && arg.substr(0, kOption.size()) == kOption &&
                   arg[kOption.size()] == '=') {
            uid = number<uid_t>(arg.substr(kOption.size() + 1));
        }
    }
    return uid;  // the last one given, as CLI11 takes it
}

std::optional<uid_t> assigned_worker_uid(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(in, arg, '\0');) {
        args.push_back(std::move(arg));
    }
    return worker_uid_argument(args);
}

}  // namespace xenhsa::backend::service
