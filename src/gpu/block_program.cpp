#include "gpu/block_program.h"

#include <stdexcept>

namespace moehub::gpu {

StepListProgram::StepListProgram(std::vector<Step> steps, uint32_t repeat) : steps_(std::move(steps)), repeat_(repeat) {
  for (size_t i = 1; i < steps_.size(); ++i) {
    const bool first_only = steps_[i].kind == Step::Kind::Gate ||
                            (steps_[i].kind == Step::Kind::Wait && steps_[i].mode == WaitMode::Hardware);
    if (first_only) throw std::logic_error("StepListProgram: a gate or hardware wait must be the first step");
  }
  if (repeat_ > 1 && !steps_.empty() &&
      (steps_[0].kind == Step::Kind::Gate ||
       (steps_[0].kind == Step::Kind::Wait && steps_[0].mode == WaitMode::Hardware))) {
    throw std::logic_error("StepListProgram: a repeated list cannot start with a gate or hardware wait");
  }
}

Step StepListProgram::next(BlockState& b) {
  if (steps_.empty()) return Step::done();
  const uint64_t total = static_cast<uint64_t>(steps_.size()) * repeat_;
  if (b.step >= total) return Step::done();
  return steps_[b.step % steps_.size()];
}

}  // namespace moehub::gpu
