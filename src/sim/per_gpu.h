#pragma once
// Containers indexed by GPU id. GPU (and peer) ids are `int` everywhere (Cluster::gpus(), a
// packet's src and dst), while std::vector wants size_t: these wrap a vector so that data held
// per GPU, or per (src, dst) pair of GPUs, is indexed by the id itself. Debug builds check the
// id on every access; `at` checks it in every build, as std::vector::at does.

#include <cassert>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <utility>
#include <vector>

namespace moehub {

template <class T>
class PerGpu {
 public:
  using value_type = T;
  using iterator = typename std::vector<T>::iterator;
  using const_iterator = typename std::vector<T>::const_iterator;

  PerGpu() = default;
  explicit PerGpu(int gpus) : items_(count(gpus)) {}
  PerGpu(int gpus, const T& value) : items_(count(gpus), value) {}

  int size() const { return static_cast<int>(items_.size()); }
  bool empty() const { return items_.empty(); }

  T& operator[](int g) {
    assert(g >= 0 && g < size());
    return items_[static_cast<size_t>(g)];
  }
  const T& operator[](int g) const {
    assert(g >= 0 && g < size());
    return items_[static_cast<size_t>(g)];
  }
  // A negative id converts to an index past any end, which std::vector::at refuses.
  T& at(int g) { return items_.at(static_cast<size_t>(g)); }
  const T& at(int g) const { return items_.at(static_cast<size_t>(g)); }

  void assign(int gpus, const T& value) { items_.assign(count(gpus), value); }
  void resize(int gpus) { items_.resize(count(gpus)); }
  void reserve(int gpus) { items_.reserve(count(gpus)); }
  void clear() { items_.clear(); }
  // Filling GPU by GPU, in order: the next GPU's entry.
  void push_back(T value) { items_.push_back(std::move(value)); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    return items_.emplace_back(std::forward<Args>(args)...);
  }
  T& back() { return items_.back(); }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

  bool operator==(const PerGpu&) const = default;

 private:
  static size_t count(int gpus) {
    assert(gpus >= 0);
    return static_cast<size_t>(gpus);
  }
  std::vector<T> items_;
};

// A value per ordered pair (src, dst) of `gpus` GPUs, src == dst included: a traffic matrix,
// or state per connection.
template <class T>
class PerPair {
 public:
  PerPair() = default;
  explicit PerPair(int gpus, const T& value = T()) : gpus_(gpus), items_(cells(gpus), value) {}
  // Row by row, one row per source: {{(0, 0), (0, 1)}, {(1, 0), (1, 1)}}.
  PerPair(std::initializer_list<std::initializer_list<T>> rows) : PerPair(static_cast<int>(rows.size())) {
    int src = 0;
    for (const auto& row : rows) {
      if (row.size() != rows.size()) throw std::logic_error("PerPair: rows of a different length than their count");
      int dst = 0;
      for (const T& value : row) (*this)(src, dst++) = value;
      ++src;
    }
  }

  int gpus() const { return gpus_; }

  T& operator()(int src, int dst) { return items_[index(src, dst)]; }
  const T& operator()(int src, int dst) const { return items_[index(src, dst)]; }

  // The same values with every (src, dst) swapped: what comes back on the reverse path.
  PerPair transposed() const {
    PerPair t(gpus_);
    for (int s = 0; s < gpus_; ++s) {
      for (int d = 0; d < gpus_; ++d) t(d, s) = (*this)(s, d);
    }
    return t;
  }

  // Every value, row by row (source-major).
  typename std::vector<T>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<T>::const_iterator end() const { return items_.end(); }

  bool operator==(const PerPair&) const = default;

 private:
  static size_t cells(int gpus) {
    assert(gpus >= 0);
    return static_cast<size_t>(gpus) * static_cast<size_t>(gpus);
  }
  size_t index(int src, int dst) const {
    assert(src >= 0 && src < gpus_ && dst >= 0 && dst < gpus_);
    return static_cast<size_t>(src) * static_cast<size_t>(gpus_) + static_cast<size_t>(dst);
  }

  int gpus_ = 0;
  std::vector<T> items_;
};

}  // namespace moehub
