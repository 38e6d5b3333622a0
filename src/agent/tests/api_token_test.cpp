// SPDX-License-Identifier: Apache-2.0
// The API token file: made once, private, reused; a bad one is an error naming it.
#include "agent/api_token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cardiac::agent {
namespace {

class ApiTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cardiac-token-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  mode_t mode() const {
    struct stat st {};
    ::stat(api_token_path(dir).c_str(), &st);
    return st.st_mode & 0777;
  }
  std::string dir;
};

TEST_F(ApiTokenTest, MadeOnceWithMode0600AndReused) {
  mode_t old = ::umask(0);  // the file must be private whatever the umask
  auto first = load_or_create_api_token(dir);
  ::umask(old);
  ASSERT_TRUE(first) << first.error().what();
  EXPECT_EQ(first->size(), 64u);
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(mode(), 0600u);
  auto again = load_or_create_api_token(dir);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);

  char other[] = "/tmp/cardiac-token-XXXXXX";
  std::string dir2 = mkdtemp(other);
  auto second = load_or_create_api_token(dir2);
  std::filesystem::remove_all(dir2);
  ASSERT_TRUE(second);
  EXPECT_NE(*second, *first);
}

TEST_F(ApiTokenTest, LoosePermissionsAreTightened) {
  std::ofstream(api_token_path(dir)) << "abc123\n";
  ::chmod(api_token_path(dir).c_str(), 0644);
  auto t = load_or_create_api_token(dir);
  ASSERT_TRUE(t) << t.error().what();
  EXPECT_EQ(*t, "abc123");
  EXPECT_EQ(mode(), 0600u);
}

TEST_F(ApiTokenTest, AnEmptyOrOddFileIsAnErrorNamingIt) {
  std::ofstream(api_token_path(dir)) << "\n";
  auto empty = load_or_create_api_token(dir);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().what().find(api_token_path(dir)), std::string::npos);
  std::ofstream(api_token_path(dir), std::ios::trunc) << "two words\n";
  EXPECT_FALSE(load_or_create_api_token(dir));
  std::filesystem::remove(api_token_path(dir));
  std::filesystem::create_directory(api_token_path(dir));
  EXPECT_FALSE(load_or_create_api_token(dir));
}

}  // namespace
}  // namespace cardiac::agent
