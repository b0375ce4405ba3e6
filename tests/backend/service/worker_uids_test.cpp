// The workers' uids (backend/service/worker_uids.hpp): each live worker its own, from the
// range, a number handed out again only after the rest of the range, and the range's
// syntax.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>
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

TEST(WorkerUids, AnAdoptedWorkersUidIsTheOneItWasStartedToTake) {
    using Args = std::vector<std::string>;
    EXPECT_EQ(worker_uid_argument(Args{"xenhsa-backend", "--worker", "--worker-uid", "1879048200",
                                       "--worker-seccomp", "on"}),
              1879048200u);
    EXPECT_EQ(worker_uid_argument(Args{"xenhsa-backend", "--worker-uid=1879048201"}), 1879048201u);
    EXPECT_FALSE(worker_uid_argument(Args{"xenhsa-backend", "--worker", "--worker-user", "x"}));
    EXPECT_FALSE(worker_uid_argument(Args{"xenhsa-backend", "--worker-uid"}));
    EXPECT_FALSE(worker_uid_argument(Args{"xenhsa-backend", "--worker-uid", "12x"}));
    EXPECT_FALSE(worker_uid_argument(Args{"xenhsa-backend", "--worker-uidx=5"}));

    // From a live process's command line, whatever uid it runs as (still root before it
    // confines itself): here a shell given the argument, which it ignores. It says when it
    // runs (a vfork parent resumes before the new program's arguments are in place).
    pid_t child = -1;
    char sh[] = "/bin/sh", dash_c[] = "-c", script[] = "echo; read line", name[] = "xenhsa-backend",
         option[] = "--worker-uid", value[] = "1879048202";
    char* argv[] = {sh, dash_c, script, name, option, value, nullptr};
    int in[2];
    int out[2];
    ASSERT_EQ(::pipe(in), 0);
    ASSERT_EQ(::pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    ASSERT_EQ(::posix_spawn(&child, sh, &actions, nullptr, argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    char said = 0;
    ASSERT_EQ(::read(out[0], &said, 1), 1);
    ::close(out[0]);
    EXPECT_EQ(assigned_worker_uid(child), 1879048202u);
    ::close(in[1]);  // the shell's read ends
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_FALSE(assigned_worker_uid(child)) << "a process that is gone";
    EXPECT_FALSE(assigned_worker_uid(::getpid())) << "a process without the argument";
}

}  // namespace
}  // namespace xenhsa::backend::service
