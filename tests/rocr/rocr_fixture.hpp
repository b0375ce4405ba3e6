// The Rocr fixture of the rocr tests (one file per area: rocr_test.cpp, the programs and
// what they see; rocr_failures_test.cpp; rocr_processes_test.cpp; rocr_memory_test.cpp):
// a ROCm program started with xenhsa-run as a new guest domain of a real xenhsa-sim, over
// the backend ScenarioTest starts.
#ifndef XENHSA_TESTS_ROCR_ROCR_FIXTURE_HPP
#define XENHSA_TESTS_ROCR_ROCR_FIXTURE_HPP

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <scenario_fixture.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace xenhsa::testing::scenarios {

class Rocr : public ScenarioTest {
protected:
    struct Guest {
        Output run;
        uint32_t domid = 0;
    };

    std::vector<std::string> run_args(const std::vector<std::string>& program) {
        domid_file_ = sim().dir() / ("domid-" + std::to_string(++runs_));
        std::vector<std::string> args{XENHSA_RUN_BINARY, "--sim-dir", sim().dir().string(),
                                      "--domid-file", domid_file_.string()};
        args.insert(args.end(), run_options_.begin(), run_options_.end());
        args.push_back("--");
        args.insert(args.end(), program.begin(), program.end());
        return args;
    }
    uint32_t last_domid() const {
        std::ifstream in(domid_file_);
        uint32_t domid = 0;
        in >> domid;
        return domid;
    }
    Guest run_in_guest(const std::vector<std::string>& program) {
        Guest g;
        g.run = run(run_args(program), kScenarioPatience);
        g.domid = last_domid();
        return g;
    }

    // `xenhsa-guest topology`: node -> its info line, and (node, bank) -> its line.
    std::map<std::string, std::string> topology() {
        const Output t = run_guest({"topology"});
        EXPECT_TRUE(scenario_passed(t));
        // A soft GPU's compute units are the CPUs shared among the guests living when its
        // worker starts: the next guest is compared with this one once it is gone.
        if (const auto domid = domid_in(t.out)) {
            EXPECT_TRUE(eventually([&] {
                const auto d = device(*domid);
                return d && d->is_null();
            })) << "the topology guest's device outlived it: "
                << status_text();
        }
        std::map<std::string, std::string> lines;
        for (const std::string& info : parse_report(t.out).infos) {
            const auto node = word_value(info, "node");
            const auto bank = word_value(info, "bank");
            if (node) {
                lines[bank ? *node + "/" + *bank : *node] = info;
            }
        }
        return lines;
    }

    // `program` (its stderr joined to its stdout) creates a queue the backend answers 6 s
    // late; with a 1 s request timeout it must end within 3 s as on a GPU reset: ROCr's
    // VM-fault handler names a hang and aborts. The backend keeps nothing of it.
    void expect_timed_out_request_aborts(const std::vector<std::string>& program) {
        const auto armed =
            control({{"op", "fault-plan"}, {"worker", "delay=kfd.create_queue#1:6000"}});
        ASSERT_TRUE(armed.is_object() && armed.value("ok", false)) << armed.dump();
        std::vector<std::string> command{"/usr/bin/env", "XENHSA_REQUEST_TIMEOUT_MS=1000"};
        command.insert(command.end(), program.begin(), program.end());
        CapturedProcess run(run_args(command));
        ASSERT_TRUE(run.wait_for_line("check kernels ok", kScenarioPatience)) << run.output();
        const auto asked = std::chrono::steady_clock::now();
        const auto ended = run.wait(kPatience);
        const auto took = std::chrono::steady_clock::now() - asked;
        ASSERT_TRUE(ended) << run.output();
        EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 128 + SIGABRT) << *ended << "\n"
                                                                               << run.output();
        EXPECT_LT(took, std::chrono::seconds(3))
            << std::chrono::duration<double>(took).count() << " s\n"
            << run.output();
        EXPECT_NE(run.output().find("went unanswered within XENHSA_REQUEST_TIMEOUT_MS"),
                  std::string::npos)
            << run.output();
        EXPECT_NE(run.output().find("Reason: Generic hang recovery"), std::string::npos)
            << run.output();
        const uint32_t domid = last_domid();
        ASSERT_NE(domid, 0u);
        EXPECT_TRUE(released_within(domid));
    }

    // xenhsa-hip-check's run: every check held, its copies to and from the program's own
    // memory among them, and the backend keeps nothing of it.
    void expect_hip_copies_held(const Guest& g) {
        EXPECT_TRUE(scenario_passed(g.run)) << g.run.out;
        for (const char* check : {"device", "pageable-round-trip", "registered-copy-in",
                                  "registered-cpu-writes-seen", "unregistered-bytes-kept",
                                  "neighbours-untouched", "pinned-round-trip", "shared-refused"}) {
            EXPECT_TRUE(check_held(g.run, check)) << check;
        }
        EXPECT_TRUE(released_within(g.domid));
    }

    std::filesystem::path domid_file_;
    int runs_ = 0;
    std::vector<std::string> run_options_;  // more of xenhsa-run's
};

// The fine-grained system pool's size and ALLOC_MAX_SIZE, from `info system-pool`.
inline std::optional<std::pair<uint64_t, uint64_t>> system_pool(const std::string& out) {
    static const std::regex line(R"(info system-pool size=(\d+) alloc-max=(\d+))");
    std::smatch m;
    if (!std::regex_search(out, m, line)) {
        return std::nullopt;
    }
    return std::pair{std::stoull(m[1]), std::stoull(m[2])};
}

inline std::string run_text(const std::string& command) {
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
            out.append(buf, n);
        }
        ::pclose(p);
    }
    return out;
}

// "symbol version" for every defined dynamic symbol of a library.
inline std::set<std::string> dynamic_exports(const std::string& library) {
    std::set<std::string> symbols;
    std::istringstream lines(run_text("objdump -T '" + library + "'"));
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
        if (w.size() >= 2 && line.find("*UND*") == std::string::npos &&
            line.find(" DF ") != std::string::npos) {
            symbols.insert(w[w.size() - 1] + " " + w[w.size() - 2]);
        }
    }
    return symbols;
}

// rocminfo's value for `key` in the block of the agent whose "Device Type" is GPU.
inline std::map<std::string, std::vector<std::string>> gpu_agent_fields(const std::string& out) {
    std::map<std::string, std::vector<std::string>> fields;
    const auto agent = out.find("Device Type:             GPU");
    if (agent == std::string::npos) {
        return fields;
    }
    const auto begin = out.rfind("*******", agent);
    const auto end = out.find("*******\nAgent", agent);
    std::istringstream lines(out.substr(begin, end == std::string::npos ? end : end - begin));
    std::string line;
    static const std::regex field(R"(^\s*([A-Za-z][A-Za-z0-9 ]*?):\s+(.*\S)\s*$)");
    std::smatch m;
    while (std::getline(lines, line)) {
        if (std::regex_match(line, m, field)) {
            fields[m[1]].push_back(m[2]);
        }
    }
    return fields;
}

// The backend runs as a PV dom0's (XENHSA_TEST_GPU=kfd-pv).
inline bool pv_dom0() {
    const char* gpu = std::getenv("XENHSA_TEST_GPU");
    return gpu != nullptr && std::string_view(gpu) == "kfd-pv";
}

}  // namespace xenhsa::testing::scenarios

#endif
