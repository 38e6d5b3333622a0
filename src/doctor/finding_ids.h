// SPDX-License-Identifier: Apache-2.0
// Every finding id the doctor can emit, and the runbook (docs/runbooks/<name>.md) that says
// what each one means and what to do. A check that emits an id missing here fails the tests
// (src/doctor/tests/finding_ids_test.cpp), and its findings carry no runbook link.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/finding.h"

namespace cardiac::doctor {

// Where the Debian package installs the runbooks (packaging/CMakeLists.txt).
inline constexpr std::string_view kInstalledRunbooks = "/usr/share/doc/cardiac/runbooks";
// The same folder in a source tree, relative to its root: the fallback where nothing is
// installed.
inline constexpr std::string_view kSourceRunbooks = "docs/runbooks";
// The runbook for an Xid that cardiac's catalog does not know.
inline constexpr std::string_view kUnknownXidRunbook = "xid.other";

// Every id the doctor can emit: the fixed ids, then `xid.<N>` for each Xid in the catalog
// (health/faults), in order. An Xid outside the catalog is emitted as `xid.<N>` too; its
// runbook is xid.other.
[[nodiscard]] const std::vector<std::string>& registered_finding_ids();

// The runbook name (the file name without `.md`) for finding id `id`: the id itself for a
// registered id, "xid.other" for `xid.<N>` with N outside the catalog, nullopt for an id that
// is not registered.
[[nodiscard]] std::optional<std::string> runbook_name(std::string_view id);

// Every runbook name: registered_finding_ids() and xid.other.
[[nodiscard]] std::vector<std::string> runbook_names();

// The link to `id`'s runbook under `base` (a folder or a URL; kSourceRunbooks when empty):
// "<base>/<name>.md", or "" when `id` is not registered.
[[nodiscard]] std::string runbook_link(std::string_view base, std::string_view id);

// Sets Finding::runbook on each finding from runbook_link(); diagnose() calls it.
void attach_runbooks(std::vector<Finding>& findings, std::string_view base);

// `link` as an href for the HTML report: a path (absolute, or relative like kSourceRunbooks)
// becomes a file: URL when absolute and stays as it is when relative; a URL is kept.
[[nodiscard]] std::string runbook_href(std::string_view link);

}  // namespace cardiac::doctor
