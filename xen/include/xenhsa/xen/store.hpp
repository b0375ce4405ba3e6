// xenstore (libxenstore on Xen). Values are frontend-controlled: parse them strictly.
#ifndef XENHSA_XEN_STORE_HPP
#define XENHSA_XEN_STORE_HPP

#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

using TxId = uint32_t;
inline constexpr TxId kNoTx = 0;  // XBT_NULL

enum class StoreAccess : uint8_t { none, read, write, both };

// Xen's permission list: the first entry names the owner and what everyone else may do;
// later entries grant specific domains.
struct StorePerm {
    DomId domid = 0;
    StoreAccess access = StoreAccess::none;
    friend bool operator==(const StorePerm&, const StorePerm&) = default;
};

struct WatchEvent {
    std::string path;
    std::string token;
};

class Store {
public:
    virtual ~Store() = default;

    virtual Result<std::string> read(TxId tx, std::string_view path) = 0;
    virtual Result<void> write(TxId tx, std::string_view path, std::string_view value) = 0;
    virtual Result<void> mkdir(TxId tx, std::string_view path) = 0;
    virtual Result<void> rm(TxId tx, std::string_view path) = 0;
    virtual Result<std::vector<std::string>> directory(TxId tx, std::string_view path) = 0;
    virtual Result<std::vector<StorePerm>> get_perms(TxId tx, std::string_view path) = 0;
    virtual Result<void> set_perms(TxId tx, std::string_view path,
                                   const std::vector<StorePerm>& perms) = 0;

    virtual Result<TxId> transaction_start() = 0;
    // Commit fails with EAGAIN when another writer got in between: retry the transaction.
    virtual Result<void> transaction_end(TxId tx, bool commit) = 0;

    // A watch fires once at registration and on every change at or below `path`;
    // "@releaseDomain" fires when a domain dies. Events may be spurious: re-read.
    virtual Result<void> watch(std::string_view path, std::string_view token) = 0;
    virtual Result<void> unwatch(std::string_view path, std::string_view token) = 0;
    // Readable when watch events may be queued; drain next_event() until nullopt.
    [[nodiscard]] virtual int fd() const noexcept = 0;
    virtual Result<std::optional<WatchEvent>> next_event() = 0;
};

// Strict parse of an unsigned decimal store value: digits only, no sign, no spaces, no
// leading zeros (except "0"), no overflow past `max`. EINVAL or ERANGE otherwise.
Result<uint64_t> parse_store_uint(std::string_view value, uint64_t max);

}  // namespace xenhsa::xen

#endif
