#pragma once
// Values parked under a small integer id until they are taken back: callbacks then capture
// the id (fits a callback's inline storage) instead of the value. Ids are reused last-freed
// first, which keeps the live entries few and warm in cache.

#include <cstdint>
#include <utility>
#include <vector>

namespace moehub {

template <typename T>
class Slab {
 public:
  uint32_t put(T value) {
    if (free_.empty()) {
      items_.push_back(std::move(value));
      return static_cast<uint32_t>(items_.size() - 1);
    }
    const uint32_t id = free_.back();
    free_.pop_back();
    items_[id] = std::move(value);
    return id;
  }
  // An id whose slot keeps what it last held (storage to reuse: the caller resets what it
  // needs), or a new default-constructed one; given back with release().
  uint32_t acquire() {
    if (free_.empty()) {
      items_.emplace_back();
      return static_cast<uint32_t>(items_.size() - 1);
    }
    const uint32_t id = free_.back();
    free_.pop_back();
    return id;
  }
  void release(uint32_t id) { free_.push_back(id); }
  T& at(uint32_t id) { return items_[id]; }
  const T& at(uint32_t id) const { return items_[id]; }
  // Moves the value out and frees its id.
  T take(uint32_t id) {
    T value = std::move(items_[id]);
    free_.push_back(id);
    return value;
  }

 private:
  std::vector<T> items_;
  std::vector<uint32_t> free_;
};

}  // namespace moehub
