#include "systems/ideal/ideal_functional.h"

namespace moehub {
namespace {

class IdealRows final : public IdealFunctional {
 public:
  IdealRows(FunctionalData& fd, Cluster& cluster) : fd_(fd), w_(cluster.workload()) {}

  void outputs(int g) override {
    std::vector<float> act(static_cast<size_t>(fd_.ffn())), y(static_cast<size_t>(fd_.hidden()));
    for (int64_t t = w_.tokens().begin(g); t < w_.tokens().end(g); ++t) {
      fd_.combine_token(t, [&](int64_t j) {
        const int64_t e = w_.routing().expert(t, j);
        expert_row(fd_, ExpertGemm::First, e, fd_.input_row(t), act.data());
        expert_row(fd_, ExpertGemm::Second, e, act.data(), y.data());
        return y.data();
      });
    }
  }

 private:
  FunctionalData& fd_;
  const Workload& w_;
};

}  // namespace

std::unique_ptr<IdealFunctional> IdealFunctional::make(Cluster& cluster) {
  return make_functional_companion<IdealFunctional, IdealRows>(cluster.functional(), cluster);
}

}  // namespace moehub
