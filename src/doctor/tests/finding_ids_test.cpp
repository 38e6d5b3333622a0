// SPDX-License-Identifier: Apache-2.0
// The finding-id registry against the docs and the code: every registered id has a runbook
// with the four sections, every id literal in the checks is registered, every finding the
// doctor emits on the fixtures links its runbook, and the renderers show the link.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "doctor/finding_ids.h"
#include "doctor/render/render.h"
#include "doctor/tests/support.h"

namespace cardiac::doctor {
namespace {

namespace fs = std::filesystem;

std::string runbooks_dir() {
  return std::string(CARDIAC_SOURCE_DIR) + "/docs/runbooks";
}
std::string checks_dir() {
  return std::string(CARDIAC_SOURCE_DIR) + "/src/doctor/checks";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Why runbook `name` is malformed, or "" when it has the title line and exactly the four
// sections in order, each with some text.
std::string runbook_problem(const std::string& name) {
  const std::string path = runbooks_dir() + "/" + name + ".md";
  if (!fs::exists(path)) return path + ": missing";
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  if (!line.starts_with("# " + name + ": ") || line.size() <= name.size() + 4) {
    return path + ":1: the first line must be \"# " + name + ": <short title>\", not \"" + line +
           "\"";
  }
  const std::vector<std::string> want = {"## What it means", "## What to check", "## What to do",
                                         "## When to escalate"};
  std::vector<std::string> got;
  std::vector<std::size_t> body;  // non-blank lines under each section
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      got.push_back(line);
      body.push_back(0);
    } else if (!line.empty() && !body.empty()) {
      ++body.back();
    }
  }
  if (got != want) {
    std::string s;
    for (const auto& g : got) s += " [" + g + "]";
    return path + ": the headings must be exactly the four sections, in order; it has" + s;
  }
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] == 0) return path + ": " + want[i] + " is empty";
  }
  return "";
}

TEST(FindingIds, EveryRunbookExistsWithTheFourSections) {
  std::vector<std::string> problems;
  for (const auto& name : runbook_names()) {
    auto p = runbook_problem(name);
    if (!p.empty()) problems.push_back(p);
  }
  EXPECT_TRUE(problems.empty()) << fmt::format("{}", fmt::join(problems, "\n"));
}

TEST(FindingIds, TheRunbookIndexListsEveryRunbook) {
  const std::string index = slurp(runbooks_dir() + "/README.md");
  for (const auto& name : runbook_names()) {
    EXPECT_NE(index.find("](" + name + ".md)"), std::string::npos)
        << runbooks_dir() << "/README.md has no row for " << name;
  }
}

// Every string literal in checks/*.cpp that looks like a finding id of a known family (the
// families of the registry, and those issue 16 adds) must be registered: a new check whose
// id nobody registered fails here, naming the file.
TEST(FindingIds, EveryIdLiteralInTheChecksIsRegistered) {
  std::set<std::string> families = {"security", "drift", "history"};
  for (const auto& id : registered_finding_ids()) families.insert(id.substr(0, id.find('.')));
  std::string alternatives;
  for (const auto& f : families) alternatives += (alternatives.empty() ? "" : "|") + f;
  const std::regex literal("\"((?:" + alternatives + ")\\.[a-z0-9_.]*[a-z0-9_])\"");
  std::vector<std::string> missing;
  std::size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(checks_dir())) {
    if (entry.path().extension() != ".cpp") continue;
    const std::string text = slurp(entry.path().string());
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) {
      ++seen;
      const std::string id = (*it)[1];
      if (!runbook_name(id)) missing.push_back(entry.path().filename().string() + ": " + id);
    }
  }
  EXPECT_GT(seen, 60U) << "the scan found too few ids: did the checks move?";
  EXPECT_TRUE(missing.empty()) << "ids not in src/doctor/finding_ids.cpp:\n"
                               << fmt::format("{}", fmt::join(missing, "\n"));
}

