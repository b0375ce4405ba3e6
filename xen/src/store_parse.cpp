#include <cerrno>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::xen {

Result<uint64_t> parse_store_uint(std::string_view value, uint64_t max) {
    // The spelling first, then the range: a malformed text is EINVAL wherever its fault
    // lies, and only a well-formed number above `max` (however long) is ERANGE.
    if (value.empty() || (value.size() > 1 && value.front() == '0')) {
        return errno_code(EINVAL);
    }
    for (const char c : value) {
        if (c < '0' || c > '9') {
            return errno_code(EINVAL);
        }
    }
    uint64_t result = 0;
    for (const char c : value) {
        const auto digit = static_cast<uint64_t>(c - '0');
        if (digit > max || result > (max - digit) / 10) {
            return errno_code(ERANGE);
        }
        result = result * 10 + digit;
    }
    return result;
}

}  // namespace xenhsa::xen
