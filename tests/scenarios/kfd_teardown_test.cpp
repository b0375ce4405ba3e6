// A guest's death on `xenhsa-backend --gpu kfd`, as the kernel sees it: the KFD shim's log
// of the worker's ioctls and munmaps (label kfd only). The worker releases in the
// kernel's order: each queue before the BOs of its ring and pointers, GPU unmaps before
// frees, every BO over a grant mapping before that mapping goes, and nothing of the guest
// is left, though the worker's KFD stays open for the device's next guest.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scenario_fixture.hpp"

namespace {

using namespace xenhsa::testing;
using namespace xenhsa::testing::scenarios;

// The value after `key=` in a log line ("" when none).
std::string value_of(const std::string& line, const std::string& key) {
    const auto at = line.find(" " + key + "=");
    if (at == std::string::npos) {
        return "";
    }
    const auto from = at + key.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
}

uint64_t number(const std::string& text) {
    return text.empty() ? 0 : std::stoull(text, nullptr, 0);
}

struct Bo {
    std::string kind;
    uint64_t va = 0;
    uint64_t size = 0;
    uint64_t cpu = 0;
    size_t unmapped = 0;  // line indexes; 0: not seen
    size_t freed = 0;
};

using KfdTeardown = ScenarioTest;

TEST_F(KfdTeardown, AGuestKilledMidDispatchIsReleasedInTheKernelsOrder) {
    ASSERT_TRUE(gpu().shim()) << "run with XENHSA_TEST_GPU=kfd-pvh (ctest -L kfd)";
    auto doomed = start_guest({"vecadd", "--repeat", "0", "--elements", "262144"});
    const auto line = doomed->wait_for_line("info repeating", kScenarioPatience);
    ASSERT_TRUE(line) << doomed->output();
    const auto domid = domid_in(*line);
    ASSERT_TRUE(domid);
    const auto entry = device(*domid);
    ASSERT_TRUE(entry && entry->is_object()) << status_text();
    const auto worker = entry->value("worker_pid", 0);
    doomed->signal(SIGKILL);
    (void)finish_guest(*doomed);
    ASSERT_TRUE(released_within(*domid));

    // The worker's lines, from 1 (0 means "not seen").
    std::vector<std::string> lines{""};
    std::ifstream in(sim().dir() / "kfd-shim.log");
    const std::string prefix = std::to_string(worker) + " ";
    for (std::string l; std::getline(in, l);) {
        if (l.rfind(prefix, 0) == 0) {
            lines.push_back(l);
        }
    }
    ASSERT_GT(lines.size(), 10u) << "no log of worker " << worker;

    std::map<std::string, Bo> bos;                              // by handle
    std::map<std::string, std::pair<uint64_t, size_t>> queues;  // id -> ring, destroyed at
    std::vector<std::pair<uint64_t, uint64_t>> queue_rings;
    size_t events_made = 0;
    size_t events_gone = 0;
    std::vector<std::pair<size_t, std::pair<uint64_t, uint64_t>>> grant_unmaps;
    for (size_t i = 1; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        const bool ok = l.find("-> ok") != std::string::npos;
        if (l.find("kfd ALLOC_MEMORY_OF_GPU") != std::string::npos && ok) {
            bos[value_of(l, "handle")] = {value_of(l, "type"), number(value_of(l, "va")),
                                          number(value_of(l, "size")), number(value_of(l, "cpu"))};
        } else if (l.find("kfd UNMAP_MEMORY_FROM_GPU") != std::string::npos && ok) {
            bos[value_of(l, "handle")].unmapped = i;
        } else if (l.find("kfd FREE_MEMORY_OF_GPU") != std::string::npos && ok) {
            bos[value_of(l, "handle")].freed = i;
        } else if (l.find("kfd CREATE_QUEUE") != std::string::npos && ok) {
            queues[value_of(l, "queue")] = {number(value_of(l, "ring")), 0};
        } else if (l.find("kfd DESTROY_QUEUE") != std::string::npos && ok) {
            queues[value_of(l, "queue")].second = i;
        } else if (l.find("kfd CREATE_EVENT") != std::string::npos && ok) {
            ++events_made;
        } else if (l.find("kfd DESTROY_EVENT") != std::string::npos && ok) {
            ++events_gone;
        } else if (l.find(" munmap ") != std::string::npos &&
                   l.find(" grant") != std::string::npos) {
            grant_unmaps.push_back({i, {number(value_of(l, "addr")), number(value_of(l, "size"))}});
        }
    }
    ASSERT_FALSE(queues.empty()) << "the guest had a queue";
    for (const auto& [id, queue] : queues) {
        ASSERT_NE(queue.second, 0u) << "queue " << id << " never destroyed";
        for (const auto& [handle, bo] : bos) {
            if (bo.va <= queue.first && queue.first < bo.va + bo.size && bo.unmapped != 0) {
                EXPECT_LT(queue.second, bo.unmapped) << "queue " << id << " after its ring's BO";
            }
        }
    }
    for (const auto& [handle, bo] : bos) {
        if (bo.unmapped != 0 && bo.freed != 0) {
            EXPECT_LT(bo.unmapped, bo.freed) << handle << ": GPU unmap before free";
        }
        // What stays for the device's next guest is the thunk's own (its signal page,
        // doorbells, MMIO page); everything else went.
        if (bo.kind == "USERPTR" || bo.kind == "VRAM") {
            EXPECT_NE(bo.freed, 0u) << bo.kind << " " << handle << " at " << bo.va << " kept";
        }
        if (bo.kind == "USERPTR" && bo.freed != 0) {
            for (const auto& [at, range] : grant_unmaps) {
                const bool over =
                    range.first < bo.cpu + bo.size && bo.cpu < range.first + range.second;
                if (over && at > bo.unmapped) {
                    EXPECT_LT(bo.freed, at) << handle << ": the BO before its grant mapping goes";
                }
            }
        }
    }
    // The fault thread's three events (stop, memory, hardware exception) live with the
    // device; every event of the guest is gone. A worker that ended closed its KFD, and
    // the kernel saw nothing left but the thunk's signal page.
    std::string closed;
    for (const std::string& l : lines) {
        closed = l.find(" close kfd ") != std::string::npos ? l : closed;
    }
    std::ostringstream all;
    for (const std::string& l : lines) {
        all << l << "\n";
    }
    if (closed.empty()) {
        EXPECT_EQ(events_made - events_gone, 3u) << all.str();
    } else {
        EXPECT_EQ(events_made, events_gone) << all.str();
        EXPECT_NE(closed.find("bos=1 held=GTT:signal-page queues=0 events=0"), std::string::npos)
            << closed;
    }
}

}  // namespace
