// One uid per worker, with the gid of the same number, from a range reserved for workers,
// as systemd's DynamicUser gives each service a uid of its own: the kernel then refuses a
// worker's signal, ptrace or /proc access to another worker whatever its filter allows.
// Numbers no account has; the supervisor hands a free one to each worker it starts (the
// worker takes it for good at confinement) and takes it back when the worker is reaped.
//
// The default range, 2000000000 + 65536, lies above the subordinate ids useradd hands out
// (/etc/subuid, 100000-600100000) and systemd-nspawn's container ranges (524288 up to
// 1879048191), and below 2^31. `--worker-uids FIRST:COUNT` moves it.
#ifndef XENHSA_BACKEND_SERVICE_WORKER_UIDS_HPP
#define XENHSA_BACKEND_SERVICE_WORKER_UIDS_HPP

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::backend::service {

struct WorkerUidRange {
    static constexpr uid_t kDefaultFirst = 2'000'000'000;
    static constexpr uint32_t kDefaultCount = 65536;

    uid_t first = kDefaultFirst;
    uint32_t count = kDefaultCount;

    [[nodiscard]] bool contains(uid_t uid) const noexcept {
        return uid >= first && uid - first < count;
    }
};

// "FIRST:COUNT": nullopt unless both are numbers, COUNT >= 1, FIRST >= 1000 (no system
// account's) and the range ends below 2^32 - 1 (-1 means "no change" to setresuid).
std::optional<WorkerUidRange> parse_worker_uids(std::string_view text);

class WorkerUids {
public:
    explicit WorkerUids(WorkerUidRange range = {}) noexcept : range_(range) {}

    // A uid no live worker has, the next after the last handed out (so that a number
    // comes back only after the whole range); nullopt when every one is in use.
    std::optional<uid_t> take();
    // `uid` is a live worker's (one adopted from the previous run); ignored outside the range.
    void hold(uid_t uid);
    void give_back(uid_t uid) noexcept;

    [[nodiscard]] const WorkerUidRange& range() const noexcept { return range_; }
    [[nodiscard]] std::size_t in_use() const noexcept { return used_.size(); }

private:
    WorkerUidRange range_;
    std::set<uid_t> used_;
    uint32_t next_ = 0;  // offset in the range to try first
};

// The uid a worker was started to take (its `--worker-uid`), nullopt when none was given.
// An adopted worker's uid is read from its command line, not from its credentials: a
// worker caught before it confined itself still runs as root, and its uid must not be
// handed to another worker.
std::optional<uid_t> worker_uid_argument(const std::vector<std::string>& args);
// The same read from a live process's /proc/<pid>/cmdline; nullopt when it is gone.
std::optional<uid_t> assigned_worker_uid(pid_t pid);

}  // namespace xenhsa::backend::service

#endif
