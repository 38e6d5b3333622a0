// SPDX-License-Identifier: Apache-2.0
// `cardiac top` end to end, inside a detached tmux session of 80×24 on the fake NVML: it draws
// the scenario's GPUs (the lost one as lost), reacts to keys (sort, views, filter), follows a
// resize, quits with exit code 0 and gives the terminal back (alternate screen left, echo and
// canonical mode restored); without colour; after SIGTERM; and through a running agent.
#include <gtest/gtest.h>
#include <signal.h>

#include <pwd.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <sstream>

#include "src/core/tests/temp_dir.h"
#include "tests/e2e/run_cardiac.h"
#include "tests/e2e/support.h"
#include "tests/e2e/tmux.h"

namespace cardiac::e2e {
namespace {

// The pane's script: top, then what a person would see back at the shell.
std::string script(const std::string& env, const std::string& args) {
  return env + " '" CARDIAC_BINARY "' top " + args +
         "; echo \"top-exit=$?\"; "
         "if stty -a | grep -qwE -- '-icanon|-echo'; then echo tty=raw; else echo tty=sane; fi; "
         "exec cat";
}

// An agent configuration (fake NVML, a captured host, a free port) that is never started:
// top finds no agent there and samples for itself.
struct Machine {
  std::unique_ptr<AgentProcess> agent;
  std::string env;
};

Machine machine(const std::string& scenario_name) {
  Machine s;
  s.agent = std::make_unique<AgentProcess>(
      scenario(scenario_name).dump(),
      "[host]\nroot = \"" + std::string(CARDIAC_FIXTURES_DIR) + "/hosts/debian-gpu-8x\"\n");
  s.agent->agent_keys("interval = \"200ms\"\n");
  s.env = "env CARDIAC_FAKE_NVML_SCENARIO='" + s.agent->dir() + "/scenario.json'";
  return s;
}

bool drawn(const std::string& pane) {
  return has(pane, "cardiac top") && has(pane, "  5 lost: ") && has(pane, "  7 ");
}

// Colour SGR parameters (30-37, 40-47, 38;…, 48;…) in tmux's capture with -e.
bool has_colour_codes(const std::string& text) {
  static const std::regex colour("\x1b\\[([0-9]+;)*(3[0-8]|4[0-8])[;m]");
  return std::regex_search(text, colour);
}

void expect_restored(const Tmux& t, const std::string& exit_line) {
  ASSERT_TRUE(t.wait_for([&](const std::string& p) { return has(p, "tty="); })) << t.capture();
  const std::string pane = t.capture();
  EXPECT_TRUE(has(pane, exit_line)) << pane;
  EXPECT_TRUE(has(pane, "tty=sane")) << pane;
  EXPECT_EQ(t.display("#{alternate_on}"), "0");
  EXPECT_FALSE(has(pane, "cardiac top")) << pane;  // the view went with the alternate screen
}

TEST(TopE2E, DrawsReactsToKeysAndRestoresTheTerminal) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  Machine s = machine("gpu-lost.json");
  Tmux t;
  ASSERT_TRUE(t.start(
      script(s.env + " LC_ALL=C.UTF-8 TERM=screen", "--config '" + s.agent->config_path() + "'")));
  ASSERT_TRUE(t.wait_for(drawn)) << t.capture();
  std::string pane = t.capture();
  auto l = lines_of(pane);
  ASSERT_GE(l.size(), 11u) << pane;
  EXPECT_TRUE(has(l[0], "gpu-node-01")) << pane;
  EXPECT_TRUE(has(l[0], "local sample")) << pane;
  EXPECT_TRUE(has(l[8], "FAIL")) << pane;  // GPU 5's row
  EXPECT_TRUE(has(pane, "no agent at 127.0.0.1:")) << pane;
  EXPECT_EQ(t.display("#{alternate_on}"), "1");
  EXPECT_TRUE(has_colour_codes(t.capture(true)));
  // 80 columns: NAME and THROTTLE are left out, nothing wraps.
  EXPECT_FALSE(has(l[2], "NAME")) << pane;
  for (const auto& line : l) EXPECT_FALSE(has(line, "NAME ")) << line;

