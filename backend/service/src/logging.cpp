#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <xenhsa/backend/service/logging.hpp>

#if XENHSA_HAVE_SYSTEMD
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <syslog.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#endif

namespace xenhsa::backend::service {

namespace {

#if XENHSA_HAVE_SYSTEMD
// One journal entry per record; never throws (a lost log line must not end a worker).
class JournalSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    explicit JournalSink(std::optional<DeviceId> device) : device_(device) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        const auto& text = msg.payload;
        const auto& name = msg.logger_name;
        const int len = static_cast<int>(std::min<std::size_t>(text.size(), 1u << 16));
        const int name_len = static_cast<int>(std::min<std::size_t>(name.size(), 256));
        if (device_) {
            (void)(sd_journal_send)("MESSAGE=[%.*s] %.*s", name_len, name.data(), len, text.data(),
                                    "PRIORITY=%d", priority(msg.level),
                                    "SYSLOG_IDENTIFIER=xenhsa-backend", "XENHSA_DOMID=%u",
                                    static_cast<unsigned>(device_->fe), "XENHSA_DEVID=%u",
                                    device_->devid, nullptr);
        } else {
            (void)(sd_journal_send)("MESSAGE=[%.*s] %.*s", name_len, name.data(), len, text.data(),
                                    "PRIORITY=%d", priority(msg.level),
                                    "SYSLOG_IDENTIFIER=xenhsa-backend", nullptr);
        }
    }
    void flush_() override {}

private:
    static int priority(spdlog::level::level_enum level) noexcept {
        switch (level) {
            case spdlog::level::trace:
            case spdlog::level::debug:
                return LOG_DEBUG;
            case spdlog::level::info:
                return LOG_INFO;
            case spdlog::level::warn:
                return LOG_WARNING;
            case spdlog::level::err:
                return LOG_ERR;
            case spdlog::level::critical:
                return LOG_CRIT;
            default:
                return LOG_INFO;
        }
    }

    std::optional<DeviceId> device_;
};
#endif

}  // namespace

bool stderr_is_journal() noexcept {
    // systemd sets JOURNAL_STREAM=<dev>:<ino> of the stream it connected; stderr must
    // still be that stream (not redirected since).
    const char* stream = std::getenv("JOURNAL_STREAM");
    if (stream == nullptr) {
        return false;
    }
    unsigned long long dev = 0;
    unsigned long long ino = 0;
    if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) {
        return false;
    }
    struct stat st {};
    if (::fstat(2, &st) != 0) {
        return false;
    }
    return static_cast<unsigned long long>(st.st_dev) == dev &&
           static_cast<unsigned long long>(st.st_ino) == ino;
}

void setup_logging(std::string name, spdlog::level::level_enum level,
                   std::optional<DeviceId> device) {
    spdlog::sink_ptr sink;
#if XENHSA_HAVE_SYSTEMD
    if (stderr_is_journal()) {
        sink = std::make_shared<JournalSink>(device);
    }
#else
    (void)device;
#endif
    if (!sink) {
        sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
        sink->set_pattern("%Y-%m-%d %H:%M:%S.%e %P %^%l%$ [%n] %v");
    }
    auto logger = std::make_shared<spdlog::logger>(std::move(name), std::move(sink));
    logger->set_level(level);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
}

std::shared_ptr<spdlog::logger> make_logger(std::string name) {
    auto logger = spdlog::default_logger()->clone(std::move(name));
    return logger;
}

void notify_ready() noexcept {
#if XENHSA_HAVE_SYSTEMD
    (void)sd_notify(0, "READY=1");
#endif
}

void notify_stopping() noexcept {
#if XENHSA_HAVE_SYSTEMD
    (void)sd_notify(0, "STOPPING=1");
#endif
}

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text) noexcept {
    const std::pair<std::string_view, spdlog::level::level_enum> levels[] = {
        {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
        {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
        {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
        {"off", spdlog::level::off},
    };
    for (const auto& [n, l] : levels) {
        if (n == text) {
            return l;
        }
    }
    return std::nullopt;
}

}  // namespace xenhsa::backend::service
