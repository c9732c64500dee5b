// compare_instances() (test/support/sched_switch): the sched_switch tests'
// comparison of two instances lets through only the state race it names.
#include <gtest/gtest.h>

#include "support/sched_switch.h"

namespace eventfs_it::stream {
namespace {

Switch ping_to_pong(char state, int cpu = 1) {
  Switch s;
  s.cpu = cpu;
  s.prev_pid = 100;
  s.prev_comm = "efs-ping";
  s.prev_state = state;
  s.next_pid = 101;
  s.next_comm = "efs-pong";
  return s;
}

SwitchCounts counts(std::initializer_list<Switch> switches) {
  SwitchCounts m;
  for (const auto& s : switches) ++m[key_of(s)];
  return m;
}

TEST(CompareInstances, TheSameSwitchesAreEqualWithNoRace) {
  const SwitchCounts a = counts({ping_to_pong('S'), ping_to_pong('S'), ping_to_pong('R')});
  int races = -1;
  EXPECT_EQ(compare_instances(a, a, false, &races), "");
  EXPECT_EQ(races, 0);
}

TEST(CompareInstances, AStateDifferenceFailsWhereTheStateIsReadOnce) {
  const std::string diff = compare_instances(counts({ping_to_pong('R')}), counts({ping_to_pong('S')}), false);
  EXPECT_NE(diff, "");
  EXPECT_NE(diff.find("efs-ping:100 [R] -> efs-pong:101: eventfs 1, reference 0"), std::string::npos) << diff;
}

TEST(CompareInstances, RAgainstSOrDPassesAndIsCountedWhereEachProbeReadsTheState) {
  int races = 0;
  // Two switches R here, one S and one D there; the third S in both.
  EXPECT_EQ(compare_instances(counts({ping_to_pong('R'), ping_to_pong('R'), ping_to_pong('S')}),
                              counts({ping_to_pong('S'), ping_to_pong('D'), ping_to_pong('S')}), true, &races),
            "");
  EXPECT_EQ(races, 2);
  // The other way round.
  EXPECT_EQ(compare_instances(counts({ping_to_pong('S')}), counts({ping_to_pong('R')}), true, &races), "");
  EXPECT_EQ(races, 1);
}

TEST(CompareInstances, OtherDifferencesFailAlsoWhereEachProbeReadsTheState) {
  // S against D: neither is R; an R here and a D there do not make up for it.
  EXPECT_NE(compare_instances(counts({ping_to_pong('R'), ping_to_pong('D')}),
                              counts({ping_to_pong('S'), ping_to_pong('S')}), true),
            "");
  EXPECT_NE(compare_instances(counts({ping_to_pong('S')}), counts({ping_to_pong('D')}), true), "");
  // A state that the race does not make.
  EXPECT_NE(compare_instances(counts({ping_to_pong('R')}), counts({ping_to_pong('T')}), true), "");
  // A switch on another CPU, or one more switch.
  EXPECT_NE(compare_instances(counts({ping_to_pong('S', 0)}), counts({ping_to_pong('S', 1)}), true), "");
  EXPECT_NE(compare_instances(counts({ping_to_pong('S'), ping_to_pong('S')}), counts({ping_to_pong('S')}), true), "");
  // Another field: the name.
  Switch renamed = ping_to_pong('S');
  renamed.next_comm = "other";
  EXPECT_NE(compare_instances(counts({renamed}), counts({ping_to_pong('R')}), true), "");
}

}  // namespace
}  // namespace eventfs_it::stream
