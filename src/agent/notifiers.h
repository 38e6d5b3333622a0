// SPDX-License-Identifier: Apache-2.0
// The notifiers named in the configuration, and alert changes as notifications.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "alerts/alert_book.h"
#include "config/config.h"
#include "core/clock.h"
#include "core/result.h"
#include "notify/dispatcher.h"

namespace cardiac::agent {

// Alertmanager forgets a firing alert it has not heard of for its resolve_timeout (5 m by
// default), so firing alerts are sent to it again on this period, as Prometheus does.
constexpr DurationNs kAlertmanagerResend = 60 * kNsPerSec;

// The notifiers of one group: `alertmanager` selects the Alertmanager ones, otherwise all the
// others (the log when none is configured at all). Null when the group is empty.
Result<std::unique_ptr<notify::Dispatcher>> make_dispatcher(const config::Config& c,
                                                            bool alertmanager);
// Notifications for the alerts firing now (not silenced), for the periodic re-send.
std::vector<notify::Notification> firing_notifications(const std::vector<alerts::Alert>& open,
                                                       const std::string& hostname);
std::vector<notify::Notification> to_notifications(const std::vector<alerts::AlertChange>& changes,
                                                   const std::string& hostname);

}  // namespace cardiac::agent
