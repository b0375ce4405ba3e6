#include <cerrno>
#include <utility>
#include <xenhsa/xen/faulty_platform.hpp>

namespace xenhsa::xen {

namespace {

// The errnos each libxen* call can return, from the libraries' and Linux drivers' sources
// (gntdev, gntalloc, evtchn, xenstored's wire errors). docs/operations.md counts them.
constexpr int kMapErrnos[] = {ENOMEM, EINVAL, EFAULT, EPERM, ENOSPC};
constexpr int kMapNotifyErrnos[] = {ENOMEM, EINVAL, EFAULT};
constexpr int kShareErrnos[] = {ENOMEM, ENOSPC, EINVAL};
constexpr int kBindErrnos[] = {EINVAL, ENOMEM, ESRCH, EBUSY};
constexpr int kBindUnboundErrnos[] = {ENOMEM, ESRCH, ENOSPC};
constexpr int kPortErrnos[] = {EINVAL};
constexpr int kPendingErrnos[] = {EIO};
constexpr int kStoreReadErrnos[] = {ENOENT, EACCES, EAGAIN, EIO};
constexpr int kStoreWriteErrnos[] = {EACCES, EAGAIN, ENOSPC, EIO, E2BIG};
constexpr int kStoreNodeErrnos[] = {ENOENT, EACCES, EAGAIN, EIO};
constexpr int kStoreTxStartErrnos[] = {EAGAIN, ENOSPC, EIO};
constexpr int kStoreTxEndErrnos[] = {EAGAIN, EIO};
constexpr int kStoreWatchErrnos[] = {ENOSPC, EEXIST, EACCES, EIO};
constexpr int kStoreUnwatchErrnos[] = {ENOENT, EIO};
constexpr int kStoreEventErrnos[] = {EIO};
constexpr int kAliveErrnos[] = {EACCES, EIO};
constexpr int kUsageErrnos[] = {ENOTSUP, EIO};

// Whether the call at `site` is to fail now; the error to fail it with.
std::error_code injected(const FaultHook& hook, std::string_view site,
                         std::span<const int> errnos) {
    const int e = hook(site, errnos);
    return e == 0 ? std::error_code{} : errno_code(e);
}

class FaultyMapper final : public GrantMapper {
public:
    FaultyMapper(std::unique_ptr<GrantMapper> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    Result<GrantMapping> map(const GrantMapSpec& spec, std::span<int> status) override {
        if (auto e = injected(hook_, "gnttab.map", kMapErrnos)) {
            for (std::size_t i = 0; i < status.size(); ++i) {
                status[i] = i == 0 ? e.value() : ECANCELED;
            }
            return e;
        }
        return inner_->map(spec, status);
    }
    Result<GrantMapping> map_notify(DomId domid, GrantRef ref, bool writable,
                                    const UnmapNotify& notify) override {
        if (auto e = injected(hook_, "gnttab.map_notify", kMapNotifyErrnos)) {
            return e;
        }
        return inner_->map_notify(domid, ref, writable, notify);
    }

protected:
    // The mappings belong to the inner mapper (GrantMapping's owner): never called.
    void unmap(std::byte*, std::size_t, bool) noexcept override {}

private:
    std::unique_ptr<GrantMapper> inner_;
    FaultHook hook_;
};

class FaultySharer final : public GrantSharer {
public:
    FaultySharer(std::unique_ptr<GrantSharer> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    Result<SharedPages> share(const ShareSpec& spec) override {
        if (auto e = injected(hook_, "gntshr.share", kShareErrnos)) {
            return e;
        }
        return inner_->share(spec);
    }
    [[nodiscard]] bool sees_peer_mappings() const noexcept override {
        return inner_->sees_peer_mappings();
    }

protected:
    // The pages belong to the inner sharer (SharedPages' owner): never called.
    Result<void> end_access(std::byte*, std::span<const GrantRef>) noexcept override {
        return errno_code(EINVAL);
    }
    void release(std::byte*, std::span<const GrantRef>) noexcept override {}
    RevokeEffect revoke(std::byte*, std::span<const GrantRef>) noexcept override {
        return RevokeEffect::enforced;
    }

private:
    std::unique_ptr<GrantSharer> inner_;
    FaultHook hook_;
};

class FaultyEvents final : public EventChannel {
public:
    FaultyEvents(std::unique_ptr<EventChannel> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    [[nodiscard]] int fd() const noexcept override { return inner_->fd(); }
    Result<BoundPort> bind_interdomain(DomId remote, Port remote_port) override {
        if (auto e = injected(hook_, "evtchn.bind_interdomain", kBindErrnos)) {
            return e;
        }
        return inner_->bind_interdomain(remote, remote_port);
    }
    Result<BoundPort> bind_unbound(DomId remote) override {
        if (auto e = injected(hook_, "evtchn.bind_unbound", kBindUnboundErrnos)) {
            return e;
        }
        return inner_->bind_unbound(remote);
    }
    Result<void> notify(Port local) override {
        if (auto e = injected(hook_, "evtchn.notify", kPortErrnos)) {
            return e;
        }
        return inner_->notify(local);
    }
    Result<std::optional<Port>> pending() override {
        if (auto e = injected(hook_, "evtchn.pending", kPendingErrnos)) {
            return e;
        }
        return inner_->pending();
    }
    Result<void> unmask(Port local) override {
        if (auto e = injected(hook_, "evtchn.unmask", kPortErrnos)) {
            return e;
        }
        return inner_->unmask(local);
    }

protected:
    // The ports belong to the inner channel (BoundPort's owner): never called.
    void unbind(Port) noexcept override {}

private:
    std::unique_ptr<EventChannel> inner_;
    FaultHook hook_;
};

class FaultyStore final : public Store {
public:
    FaultyStore(std::unique_ptr<Store> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    Result<std::string> read(TxId tx, std::string_view path) override {
        if (auto e = injected(hook_, "store.read", kStoreReadErrnos)) {
            return e;
        }
        return inner_->read(tx, path);
    }
    Result<void> write(TxId tx, std::string_view path, std::string_view value) override {
        if (auto e = injected(hook_, "store.write", kStoreWriteErrnos)) {
            return e;
        }
        return inner_->write(tx, path, value);
    }
    Result<void> mkdir(TxId tx, std::string_view path) override {
        if (auto e = injected(hook_, "store.mkdir", kStoreNodeErrnos)) {
            return e;
        }
        return inner_->mkdir(tx, path);
    }
    Result<void> rm(TxId tx, std::string_view path) override {
        if (auto e = injected(hook_, "store.rm", kStoreNodeErrnos)) {
            return e;
        }
        return inner_->rm(tx, path);
    }
    Result<std::vector<std::string>> directory(TxId tx, std::string_view path) override {
        if (auto e = injected(hook_, "store.directory", kStoreNodeErrnos)) {
            return e;
        }
        return inner_->directory(tx, path);
    }
    Result<std::vector<StorePerm>> get_perms(TxId tx, std::string_view path) override {
        if (auto e = injected(hook_, "store.get_perms", kStoreNodeErrnos)) {
            return e;
        }
        return inner_->get_perms(tx, path);
    }
    Result<void> set_perms(TxId tx, std::string_view path,
                           const std::vector<StorePerm>& perms) override {
        if (auto e = injected(hook_, "store.set_perms", kStoreNodeErrnos)) {
            return e;
        }
        return inner_->set_perms(tx, path, perms);
    }
    Result<TxId> transaction_start() override {
        if (auto e = injected(hook_, "store.transaction_start", kStoreTxStartErrnos)) {
            return e;
        }
        return inner_->transaction_start();
    }
    Result<void> transaction_end(TxId tx, bool commit) override {
        if (auto e = injected(hook_, "store.transaction_end", kStoreTxEndErrnos)) {
            // xenstored ends the transaction whatever it answers: so does the injection.
            (void)inner_->transaction_end(tx, false);
            return e;
        }
        return inner_->transaction_end(tx, commit);
    }
    Result<void> watch(std::string_view path, std::string_view token) override {
        if (auto e = injected(hook_, "store.watch", kStoreWatchErrnos)) {
            return e;
        }
        return inner_->watch(path, token);
    }
    Result<void> unwatch(std::string_view path, std::string_view token) override {
        if (auto e = injected(hook_, "store.unwatch", kStoreUnwatchErrnos)) {
            return e;
        }
        return inner_->unwatch(path, token);
    }
    [[nodiscard]] int fd() const noexcept override { return inner_->fd(); }
    Result<std::optional<WatchEvent>> next_event() override {
        if (auto e = injected(hook_, "store.next_event", kStoreEventErrnos)) {
            return e;
        }
        return inner_->next_event();
    }

private:
    std::unique_ptr<Store> inner_;
    FaultHook hook_;
};

class FaultyDomains final : public Domains {
public:
    FaultyDomains(std::unique_ptr<Domains> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    [[nodiscard]] DomId self() const noexcept override { return inner_->self(); }
    Result<bool> alive(DomId domid) override {
        if (auto e = injected(hook_, "domains.alive", kAliveErrnos)) {
            return e;
        }
        return inner_->alive(domid);
    }

private:
    std::unique_ptr<Domains> inner_;
    FaultHook hook_;
};

class FaultyUsage final : public GrantUsage {
public:
    FaultyUsage(std::unique_ptr<GrantUsage> inner, FaultHook hook)
        : inner_(std::move(inner)), hook_(std::move(hook)) {}

