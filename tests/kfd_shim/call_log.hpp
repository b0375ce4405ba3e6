// What the "kernel" saw, in order: one line per KFD or DRM ioctl, and per munmap of a BO's
// range or of a grant mapping (the ones the kernel's order concerns), written
// with one write(2) to $XENHSA_KFD_SHIM_LOG (opened when the library loads, before any
// confinement), so that tests can read the order a real kernel would see:
//
//   <pid> <seq> kfd <IOCTL> <key>=<value> ... -> ok|<errno name> [<key>=<value> ...]
//   <pid> <seq> drm <IOCTL> ... -> ...
//   <pid> <seq> munmap addr=0x... size=0x... [grant] [evicts=<handles>]
//   <pid> <seq> close kfd bos=N [held=KIND:0xva|KIND:signal-page,...] queues=N events=N
#ifndef XENHSA_TESTS_KFD_SHIM_CALL_LOG_HPP
#define XENHSA_TESTS_KFD_SHIM_CALL_LOG_HPP

#include <atomic>
#include <string>
#include <string_view>

namespace xenhsa::kfd_shim {

class CallLog {
public:
    void open_from_env() noexcept;
    [[nodiscard]] bool on() const noexcept { return fd_ >= 0; }
    // Writes "<pid> <seq> <text>\n".
    void line(std::string_view text) noexcept;

private:
    int fd_ = -1;
    std::atomic<uint64_t> seq_{0};
};

CallLog& call_log() noexcept;

// "0x1f" for values, the errno's name for results.
std::string hex(uint64_t value);
std::string result_text(int err);

}  // namespace xenhsa::kfd_shim

#endif
