// The control socket's file: it appears only once the server listens (so whoever waits for
// it may connect at once), replaces what a dead backend left, and a failure says why.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <xenhsa/backend/service/control_server.hpp>

namespace {

namespace fs = std::filesystem;
using xenhsa::backend::service::ControlServer;

class ControlServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::array<char, 32> name{};
        std::strncpy(name.data(), "/tmp/xenhsa-ctl-XXXXXX", name.size() - 1);
        ASSERT_NE(::mkdtemp(name.data()), nullptr);
        dir_ = name.data();
    }
    void TearDown() override { fs::remove_all(dir_); }

    ControlServer server(const fs::path& path) {
        return {io_, path, [](const nlohmann::json&, const ControlServer::Reply& reply) {
                    reply(nlohmann::json{{"ok", true}});
                }};
    }

    // A Unix socket bound at `path` (listening or not), as a dead backend leaves one.
    static int bound_socket(const fs::path& path, bool listening) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
            (listening && ::listen(fd, 1) != 0)) {
            return -1;
        }
        return fd;
    }

    static bool connects(const fs::path& path) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        return ok;
    }

    boost::asio::io_context io_;
    fs::path dir_;
};

TEST_F(ControlServerTest, TheSocketAppearsOnlyOnceItListens) {
    const fs::path path = dir_ / "backend.sock";
    const int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    ASSERT_GE(watch, 0);
    ASSERT_GE(::inotify_add_watch(watch, dir_.c_str(), IN_CREATE | IN_MOVED_TO), 0);

    auto s = server(path);
    ASSERT_TRUE(s.listen());
    EXPECT_TRUE(connects(path));

    // Its name came by a rename of a listening socket, never by a bind.
    alignas(inotify_event) std::array<char, 4096> events{};
    const ssize_t n = ::read(watch, events.data(), events.size());
    ASSERT_GT(n, 0);
    bool created = false;
    bool moved = false;
    for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(events.data() + at);
        if (e->len > 0 && std::string(e->name) == "backend.sock") {
            created = created || (e->mask & IN_CREATE) != 0;
            moved = moved || (e->mask & IN_MOVED_TO) != 0;
        }
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
    ::close(watch);
    EXPECT_FALSE(created);
    EXPECT_TRUE(moved);
    EXPECT_FALSE(fs::exists(dir_ / "backend.sock.new"));

    s.close();
    EXPECT_FALSE(fs::exists(path));
}

TEST_F(ControlServerTest, ADeadBackendsSocketsAreReplaced) {
    const fs::path path = dir_ / "backend.sock";
    const int old_socket = bound_socket(path, false);
    const int old_binding = bound_socket(dir_ / "backend.sock.new", false);
    ASSERT_GE(old_socket, 0);
    ASSERT_GE(old_binding, 0);
    ::close(old_socket);
    ::close(old_binding);

    auto s = server(path);
    ASSERT_TRUE(s.listen());
    EXPECT_TRUE(connects(path));
}

TEST_F(ControlServerTest, ALiveBackendOrAFileIsNotReplaced) {
    const fs::path path = dir_ / "backend.sock";
    const int live = bound_socket(path, true);
    ASSERT_GE(live, 0);
    auto s = server(path);
    const auto in_use = s.listen();
    ASSERT_FALSE(in_use);
    EXPECT_EQ(in_use.error(), std::errc::address_in_use);
    ::close(live);

    const fs::path file = dir_ / "not-a-socket";
    std::ofstream(file) << "x";
    auto t = server(file);
    const auto exists = t.listen();
    ASSERT_FALSE(exists);
    EXPECT_EQ(exists.error(), std::errc::file_exists);
}

TEST_F(ControlServerTest, AFailedBindSaysWhy) {
    auto s = server(dir_ / "missing" / "backend.sock");
    const auto bound = s.listen();
    ASSERT_FALSE(bound);
    EXPECT_EQ(bound.error(), std::errc::no_such_file_or_directory);
}

}  // namespace
