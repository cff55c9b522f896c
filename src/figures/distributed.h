#pragma once
// Sweeps over several processes with MPI: `mpirun -np N moehub figures ...` (or `sweep`). Rank 0
// does everything a local run does except simulate: it hands each missing run (its point's
// settings and system, as JSON) to a free worker rank, longest first, and gets the outcome
// back as JSON. Ranks 1..N-1 only build configurations and simulate: they write nothing to
// stdout and nothing to the output folder. Without mpirun, under `mpirun -np 1`, or in a build
// without MPI (CMake found no MPI), runs go on threads in this process, as before.

#include <cstdint>
#include <functional>
#include <memory>

#include "figures/config_source.h"
#include "figures/run_executor.h"

namespace moehub {

class MpiExecutor;  // defined in distributed.cpp, only in builds with MPI

// Owns MPI for the life of a command (no globals): initialises it only when the process was
// started by mpirun (or an MPI launcher setting PMI_SIZE) with more than one rank; otherwise
// it does nothing. On rank 0 the destructor waits for runs still on workers and tells every
// worker to stop (also when rank 0 is unwinding from an exception, so workers never hang),
// then finalises MPI.
class DistributedSession {
 public:
  // UserError "mpirun" when started as several ranks by a moehub built without MPI (every rank
  // would otherwise run the whole sweep and write the same files).
  DistributedSession();
  ~DistributedSession();
  DistributedSession(const DistributedSession&) = delete;
  DistributedSession& operator=(const DistributedSession&) = delete;

  bool distributed() const { return size_ > 1; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0 of a distributed session: the executor that hands runs to ranks 1..size-1 (rank 0
  // does not simulate). Lives as long as the session. std::logic_error on another rank.
  RunExecutor& coordinator();
  // Ranks > 0: receives runs, builds each configuration with `configs`, simulates it and sends
  // back the outcome (a run that throws comes back failed), until rank 0 says stop; returns 0.
  int serve(const ConfigSource& configs);

 private:
  int rank_ = 0;
  int size_ = 1;
  bool initialised_ = false;
  std::unique_ptr<MpiExecutor> executor_;
};

// The entry point for commands that run sweeps (`figures`, `sweep`). Call it once, before
// creating the output folder or writing anything; `configs` must resolve settings exactly as
// on rank 0 (same program, same config folder: every rank gets the same command line).
//   - On MPI worker ranks: serves runs until rank 0 is done, returns 0; `coordinate` is not called.
//   - On rank 0 of `mpirun -np N` (N > 1): coordinate(an executor over the N-1 worker ranks).
//   - Otherwise: coordinate(ThreadExecutor(jobs) with `jobs_memory` as its memory cap, 0: none;
//     MPI ranks have a machine each and ignore it).
// Returns what coordinate (or serve) returned; exceptions from coordinate propagate after the
// workers were stopped. Typical use:
//   return with_executor(configs, jobs, 0, [&](RunExecutor& executor) {
//     SweepRunner runner(configs, cache, binary_fingerprint(), executor, options);
//     ... runner.run(requests) ...; write outputs; return status;
//   });
int with_executor(const ConfigSource& configs, unsigned jobs, uint64_t jobs_memory,
                  const std::function<int(RunExecutor&)>& coordinate);

}  // namespace moehub
