// The sweep's choice of faults from a trace.
#include "sweep_plan.hpp"

#include <gtest/gtest.h>

namespace {

using namespace xenhsa::testing::faults;

TEST(SweepPlan, ParsesTraceLines) {
    const auto trace = parse_trace("store.read 2,13\ngnttab.map 12\n\nstore.read 2,13\n");
    ASSERT_TRUE(trace);
    ASSERT_EQ(trace->size(), 3u);
    EXPECT_EQ((*trace)[0].site, "store.read");
    EXPECT_EQ((*trace)[0].errnos, (std::vector<int>{2, 13}));
    EXPECT_EQ((*trace)[1].site, "gnttab.map");
    EXPECT_EQ((*trace)[1].errnos, (std::vector<int>{12}));
}

TEST(SweepPlan, RefusesMalformedLines) {
    EXPECT_FALSE(parse_trace("store.read\n"));
    EXPECT_FALSE(parse_trace(" 2\n"));
    EXPECT_FALSE(parse_trace("store.read 2,x\n"));
    EXPECT_FALSE(parse_trace("store.read 0\n"));
    EXPECT_FALSE(parse_trace("store.read 2,\n"));
}

TEST(SweepPlan, EveryCallFailsOnceWithRotatingErrnos) {
    const std::vector<TracedCall> trace{{"a", {1, 2}}, {"b", {5}}, {"a", {1, 2}}, {"a", {1, 2}}};
    const auto plan = plan_faults(trace, Coverage::every_call);
    const std::vector<PlannedFault> expected{{"a", 1, 1}, {"b", 1, 5}, {"a", 2, 2}, {"a", 3, 1}};
    EXPECT_EQ(plan, expected);
    EXPECT_EQ(plan[0].spec(), "fail=a#1:1");
}

TEST(SweepPlan, LoopsFailOnTheirFirstCallsAndTheirLast) {
    std::vector<TracedCall> trace;
    for (int i = 0; i < 10; ++i) {
        trace.push_back({"evtchn.pending", {5}});
    }
    const auto plan = plan_faults(trace, Coverage::first_and_last);
    ASSERT_EQ(plan.size(), kFirstCalls + 1);
    EXPECT_EQ(plan.back().call, 10u);
    EXPECT_EQ(plan.front().call, 1u);
}

TEST(SweepPlan, EveryErrnoOfASiteIsInjectedEvenWhenItIsCalledOnce) {
    const std::vector<TracedCall> trace{{"gntshr.share", {12, 28, 22}}};
    const auto plan = plan_faults(trace, Coverage::first_and_last);
    const std::vector<PlannedFault> expected{
        {"gntshr.share", 1, 12}, {"gntshr.share", 1, 28}, {"gntshr.share", 1, 22}};
    EXPECT_EQ(plan, expected);
    EXPECT_EQ(site_errno_pairs(trace).size(), 3u);
}

TEST(SweepPlan, EachPairFailsOnceOverTheScenariosOfAProcessAndPerScope) {
    CoveredPairs covered;
    const std::vector<TracedCall> first{{"a", {1, 2}}, {"a", {1, 2}}, {"b", {5}}};
    const std::vector<TracedCall> second{{"b", {5}}, {"c", {7}}, {"a", {1, 2}}};
    EXPECT_EQ(plan_faults(first, Coverage::new_pairs, &covered, "worker:"),
              (std::vector<PlannedFault>{{"a", 1, 1}, {"a", 1, 2}, {"b", 1, 5}}));
    EXPECT_EQ(plan_faults(second, Coverage::new_pairs, &covered, "worker:"),
              (std::vector<PlannedFault>{{"c", 1, 7}}))
        << "only what the first scenario did not reach";
    EXPECT_EQ(plan_faults(second, Coverage::new_pairs, &covered, "supervisor:").size(), 4u)
        << "another process's sites are its own";
}

}  // namespace
