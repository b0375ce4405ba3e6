// The guest libhsakmt's configuration: environment over JSON file over defaults, and the
// rules that make a bad one an error at hsaKmtOpenKFD rather than a guess.
#include <gtest/gtest.h>
#include <unistd.h>

#include <config.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace xenhsa::frontend::hsakmt {
namespace {

class Config : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* v : kVars) {
            ::unsetenv(v);
        }
        file_ = std::filesystem::temp_directory_path() /
                ("xenhsa-guest-" + std::to_string(::getpid()) + ".json");
        // A test never reads the machine's /etc/xenhsa/guest.json.
        write("{}");
    }
    void TearDown() override {
        for (const char* v : kVars) {
            ::unsetenv(v);
        }
        std::filesystem::remove(file_);
    }
    void write(const std::string& json) {
        std::ofstream(file_) << json;
        ::setenv("XENHSA_CONFIG", file_.c_str(), 1);
    }

    static constexpr const char* kVars[] = {"XENHSA_CONFIG",
                                            "XENHSA_SIM_DIR",
                                            "XENHSA_DOMID",
                                            "XENHSA_XEN",
                                            "XENHSA_DEVID",
                                            "XENHSA_BACKEND_DOMID",
                                            "XENHSA_WINDOW_GIB",
                                            "XENHSA_LOG_LEVEL",
                                            "XENHSA_WINDOW_BASE",
                                            "XENHSA_LOCK_DIR",
                                            "XENHSA_REQUEST_TIMEOUT_MS"};
    std::filesystem::path file_;
};

TEST_F(Config, NothingConfiguredSaysHowToRunAProgram) {
    const auto r = load_config();
    EXPECT_FALSE(r.config);
    EXPECT_NE(r.error.find("xenhsa-run"), std::string::npos) << r.error;
}

TEST_F(Config, SimNeedsItsDomain) {
    ::setenv("XENHSA_SIM_DIR", "/tmp/x", 1);
    EXPECT_FALSE(load_config().config);
    ::setenv("XENHSA_DOMID", "7", 1);
    const auto r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->sim_dir, "/tmp/x");
    EXPECT_EQ(r.config->domid, 7u);
    EXPECT_FALSE(r.config->xen);
    EXPECT_FALSE(r.config->devid) << "no device named: the lowest free one is claimed";
    EXPECT_EQ(r.config->window_gib, 64u);
    EXPECT_EQ(r.config->window_base, 0u);
    EXPECT_EQ(r.config->lock_dir, "");
}

TEST_F(Config, AFixedWindowIsPageAlignedHexOrDecimalAndFits) {
    ::setenv("XENHSA_XEN", "1", 1);
    ::setenv("XENHSA_LOCK_DIR", "/run/locks", 1);
    ::setenv("XENHSA_WINDOW_BASE", "0x200000000000", 1);
    auto r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->window_base, 0x200000000000u);
    EXPECT_EQ(r.config->lock_dir, "/run/locks");
    ::setenv("XENHSA_WINDOW_BASE", "4096", 1);
    r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->window_base, 4096u);
    for (const char* bad : {"0x1001", "0x", "0xg", "0x7fffffffffff"}) {
        ::setenv("XENHSA_WINDOW_BASE", bad, 1);
        EXPECT_FALSE(load_config().config) << "XENHSA_WINDOW_BASE=\"" << bad << "\"";
    }
}

TEST_F(Config, XenAndSimExcludeEachOther) {
    ::setenv("XENHSA_XEN", "1", 1);
    ASSERT_TRUE(load_config().config);
    ::setenv("XENHSA_SIM_DIR", "/tmp/x", 1);
    ::setenv("XENHSA_DOMID", "1", 1);
    const auto r = load_config();
    EXPECT_FALSE(r.config);
    EXPECT_NE(r.error.find("both"), std::string::npos) << r.error;
}

TEST_F(Config, NumbersAreStrict) {
    ::setenv("XENHSA_XEN", "1", 1);
    for (const char* bad : {"", "07", "-1", "+1", " 1", "1 ", "0x10", "4294967296"}) {
        ::setenv("XENHSA_DEVID", bad, 1);
        const auto r = load_config();
        if (*bad == '\0') {
            EXPECT_TRUE(r.config) << "an empty variable is unset";  // getenv "" is ignored
        } else {
            EXPECT_FALSE(r.config) << "XENHSA_DEVID=\"" << bad << "\"";
        }
    }
    ::setenv("XENHSA_DEVID", "4294967295", 1);
    ASSERT_TRUE(load_config().config);
    ::setenv("XENHSA_WINDOW_GIB", "0", 1);
    EXPECT_FALSE(load_config().config);
    ::setenv("XENHSA_WINDOW_GIB", "8193", 1);
    EXPECT_FALSE(load_config().config);
}

TEST_F(Config, TheRequestTimeoutIsTenSecondsUnlessSetWithinTenMinutes) {
    ::setenv("XENHSA_XEN", "1", 1);
    auto r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->request_timeout_ms, 10000u);
    write(R"({"request_timeout_ms": 2500})");
    r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->request_timeout_ms, 2500u);
    ::setenv("XENHSA_REQUEST_TIMEOUT_MS", "600000", 1);
    r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->request_timeout_ms, 600000u);
    for (const char* bad : {"0", "600001"}) {
        ::setenv("XENHSA_REQUEST_TIMEOUT_MS", bad, 1);
        EXPECT_FALSE(load_config().config) << bad;
    }
}

TEST_F(Config, FileGivesDefaultsTheEnvironmentOverrides) {
    write(R"({"sim_dir": "/srv/sim", "domid": 3, "devid": 2, "window_gib": 16,
              "log_level": "debug"})");
    auto r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->sim_dir, "/srv/sim");
    EXPECT_EQ(r.config->domid, 3u);
    EXPECT_EQ(r.config->devid, 2u);
    EXPECT_EQ(r.config->window_gib, 16u);
    EXPECT_EQ(r.config->log_level, "debug");
    ::setenv("XENHSA_DOMID", "9", 1);
    ::setenv("XENHSA_DEVID", "0", 1);
    r = load_config();
    ASSERT_TRUE(r.config) << r.error;
    EXPECT_EQ(r.config->domid, 9u);
    EXPECT_EQ(r.config->devid, 0u);
}

TEST_F(Config, BadFilesAreErrors) {
    for (const char* bad :
         {"not json", "[1]", R"({"sim_dir": 3})", R"({"domid": -1})", R"({"unknown": 1})"}) {
        write(bad);
        ::setenv("XENHSA_XEN", "1", 1);
        const auto r = load_config();
        EXPECT_FALSE(r.config) << bad;
        EXPECT_NE(r.error.find(file_.string()), std::string::npos) << r.error;
    }
    ::setenv("XENHSA_CONFIG", "/nonexistent/xenhsa.json", 1);
    EXPECT_FALSE(load_config().config) << "a named file must exist";
}

}  // namespace
}  // namespace xenhsa::frontend::hsakmt
