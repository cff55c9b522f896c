#pragma once
// One descriptor per parameter: key, type, unit, range, description and the struct member it
// fills. A layer lists its parameters once in a ParamTable<S>; the same table declares them to
// the ParamRegistry (`moehub list`, checking at resolve) and fills S from a resolved Config.
// An integer that fills a 32-bit field gets that field's bound unless a lower one is declared,
// so no value can wrap on the way into the model.

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/param_registry.h"

namespace moehub {

template <class S>
class ParamTable {
 public:
  // `member` is a pointer to a member of S, or a callable S& -> T& for a nested field.
  template <class M>
  ParamSpec& integer(std::string path, M member, std::string description) {
    using T = std::remove_reference_t<decltype(ref_of(member)(std::declval<S&>()))>;
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer parameter fills an integer field");
    return bind<&Config::integer>(std::move(path), ParamType::Integer, member, std::move(description));
  }
  template <class M>
  ParamSpec& real(std::string path, M member, std::string description) {
    return bind<&Config::real>(std::move(path), ParamType::Real, member, std::move(description));
  }
  template <class M>
  ParamSpec& boolean(std::string path, M member, std::string description) {
    return bind<&Config::boolean>(std::move(path), ParamType::Boolean, member, std::move(description));
  }
  template <class M>
  ParamSpec& string(std::string path, M member, std::string description) {
    return bind<&Config::string>(std::move(path), ParamType::String, member, std::move(description));
  }
  template <class M>
  ParamSpec& choice(std::string path, M member, std::vector<std::string> choices, std::string description) {
    ParamSpec& s = bind<&Config::string>(std::move(path), ParamType::Choice, member, std::move(description));
    s.choices = std::move(choices);
    return s;
  }
  // A choice that fills an enum: each option's text and the value it stands for.
  template <class M, class E>
  ParamSpec& choice(std::string path, M member, std::vector<std::pair<std::string, E>> options,
                    std::string description) {
    std::vector<std::string> names;
    for (const auto& o : options) names.push_back(o.first);
    ParamSpec& s = add(std::move(path), ParamType::Choice, std::move(description), member,
                       [options](const Config& c, const std::string& p) {
                         const std::string& v = c.string(p);
                         for (const auto& o : options) {
                           if (o.first == v) return o.second;
                         }
                         throw std::logic_error("parameter " + p + " holds an undeclared choice");
                       });
    s.choices = std::move(names);
    return s;
  }
  // Times are picoseconds in 64 bits (about 106 days); no parameter may exceed 10^6 s, so sums
  // of a few stay representable. A parameter may lower the bound.
  template <class M>
  ParamSpec& time(std::string path, M member, std::string description) {
    return bind<&Config::time>(std::move(path), ParamType::Time, member, std::move(description))
        .at_most(1e18);
  }
  template <class M>
  ParamSpec& bandwidth(std::string path, M member, std::string description) {
    return bind<&Config::bandwidth>(std::move(path), ParamType::Bandwidth, member, std::move(description));
  }
  template <class M>
  ParamSpec& frequency(std::string path, M member, std::string description) {
    return bind<&Config::frequency>(std::move(path), ParamType::Frequency, member, std::move(description));
  }
  template <class M>
  ParamSpec& bytes(std::string path, M member, std::string description) {
    return bind<&Config::bytes>(std::move(path), ParamType::Bytes, member, std::move(description));
  }
  template <class M>
  ParamSpec& integer_list(std::string path, M member, std::string description) {
    return bind<&Config::integer_list>(std::move(path), ParamType::IntegerList, member, std::move(description));
  }

  // Declares every parameter, in table order. A declared bound looser than the field's type
  // is a bug in the table, not a user error.
  void declare(ParamRegistry& registry) const {
    for (const Field& f : fields_) {
      if (f.type_max && (!f.spec.max || *f.spec.max > *f.type_max)) {
        throw std::logic_error("parameter " + f.spec.path + " declares a bound beyond the field it fills");
      }
      registry.add(f.spec);
    }
  }

  // Fills every member this table names from a resolved config.
  void read(const Config& config, S& into) const {
    for (const Field& f : fields_) f.read(config, f.spec.path, into);
  }

 private:
  struct Field {
    ParamSpec spec;
    std::function<void(const Config&, const std::string&, S&)> read;
    std::optional<double> type_max;
  };

  template <class M>
  static auto ref_of(M member) {
    if constexpr (std::is_member_object_pointer_v<M>) {
      return [member](S& s) -> auto& { return s.*member; };
    } else {
      return member;
    }
  }

  // A parameter read by one of Config's typed getters.
  template <auto Get, class M>
  ParamSpec& bind(std::string path, ParamType type, M member, std::string description) {
    return add(std::move(path), type, std::move(description), member,
               [](const Config& c, const std::string& p) { return (c.*Get)(p); });
  }

  template <class M, class Get>
  ParamSpec& add(std::string path, ParamType type, std::string description, M member, Get get) {
    auto ref = ref_of(member);
    using T = std::remove_reference_t<decltype(ref(std::declval<S&>()))>;
    Field& f = fields_.emplace_back();
    f.spec.path = std::move(path);
    f.spec.type = type;
    f.spec.description = std::move(description);
    f.read = [ref, get](const Config& c, const std::string& p, S& s) { ref(s) = static_cast<T>(get(c, p)); };
    // The config holds integers in 64 bits; a narrower or unsigned field bounds what it accepts.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if constexpr (sizeof(T) < sizeof(int64_t) || std::is_unsigned_v<T>) {
        const double top =
            static_cast<double>(std::min<uint64_t>(std::numeric_limits<T>::max(), static_cast<uint64_t>(INT64_MAX)));
        f.type_max = top;
        f.spec.at_most(top);
      }
      if constexpr (std::is_unsigned_v<T>) f.spec.at_least(0);
    }
    return f.spec;
  }

  std::deque<Field> fields_;  // deque: a returned ParamSpec& stays valid as fields are added
};

}  // namespace moehub
