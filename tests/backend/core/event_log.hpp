// One ordered log of seam calls shared by the fakes, so a test can check the order in
// which different seams were called (GPU release steps, then grant unmaps).
#ifndef XENHSA_TESTS_BACKEND_CORE_EVENT_LOG_HPP
#define XENHSA_TESTS_BACKEND_CORE_EVENT_LOG_HPP

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace xenhsa::backend::core::testing {

class EventLog {
public:
    void add(std::string entry) {
        std::lock_guard<std::mutex> hold(lock_);
        entries_.push_back(std::move(entry));
    }
    [[nodiscard]] std::vector<std::string> entries() const {
        std::lock_guard<std::mutex> hold(lock_);
        return entries_;
    }
    void clear() {
        std::lock_guard<std::mutex> hold(lock_);
        entries_.clear();
    }
    // Index of the first entry starting with `prefix`, or npos.
    [[nodiscard]] std::size_t find(const std::string& prefix) const {
        std::lock_guard<std::mutex> hold(lock_);
        for (std::size_t i = 0; i < entries_.size(); ++i) {
            if (entries_[i].rfind(prefix, 0) == 0) {
                return i;
            }
        }
        return npos;
    }
    [[nodiscard]] std::size_t count(const std::string& prefix) const {
        std::lock_guard<std::mutex> hold(lock_);
        return static_cast<std::size_t>(
            std::count_if(entries_.begin(), entries_.end(),
                          [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }));
    }

    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

private:
    mutable std::mutex lock_;
    std::vector<std::string> entries_;
};

}  // namespace xenhsa::backend::core::testing

#endif
