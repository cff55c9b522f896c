#!/usr/bin/env bash
# `mpirun -np 3 moehub figures` (rank 0 coordinates, two workers simulate) writes byte-identical
# CSVs, plots and RESULTS.md to a local run, nothing on stdout, and a bad input on rank 0 stops
# the workers instead of leaving them waiting.
# `mpirun -np 3 moehub sweep FILE` likewise gives the local run's CSVs and plots.
# Usage: mpi_figures_test.sh MOEHUB MPIEXEC EXPERIMENTS_DIR WORK_DIR SWEEP_FILE
set -euo pipefail
moehub=$1 mpiexec=$2 experiments=$3 work=$4 sweep=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
args=(figures --quick --experiments "$experiments")

"$moehub" "${args[@]}" --jobs 2 --out "$work/local" > "$work/local.out" 2> "$work/local.err" ||
  fail "local run: $(cat "$work/local.err")"
"$mpiexec" --oversubscribe -np 3 "$moehub" "${args[@]}" --out "$work/mpi" > "$work/mpi.out" 2> "$work/mpi.err" ||
  fail "mpirun: $(cat "$work/mpi.err")"
[ ! -s "$work/mpi.out" ] || fail "stdout is not empty: $(head -c 300 "$work/mpi.out")"
grep -q "to compute on 2 MPI worker(s)" "$work/mpi.err" || fail "not distributed: $(cat "$work/mpi.err")"
grep -q "16 runs computed, 0 cached, 0 unsupported, 0 failed" "$work/mpi.err" || fail "$(cat "$work/mpi.err")"
diff -r -x cache "$work/local" "$work/mpi" > "$work/diff.txt" || fail "outputs differ: $(head -20 "$work/diff.txt")"
[ -s "$work/mpi/fig13-small.csv" ] || fail "no CSV written"

status=0
timeout 120 "$mpiexec" --oversubscribe -np 3 "$moehub" "${args[@]}" --out "$work/bad" nope \
  > /dev/null 2> "$work/bad.err" || status=$?
[ "$status" -ne 124 ] || fail "a bad input on rank 0 left the workers waiting"
[ "$status" -eq 2 ] || fail "bad input: exit status $status, expected 2: $(cat "$work/bad.err")"
grep -q "^moehub: error: figures: unknown figure 'nope'" "$work/bad.err" || fail "$(cat "$work/bad.err")"
[ "$(grep -c "^moehub: error:" "$work/bad.err")" -eq 1 ] || fail "only rank 0 reports: $(cat "$work/bad.err")"
[ ! -e "$work/bad" ] || fail "a failed start left its output folder"

"$moehub" sweep "$sweep" --jobs 2 --out "$work/sweep-local" 2> "$work/sweep-local.err" ||
  fail "local sweep: $(cat "$work/sweep-local.err")"
"$mpiexec" --oversubscribe -np 3 "$moehub" sweep "$sweep" --out "$work/sweep-mpi" > "$work/sweep-mpi.out" \
  2> "$work/sweep-mpi.err" || fail "mpirun sweep: $(cat "$work/sweep-mpi.err")"
[ ! -s "$work/sweep-mpi.out" ] || fail "sweep stdout is not empty"
grep -q "16 runs computed, 0 cached" "$work/sweep-mpi.err" || fail "$(cat "$work/sweep-mpi.err")"
diff -r -x cache "$work/sweep-local" "$work/sweep-mpi" > "$work/sweep-diff.txt" ||
  fail "sweep outputs differ: $(head -20 "$work/sweep-diff.txt")"
echo "mpi figures and sweep: identical to the local runs"
