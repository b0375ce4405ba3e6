#pragma once
// The environment through which a guest program finds the built-in kernels' objects (what
// xenhsa-run exports from the guest library's kernel list): XENHSA_KERNEL_<NAME>=0x<object>.
// For runs on the KFD shim's GPU, where no guest library of the soft path sets them.

#include <xenhsa/hsa/builtin_kernels.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace xenhsa::hsa {

// (variable, value) per built-in kernel.
inline std::vector<std::pair<std::string, std::string>> builtin_kernel_env() {
    const char* names[] = {XENHSA_KERNEL_NAME_FILL,       XENHSA_KERNEL_NAME_COPY,
                           XENHSA_KERNEL_NAME_VECTOR_ADD, XENHSA_KERNEL_NAME_SAXPY,
                           XENHSA_KERNEL_NAME_CHECKSUM,   XENHSA_KERNEL_NAME_OOB_READ};
    static_assert(sizeof names / sizeof names[0] == XENHSA_KERNEL_COUNT_);
    std::vector<std::pair<std::string, std::string>> env;
    for (int i = 0; i < XENHSA_KERNEL_COUNT_; ++i) {
        std::string name = "XENHSA_KERNEL_";
        for (const char* c = names[i]; *c != '\0'; ++c) {
            name += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
        }
        char value[24];
        std::snprintf(value, sizeof value, "0x%llx",
                      static_cast<unsigned long long>(XENHSA_BUILTIN_KERNEL_OBJECT(i)));
        env.emplace_back(std::move(name), value);
    }
    return env;
}

}  // namespace xenhsa::hsa
