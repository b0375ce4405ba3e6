// xen_peer: minimal real-Xen smoke test for the xen-qemu test tier.
//
//   xen_peer offer [--timeout S]          (in the domU)
//     Shares one page with dom0 (libxengntshr), fills it with a known pattern,
//     allocates an unbound event channel for dom0 (libxenevtchn), publishes
//     data/xenhsa-peer/{gref,port,ready} under its xenstore home (libxenstore),
//     waits for dom0's event + reply in the page, writes an ack into the page,
//     notifies dom0 back and waits for dom0's verdict in data/xenhsa-peer/result.
//
//   xen_peer map [DOMID] [--timeout S]    (in dom0)
//     Waits (xenstore watch, bounded) for a domain's data/xenhsa-peer/ready
//     (DOMID from argv, else $XENHSA_PEER_DOMID, else the first domain that
//     publishes the keys), maps the grant (libxengnttab), checks the pattern,
//     writes a reply, binds the event channel interdomain, notifies, waits
//     (bounded) for the domU's event + ack, writes the verdict to xenstore.
//
// Events are treated as doorbells: the shared page is the source of truth
// (right after xenevtchn_bind_interdomain() the new local port is already
// pending, so the first event does not prove anything by itself).
//
// Output lines start with "XENHSA-PEER:" (offer) or "XENHSA-DOM0:" (map); the
// last one is "... PASS" or "... FAIL <reason>". Exit status 0 = pass.

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

// Debian's libxen headers have no extern "C" guards of their own.
extern "C" {
#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kPageSize = 4096;
constexpr std::size_t kMagicOff = 0;     // offerer's magic text
constexpr std::size_t kReplyOff = 64;    // dom0's reply text
constexpr std::size_t kAckOff = 128;     // offerer's ack text
constexpr std::size_t kFieldLen = 64;
constexpr std::size_t kPatternOff = 256;  // pattern up to the end of the page
constexpr const char* kMagic = "XENHSA-GRANT-PAGE v1";
constexpr const char* kReply = "XENHSA-DOM0-REPLY v1";
constexpr const char* kAck = "XENHSA-PEER-ACK v1";
constexpr const char* kKeyDir = "data/xenhsa-peer";

const char* g_prefix = "XENHSA-PEER";

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
    std::printf("%s: ", g_prefix);
    va_list ap;
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::printf("\n");
    std::fflush(stdout);
}

int fail(const std::string& reason) {
    say("FAIL %s", reason.c_str());
    return 1;
}

std::string errno_str(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

std::uint8_t pattern_byte(std::size_t i) {
    return static_cast<std::uint8_t>((i * 31U + 7U) & 0xffU);
}

void put_text(volatile std::uint8_t* page, std::size_t off, const char* text) {
    std::size_t n = std::strlen(text);
    for (std::size_t i = 0; i < kFieldLen; ++i) {
        page[off + i] = i < n ? static_cast<std::uint8_t>(text[i]) : 0;
    }
}

std::string get_text(const volatile std::uint8_t* page, std::size_t off) {
    std::string s;
    for (std::size_t i = 0; i < kFieldLen - 1; ++i) {
        char c = static_cast<char>(page[off + i]);
        if (c == '\0') {
            break;
        }
        s.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return s;
}

long ms_left(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() < 0 ? 0 : static_cast<long>(left.count());
}

std::optional<std::string> xs_get(xs_handle* xs, const std::string& path) {
    unsigned int len = 0;
    void* v = xs_read(xs, XBT_NULL, path.c_str(), &len);
    if (v == nullptr) {
        return std::nullopt;
    }
    std::string s(static_cast<const char*>(v), len);
    std::free(v);
    return s;
}

bool xs_put(xs_handle* xs, const std::string& path, const std::string& value) {
    return xs_write(xs, XBT_NULL, path.c_str(), value.data(),
                    static_cast<unsigned int>(value.size()));
}

std::optional<unsigned long> parse_uint(const std::string& s) {
    if (s.empty() || s.size() > 10) {
        return std::nullopt;
    }
    unsigned long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + static_cast<unsigned long>(c - '0');
    }
    return v;
}

// Waits until xs_fileno is readable (a watch fired) or `ms` passed; drains
// all queued watch events. Callers re-read the keys afterwards either way.
void xs_wait_watch(xs_handle* xs, long ms) {
    pollfd p{xs_fileno(xs), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(ms)) > 0) {
        while (char** ev = xs_check_watch(xs)) {
            std::free(ev);
        }
    }
}

