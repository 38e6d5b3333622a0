// SPDX-License-Identifier: Apache-2.0
// Runs one doctor golden case (tests/cases/README.md): `cardiac doctor --offline --json --quiet`
// on the case's input, then compares the findings with the case's expectations. Exit 0 when
// they match; 1 with every mismatch named as FILE:LINE on stderr; 2 when the case itself is
// malformed or the doctor could not run.
//
// Usage: doctor_case_runner CASE_FILE
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/run_cardiac.h"

namespace cardiac::cases {
namespace {

struct Expected {
  int line = 0;
  std::string id;
  std::string severity;
  std::optional<std::string> gpu;  // PCI bus id, when the case names one
};

struct Absent {
  int line = 0;
  std::string id;
};

struct Case {
  std::string path;
  int run_line = 0;
  std::vector<std::string> args;
  std::optional<std::string> kmsg;  // inline kernel log
  std::vector<Expected> findings;
  std::vector<Absent> absent;
  bool partial = false;
  std::optional<int> exit_code;
  int exit_line = 0;
};

struct Found {
  std::string id;
  std::string severity;
  std::string gpu;  // "" for a host-wide finding
  bool matched = false;
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

bool known_severity(const std::string& s) {
  return s == "info" || s == "warning" || s == "critical";
}

// Reads the case; on a malformed line prints FILE:LINE: why and returns nullopt.
std::optional<Case> parse(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << path << ": cannot read the case file\n";
    return std::nullopt;
  }
  Case c;
  c.path = path;
  auto bad = [&](int n, const std::string& why) {
    std::cerr << path << ":" << n << ": " << why << "\n";
    return std::nullopt;
  };
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::vector<std::string> w = words(line);
    if (w.empty() || w[0][0] == '#') continue;
    if (w[0] == "run") {
      if (c.run_line != 0) return bad(n, "a second `run` line (one run per case)");
      c.run_line = n;
      for (std::size_t i = 1; i < w.size(); ++i) {
        c.args.push_back(replace_all(w[i], "$FIXTURES", CARDIAC_FIXTURES_DIR));
      }
    } else if (w[0] == "kmsg" && w.size() == 1) {
      if (c.kmsg) return bad(n, "a second inline `kmsg` block");
      std::string text;
      bool closed = false;
      while (std::getline(in, line)) {
        ++n;
        if (line == "----") {
          closed = true;
          break;
        }
        text += line + "\n";
      }
      if (!closed) return bad(n, "the inline `kmsg` block has no closing `----` line");
      c.kmsg = text;
    } else if (w[0] == "finding" && (w.size() == 3 || w.size() == 4)) {
      Expected e{n, w[1], w[2], std::nullopt};
      if (!known_severity(e.severity)) {
        return bad(n, "severity must be info, warning or critical, not '" + e.severity + "'");
      }
      if (w.size() == 4) {
        if (w[3].rfind("gpu=", 0) != 0) return bad(n, "expected gpu=BUS_ID, not '" + w[3] + "'");
        e.gpu = w[3].substr(4);
      }
      c.findings.push_back(e);
    } else if (w[0] == "no" && w.size() == 3 && w[1] == "finding") {
      c.absent.push_back({n, w[2]});
    } else if (w[0] == "partial" && w.size() == 1) {
      c.partial = true;
    } else if (w[0] == "exit" && w.size() == 2) {
      try {
        c.exit_code = std::stoi(w[1]);
      } catch (const std::exception&) {
        return bad(n, "exit wants a number, not '" + w[1] + "'");
      }
      c.exit_line = n;
    } else {
      return bad(n, "unknown line '" + line +
                        "' (run, kmsg … ----, finding ID SEVERITY [gpu=BUS], no finding ID, "
                        "partial, exit N)");
    }
  }
  if (c.run_line == 0) return bad(n, "no `run` line (it names the host tree at least)");
  return c;
}

std::string describe(const Found& f) {
  return f.id + " " + f.severity + (f.gpu.empty() ? "" : " gpu=" + f.gpu);
}

int run_case(const Case& c) {
  std::vector<std::string> args = {"doctor", "--offline", "--json", "--quiet"};
  args.insert(args.end(), c.args.begin(), c.args.end());
  std::string kmsg_file;
  if (c.kmsg) {
    char tmpl[] = "/tmp/cardiac-case-kmsg-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd < 0 ||
        ::write(fd, c.kmsg->data(), c.kmsg->size()) != static_cast<ssize_t>(c.kmsg->size())) {
      std::cerr << c.path << ": cannot write the inline kernel log to " << tmpl << "\n";
      return 2;
    }
    ::close(fd);
    kmsg_file = tmpl;
    args.push_back("--kmsg");
    args.push_back(kmsg_file);
  }
  e2e::RunResult r = e2e::run_cardiac(args);
  if (!kmsg_file.empty()) ::unlink(kmsg_file.c_str());
  std::string command = "cardiac";
  for (const auto& a : args) command += " " + a;

