// SPDX-License-Identifier: Apache-2.0
// Labels: the shared map, its copy on write and its kept key.
#include "rules/labels.h"

namespace cardiac::rules {

Labels::Labels(std::initializer_list<value_type> init) {
  if (init.size() != 0) {
    rep_ = std::make_shared<Rep>();
    rep_->map = Map(init);
  }
}

Labels::Labels(Map map) {
  if (!map.empty()) {
    rep_ = std::make_shared<Rep>();
    rep_->map = std::move(map);
  }
}

const Labels::Map& Labels::empty_map() {
  static const Map kEmpty;
  return kEmpty;
}

Labels::Map& Labels::own() {
  // A map another holder may read, or whose key was made (a once_flag cannot be re-armed), is
  // copied; one this set alone holds is changed in place.
  if (!rep_ || rep_.use_count() != 1 || rep_->keyed.load(std::memory_order_acquire)) {
    auto fresh = std::make_shared<Rep>();
    if (rep_) fresh->map = rep_->map;
    rep_ = std::move(fresh);
  } else {
    // use_count() is a relaxed read: the fence orders this write after the last reads of the
    // holders that let go of the map.
    std::atomic_thread_fence(std::memory_order_acquire);
  }
  return rep_->map;
}

Labels::size_type Labels::erase(const std::string& k) {
  if (!contains(k)) return 0;
  return own().erase(k);
}

const std::string& Labels::key() const {
  static const std::string kNone;
  if (!rep_) return kNone;
  std::call_once(rep_->keyed_once, [rep = rep_.get()] {
    for (const auto& [k, v] : rep->map) {
      if (!rep->key.empty()) rep->key += ',';
      rep->key += k;
      rep->key += '=';
      rep->key += v;
    }
    rep->keyed.store(true, std::memory_order_release);
  });
  return rep_->key;
}

}  // namespace cardiac::rules
