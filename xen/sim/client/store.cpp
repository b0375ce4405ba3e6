// Store of the simulated hypervisor: requests to the daemon's StoreTree over this
// component's own connection. Watch events share the socket with replies; those that
// arrive while a reply is awaited are buffered here, so fd() is an epoll set over the
// socket and a doorbell rung while buffered events wait: readable whenever next_event()
// may have something.
#include <sys/epoll.h>

#include <algorithm>
#include <deque>
#include <new>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim::client {

namespace {

using boost::outcome_v2::success;

std::vector<std::byte> path_and_arg(std::string_view path, std::string_view arg) {
    std::vector<std::byte> tail(path.size() + arg.size());
    if (!path.empty()) std::memcpy(tail.data(), path.data(), path.size());
    if (!arg.empty()) std::memcpy(tail.data() + path.size(), arg.data(), arg.size());
    return tail;
}

class SimStore final : public Store {
public:
    SimStore(Channel ch, UniqueFd epoll, Doorbell doorbell) noexcept
        : ch_(std::move(ch)), epoll_(std::move(epoll)), doorbell_(std::move(doorbell)) {
        ch_.on_async([this](wire::Message&& msg) { on_event(std::move(msg)); });
    }

    Result<std::string> read(TxId tx, std::string_view path) override {
        return guard([&]() -> Result<std::string> {
            auto reply = request(wire::Op::store_read, tx, path, {});
            if (!reply) return reply.error();
            return std::string(reply.value().tail_text());
        });
    }

    Result<void> write(TxId tx, std::string_view path, std::string_view value) override {
        return guard([&] { return simple(wire::Op::store_write, tx, path, value); });
    }

    Result<void> mkdir(TxId tx, std::string_view path) override {
        return guard([&] { return simple(wire::Op::store_mkdir, tx, path, {}); });
    }

    Result<void> rm(TxId tx, std::string_view path) override {
        return guard([&] { return simple(wire::Op::store_rm, tx, path, {}); });
    }

    Result<std::vector<std::string>> directory(TxId tx, std::string_view path) override {
        return guard([&]() -> Result<std::vector<std::string>> {
            auto reply = request(wire::Op::store_directory, tx, path, {});
            if (!reply) return reply.error();
            std::vector<std::string> names;
            std::string_view rest = reply.value().tail_text();
            while (!rest.empty()) {
                const auto end = rest.find('\0');
                if (end == std::string_view::npos) return errno_code(EPROTO);
                names.emplace_back(rest.substr(0, end));
                rest.remove_prefix(end + 1);
            }
            return names;
        });
    }

    Result<std::vector<StorePerm>> get_perms(TxId tx, std::string_view path) override {
        return guard([&]() -> Result<std::vector<StorePerm>> {
            auto reply = request(wire::Op::store_get_perms, tx, path, {});
            if (!reply) return reply.error();
            const auto& tail = reply.value().tail;
            if (tail.size() % sizeof(wire::StorePermWire) != 0) return errno_code(EPROTO);
            std::vector<StorePerm> perms;
            for (const auto& w : wire::items_of<wire::StorePermWire>(tail)) {
                if (w.access > static_cast<uint8_t>(StoreAccess::both)) return errno_code(EPROTO);
                perms.push_back({w.domid, static_cast<StoreAccess>(w.access)});
            }
            return perms;
        });
    }

