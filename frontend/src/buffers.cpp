#include <utility>
#include <xenhsa/frontend/buffers.hpp>

namespace xenhsa::frontend {

GuestBuffer::GuestBuffer(GuestBuffer&& other) noexcept
    : window_(std::exchange(other.window_, nullptr)),
      va_(std::exchange(other.va_, 0)),
      pages_(std::move(other.pages_)) {}

GuestBuffer& GuestBuffer::operator=(GuestBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        window_ = std::exchange(other.window_, nullptr);
        va_ = std::exchange(other.va_, 0);
        pages_ = std::move(other.pages_);
    }
    return *this;
}

Result<void> GuestBuffer::release() noexcept {
    if (pages_.data() == nullptr) {
        return boost::outcome_v2::success();
    }
    const std::size_t bytes = size();
    if (auto ended = pages_.end_access(); !ended) {
        return ended.error();
    }
    if (window_ != nullptr) {
        (void)window_->release(va_, bytes);
    }
    window_ = nullptr;
    va_ = 0;
    return boost::outcome_v2::success();
}

void GuestBuffer::release_replaced() noexcept {
    const std::size_t bytes = size();
    pages_.release_replaced();
    if (window_ != nullptr && bytes != 0) {
        (void)window_->release(va_, bytes);
    }
    window_ = nullptr;
    va_ = 0;
}

void GuestBuffer::reset() noexcept {
    if (!release()) {
        pages_ = xen::SharedPages{};  // left to the hypervisor; the VA stays used
    }
    window_ = nullptr;
    va_ = 0;
}

}  // namespace xenhsa::frontend
