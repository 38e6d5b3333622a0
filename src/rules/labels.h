// SPDX-License-Identifier: Apache-2.0
// A label set that copies by sharing: every point of one GPU, every series a rule keeps and every
// alert it raises hold the same immutable map, and its canonical key is made once.
#pragma once

#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace cardiac::rules {

// Label name → value, ordered so that a label set has one canonical spelling (its key). A copy
// shares the map; a change to a shared set copies it first (copy on write), so a copy never
// sees another's change. Reads read as std::map's; writes go through operator[], emplace and
// erase. A set is safe to read from several threads once none changes it, like any value.
class Labels {
 public:
  using Map = std::map<std::string, std::string>;
  using value_type = Map::value_type;
  using key_type = Map::key_type;
  using mapped_type = Map::mapped_type;
  using size_type = Map::size_type;
  using const_iterator = Map::const_iterator;
  using iterator = const_iterator;  // no write through an iterator: the key would go stale

  Labels() = default;
  Labels(std::initializer_list<value_type> init);
  explicit Labels(Map map);

  [[nodiscard]] const Map& map() const { return rep_ ? rep_->map : empty_map(); }
  [[nodiscard]] const_iterator begin() const { return map().begin(); }
  [[nodiscard]] const_iterator end() const { return map().end(); }
  [[nodiscard]] bool empty() const { return map().empty(); }
  [[nodiscard]] size_type size() const { return map().size(); }
  [[nodiscard]] const_iterator find(const std::string& k) const { return map().find(k); }
  [[nodiscard]] size_type count(const std::string& k) const { return map().count(k); }
  [[nodiscard]] bool contains(const std::string& k) const { return map().contains(k); }
  [[nodiscard]] const std::string& at(const std::string& k) const { return map().at(k); }

  // Writes: the map is this set's own afterwards.
  std::string& operator[](const std::string& k) { return own()[k]; }
  template <class... Args>
  std::pair<iterator, bool> emplace(Args&&... args) {
    return own().emplace(std::forward<Args>(args)...);
  }
  size_type erase(const std::string& k);

  // "gpu=0,uuid=GPU-1": made on first use and kept with the map, so every holder of a shared
  // set asks for it at the cost of one look.
  [[nodiscard]] const std::string& key() const;

  // Two sets that share a map are equal without a look at it.
  friend bool operator==(const Labels& a, const Labels& b) {
    return a.rep_ == b.rep_ || a.map() == b.map();
  }
  friend auto operator<=>(const Labels& a, const Labels& b) { return a.map() <=> b.map(); }

 private:
  struct Rep {
    Map map;
    mutable std::once_flag keyed_once;
    mutable std::string key;
    mutable std::atomic<bool> keyed{false};
  };
  static const Map& empty_map();
  Map& own();

  std::shared_ptr<Rep> rep_;  // null: no labels
};

}  // namespace cardiac::rules
