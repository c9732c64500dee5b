// The id of an event as EVENT/id gives it: the catalog's, or the one
// eventfs derives (FNV-1a with the top bit set: ten digits).
#include <gtest/gtest.h>

#include <string>

#include "recorder/mount_layout.h"

namespace eventfs::recorder {
namespace {

std::string refusal(const std::string& text) {
  auto id = parse_event_id(text, "/m/ev/id");
  return id ? "(accepted " + std::to_string(*id) + ")" : id.error().reason;
}

TEST(RecordEventId, CatalogAndDerivedIdsUpTo32Bits) {
  auto small = parse_event_id("1\n", "/m/ev/id");
  ASSERT_TRUE(small);
  EXPECT_EQ(*small, 1u);
  auto derived = parse_event_id("2442791997\n", "/m/ev/id");  // a derived id, top bit set
  ASSERT_TRUE(derived) << derived.error().reason;
  EXPECT_EQ(*derived, 2442791997u);
  auto top = parse_event_id("4294967295", "/m/ev/id");
  ASSERT_TRUE(top);
  EXPECT_EQ(*top, 4294967295u);
}

TEST(RecordEventId, AnythingElseIsRefusedNamingTheFile) {
  EXPECT_EQ(refusal("4294967296"), "/m/ev/id: '4294967296' is not an event id (a decimal from 1 to 4294967295)");
  EXPECT_EQ(refusal("0"), "/m/ev/id: id 0 is the lost-events record's");
  for (const char* bad : {"", "-1", "+1", "12a", "0x10", "1 2", "99999999999999999999"})
    EXPECT_NE(refusal(bad).find("is not an event id"), std::string::npos) << "'" << bad << "': " << refusal(bad);
}

}  // namespace
}  // namespace eventfs::recorder