  nlohmann::json report = nlohmann::json::parse(r.out, nullptr, false);
  if (report.is_discarded() || !report.contains("findings")) {
    std::cerr << c.path << ":" << c.run_line << ": the doctor gave no JSON report (exit "
              << r.exit_code << ")\n  " << command << "\n"
              << r.err;
    return 2;
  }
  std::vector<Found> found;
  for (const auto& f : report["findings"]) {
    Found x{f.value("id", ""), f.value("severity", ""), "", false};
    if (f.contains("gpu") && f["gpu"].is_object() && f["gpu"].contains("pci_bus_id") &&
        f["gpu"]["pci_bus_id"].is_string()) {
      x.gpu = f["gpu"]["pci_bus_id"].get<std::string>();
    }
    found.push_back(x);
  }

  std::vector<std::string> problems;
  // Every finding links its runbook: an id the registry does not know has none.
  for (const auto& f : report["findings"]) {
    if (!f.contains("runbook") || !f["runbook"].is_string()) {
      problems.push_back(c.path + ":" + std::to_string(c.run_line) + ": finding " +
                         f.value("id", "") +
                         " has no runbook: register its id in src/doctor/finding_ids.cpp and "
                         "write docs/runbooks/<id>.md");
    }
  }
  for (const auto& e : c.findings) {
    bool hit = false;
    for (auto& f : found) {
      if (f.matched || f.id != e.id || f.severity != e.severity) continue;
      if (e.gpu && f.gpu != *e.gpu) continue;
      f.matched = hit = true;
      break;
    }
    if (!hit) {
      problems.push_back(c.path + ":" + std::to_string(e.line) + ": expected finding " + e.id +
                         " " + e.severity + (e.gpu ? " gpu=" + *e.gpu : "") +
                         ", which the report does not have");
    }
  }
  for (const auto& a : c.absent) {
    for (const auto& f : found) {
      if (f.id == a.id) {
        problems.push_back(c.path + ":" + std::to_string(a.line) + ": expected no finding " + a.id +
                           ", but the report has " + describe(f));
      }
    }
  }
  if (!c.partial) {
    for (const auto& f : found) {
      if (f.matched) continue;
      problems.push_back(c.path + ":" + std::to_string(c.run_line) + ": unexpected finding " +
                         describe(f) +
                         " (list it with a `finding` line, or mark the case `partial`)");
    }
  }
  if (c.exit_code && *c.exit_code != r.exit_code) {
    problems.push_back(c.path + ":" + std::to_string(c.exit_line) + ": expected exit " +
                       std::to_string(*c.exit_code) + ", the doctor exited " +
                       std::to_string(r.exit_code));
  }
  if (problems.empty()) {
    std::cout << c.path << ": ok (" << found.size() << " findings)\n";
    return 0;
  }
  for (const auto& p : problems) std::cerr << p << "\n";
  // The whole report side by side with the case, so that the diff is readable at once.
  std::cerr << "--- expected (" << c.path << ")\n";
  for (const auto& e : c.findings) {
    std::cerr << "  finding " << e.id << " " << e.severity << (e.gpu ? " gpu=" + *e.gpu : "")
              << "\n";
  }
  std::cerr << "+++ the report (" << command << ", exit " << r.exit_code << ")\n";
  for (const auto& f : found) std::cerr << "  finding " << describe(f) << "\n";
  return 1;
}

}  // namespace
}  // namespace cardiac::cases

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: doctor_case_runner CASE_FILE\n";
    return 2;
  }
  auto c = cardiac::cases::parse(argv[1]);
  if (!c) return 2;
  return cardiac::cases::run_case(*c);
}
