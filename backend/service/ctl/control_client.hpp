// One request/answer exchange on the backend's control socket, blocking with a timeout.
#ifndef XENHSA_BACKEND_SERVICE_CTL_CONTROL_CLIENT_HPP
#define XENHSA_BACKEND_SERVICE_CTL_CONTROL_CLIENT_HPP

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace xenhsa::ctl {

// The backend's answer (a JSON object), or nullopt with `error` set.
std::optional<nlohmann::json> ask(const std::filesystem::path& socket,
                                  const nlohmann::json& request, std::string& error,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace xenhsa::ctl

#endif
