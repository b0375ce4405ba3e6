// The workers' uids (backend/service/worker_uids.hpp): each live worker its own, from the
// range, a number handed out again only after the rest of the range, and the range's
// syntax.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <xenhsa/backend/service/worker_uids.hpp>

namespace xenhsa::backend::service {
namespace {

TEST(WorkerUids, EachLiveWorkerHasItsOwnUntilTheRangeIsUsedUp) {
    WorkerUids uids(WorkerUidRange{5000, 3});
    std::set<uid_t> taken;
    for (int i = 0; i < 3; ++i) {
        const auto uid = uids.take();
        ASSERT_TRUE(uid);
        EXPECT_TRUE(uids.range().contains(*uid));
        EXPECT_TRUE(taken.insert(*uid).second) << *uid << " handed out twice";
    }
    EXPECT_FALSE(uids.take()) << "a fourth worker in a range of three";
    uids.give_back(5001);
    EXPECT_EQ(uids.take(), 5001u);
    EXPECT_EQ(uids.in_use(), 3u);
}

TEST(WorkerUids, AUidComesBackOnlyAfterTheRestOfTheRange) {
    WorkerUids uids(WorkerUidRange{5000, 4});
    const auto first = uids.take();
    uids.give_back(*first);
    EXPECT_EQ(uids.take(), 5001u);
    EXPECT_EQ(uids.take(), 5002u);
    EXPECT_EQ(uids.take(), 5003u);
    EXPECT_EQ(uids.take(), 5000u);
}

TEST(WorkerUids, AnAdoptedWorkersUidIsNotHandedOut) {
    WorkerUids uids(WorkerUidRange{5000, 2});
    uids.hold(5000);
    uids.hold(4999);  // outside the range: not ours to track
    EXPECT_EQ(uids.take(), 5001u);
    EXPECT_FALSE(uids.take());
}

TEST(WorkerUids, TheRangeIsFirstColonCount) {
    const auto range = parse_worker_uids("2000000000:65536");
    ASSERT_TRUE(range);
    EXPECT_EQ(range->first, 2000000000u);
    EXPECT_EQ(range->count, 65536u);
    for (const char* bad : {"", "2000000000", ":5", "5000:", "5000:0", "999:10", "x:1", "1000:1x",
                            "4294967294:2", "4294967290:10", "-1000:5"}) {
        EXPECT_FALSE(parse_worker_uids(bad)) << bad;
    }
    EXPECT_TRUE(parse_worker_uids("4294967294:1"));
    EXPECT_TRUE(WorkerUidRange{}.contains(WorkerUidRange::kDefaultFirst));
    EXPECT_FALSE(WorkerUidRange{}.contains(WorkerUidRange::kDefaultFirst - 1));
}

TEST(WorkerUids, ProcessUidReadsTheRealUid) {
    EXPECT_EQ(process_uid(::getpid()), ::getuid());
    EXPECT_FALSE(process_uid(-1));
}

}  // namespace
}  // namespace xenhsa::backend::service