  // s: by utilization, highest first; the lost GPU, which has none, last.
  t.keys({"s"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "sort: util"); })) << t.capture();
  l = lines_of(t.capture());
  EXPECT_EQ(l[3].substr(0, 3), "  0") << t.capture();
  EXPECT_EQ(l[10].substr(0, 10), "  5 lost: ") << t.capture();

  // tab: the processes view.
  t.keys({"Tab"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "PID USER"); })) << t.capture();
  EXPECT_TRUE(has(t.capture(), "python3"));

  // / 5 Enter: GPU 5 has no process; back on the GPU view only GPU 5 is left, its detail below.
  t.keys({"/", "5", "Enter"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "no process matches"); }))
      << t.capture();
  t.keys({"1"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) {
    return has(p, "FAIL lost from the bus (GPU_IS_LOST)");
  })) << t.capture();
  EXPECT_FALSE(has(t.capture(), "  0 ")) << t.capture();

  // A wider window (SIGWINCH): the name and throttle columns come back.
  t.run({"resize-window", "-t", "t", "-x", "132", "-y", "30"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "THROTTLE"); })) << t.capture();

  t.keys({"q"});
  expect_restored(t, "top-exit=0");
}

TEST(TopE2E, WithoutColourOrUtf8) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  Machine s = machine("gpu-lost.json");
  Tmux t;
  ASSERT_TRUE(t.start(script(s.env + " NO_COLOR=1 LC_ALL=C TERM=screen",
                             "--config '" + s.agent->config_path() + "'")));
  ASSERT_TRUE(t.wait_for(drawn)) << t.capture();
  EXPECT_FALSE(has_colour_codes(t.capture(true))) << t.capture(true);
  auto l = lines_of(t.capture());
  // ASCII bars: GPU 0 at 97 % fills its 4 cells with '#'.
  EXPECT_EQ(l[3].substr(0, 13), "  0 ####  97%") << t.capture();
  t.keys({"h"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "any key closes it"); }));
  t.keys({"q"});
  expect_restored(t, "top-exit=0");
}

// The pid of the pane's child (top, under the pane's sh).
pid_t top_pid(const Tmux& t) {
  const std::string pane_pid = t.display("#{pane_pid}");
  std::istringstream children(read_text("/proc/" + pane_pid + "/task/" + pane_pid + "/children"));
  pid_t pid = 0;
  children >> pid;
  return pid;
}

// SIGTERM ends it as that signal would (128 + 15); SIGINT, Ctrl-C, quits like q. Both give the
// terminal back.
void stop_with(int sig, const std::string& exit_line) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  Machine s = machine("gpu-lost.json");
  Tmux t;
  ASSERT_TRUE(t.start(
      script(s.env + " LC_ALL=C.UTF-8 TERM=screen", "--config '" + s.agent->config_path() + "'")));
  ASSERT_TRUE(t.wait_for(drawn)) << t.capture();
  const pid_t pid = top_pid(t);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, sig), 0);
  expect_restored(t, exit_line);
}

TEST(TopE2E, SigtermRestoresTheTerminal) {
  stop_with(SIGTERM, "top-exit=143");
}
TEST(TopE2E, SigintQuitsLikeQ) {
  stop_with(SIGINT, "top-exit=0");
}

// Processes with their users (from /proc/<pid>/status) and jobs (Slurm cgroups, a cardiac
// queue job's environment), on a copy of a captured Slurm node with two status files added;
// a filter by user keeps that user's process.
TEST(TopE2E, ProcessesNameTheirUserAndJob) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  testing::TempDir dir;
  const std::string root = dir.path() + "/host";
  std::filesystem::copy(std::string(CARDIAC_FIXTURES_DIR) + "/hosts/slurm-node-2numa", root,
                        std::filesystem::copy_options::recursive);
  std::ofstream(root + "/proc/5101/status") << "Name:\tpython3\nUid:\t0\t0\t0\t0\n";
  std::ofstream(root + "/proc/5304/status") << "Name:\ttrain\nUid:\t65534\t65534\t65534\t65534\n";
  const std::string nobody = getpwuid(65534) ? getpwuid(65534)->pw_name : "65534";
  Tmux t;
  ASSERT_TRUE(t.start(
      script("env CARDIAC_FAKE_NVML_SCENARIO='" + std::string(CARDIAC_FIXTURES_DIR) +
                 "/scenarios/dgx1-v100-slurm.json' LC_ALL=C.UTF-8 TERM=screen",
             "--local --config /dev/null --nvml-lib '" FAKE_NVML_PATH "' --root '" + root + "'")));
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "cardiac top"); }))
      << t.capture();
  t.keys({"2"});
  auto line_of = [](const std::string& pane, const std::string& pid) {
    for (const auto& l : lines_of(pane)) {
      if (has(l, " " + pid + " ")) return l;
    }
    return std::string();
  };
  ASSERT_TRUE(t.wait_for([&](const std::string& p) {
    return has(line_of(p, "5304"), "cardiac 7");
  })) << t.capture();
  const std::string pane = t.capture();
  EXPECT_TRUE(has(line_of(pane, "5304"), " " + nobody + " ")) << pane;
  EXPECT_TRUE(has(line_of(pane, "5101"), " root ")) << pane;
  EXPECT_TRUE(has(line_of(pane, "5101"), "slurm 123")) << pane;
  EXPECT_TRUE(has(line_of(pane, "5405"), " -  ")) << pane;  // no status file: user unknown
  t.keys({"/"});
  t.keys({"-l", nobody});
  t.keys({"Enter"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "filter: "); })) << t.capture();
  EXPECT_TRUE(has(t.capture(), "5304")) << t.capture();
  EXPECT_FALSE(has(t.capture(), "5101")) << t.capture();
  t.keys({"q"});
  expect_restored(t, "top-exit=0");
}