// The drift check composes its ids at run time ("drift." + the fact's family), out of reach of
// the literal scan above: every family the baseline catalog knows must be registered.
TEST(FindingIds, EveryDriftFamilyIsRegistered) {
  const auto& ids = registered_finding_ids();
  ASSERT_FALSE(baseline::families().empty());
  for (auto family : baseline::families()) {
    const std::string id = "drift." + std::string(family);
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
}

TEST(FindingIds, XidsMapToTheirOwnRunbookOrTheGenericOne) {
  EXPECT_EQ(runbook_name("xid.79"), "xid.79");
  EXPECT_EQ(runbook_name("xid.154"), "xid.154");
  EXPECT_EQ(runbook_name("xid.999"), "xid.other");
  EXPECT_EQ(runbook_name("xid.7x"), std::nullopt);
  EXPECT_EQ(runbook_name("xid."), std::nullopt);
  EXPECT_EQ(runbook_name("gpu.made_up"), std::nullopt);
  EXPECT_EQ(runbook_link("", "xid.999"), "docs/runbooks/xid.other.md");
  EXPECT_EQ(runbook_link("https://wiki.example/rb/", "gpu.lost"),
            "https://wiki.example/rb/gpu.lost.md");
  EXPECT_EQ(runbook_link("/x", "gpu.made_up"), "");
  EXPECT_EQ(runbook_href("/usr/share/doc/cardiac/runbooks/gpu.lost.md"),
            "file:///usr/share/doc/cardiac/runbooks/gpu.lost.md");
  EXPECT_EQ(runbook_href("docs/runbooks/gpu.lost.md"), "docs/runbooks/gpu.lost.md");
}

TEST(FindingIds, AnUnregisteredIdGetsNoRunbook) {
  std::vector<Finding> fs(2);
  fs[0].id = "gpu.lost";
  fs[1].id = "gpu.not_a_registered_id";
  attach_runbooks(fs, "/rb");
  EXPECT_EQ(fs[0].runbook, "/rb/gpu.lost.md");
  EXPECT_EQ(fs[1].runbook, "");
  Report r;
  r.findings = fs;
  EXPECT_TRUE(to_json(r)["findings"][1]["runbook"].is_null());
}

// Every finding diagnose() makes from the GPU scenarios (on the HGX host) links a runbook:
// with an id the registry lacks, this names it.
TEST(FindingIds, EveryFindingOnTheScenariosLinksItsRunbook) {
  std::size_t findings = 0;
  for (const auto& entry :
       fs::directory_iterator(std::string(CARDIAC_FIXTURES_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    DoctorInput in = hw_test::scenario_input(entry.path().filename().string(), {0, 30, 60});
    in.host_samples.push_back(hw_test::hgx_host());
    in.config.runbook_base = "/rb";
    Report r = diagnose(in);
    for (const auto& f : r.findings) {
      ++findings;
      EXPECT_EQ(f.runbook, "/rb/" + f.id + ".md") << entry.path() << ": " << f.id;
    }
  }
  EXPECT_GT(findings, 5U);
}

Report one_finding_report() {
  Report r;
  Finding f;
  f.id = "xid.79";
  f.title = "GPU 3 fell off the bus (Xid 79)";
  f.runbook = "/usr/share/doc/cardiac/runbooks/xid.79.md";
  r.findings.push_back(f);
  return r;
}

TEST(FindingIds, RenderersShowTheLink) {
  const Report r = one_finding_report();
  EXPECT_NE(render_text(r, false).find("Runbook: /usr/share/doc/cardiac/runbooks/xid.79.md\n"),
            std::string::npos);
  EXPECT_EQ(to_json(r)["findings"][0]["runbook"], "/usr/share/doc/cardiac/runbooks/xid.79.md");
  EXPECT_NE(render_markdown(r).find("[xid.79](file:///usr/share/doc/cardiac/runbooks/xid.79.md)"),
            std::string::npos);
  EXPECT_NE(render_html(r).find("<a href=\"file:///usr/share/doc/cardiac/runbooks/xid.79.md\">"),
            std::string::npos);
}

}  // namespace
}  // namespace cardiac::doctor
