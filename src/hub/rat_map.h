#pragma once
// The RAT's mappings as an open-addressing table (linear probing, power-of-two size, grown at
// half full; deletion shifts the probe run back, so there are no tombstones). It replaces a
// std::unordered_map on the hub's hottest lookup: one probe into a flat array instead of a
// bucket, a node and a division per access, and no allocation per mapping. Never iterated, so
// the order of its slots cannot reach the model.

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace moehub {

template <class Key, class Value, class Hash>
class RatMap {
 public:
  // The value of `key`, or null. Valid until the next insert or erase.
  Value* find(const Key& key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = Hash{}(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const Value* find(const Key& key) const { return const_cast<RatMap*>(this)->find(key); }

  // The key must be absent.
  void insert(const Key& key, const Value& value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = Hash{}(key) & mask_;
    while (slots_[i].used) {
      if (slots_[i].key == key) throw std::logic_error("RatMap::insert: key already present");
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{key, value, true};
    ++size_;
  }

  // Removes the key if present; returns whether it was.
  bool erase(const Key& key) {
    if (slots_.empty()) return false;
    size_t i = Hash{}(key) & mask_;
    while (true) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: a later entry of the run moves into the hole unless its home lies
    // cyclically in (hole, its position], where it would no longer be reachable.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const size_t home = Hash{}(slots_[j].key) & mask_;
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].used = false;
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.used) insert(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace moehub
