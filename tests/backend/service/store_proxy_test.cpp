// A real-Xen worker's xenstore proxy (backend/service/src/store_proxy.hpp): what it lets
// through, and the process between a client and a stand-in xenstored.
#include "store_proxy.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/thread_confinement.hpp"

extern "C" {
#include <xen/io/xs_wire.h>
}

namespace xenhsa::backend::service {
namespace {

std::string payload(std::string_view path, std::string_view value = {}) {
    std::string p(path);
    p.push_back('\0');
    p.append(value);
    return p;
}

TEST(StoreRules, OnlyTheGuestsTwoDirectoriesAndReadingDomid) {
    const StoreRules rules(0, 7);
    const auto allowed = [&](uint32_t type, const std::string& p) {
        return !rules.refusal(type, p).has_value();
    };
    EXPECT_TRUE(allowed(XS_READ, payload("/local/domain/7/device/xenhsa/0/ring-ref")));
    EXPECT_TRUE(allowed(XS_DIRECTORY, payload("/local/domain/7/device/xenhsa")));
    EXPECT_TRUE(allowed(XS_WATCH, payload("/local/domain/7/device/xenhsa/0/state", "tok")));
    EXPECT_TRUE(allowed(XS_WRITE, payload("/local/domain/0/backend/xenhsa/7/0/state", "4")));
    EXPECT_TRUE(allowed(XS_WRITE, payload("backend/xenhsa/7/0/state", "4")));  // relative
    EXPECT_TRUE(allowed(XS_RM, payload("/local/domain/0/backend/xenhsa/7/0/error")));
    EXPECT_TRUE(allowed(XS_READ, payload("domid")));
    EXPECT_TRUE(allowed(XS_WATCH, payload("@releaseDomain", "tok")));
    EXPECT_TRUE(allowed(XS_TRANSACTION_START, payload("")));
    EXPECT_TRUE(allowed(XS_TRANSACTION_END, payload("T")));

    // Another guest's, the frontend's written, look-alike prefixes, anything else.
    EXPECT_EQ(rules.refusal(XS_WRITE, payload("/local/domain/0/backend/xenhsa/8/0/state", "1")),
              EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("/local/domain/8/device/xenhsa/0/ring-ref")), EACCES);
    EXPECT_EQ(rules.refusal(XS_WRITE, payload("/local/domain/7/device/xenhsa/0/state", "6")),
              EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("/local/domain/7/device/xenhsa-x")), EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("/local/domain/70/device/xenhsa/0")), EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("/local/domain/0/backend/xenhsa/70")), EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("/local/domain/7/name")), EACCES);
    EXPECT_EQ(rules.refusal(XS_WRITE, payload("domid", "3")), EACCES);
    EXPECT_EQ(rules.refusal(XS_SET_PERMS, payload("/local/domain/7/device/xenhsa/0", "n0")),
              EACCES);
    EXPECT_EQ(rules.refusal(XS_READ, payload("@releaseDomain")), EACCES);
    EXPECT_EQ(rules.refusal(XS_WATCH, payload("@other", "tok")), EACCES);
    for (const uint32_t type : std::initializer_list<uint32_t>{
             XS_CONTROL, XS_INTRODUCE, XS_RELEASE, XS_GET_DOMAIN_PATH, XS_IS_DOMAIN_INTRODUCED,
             XS_RESUME, XS_SET_TARGET, XS_ERROR, XS_WATCH_EVENT, uint32_t{99}}) {
        EXPECT_EQ(rules.refusal(type, payload("/local/domain/7/device/xenhsa")), EACCES) << type;
    }
    EXPECT_EQ(rules.refusal(XS_READ, "/local/domain/7/device/xenhsa"), EINVAL);  // no NUL
    EXPECT_EQ(rules.refusal(XS_READ, payload("")), EINVAL);
}

