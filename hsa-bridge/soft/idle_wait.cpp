#include "idle_wait.hpp"

namespace xenhsa::hsa::soft {

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void IdleWait::busy() noexcept {
    if (blocked_) {
        blocked_ = false;
        kicks_.awake();
    }
    idle_ = false;
}

}  // namespace xenhsa::hsa::soft
