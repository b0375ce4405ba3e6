// The xenhsa-sim daemon as a process: domain lifecycle, attach, the CLI, and hostile
// clients on its socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <xenhsa/xen/sim/wire_io.hpp>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;
namespace wire = xen::sim::wire;
using xen::sim::UniqueFd;

bool listed(const std::filesystem::path& dir, DomId id) {
    auto domains = sim::list_domains(dir);
    if (!domains) return false;
    for (const auto& d : domains.value()) {
        if (d.domid == id) return true;
    }
    return false;
}

TEST_F(SimTest, DomainsAreCreatedListedAndDestroyed) {
    const DomId g = create_guest("guest-1", 64);
    ASSERT_NE(g, 0);
    auto domains = sim::list_domains(sim.dir());
    ASSERT_TRUE(domains);
    ASSERT_EQ(domains.value().size(), 2u);
    EXPECT_EQ(domains.value()[0].domid, 0);
    EXPECT_EQ(domains.value()[0].name, "Domain-0");
    EXPECT_TRUE(domains.value()[0].alive);
    EXPECT_EQ(domains.value()[1].domid, g);
    EXPECT_EQ(domains.value()[1].name, "guest-1");
    EXPECT_TRUE(domains.value()[1].alive);

    EXPECT_EQ(sim::create_domain(sim.dir(), "guest-1", 64).error().value(), EEXIST);
    EXPECT_EQ(sim::create_domain(sim.dir(), "", 64).error().value(), EINVAL);
    EXPECT_EQ(sim::create_domain(sim.dir(), "a b", 64).error().value(), EINVAL);
    EXPECT_EQ(sim::create_domain(sim.dir(), "x/y", 64).error().value(), EINVAL);
    EXPECT_EQ(sim::create_domain(sim.dir(), std::string(65, 'a'), 64).error().value(), EINVAL);
    EXPECT_EQ(sim::create_domain(sim.dir(), "nopages", 0).error().value(), EINVAL);

    EXPECT_EQ(sim::destroy_domain(sim.dir(), 0).error().value(), EINVAL) << "dom0 never dies";
    ASSERT_TRUE(dom0.store->watch("@releaseDomain", "rel"));
    ASSERT_TRUE(sim::destroy_domain(sim.dir(), g));
    // Done by the time destroy returns: its home is gone and @releaseDomain was sent.
    EXPECT_EQ(dom0.store->read(xen::kNoTx, "/local/domain/" + std::to_string(g)).error().value(),
              ENOENT);
    std::vector<std::string> events;
    while (auto ev = dom0.store->next_event().value()) events.push_back(ev->path);
    EXPECT_EQ(events, (std::vector<std::string>{"@releaseDomain", "@releaseDomain"}))
        << "at registration, then for the destroyed domain";
    EXPECT_FALSE(listed(sim.dir(), g));
    EXPECT_FALSE(alive(g));
    EXPECT_EQ(sim::destroy_domain(sim.dir(), g).error().value(), ESRCH);
    EXPECT_EQ(sim::attach(sim.dir(), g).error().value(), ESRCH);
    EXPECT_EQ(sim::attach(sim.dir(), 0x7FF5).error().value(), EINVAL);

    const DomId again = create_guest("guest-1", 64);
    EXPECT_NE(again, g) << "domids are not reused at once";
}

TEST_F(SimTest, AttachGivesTheSeamBundle) {
    ASSERT_TRUE(dom0.grants && dom0.sharer && dom0.events && dom0.store && dom0.domains);
    EXPECT_TRUE(dom0.foreign) << "dom0 may map foreign memory";
    EXPECT_EQ(dom0.domains->self(), 0);
    EXPECT_EQ(dom0.store->read(xen::kNoTx, "domid").value(), "0");
    EXPECT_EQ(dom0.store->read(xen::kNoTx, "/local/domain/0/name").value(), "Domain-0");
    const DomId g = create_guest("guest");
    EXPECT_TRUE(alive(0));
    EXPECT_TRUE(alive(g));
    EXPECT_FALSE(alive(g + 1));
    EXPECT_EQ(dom0.domains->alive(0x7FF5).error().value(), EINVAL);

    auto child = spawn_in(g, [g](Platform& p, Link&) {
        CHILD_CHECK(p.grants && p.sharer && p.events && p.store && p.domains);
        CHILD_CHECK(!p.foreign);
        CHILD_CHECK(p.domains->self() == g);
        auto domid = p.store->read(xen::kNoTx, "domid");
        CHILD_CHECK(domid && domid.value() == std::to_string(g));
        auto name = p.store->read(xen::kNoTx, "name");
        CHILD_CHECK(name && name.value() == "guest");
        // "name" and "domid" are the toolstack's: readable, not writable.
        CHILD_CHECK(p.store->write(xen::kNoTx, "name", "evil").error().value() == EACCES);
        return 0;
    });
    const auto status = child.wait();
    EXPECT_TRUE(exited_with(status, 0)) << describe_status(status);
}