bool send_message(int fd, uint32_t type, uint32_t req_id, const std::string& body) {
    xsd_sockmsg h{type, req_id, 0, static_cast<uint32_t>(body.size())};
    return ::send(fd, &h, sizeof h, MSG_NOSIGNAL) == sizeof h &&
           ::send(fd, body.data(), body.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(body.size());
}

std::optional<std::pair<xsd_sockmsg, std::string>> receive_message(int fd) {
    xsd_sockmsg h{};
    if (::recv(fd, &h, sizeof h, MSG_WAITALL) != sizeof h || h.len > XENSTORE_PAYLOAD_MAX) {
        return std::nullopt;
    }
    std::string body(h.len, '\0');
    if (h.len > 0 && ::recv(fd, body.data(), h.len, MSG_WAITALL) != static_cast<ssize_t>(h.len)) {
        return std::nullopt;
    }
    return std::make_pair(h, body);
}

int listen_at(const std::string& path) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(s, 4) != 0) {
        return -1;
    }
    return s;
}

int connect_to(const std::string& path) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(s);
        return -1;
    }
    return s;
}

// A stand-in xenstored, a process of its own (the proxy is forked, as in a worker, while
// this process has one thread): "domid" reads 0; every other request is answered with
// its own type and the payload "seen:<path>".
class StandInXenstored {
public:
    StandInXenstored() {
        char dir[] = "/tmp/xenhsa-xsd-XXXXXX";
        dir_ = ::mkdtemp(dir);
        const int listener = listen_at(dir_ + "/socket");
        pid_ = ::fork();
        if (pid_ == 0) {
            const int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            while (auto m = receive_message(c)) {
                const std::string path = m->second.substr(0, m->second.find('\0'));
                send_message(c, m->first.type, m->first.req_id,
                             path == "domid" ? "0" : "seen:" + path);
            }
            ::_exit(0);
        }
        ::close(listener);
    }
    ~StandInXenstored() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        std::filesystem::remove_all(dir_);
    }
    StandInXenstored(const StandInXenstored&) = delete;
    StandInXenstored& operator=(const StandInXenstored&) = delete;
    [[nodiscard]] std::string path() const { return dir_ + "/socket"; }

private:
    std::string dir_;
    pid_t pid_ = -1;
};

TEST(StoreProxyProcess, RelaysTheGuestsPathsRefusesTheRestAndEndsWithTheWorker) {
    StandInXenstored xenstored;
    ASSERT_EQ(::setenv("XENSTORED_PATH", xenstored.path().c_str(), 1), 0);
    auto started = StoreProxy::start(7);
    ::unsetenv("XENSTORED_PATH");
    ASSERT_TRUE(started) << started.error().message();
    StoreProxy proxy = std::move(started).value();
    const int client = connect_to(proxy.path());
    ASSERT_GE(client, 0);
    proxy.seal();

    ASSERT_TRUE(send_message(client, XS_READ, 1, payload("/local/domain/7/device/xenhsa/0")));
    auto reply = receive_message(client);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->first.type, uint32_t{XS_READ});
    EXPECT_EQ(reply->first.req_id, 1U);
    EXPECT_EQ(reply->second, "seen:/local/domain/7/device/xenhsa/0");

    ASSERT_TRUE(send_message(client, XS_WRITE, 2, payload("/local/domain/8/device/x", "1")));
    reply = receive_message(client);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->first.type, uint32_t{XS_ERROR});
    EXPECT_EQ(reply->first.req_id, 2U);
    EXPECT_EQ(reply->second, std::string("EACCES", 7));

    // Once sealed, no one else connects, and the socket is gone.
    EXPECT_FALSE(std::filesystem::exists(proxy.path()));
    const auto status = testing::proc_fields("/proc/" + std::to_string(proxy.pid()) + "/status");
    EXPECT_EQ(status.at("Seccomp"), "2");
    EXPECT_EQ(status.at("NoNewPrivs"), "1");
    EXPECT_EQ(status.at("CapEff"), "0000000000000000");

    // A message larger than xenstore's largest ends the connection.
    xsd_sockmsg huge{XS_READ, 3, 0, XENSTORE_PAYLOAD_MAX + 1};
    ASSERT_EQ(::send(client, &huge, sizeof huge, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof huge));
    char byte = 0;
    EXPECT_EQ(::recv(client, &byte, 1, 0), 0);
    ::close(client);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(proxy.pid(), &wstatus, 0), proxy.pid());
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
}

}  // namespace
}  // namespace xenhsa::backend::service