// A running agent: its verdicts, its firing alerts and its queue.
TEST(TopE2E, ReadsTheAgent) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  Machine s = machine("gpu-lost.json");
  ASSERT_TRUE(s.agent->start());
  Tmux t;
  ASSERT_TRUE(t.start(script(
      s.env + " LC_ALL=C.UTF-8 TERM=screen",
      "--config '" + s.agent->config_path() + "' --state-dir '" + s.agent->state_dir() + "'")));
  ASSERT_TRUE(t.wait_for([](const std::string& p) {
    return drawn(p) && has(p, "agent 127.0.0.1:");
  })) << t.capture();
  t.keys({"3"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "gpu_lost"); })) << t.capture();
  EXPECT_TRUE(has(t.capture(), "critical")) << t.capture();
  t.keys({"4"});
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "no job pending or running"); }))
      << t.capture();
  // A job for all 8 GPUs waits (GPU 5 is lost and fenced): it shows as pending with why.
  auto sub = run_cardiac({"submit", "-q", "--gpus", "8", "--name", "top-e2e", "--state-dir",
                          s.agent->state_dir(), "--", "/bin/true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "needs 8 GPUs"); }))
      << t.capture();
  EXPECT_TRUE(has(t.capture(), "top-e2e")) << t.capture();
  EXPECT_TRUE(has(t.capture(), "pending")) << t.capture();
  EXPECT_TRUE(has(t.capture(), "4 Queue (1)")) << t.capture();
  t.keys({"q"});
  expect_restored(t, "top-exit=0");
}

// A terminal that cannot move the cursor is refused, not drawn on.
TEST(TopE2E, DumbTerminalIsRefused) {
  ASSERT_TRUE(tmux_installed()) << "tmux is not installed (scripts/setup.sh installs it)";
  Tmux t;
  ASSERT_TRUE(t.start(script("env TERM=dumb", "--config /dev/null --local")));
  ASSERT_TRUE(t.wait_for([](const std::string& p) { return has(p, "tty="); })) << t.capture();
  const std::string pane = t.capture();
  EXPECT_TRUE(has(pane, "cannot move the cursor")) << pane;
  EXPECT_TRUE(has(pane, "top-exit=3")) << pane;
  EXPECT_TRUE(has(pane, "tty=sane")) << pane;
}

// Mistakes are said on standard error with the exit codes of docs/top.md.
TEST(TopE2E, BadFlagsAndNoTerminal) {
  auto interval = run_cardiac({"top", "--config", "/dev/null", "--interval", "0"});
  EXPECT_EQ(interval.exit_code, 2);
  EXPECT_TRUE(has(interval.err, "--interval: between 0.1 and 3600 seconds")) << interval.err;
  auto timeout = run_cardiac({"top", "--config", "/dev/null", "--timeout", "soon"});
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_TRUE(has(timeout.err, "--timeout: not a duration: 'soon'")) << timeout.err;
  auto config = run_cardiac({"top", "--config", "/nonexistent/cardiac.toml"});
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_TRUE(has(config.err, "/nonexistent/cardiac.toml")) << config.err;
  // Standard output is a pipe here.
  auto pipe = run_cardiac({"top", "--config", "/dev/null"});
  EXPECT_EQ(pipe.exit_code, 3);
  EXPECT_TRUE(has(pipe.err, "needs a terminal")) << pipe.err;
  EXPECT_EQ(pipe.out, "");
}

}  // namespace
}  // namespace cardiac::e2e