TEST_F(SimTest, GuestDiesWithItsLastProcess) {
    const DomId g = create_guest("guest");
    auto first = spawn_in(g, [](Platform&, Link& link) {
        link.send(1);
        return link.receive() ? 0 : 2;
    });
    auto second = spawn_in(g, [](Platform&, Link& link) {
        link.send(1);
        return link.receive() ? 0 : 2;
    });
    ASSERT_TRUE(first.link().receive());
    ASSERT_TRUE(second.link().receive());
    first.link().send(0);
    EXPECT_TRUE(exited_with(first.wait(), 0));
    EXPECT_TRUE(alive(g)) << "another process is still attached";
    second.link().send(0);
    EXPECT_TRUE(exited_with(second.wait(), 0));
    EXPECT_TRUE(eventually([&] { return !alive(g); }));
    EXPECT_FALSE(listed(sim.dir(), g));
}

TEST_F(SimTest, DestroyKillsTheGuestsProcesses) {
    const DomId g = create_guest("guest");
    auto child = spawn_in(g, [](Platform&, Link& link) -> int {
        link.send(1);
        for (;;) ::pause();
    });
    ASSERT_TRUE(child.link().receive());
    ASSERT_TRUE(sim::destroy_domain(sim.dir(), g));
    const auto status = child.wait();
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) << describe_status(status);
    EXPECT_FALSE(alive(g));
}

TEST_F(SimTest, DestroySparesDom0Processes) {
    // This test process is attached to dom0; attaching it to a guest too must not make the
    // guest's destruction kill it.
    const DomId g = create_guest("guest");
    auto guest = sim::attach(sim.dir(), g);
    ASSERT_TRUE(guest);
    ASSERT_TRUE(sim::destroy_domain(sim.dir(), g));
    EXPECT_FALSE(alive(g));
    EXPECT_EQ(guest.value().store->read(xen::kNoTx, "domid").error().value(), EPIPE)
        << "the guest's connections are closed";
}

std::string run(const std::string& cmd, int& status) {
    std::string out;
    FILE* f = ::popen(cmd.c_str(), "r");
    if (f == nullptr) return out;
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), buf.size(), f) != nullptr) out += buf.data();
    status = ::pclose(f);
    return out;
}

TEST_F(SimTest, CliCreatesListsAndDestroys) {
    const std::string bin = std::string(XENHSA_SIM_BINARY) + " --sim-dir " + sim.dir().string();
    int status = -1;
    const std::string id_text = run(bin + " create --name cli-guest --pages 32", status);
    ASSERT_EQ(status, 0);
    const int id = std::stoi(id_text);
    EXPECT_TRUE(listed(sim.dir(), static_cast<DomId>(id)));

    const auto json = nlohmann::json::parse(run(bin + " list --json", status));
    ASSERT_EQ(status, 0);
    ASSERT_EQ(json.size(), 2u);
    EXPECT_EQ(json[1]["name"], "cli-guest");
    EXPECT_EQ(json[1]["domid"], id);
    EXPECT_EQ(json[1]["alive"], true);

    const std::string table = run(bin + " list", status);
    EXPECT_EQ(status, 0);
    EXPECT_NE(table.find("cli-guest"), std::string::npos);

    run(bin + " destroy --domid " + std::to_string(id), status);
    EXPECT_EQ(status, 0);
    EXPECT_FALSE(listed(sim.dir(), static_cast<DomId>(id)));
    run(bin + " destroy --domid " + std::to_string(id) + " 2>/dev/null", status);
    EXPECT_NE(status, 0) << "no such domain";
    run(std::string(XENHSA_SIM_BINARY) + " --help", status);
    EXPECT_EQ(status, 0);
}

