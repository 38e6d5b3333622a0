// SPDX-License-Identifier: Apache-2.0
// Prometheus' own checker over our output, when promtool is installed (Debian: prometheus).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "metrics/exposition.h"
#include "metrics/tests/support.h"

// GCC before 13 warns about members left out of a designated initializer even when they
// have default member initializers (GCC bug 96868); the rows rely on those defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cardiac::metrics {
namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `promtool check metrics < file`; the text goes through a file so a hang in promtool
// cannot dead-lock a pipe.
Result promtool_check(const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("cardiac-metrics-" + std::to_string(::getpid()) + ".prom");
  std::ofstream(path) << text;
  std::string cmd = "promtool check metrics < '" + path.string() + "' 2>&1";
  Result r;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
    int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::filesystem::remove(path);
  return r;
}

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

TEST(Promtool, NativeOutputPassesLint) {
  if (!have_promtool()) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  auto report = testing::two_gpu_report();
  auto r = promtool_check(render_metrics(testing::full_input(report), {.hostname = "node-1"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST(Promtool, ConfigInfoPassesLint) {
  if (!have_promtool()) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  auto report = testing::two_gpu_report();
  auto in = testing::full_input(report);
  in.config = testing::two_gpu_config();
  auto text = render_metrics(in, {.hostname = "node-1"});
  ASSERT_NE(text.find("cardiac_node_config_info{"), std::string::npos);
  auto r = promtool_check(text);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

// dcgm-exporter's names break Prometheus naming lint on purpose (camelCase labels, counters
// without _total); what must hold is that the text parses.
TEST(Promtool, CompatOutputParses) {
  if (!have_promtool()) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  auto report = testing::two_gpu_report();
  auto r = promtool_check(
      render_metrics(testing::full_input(report), {.hostname = "node-1", .compat_dcgm = true}));
  EXPECT_EQ(r.output.find("parsing error"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("error while linting"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cardiac::metrics
