// Random bytes from the OS (getrandom), for what a guest must not be able to guess: handle
// keys, the place of a proposed VA window.
#ifndef XENHSA_HSA_OS_RANDOM_HPP
#define XENHSA_HSA_OS_RANDOM_HPP

#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <system_error>

namespace xenhsa::hsa {

// Fills [data, data + size); the OS's error (ENOSYS: no getrandom) otherwise.
inline std::error_code os_random(void* data, std::size_t size) noexcept {
    auto* bytes = static_cast<std::byte*>(data);
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = ::getrandom(bytes + got, size - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return {errno, std::generic_category()};
        }
        got += static_cast<std::size_t>(n);
    }
    return {};
}

}  // namespace xenhsa::hsa

#endif