TEST_F(SimTest, SecondDaemonOnTheSameDirRefuses) {
    int status = -1;
    run(std::string(XENHSA_SIM_BINARY) + " --log-level off --sim-dir " + sim.dir().string(),
        status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    EXPECT_TRUE(listed(sim.dir(), 0)) << "the first daemon still serves";
}

TEST(SimDaemon, SigtermExitsCleanlyAndRemovesTheSocket) {
    std::filesystem::path dir;
    {
        auto sim = SimInstance::start();
        dir = sim.dir();
        ASSERT_TRUE(std::filesystem::exists(dir / sim::kSocketName));
        ASSERT_EQ(::kill(sim.pid(), SIGTERM), 0);
        ASSERT_TRUE(eventually([&] { return !std::filesystem::exists(dir / sim::kSocketName); }));
    }  // ~SimInstance checks the exit status (0)
    EXPECT_FALSE(std::filesystem::exists(dir));
}

// --- hostile clients -----------------------------------------------------------------------

class HostileClientTest : public SimTest {
protected:
    UniqueFd raw_connect() {
        UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string path = (sim.dir() / sim::kSocketName).string();
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        EXPECT_EQ(::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
        timeval tv{10, 0};  // bounded: a test must not hang on a daemon that never answers
        ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return s;
    }

    UniqueFd hello(wire::Role role, DomId dom) {
        UniqueFd s = raw_connect();
        const wire::HelloReq h{static_cast<uint32_t>(role), dom, 0};
        EXPECT_TRUE(wire::send_small(s.get(), wire::Op::hello, 1, wire::as_bytes(h), false));
        auto reply = receive(s);
        EXPECT_TRUE(reply && reply->header.error == 0);
        return s;
    }

    std::optional<wire::Message> receive(const UniqueFd& s) {
        wire::Message msg;
        auto r = wire::receive(s.get(), buf_, msg, false);
        if (!r) return std::nullopt;
        return msg;
    }

    // The daemon hung up on us: end of stream.
    static bool dropped(const UniqueFd& s) {
        char c = 0;
        return ::recv(s.get(), &c, 1, 0) == 0;
    }

    static void send_raw(const UniqueFd& s, std::span<const std::byte> bytes, int fd = -1) {
        iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
        if (fd >= 0) {
            mh.msg_control = control.data();
            mh.msg_controllen = control.size();
            cmsghdr* cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        }
        ASSERT_GE(::sendmsg(s.get(), &mh, MSG_NOSIGNAL), 0);
    }

    template <class Body>
    std::vector<std::byte> message(wire::Op op, const Body& body, std::span<const std::byte> tail,
                                   uint32_t tail_size, uint16_t flags = 0) {
        wire::Header h{wire::kMagic, static_cast<uint16_t>(op), flags, 7, 0, sizeof body,
                       tail_size};
        std::vector<std::byte> out(sizeof h + sizeof body + tail.size());
        std::memcpy(out.data(), &h, sizeof h);
        std::memcpy(out.data() + sizeof h, &body, sizeof body);
        if (!tail.empty())
            std::memcpy(out.data() + sizeof h + sizeof body, tail.data(), tail.size());
        return out;
    }

    std::vector<std::byte> buf_ = std::vector<std::byte>(wire::kMaxMessage);
};

TEST_F(HostileClientTest, GarbageFramingDropsOnlyThatConnection) {
    const std::vector<std::byte> junk(100, std::byte{0x5A});
    {
        UniqueFd s = raw_connect();
        send_raw(s, junk);
        EXPECT_TRUE(dropped(s));
    }
    {
        UniqueFd s = raw_connect();  // a request before hello
        send_raw(s, message(wire::Op::list_domains, wire::Empty{}, {}, 0));
        EXPECT_TRUE(dropped(s));
    }
    {
        UniqueFd s = hello(wire::Role::control, 0);  // tail size lies
        send_raw(s, message(wire::Op::list_domains, wire::Empty{}, {}, 5000));
        EXPECT_TRUE(dropped(s));
    }
    {
        UniqueFd s = hello(wire::Role::control, 0);  // "bulk" tail in a pipe
        int p[2];
        ASSERT_EQ(::pipe(p), 0);
        send_raw(s, message(wire::Op::list_domains, wire::Empty{}, {}, 100000, wire::kFlagBulkTail),
                 p[0]);
        ::close(p[0]);
        ::close(p[1]);
        EXPECT_TRUE(dropped(s));
    }
    {
        UniqueFd s = hello(wire::Role::attach, 0);  // a message only the daemon sends
        send_raw(s, message(wire::Op::store_event, wire::StoreReq{}, {}, 0));
        EXPECT_TRUE(dropped(s));
    }
    {
        UniqueFd s = raw_connect();  // an oversized datagram
        send_raw(s, std::vector<std::byte>(wire::kMaxMessage + 100));
        EXPECT_TRUE(dropped(s));
    }
    EXPECT_TRUE(listed(sim.dir(), 0)) << "the daemon still serves";
}

TEST_F(HostileClientTest, BadRequestsGetErrorReplies) {
    UniqueFd s = hello(wire::Role::attach, 0);
    auto expect_error = [&](std::vector<std::byte> msg, int err, int fd = -1) {
        send_raw(s, msg, fd);
        auto reply = receive(s);
        ASSERT_TRUE(reply) << "the daemon answers";
        EXPECT_EQ(reply->header.error, err) << "op " << reply->header.op;
    };
    // Grant map: count and tail disagree; a huge count; a zero count.
    const std::array<GrantRef, 2> refs{8, 9};
    const auto ref_bytes = std::as_bytes(std::span(refs));
    wire::MapReq map{};
    map.domid = 0;
    map.count = 3;
    expect_error(message(wire::Op::grant_map, map, ref_bytes, ref_bytes.size()), EINVAL);
    map.count = 0xFFFFFFFF;
    expect_error(message(wire::Op::grant_map, map, ref_bytes, ref_bytes.size()), EINVAL);
    map.count = 0;
    expect_error(message(wire::Op::grant_map, map, {}, 0), EINVAL);
    // Wrong body size for the op.
    expect_error(message(wire::Op::share, wire::Empty{}, {}, 0), EINVAL);
    // A share too large for the domain's table, and one of zero pages.
    wire::ShareReq share{};
    share.pages = 1u << 20;
    expect_error(message(wire::Op::share, share, {}, 0), ENOSPC);
    share.pages = 0;
    expect_error(message(wire::Op::share, share, {}, 0), EINVAL);
    // Unknown ids.
    expect_error(message(wire::Op::grant_unmap, wire::IdReq{12345}, {}, 0), EINVAL);
    expect_error(message(wire::Op::share_revoke, wire::IdReq{12345}, {}, 0), EINVAL);
    expect_error(message(wire::Op::evtchn_unbind, wire::PortMsg{77, 0}, {}, 0), ENOTCONN);
    // Store: path length past the tail, NUL inside a path, a value on a read.
    const std::string text("/local/domain/0/x\0y", 19);
    const auto text_bytes = std::as_bytes(std::span(text.data(), text.size()));
    expect_error(
        message(wire::Op::store_read, wire::StoreReq{0, 500, 0, 0}, text_bytes, text_bytes.size()),
        EINVAL);
    expect_error(
        message(wire::Op::store_write, wire::StoreReq{0, static_cast<uint32_t>(text.size()), 0, 0},
                text_bytes, text_bytes.size()),
        EINVAL);
    expect_error(
        message(wire::Op::store_read, wire::StoreReq{0, 17, 2, 0}, text_bytes, text_bytes.size()),
        EINVAL);
    // A request with an fd attached.
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    expect_error(message(wire::Op::list_domains, wire::Empty{}, {}, 0), EINVAL, p[0]);
    ::close(p[0]);
    ::close(p[1]);
    // Toolstack calls from an attached connection are refused.
    expect_error(message(wire::Op::destroy_domain, wire::DomainReq{0, {}}, {}, 0), EPERM);
    // And the connection still works.
    send_raw(s, message(wire::Op::domain_alive, wire::DomainReq{0, {}}, {}, 0));
    auto reply = receive(s);
    ASSERT_TRUE(reply && reply->header.error == 0 && reply->body_is<wire::AliveRep>());
    EXPECT_EQ(reply->body_as<wire::AliveRep>().alive, 1u);
}

TEST_F(HostileClientTest, AClientThatNeverReadsDoesNotStallTheOthers) {
    UniqueFd flooder = hello(wire::Role::control, 0);
    const auto req = message(wire::Op::list_domains, wire::Empty{}, {}, 0);
    // Send requests without reading a single reply, until our own socket is full.
    int sent = 0;
    for (; sent < 100000; ++sent) {
        if (::send(flooder.get(), req.data(), req.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) break;
    }
    EXPECT_GT(sent, 0);
    // Everyone else is still served meanwhile.
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(listed(sim.dir(), 0));
    auto g = sim::create_domain(sim.dir(), "after-flood", 16);
    EXPECT_TRUE(g);
}

TEST_F(HostileClientTest, ManyConnectionsComeAndGo) {
    for (int i = 0; i < 200; ++i) {
        UniqueFd s = raw_connect();
        if (i % 2 == 0) send_raw(s, std::vector<std::byte>(7, std::byte{1}));
    }
    EXPECT_TRUE(listed(sim.dir(), 0));
}

}  // namespace
}  // namespace xenhsa::testing
