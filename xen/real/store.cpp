// Store over libxenstore. Everything libxenstore returns is malloc()ed in one block and
// freed here with free(). Paths, values and tokens with an embedded NUL are refused
// (EINVAL): libxenstore takes C strings for paths and tokens.
#include <climits>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>

#include "detail.hpp"

extern "C" {
#include <xenstore.h>
}

namespace xenhsa::xen::real {

namespace {

using detail::c_string;
using detail::FreeDeleter;
using detail::last_error;

struct XsClose {
    void operator()(xs_handle* h) const noexcept { xs_close(h); }
};
using XsHandle = std::unique_ptr<xs_handle, XsClose>;

template <class T>
using Malloced = std::unique_ptr<T, FreeDeleter>;

unsigned int to_xs_perm(StoreAccess a) noexcept {
    switch (a) {
        case StoreAccess::none:
            return XS_PERM_NONE;
        case StoreAccess::read:
            return XS_PERM_READ;
        case StoreAccess::write:
            return XS_PERM_WRITE;
        case StoreAccess::both:
            return XS_PERM_READ | XS_PERM_WRITE;
    }
    return XS_PERM_NONE;
}

StoreAccess from_xs_perm(unsigned int p) noexcept {
    // XS_PERM_OWNER / _ENOENT_OK / _IGNORE are xenstored-internal, not part of the list.
    const bool r = (p & XS_PERM_READ) != 0;
    const bool w = (p & XS_PERM_WRITE) != 0;
    return r && w ? StoreAccess::both
           : r    ? StoreAccess::read
           : w    ? StoreAccess::write
                  : StoreAccess::none;
}

class RealStore final : public Store {
public:
    RealStore(XsHandle h, int fd) noexcept : h_(std::move(h)), fd_(fd) {}

    Result<std::string> read(TxId tx, std::string_view path) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (!h_) return errno_code(EBADF);
        unsigned int len = 0;
        errno = 0;
        Malloced<char> value(static_cast<char*>(xs_read(h_.get(), tx, p.value().c_str(), &len)));
        if (!value) return last_error();
        try {
            return std::string(value.get(), len);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
    }

    Result<void> write(TxId tx, std::string_view path, std::string_view value) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (value.size() > UINT_MAX) return errno_code(E2BIG);
        if (!h_) return errno_code(EBADF);
        errno = 0;
        if (!xs_write(h_.get(), tx, p.value().c_str(), value.data(),
                      static_cast<unsigned int>(value.size()))) {
            return last_error();
        }
        return boost::outcome_v2::success();
    }

    Result<void> mkdir(TxId tx, std::string_view path) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (!h_) return errno_code(EBADF);
        errno = 0;
        if (!xs_mkdir(h_.get(), tx, p.value().c_str())) return last_error();
        return boost::outcome_v2::success();
    }

