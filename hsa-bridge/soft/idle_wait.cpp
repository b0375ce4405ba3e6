#include "idle_wait.hpp"

namespace xenhsa::hsa::soft {

void IdleWait::busy() noexcept {
    if (blocked_) {
        blocked_ = false;
        kicks_.awake();
    }
    idle_ = false;
}

}  // namespace xenhsa::hsa::soft