    Result<uint32_t> held_by(DomId peer) noexcept override {
        if (auto e = injected(hook_, "usage.held_by", kUsageErrnos)) {
            return e;
        }
        return inner_->held_by(peer);
    }
    Result<uint32_t> share_pool_pages() noexcept override {
        if (auto e = injected(hook_, "usage.share_pool_pages", kUsageErrnos)) {
            return e;
        }
        return inner_->share_pool_pages();
    }

private:
    std::unique_ptr<GrantUsage> inner_;
    FaultHook hook_;
};

// Each part holds its own copy of the hook: a Platform's parts may be moved out of it and
// outlive one another.
template <class Faulty, class Part>
std::unique_ptr<Part> wrap(std::unique_ptr<Part> part, const FaultHook& hook) {
    if (!part) {
        return nullptr;
    }
    return std::make_unique<Faulty>(std::move(part), hook);
}

}  // namespace

Platform with_faults(Platform real, FaultHook hook) {
    Platform faulty;
    faulty.grants = wrap<FaultyMapper>(std::move(real.grants), hook);
    faulty.sharer = wrap<FaultySharer>(std::move(real.sharer), hook);
    faulty.events = wrap<FaultyEvents>(std::move(real.events), hook);
    faulty.store = wrap<FaultyStore>(std::move(real.store), hook);
    faulty.domains = wrap<FaultyDomains>(std::move(real.domains), hook);
    faulty.foreign = std::move(real.foreign);  // dom0 tooling only: never a backend's
    faulty.usage = wrap<FaultyUsage>(std::move(real.usage), hook);
    return faulty;
}

}  // namespace xenhsa::xen