// Waits for one event on `xce`; returns the port or -1 on timeout/error.
int wait_event(xenevtchn_handle* xce, long ms) {
    pollfd p{xenevtchn_fd(xce), POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(ms));
    if (r <= 0) {
        return -1;
    }
    xenevtchn_port_or_error_t port = xenevtchn_pending(xce);
    if (port < 0) {
        return -1;
    }
    xenevtchn_unmask(xce, static_cast<evtchn_port_t>(port));
    return port;
}

struct Options {
    std::string mode;
    std::optional<unsigned long> domid;
    long timeout_s = 180;
};

// ---------------------------------------------------------------- offer (domU)
int run_offer(const Options& opt) {
    const auto deadline = Clock::now() + std::chrono::seconds(opt.timeout_s);

    xs_handle* xs = xs_open(0);
    if (xs == nullptr) {
        return fail(errno_str("xs_open"));
    }
    std::string self = xs_get(xs, "domid").value_or("?");
    say("domid %s: sharing one page with dom0", self.c_str());

    xengntshr_handle* gs = xengntshr_open(nullptr, 0);
    if (gs == nullptr) {
        return fail(errno_str("xengntshr_open"));
    }
    std::uint32_t gref = 0;
    auto* page = static_cast<volatile std::uint8_t*>(
        xengntshr_share_pages(gs, 0, 1, &gref, 1));
    if (page == nullptr) {
        return fail(errno_str("xengntshr_share_pages"));
    }
    for (std::size_t i = 0; i < kPageSize; ++i) {
        page[i] = i >= kPatternOff ? pattern_byte(i) : 0;
    }
    std::string magic = std::string(kMagic) + " from dom" + self;
    put_text(page, kMagicOff, magic.c_str());

    xenevtchn_handle* xce = xenevtchn_open(nullptr, 0);
    if (xce == nullptr) {
        return fail(errno_str("xenevtchn_open"));
    }
    xenevtchn_port_or_error_t port = xenevtchn_bind_unbound_port(xce, 0);
    if (port < 0) {
        return fail(errno_str("xenevtchn_bind_unbound_port"));
    }

    const std::string dir = kKeyDir;
    if (!xs_put(xs, dir + "/gref", std::to_string(gref)) ||
        !xs_put(xs, dir + "/port", std::to_string(port)) ||
        !xs_put(xs, dir + "/ready", "1")) {
        return fail(errno_str("xs_write " + dir));
    }
    say("granted page gref=%u to dom0 (magic '%s', pattern bytes %zu..%zu), "
        "unbound event channel port=%d, published in xenstore %s",
        gref, magic.c_str(), kPatternOff, kPageSize - 1, port, dir.c_str());

    // Wait for dom0's reply (doorbell: event, then look at the page).
    int events = 0;
    std::string reply;
    while (true) {
        long left = ms_left(deadline);
        if (left == 0) {
            return fail("timeout waiting for dom0's event/reply (events seen: " +
                        std::to_string(events) + ")");
        }
        int p = wait_event(xce, left);
        if (p < 0) {
            continue;
        }
        if (p == port) {
            ++events;
        }
        reply = get_text(page, kReplyOff);
        if (events > 0 && reply == kReply) {
            break;
        }
    }
    say("event from dom0 received on port %d; dom0's reply in the granted page: '%s' OK",
        port, reply.c_str());

    put_text(page, kAckOff, kAck);
    if (xenevtchn_notify(xce, static_cast<evtchn_port_t>(port)) < 0) {
        return fail(errno_str("xenevtchn_notify"));
    }
    say("wrote ack '%s' into the page and sent an event to dom0 on port %d", kAck, port);

    // Wait for dom0's verdict.
    const std::string result_key = dir + "/result";
    xs_watch(xs, result_key.c_str(), "result");
    std::optional<std::string> verdict;
    while (!(verdict = xs_get(xs, result_key))) {
        long left = ms_left(deadline);
        if (left == 0) {
            return fail("timeout waiting for dom0's verdict in " + result_key);
        }
        xs_wait_watch(xs, left < 500 ? left : 500);
    }
    say("dom0's verdict in xenstore %s: '%s'", result_key.c_str(), verdict->c_str());

    xenevtchn_unbind(xce, static_cast<evtchn_port_t>(port));
    xenevtchn_close(xce);
    xengntshr_unshare(gs, const_cast<std::uint8_t*>(page), 1);
    xengntshr_close(gs);
    xs_close(xs);
    if (*verdict != "PASS") {
        return fail("dom0 reported '" + *verdict + "'");
    }
    say("PASS");
    return 0;
}

