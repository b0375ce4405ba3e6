#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <xenhsa/backend/core/fatal.hpp>

namespace xenhsa::backend::core {

void fatal(const char* what, int err) noexcept {
    if (err != 0) {
        std::fprintf(stderr, "xenhsa-backend: fatal: %s: %s\n", what, std::strerror(err));
    } else {
        std::fprintf(stderr, "xenhsa-backend: fatal: %s\n", what);
    }
    std::fflush(stderr);
    std::abort();
}

}  // namespace xenhsa::backend::core
