#include "kernels_env.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace xenhsa::frontend::hsakmt {

void export_kernels(std::span<const KernelEntry> kernels) {
    for (const KernelEntry& k : kernels) {
        std::string name = "XENHSA_KERNEL_";
        bool valid = !k.name.empty();
        for (const char c : k.name) {
            const auto u = static_cast<unsigned char>(c);
            valid = valid && (std::isalnum(u) != 0 || c == '_');
            name += static_cast<char>(std::toupper(u));
        }
        if (!valid) {
            continue;  // a name the environment cannot carry
        }
        char value[24];
        std::snprintf(value, sizeof value, "0x%llx", static_cast<unsigned long long>(k.object));
        ::setenv(name.c_str(), value, 1);
    }
}

}  // namespace xenhsa::frontend::hsakmt