    Result<void> set_perms(TxId tx, std::string_view path,
                           const std::vector<StorePerm>& perms) override {
        return guard([&]() -> Result<void> {
            std::vector<wire::StorePermWire> list;
            for (const StorePerm& p : perms) {
                list.push_back({p.domid, static_cast<uint8_t>(p.access), 0});
            }
            const auto bytes = wire::bytes_of(std::span<const wire::StorePermWire>(list));
            const std::string_view arg(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            return simple(wire::Op::store_set_perms, tx, path, arg);
        });
    }

    Result<TxId> transaction_start() override {
        return guard([&]() -> Result<TxId> {
            auto reply = ch_.call(wire::Op::store_tx_start, wire::as_bytes(wire::Empty{}));
            if (!reply) return reply.error();
            if (auto ok = check(reply.value()); !ok) return ok.error();
            if (!reply.value().body_is<wire::TxRep>()) return errno_code(EPROTO);
            return TxId{reply.value().body_as<wire::TxRep>().tx};
        });
    }

    Result<void> transaction_end(TxId tx, bool commit) override {
        if (tx == kNoTx) return errno_code(EINVAL);
        return guard([&]() -> Result<void> {
            const wire::TxReq req{tx, commit ? 1u : 0u};
            auto reply = ch_.call(wire::Op::store_tx_end, wire::as_bytes(req));
            if (!reply) return reply.error();
            return check(reply.value());
        });
    }

    Result<void> watch(std::string_view path, std::string_view token) override {
        return guard([&]() -> Result<void> {
            watches_.push_back(Watch{absolute(path), std::string(token)});
            auto r = simple(wire::Op::store_watch, kNoTx, path, token);
            if (!r) watches_.pop_back();
            return r;
        });
    }

    Result<void> unwatch(std::string_view path, std::string_view token) override {
        return guard([&]() -> Result<void> {
            auto r = simple(wire::Op::store_unwatch, kNoTx, path, token);
            if (!r) return r;
            const std::string abs = absolute(path);
            auto it = std::find(watches_.begin(), watches_.end(), Watch{abs, std::string(token)});
            if (it != watches_.end()) watches_.erase(it);
            // What XS_UNWATCH_FILTER gives libxenstore users: no event of the removed watch
            // after unwatch returns, also none that was already buffered here (the daemon
            // purged its own queue), unless another watch of ours still matches it.
            std::erase_if(events_, [&](const WatchEvent& e) {
                if (e.token != token) return false;
                const std::string where = absolute(e.path);
                return std::none_of(watches_.begin(), watches_.end(), [&](const Watch& w) {
                    return w.token == token && is_child(where, w.path);
                });
            });
            return r;
        });
    }

    [[nodiscard]] int fd() const noexcept override { return epoll_.get(); }

    Result<std::optional<WatchEvent>> next_event() override {
        return guard([&]() -> Result<std::optional<WatchEvent>> {
            if (events_.empty()) {
                if (auto polled = ch_.poll_async(); !polled) return polled.error();
            }
            if (events_.empty()) {
                doorbell_.quiet();
                return std::optional<WatchEvent>{};
            }
            WatchEvent e = std::move(events_.front());
            events_.pop_front();
            if (events_.empty()) {
                doorbell_.quiet();
            } else {
                doorbell_.nudge();
            }
            return std::optional<WatchEvent>{std::move(e)};
        });
    }

private:
    template <class F>
    static auto guard(F&& f) -> decltype(f()) {
        try {
            return f();
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
    }

    Result<wire::Message> request(wire::Op op, TxId tx, std::string_view path,
                                  std::string_view arg) {
        if (path.size() > UINT32_MAX || arg.size() > UINT32_MAX) return errno_code(E2BIG);
        const wire::StoreReq req{tx, static_cast<uint32_t>(path.size()),
                                 static_cast<uint32_t>(arg.size()), 0};
        auto reply = ch_.call(op, wire::as_bytes(req), path_and_arg(path, arg));
        if (!reply) return reply.error();
        if (auto ok = check(reply.value()); !ok) return ok.error();
        return reply;
    }

    Result<void> simple(wire::Op op, TxId tx, std::string_view path, std::string_view arg) {
        auto reply = request(op, tx, path, arg);
        if (!reply) return reply.error();
        return success();
    }

    struct Watch {
        std::string path;  // absolute
        std::string token;
        friend bool operator==(const Watch&, const Watch&) = default;
    };

    [[nodiscard]] std::string absolute(std::string_view path) const {
        if (path.empty() || path.front() == '/' || path.front() == '@') return std::string(path);
        return "/local/domain/" + std::to_string(ch_.domid()) + "/" + std::string(path);
    }

    // xenstored's is_child: `child` is `parent`, below it, or `parent` is "/".
    static bool is_child(std::string_view child, std::string_view parent) {
        if (parent == "/" || child == parent) return true;
        return child.size() > parent.size() && child.substr(0, parent.size()) == parent &&
               child[parent.size()] == '/';
    }

    void on_event(wire::Message&& msg) noexcept {
        if (msg.op() != wire::Op::store_event || !msg.body_is<wire::StoreReq>()) return;
        const auto body = msg.body_as<wire::StoreReq>();
        const std::string_view text = msg.tail_text();
        if (std::size_t{body.path_len} + body.arg_len != text.size()) return;
        try {
            events_.push_back(WatchEvent{std::string(text.substr(0, body.path_len)),
                                         std::string(text.substr(body.path_len))});
            doorbell_.ring();
        } catch (const std::bad_alloc&) {
            // Dropped, like an overflowing xenstored queue: watchers re-read anyway.
        }
    }

    Channel ch_;
    UniqueFd epoll_;
    Doorbell doorbell_;
    std::deque<WatchEvent> events_;
    std::vector<Watch> watches_;
};

}  // namespace

Result<std::unique_ptr<Store>> make_store(Channel ch) {
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) return errno_code(errno);
    auto doorbell = Doorbell::create();
    if (!doorbell) return doorbell.error();
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, ch.fd(), &ev) != 0) return errno_code(errno);
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, doorbell.value().fd(), &ev) != 0) {
        return errno_code(errno);
    }
    try {
        return std::unique_ptr<Store>(std::make_unique<SimStore>(std::move(ch), std::move(epoll),
                                                                 std::move(doorbell.value())));
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::client
