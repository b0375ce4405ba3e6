// The address space's lock (hsa-bridge/soft/rw_lock.hpp) on its own: a writer waits for
// the readers in flight, turns new ones away while it waits, and readers that keep taking
// the lock again cannot starve it.
#include "rw_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace xenhsa::hsa::soft_test {
namespace {

using namespace std::chrono_literals;
using soft::WriterFirstLock;

TEST(WriterFirstLock, WriterWaitsForTheReaderInFlight) {
    WriterFirstLock lock;
    std::atomic<bool> written{false};
    std::shared_lock reader(lock);
    std::thread writer([&] {
        std::unique_lock w(lock);
        written = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(written.load());
    EXPECT_TRUE(lock.writer_waiting());
    reader.unlock();
    writer.join();
    EXPECT_TRUE(written.load());
}

TEST(WriterFirstLock, NewReadersWaitBehindAWaitingWriter) {
    WriterFirstLock lock;
    std::atomic<int> order{0};
    std::atomic<int> writer_at{0};
    std::atomic<int> reader_at{0};
    std::shared_lock first(lock);
    std::thread writer([&] {
        std::unique_lock w(lock);
        writer_at = ++order;
    });
    while (!lock.writer_waiting()) {
        std::this_thread::yield();
    }
    std::thread late_reader([&] {
        std::shared_lock r(lock);
        reader_at = ++order;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(reader_at.load(), 0) << "a reader got in past a waiting writer";
    first.unlock();
    writer.join();
    late_reader.join();
    EXPECT_EQ(writer_at.load(), 1);
    EXPECT_EQ(reader_at.load(), 2);
}

TEST(WriterFirstLock, ReadersTakingItAgainAndAgainCannotStarveAWriter) {
    WriterFirstLock lock;
    std::atomic<bool> done{false};
    uint64_t shared_value = 0;
    std::vector<std::thread> readers;
    for (int i = 0; i < 3; ++i) {
        readers.emplace_back([&] {
            while (!done.load(std::memory_order_relaxed)) {
                std::shared_lock r(lock);
                const uint64_t seen = shared_value;
                EXPECT_EQ(seen % 2, 0u) << "a reader saw a write in progress";
            }
        });
    }
    for (int i = 0; i < 200; ++i) {
        const auto start = std::chrono::steady_clock::now();
        std::unique_lock w(lock);
        EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
        ++shared_value;  // odd only while the writer holds the lock
        ++shared_value;
    }
    done = true;
    for (auto& t : readers) {
        t.join();
    }
    EXPECT_EQ(shared_value, 400u);
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
