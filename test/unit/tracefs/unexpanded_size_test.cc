// buffer_size_kb's text on kernels that have not expanded their rings yet.
#include <gtest/gtest.h>

#include "tracefs/instance.h"

namespace eventfs {
namespace {

TEST(UnexpandedSize, TheExpandedSizeOfAnUnexpandedKernelsText) {
  EXPECT_EQ(unexpanded_size_kb("7 (expanded: 1408)\n"), 1408u);
  EXPECT_EQ(unexpanded_size_kb("1410 (expanded: 1408)\n"), 1408u);
  EXPECT_EQ(unexpanded_size_kb("1410\n"), std::nullopt);
  EXPECT_EQ(unexpanded_size_kb("X\n"), std::nullopt) << "per-CPU sizes differ";
  EXPECT_EQ(unexpanded_size_kb("7 (expanded: )\n"), std::nullopt);
  EXPECT_EQ(unexpanded_size_kb("7 (expanded: 0)\n"), std::nullopt);
  EXPECT_EQ(unexpanded_size_kb("7 (expanded: 12"), std::nullopt);
  EXPECT_EQ(unexpanded_size_kb("7 (expanded: 99999999999999)\n"), std::nullopt);
}

}  // namespace
}  // namespace eventfs
