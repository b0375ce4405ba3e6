// What a worker writes reaches the supervisor's stderr with its control characters shown
// as '?' (escape sequences, a terminal's bell), newlines and tabs kept, until the worker's
// end of the pipe closes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <xenhsa/backend/service/worker_log_relay.hpp>

namespace {

using xenhsa::backend::service::WorkerLogRelay;

TEST(WorkerLogRelay, ControlCharactersAreShownAsQuestionMarks) {
    EXPECT_EQ(WorkerLogRelay::printable("a\tb\n"), "a\tb\n");
    EXPECT_EQ(WorkerLogRelay::printable("\x1b]0;owned\x07red\x1b[31m\r\x7f"),
              "?]0;owned?red?[31m??");
    EXPECT_EQ(WorkerLogRelay::printable("caf\xc3\xa9"), "caf\xc3\xa9") << "UTF-8 stays";
}

TEST(WorkerLogRelay, CopiesUntilTheWorkersEndCloses) {
    int from_worker[2];
    int to_terminal[2];
    ASSERT_EQ(::pipe2(from_worker, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(to_terminal, O_CLOEXEC | O_NONBLOCK), 0);
    boost::asio::io_context io;
    WorkerLogRelay relay(io, from_worker[0], to_terminal[1]);
    const std::string line = "worker 1/0: \x1b[2Jhello\n";
    ASSERT_EQ(::write(from_worker[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(from_worker[1]);
    io.run_for(std::chrono::seconds(5));
    EXPECT_TRUE(io.stopped()) << "the relay stops reading at the end of the pipe";
    char got[128] = {};
    const ssize_t n = ::read(to_terminal[0], got, sizeof got);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(got, static_cast<size_t>(n)), "worker 1/0: ?[2Jhello\n");
    ::close(to_terminal[0]);
    ::close(to_terminal[1]);
}

}  // namespace
