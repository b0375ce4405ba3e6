// xen_semantics_peer: the peer of the semantics tests on real Xen (runs in the domU of
// the xen-qemu tier). Serves PeerExecutor commands from dom0 over xenstore
// (store_channel.hpp) until "exit", the timeout, or its domain's destruction.
//   xen_semantics_peer [--timeout SECONDS]      (default 600)
// Every command and reply is echoed as "XENHSA-PEER: ..." on stdout (the domU console).
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <xenhsa/xen/real/platform.hpp>

#include "peer_executor.hpp"
#include "sem_protocol.hpp"
#include "store_channel.hpp"
#include "waits.hpp"

namespace {

namespace x = xenhsa::xen;
namespace sem = xenhsa::sem;
using Clock = std::chrono::steady_clock;

int fail(const std::string& why) {
    std::printf("XENHSA-PEER: FAIL %s\n", why.c_str());
    return 1;
}

int serve(std::chrono::seconds timeout) {
    x::real::RealOptions options;
    options.want_domctl = false;
    auto platform = x::real::open_real_platform(options);
    if (!platform) return fail("open_real_platform: " + platform.error().message());
    auto chan = x::real::open_store({});
    if (!chan) return fail("open_store: " + chan.error().message());
    x::Store& store = *chan.value();
    const x::DomId self = platform.value().domains->self();
    const std::string dir = sem::channel::dir(self);

    if (auto w = store.watch(dir + "/cmd", "cmd"); !w) return fail("watch: " + w.error().message());
    if (auto w = store.write(x::kNoTx, dir + "/ready", "1"); !w) {
        return fail("write ready: " + w.error().message());
    }
    std::printf("XENHSA-PEER: dom%u ready: serving commands from %s/cmd\n", self, dir.c_str());

    sem::PeerExecutor exec(platform.value());
    const auto deadline = Clock::now() + timeout;
    uint64_t last = 0;
    while (!exec.exit_requested()) {
        if (Clock::now() >= deadline) return fail("timeout: no exit command");
        if (auto ev = sem::wait_watch(store, sem::Millis(500)); !ev) {
            return fail("watch event: " + ev.error().message());
        }
        auto v = store.read(x::kNoTx, dir + "/cmd");
        if (!v) continue;  // not written yet
        auto f = sem::channel::unframe(v.value());
        if (!f || f->first <= last) continue;
        last = f->first;
        const std::string reply = exec.execute(f->second);
        std::printf("XENHSA-PEER: %s -> %s\n", f->second.c_str(), reply.c_str());
        if (auto w = store.write(x::kNoTx, dir + "/reply", sem::channel::frame(last, reply)); !w) {
            return fail("write reply: " + w.error().message());
        }
    }
    std::printf("XENHSA-PEER: exit requested; PASS\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::chrono::seconds timeout(600);
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        // value_or: g++ 12 -O3 warns falsely (maybe-uninitialized) on the optional itself.
        const auto secs = i + 1 < argc ? sem::to_uint(argv[i + 1], 86400).value_or(0) : 0;
        if (a == "--timeout" && secs > 0) {
            timeout = std::chrono::seconds(secs);
            ++i;
        } else {
            std::fprintf(stderr, "usage: xen_semantics_peer [--timeout SECONDS]\n");
            return 2;
        }
    }
    return serve(timeout);
}
