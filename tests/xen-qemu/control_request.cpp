// xen_tier_control SOCKET JSON: one request on the backend's control socket (the same
// client xenhsa-ctl uses), its answer on stdout. For the tier's requests that xenhsa-ctl
// has no command for: the test builds' "test-attack".
#include <cstdio>
#include <iostream>
#include <string>

#include "control_client.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s SOCKET JSON\n", argv[0]);
        return 2;
    }
    const auto request = nlohmann::json::parse(argv[2], nullptr, false);
    if (!request.is_object()) {
        std::fprintf(stderr, "not a JSON object: %s\n", argv[2]);
        return 2;
    }
    std::string error;
    const auto answer = xenhsa::ctl::ask(argv[1], request, error);
    if (!answer) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    std::cout << answer->dump() << "\n";
    return 0;
}