// ----------------------------------------------------------------- map (dom0)
int run_map(const Options& opt) {
    g_prefix = "XENHSA-DOM0";
    const auto deadline = Clock::now() + std::chrono::seconds(opt.timeout_s);

    xs_handle* xs = xs_open(0);
    if (xs == nullptr) {
        return fail(errno_str("xs_open"));
    }

    std::optional<unsigned long> domid = opt.domid;
    if (!domid) {
        if (const char* env = std::getenv("XENHSA_PEER_DOMID")) {
            domid = parse_uint(env);
        }
    }
    if (domid) {
        say("waiting for dom%lu's %s/ready (timeout %lds)", *domid, kKeyDir, opt.timeout_s);
        std::string key = "/local/domain/" + std::to_string(*domid) + "/" + kKeyDir + "/ready";
        xs_watch(xs, key.c_str(), "ready");
    } else {
        say("waiting for any domain's %s/ready (timeout %lds)", kKeyDir, opt.timeout_s);
        xs_watch(xs, "/local/domain", "ready");
    }

    // Rendezvous through xenstore (watch + bounded periodic re-read).
    std::string base;
    unsigned long gref = 0;
    unsigned long rport = 0;
    while (true) {
        std::optional<unsigned long> found;
        if (domid) {
            found = domid;
        } else {
            unsigned int n = 0;
            char** doms = xs_directory(xs, XBT_NULL, "/local/domain", &n);
            for (unsigned int i = 0; doms != nullptr && i < n && !found; ++i) {
                auto d = parse_uint(doms[i]);
                if (d && *d != 0 &&
                    xs_get(xs, "/local/domain/" + std::string(doms[i]) + "/" + kKeyDir + "/ready")) {
                    found = d;
                }
            }
            std::free(static_cast<void*>(doms));
        }
        if (found) {
            base = "/local/domain/" + std::to_string(*found) + "/" + kKeyDir;
            auto ready = xs_get(xs, base + "/ready");
            auto g = xs_get(xs, base + "/gref");
            auto p = xs_get(xs, base + "/port");
            if (ready && g && p) {
                auto gv = parse_uint(*g);
                auto pv = parse_uint(*p);
                if (!gv || !pv) {
                    return fail("bad xenstore values gref='" + *g + "' port='" + *p + "'");
                }
                domid = found;
                gref = *gv;
                rport = *pv;
                break;
            }
        }
        if (domid && !xs_get(xs, "/local/domain/" + std::to_string(*domid) + "/domid")) {
            return fail("dom" + std::to_string(*domid) +
                        " disappeared before publishing its xenstore keys");
        }
        long left = ms_left(deadline);
        if (left == 0) {
            return fail("timeout waiting for the peer's xenstore keys");
        }
        xs_wait_watch(xs, left < 500 ? left : 500);
    }
    say("xenstore rendezvous with dom%lu: %s gref=%lu port=%lu", *domid, base.c_str(), gref,
        rport);

    // Map the grant and check its content.
    xengnttab_handle* gt = xengnttab_open(nullptr, 0);
    if (gt == nullptr) {
        return fail(errno_str("xengnttab_open"));
    }
    auto* page = static_cast<volatile std::uint8_t*>(xengnttab_map_grant_ref(
        gt, static_cast<std::uint32_t>(*domid), static_cast<std::uint32_t>(gref),
        PROT_READ | PROT_WRITE));
    if (page == nullptr) {
        return fail(errno_str("xengnttab_map_grant_ref"));
    }
    std::string magic = get_text(page, kMagicOff);
    std::string want_magic = std::string(kMagic) + " from dom" + std::to_string(*domid);
    if (magic != want_magic) {
        return fail("granted page magic is '" + magic + "', expected '" + want_magic + "'");
    }
    for (std::size_t i = kPatternOff; i < kPageSize; ++i) {
        if (page[i] != pattern_byte(i)) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "pattern mismatch at byte %zu: 0x%02x != 0x%02x", i,
                          static_cast<unsigned>(page[i]), static_cast<unsigned>(pattern_byte(i)));
            return fail(buf);
        }
    }
    say("mapped grant ref %lu from dom%lu: content OK (magic '%s', pattern bytes %zu..%zu match)",
        gref, *domid, magic.c_str(), kPatternOff, kPageSize - 1);

    // Bind the peer's port; swallow the bind-time pending bit before notifying.
    xenevtchn_handle* xce = xenevtchn_open(nullptr, 0);
    if (xce == nullptr) {
        return fail(errno_str("xenevtchn_open"));
    }
    xenevtchn_port_or_error_t lport = xenevtchn_bind_interdomain(
        xce, static_cast<std::uint32_t>(*domid), static_cast<evtchn_port_t>(rport));
    if (lport < 0) {
        return fail(errno_str("xenevtchn_bind_interdomain"));
    }
    while (wait_event(xce, 100) >= 0) {
    }
    put_text(page, kReplyOff, kReply);
    if (xenevtchn_notify(xce, static_cast<evtchn_port_t>(lport)) < 0) {
        return fail(errno_str("xenevtchn_notify"));
    }
    say("wrote reply '%s' into the page; bound interdomain (dom%lu port %lu -> local port %d) "
        "and sent an event to the domU",
        kReply, *domid, rport, lport);

    int events = 0;
    std::string ack;
    while (true) {
        long left = ms_left(deadline);
        if (left == 0) {
            return fail("timeout waiting for the domU's event/ack (events seen: " +
                        std::to_string(events) + ", ack '" + get_text(page, kAckOff) + "')");
        }
        int p = wait_event(xce, left);
        if (p < 0) {
            continue;
        }
        if (p == lport) {
            ++events;
        }
        ack = get_text(page, kAckOff);
        if (events > 0 && ack == kAck) {
            break;
        }
    }
    say("event from dom%lu received on local port %d; domU's ack in the granted page: '%s' OK",
        *domid, lport, ack.c_str());

    xenevtchn_unbind(xce, static_cast<evtchn_port_t>(lport));
    xenevtchn_close(xce);
    if (xengnttab_unmap(gt, const_cast<std::uint8_t*>(page), 1) != 0) {
        return fail(errno_str("xengnttab_unmap"));
    }
    xengnttab_close(gt);
    if (!xs_put(xs, base + "/result", "PASS")) {
        return fail(errno_str("xs_write result"));
    }
    xs_close(xs);
    say("PASS");
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: xen_peer offer [--timeout S]\n"
                 "       xen_peer map [DOMID] [--timeout S]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc < 2) {
        return usage();
    }
    Options opt;
    opt.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--timeout" && i + 1 < argc) {
            auto v = parse_uint(argv[++i]);
            if (!v || *v == 0) {
                return usage();
            }
            opt.timeout_s = static_cast<long>(*v);
        } else if (opt.mode == "map" && !opt.domid && parse_uint(argv[i])) {
            opt.domid = parse_uint(argv[i]);
        } else {
            return usage();
        }
    }
    if (opt.mode == "offer") {
        return run_offer(opt);
    }
    if (opt.mode == "map") {
        return run_map(opt);
    }
    return usage();
}