    Result<void> rm(TxId tx, std::string_view path) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (!h_) return errno_code(EBADF);
        errno = 0;
        if (!xs_rm(h_.get(), tx, p.value().c_str())) return last_error();
        return boost::outcome_v2::success();
    }

    Result<std::vector<std::string>> directory(TxId tx, std::string_view path) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (!h_) return errno_code(EBADF);
        unsigned int num = 0;
        errno = 0;
        Malloced<char*> names(xs_directory(h_.get(), tx, p.value().c_str(), &num));
        if (!names) return last_error();
        try {
            return std::vector<std::string>(names.get(), names.get() + num);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
    }

    Result<std::vector<StorePerm>> get_perms(TxId tx, std::string_view path) override {
        auto p = c_string(path);
        if (!p) return p.error();
        if (!h_) return errno_code(EBADF);
        unsigned int num = 0;
        errno = 0;
        Malloced<xs_permissions> perms(xs_get_permissions(h_.get(), tx, p.value().c_str(), &num));
        if (!perms) return last_error();
        std::vector<StorePerm> out;
        try {
            out.reserve(num);
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        for (unsigned int i = 0; i < num; ++i) {
            const xs_permissions& e = perms.get()[i];
            if (e.id > UINT16_MAX) return errno_code(EPROTO);
            out.push_back({static_cast<DomId>(e.id), from_xs_perm(e.perms)});
        }
        return out;
    }

    Result<void> set_perms(TxId tx, std::string_view path,
                           const std::vector<StorePerm>& perms) override {
        auto p = c_string(path);
        if (!p) return p.error();
        // xenstored needs at least the owner entry.
        if (perms.empty() || perms.size() > UINT_MAX) return errno_code(EINVAL);
        if (!h_) return errno_code(EBADF);
        std::vector<xs_permissions> list;
        try {
            list.reserve(perms.size());
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
        for (const StorePerm& e : perms) {
            list.push_back({e.domid, to_xs_perm(e.access)});
        }
        errno = 0;
        if (!xs_set_permissions(h_.get(), tx, p.value().c_str(), list.data(),
                                static_cast<unsigned int>(list.size()))) {
            return last_error();
        }
        return boost::outcome_v2::success();
    }

    Result<TxId> transaction_start() override {
        if (!h_) return errno_code(EBADF);
        errno = 0;
        const xs_transaction_t tx = xs_transaction_start(h_.get());
        if (tx == XBT_NULL) return last_error();
        return TxId{tx};
    }

    Result<void> transaction_end(TxId tx, bool commit) override {
        if (tx == kNoTx) return errno_code(EINVAL);
        if (!h_) return errno_code(EBADF);
        errno = 0;
        // EAGAIN on commit: someone else wrote in between; the caller retries the whole
        // transaction (the seam's contract), so it is passed up as is.
        if (!xs_transaction_end(h_.get(), tx, /*abort=*/!commit)) return last_error();
        return boost::outcome_v2::success();
    }

    Result<void> watch(std::string_view path, std::string_view token) override {
        return watch_call(xs_watch, path, token);
    }

    // XS_UNWATCH_FILTER (set at open) also drops this watch's queued events.
    Result<void> unwatch(std::string_view path, std::string_view token) override {
        return watch_call(xs_unwatch, path, token);
    }

    [[nodiscard]] int fd() const noexcept override { return fd_; }

    Result<std::optional<WatchEvent>> next_event() override {
        if (!h_) return errno_code(EBADF);
        errno = 0;
        Malloced<char*> ev(xs_check_watch(h_.get()));
        if (!ev) {
            if (errno == EAGAIN) return std::optional<WatchEvent>{};
            return last_error();
        }
        try {
            return std::optional<WatchEvent>{
                WatchEvent{ev.get()[XS_WATCH_PATH], ev.get()[XS_WATCH_TOKEN]}};
        } catch (const std::bad_alloc&) {
            return errno_code(ENOMEM);
        }
    }

private:
    using WatchFn = bool (*)(struct xs_handle*, const char*, const char*);

    Result<void> watch_call(WatchFn fn, std::string_view path, std::string_view token) {
        auto p = c_string(path);
        if (!p) return p.error();
        auto t = c_string(token);
        if (!t) return t.error();
        if (!h_) return errno_code(EBADF);
        errno = 0;
        if (!fn(h_.get(), p.value().c_str(), t.value().c_str())) return last_error();
        return boost::outcome_v2::success();
    }

    XsHandle h_;
    int fd_ = -1;
};

// libxenstore takes its socket from the environment only: set for the call, then put back
// (a process opens its stores before it starts threads).
XsHandle open_at(const std::string& socket) {
    if (socket.empty()) {
        return XsHandle(xs_open(XS_UNWATCH_FILTER));
    }
    const char* was = std::getenv("XENSTORED_PATH");
    const std::optional<std::string> before =
        was != nullptr ? std::optional<std::string>(was) : std::nullopt;
    if (::setenv("XENSTORED_PATH", socket.c_str(), 1) != 0) {
        return nullptr;
    }
    XsHandle h(xs_open(XS_UNWATCH_FILTER | XS_OPEN_SOCKETONLY));
    const int err = errno;
    if (before) {
        (void)::setenv("XENSTORED_PATH", before->c_str(), 1);
    } else {
        (void)::unsetenv("XENSTORED_PATH");
    }
    errno = err;
    return h;
}

}  // namespace

Result<std::unique_ptr<Store>> open_store(const RealOptions& options) {
    errno = 0;
    XsHandle h(open_at(options.store_socket));
    if (!h) {
        return last_error();
    }
    // Asked once here: with libxenstore's reader thread, xs_fileno() creates the watch
    // pipe on first use (and can fail), while Store::fd() is noexcept.
    errno = 0;
    const int fd = xs_fileno(h.get());
    if (fd < 0) {
        return last_error();
    }
    return std::unique_ptr<Store>(std::make_unique<RealStore>(std::move(h), fd));
}

namespace testing {

std::unique_ptr<Store> detached_store() { return std::make_unique<RealStore>(XsHandle{}, -1); }

}  // namespace testing

}  // namespace xenhsa::xen::real
