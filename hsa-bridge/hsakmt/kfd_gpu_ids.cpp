#include "kfd_gpu_ids.hpp"

#include <cstdio>
#include <cstring>

namespace xenhsa::hsa::kmt {

namespace {

// The number in a one-number sysfs file, or in its "key value" line for `key`.
bool read_value(const std::string& path, const char* key, long long& value) {
    FILE* file = std::fopen(path.c_str(), "r");
    if (file == nullptr) {
        return false;
    }
    bool found = false;
    char line[256];
    while (!found && std::fgets(line, sizeof line, file) != nullptr) {
        char name[128] = {};
        long long number = 0;
        if (key == nullptr) {
            found = std::sscanf(line, "%lld", &number) == 1;
        } else {
            found =
                std::sscanf(line, "%127s %lld", name, &number) == 2 && std::strcmp(name, key) == 0;
        }
        if (found) {
            value = number;
        }
    }
    std::fclose(file);
    return found;
}

}  // namespace

std::map<int32_t, uint32_t> gpu_ids_by_render_minor(const std::string& topology) {
    std::map<int32_t, uint32_t> ids;
    for (int node = 0; node < 256; ++node) {
        const std::string dir = topology + "/nodes/" + std::to_string(node);
        long long gpu_id = 0;
        if (!read_value(dir + "/gpu_id", nullptr, gpu_id)) {
            break;  // nodes are numbered from 0 without gaps
        }
        long long minor = 0;
        if (gpu_id != 0 && read_value(dir + "/properties", "drm_render_minor", minor)) {
            ids[static_cast<int32_t>(minor)] = static_cast<uint32_t>(gpu_id);
        }
    }
    return ids;
}

}  // namespace xenhsa::hsa::kmt
