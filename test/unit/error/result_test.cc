#include "error/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace eventfs {
namespace {

Result<int> half(int n) {
  if (n % 2) return fail(EINVAL, "odd: " + std::to_string(n));
  return n / 2;
}

TEST(Result, CarriesAValueOrAnError) {
  auto good = half(8);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  EXPECT_EQ(good.code(), 0);
  EXPECT_EQ(good.reason(), "");

  auto bad = half(7);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.code(), EINVAL);
  EXPECT_EQ(bad.reason(), "odd: 7");
}

TEST(Result, ZeroErrnoBecomesEio) { EXPECT_EQ(Status(fail(0, "x")).code(), EIO); }

TEST(Result, MovesOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(3);
  ASSERT_TRUE(r);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 3);
}

TEST(Result, StringValueFromLiteral) {
  Result<std::string> r = "text";
  EXPECT_EQ(*r, "text");
  EXPECT_EQ(r->size(), 4u);
}

TEST(Status, OkOrFailed) {
  Status ok;
  EXPECT_TRUE(ok);
  Status no = fail(ENOENT, "gone");
  EXPECT_FALSE(no);
  EXPECT_EQ(no.code(), ENOENT);
  EXPECT_EQ(no.error().reason, "gone");
}

}  // namespace
}  // namespace eventfs
