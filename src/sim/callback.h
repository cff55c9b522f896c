#pragma once
// A move-only type-erased callable (C++23's std::move_only_function is not in GCC 12).
// Small callables (a `this` pointer and a few values) live inline: no allocation per event.

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace moehub {

template <typename Signature>
class UniqueFunction;

template <typename R, typename... Args>
class UniqueFunction<R(Args...)> {
 public:
  static constexpr size_t kInlineBytes = 48;

  UniqueFunction() = default;
  UniqueFunction(std::nullptr_t) {}

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, UniqueFunction> && std::is_invocable_r_v<R, D&, Args...>>>
  UniqueFunction(F&& f) {  // NOLINT: implicit by design, like std::function
    construct(std::forward<F>(f));
  }

  // Replaces the target in place: no temporary UniqueFunction, no extra move.
  template <typename F>
  void emplace(F&& f) {
    if constexpr (std::is_same_v<std::decay_t<F>, UniqueFunction>) {
      *this = std::move(f);
    } else {
      reset();
      construct(std::forward<F>(f));
    }
  }

  UniqueFunction(UniqueFunction&& o) noexcept : ops_(o.ops_) {
    if (ops_) {
      ops_->move(o.storage_, storage_);
      o.ops_ = nullptr;
    }
  }
  UniqueFunction& operator=(UniqueFunction&& o) noexcept {
    if (this != &o) {
      reset();
      ops_ = o.ops_;
      if (ops_) {
        ops_->move(o.storage_, storage_);
        o.ops_ = nullptr;
      }
    }
    return *this;
  }
  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;
  ~UniqueFunction() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }

  // Calls the target once and destroys it: one indirect call where operator() then reset()
  // take two (the event loop's hot path).
  R consume(Args... args) {
    const Ops* ops = ops_;
    ops_ = nullptr;
    return ops->consume(storage_, std::forward<Args>(args)...);
  }

  void reset() {
    if (ops_) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  template <typename F>
  void construct(F&& f) {
    using D = std::decay_t<F>;
    if constexpr (sizeof(D) <= kInlineBytes && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
      ops_ = &heap_ops<D>;
    }
  }

  struct Ops {
    R (*call)(void*, Args&&...);
    R (*consume)(void*, Args&&...);  // call, then destroy (also when the call throws)
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
  };

  template <typename D>
  static constexpr Ops inline_ops{
      [](void* s, Args&&... a) -> R { return (*static_cast<D*>(s))(std::forward<Args>(a)...); },
      [](void* s, Args&&... a) -> R {
        D& d = *static_cast<D*>(s);
        if constexpr (std::is_trivially_destructible_v<D>) {
          return d(std::forward<Args>(a)...);
        } else {
          struct Destroy {
            D& d;
            ~Destroy() { std::destroy_at(&d); }
          } destroy{d};
          return d(std::forward<Args>(a)...);
        }
      },
      [](void* from, void* to) noexcept {
        ::new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      },
      [](void* s) noexcept { static_cast<D*>(s)->~D(); }};

  template <typename D>
  static constexpr Ops heap_ops{
      [](void* s, Args&&... a) -> R { return (**static_cast<D**>(s))(std::forward<Args>(a)...); },
      [](void* s, Args&&... a) -> R {
        std::unique_ptr<D> d(*static_cast<D**>(s));
        return (*d)(std::forward<Args>(a)...);
      },
      [](void* from, void* to) noexcept { ::new (to) D*(*static_cast<D**>(from)); },
      [](void* s) noexcept { delete *static_cast<D**>(s); }};

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

using Callback = UniqueFunction<void()>;

// Runs every callback waiting in `waiters` and leaves the list empty. A callback may wait
// again (append to `waiters`) while they run: they run from a swapped-out list. `scratch` is an
// empty list that keeps its allocation between calls, so a busy wait list costs no allocation.
inline void run_waiters(std::vector<Callback>& waiters, std::vector<Callback>& scratch) {
  std::vector<Callback> running;
  running.swap(scratch);
  running.swap(waiters);
  for (Callback& cb : running) cb();
  running.clear();
  if (scratch.empty()) scratch.swap(running);
}

}  // namespace moehub
