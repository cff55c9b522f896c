#!/usr/bin/env bash
# Compares the speed of two moehub binaries on a host whose speed drifts (the development
# machine's moves by up to 2x within an hour, so runs one after the other say little): each
# round runs both at the same time, one per core, and swaps the cores every round.
#
#   scripts/ab-time.sh ROUNDS OLD_BINARY NEW_BINARY ARGS...
#   scripts/ab-time.sh 8 /tmp/moehub-old build/moehub run --systems moehub --format json
#
# Prints each round's user seconds and the ratio of the means (new / old). Two copies of one
# binary differ by about 3 % over 8 rounds on the development machine: read smaller ratios as
# noise.
set -euo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: $0 ROUNDS OLD_BINARY NEW_BINARY ARGS..." >&2
  exit 2
fi
rounds=$1 old=$2 new=$3
shift 3
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: ROUNDS: expected a positive number, got '$rounds'" >&2
  exit 2
fi
for b in "$old" "$new"; do
  if [[ ! -x $b ]]; then
    echo "$0: $b: not an executable" >&2
    exit 2
  fi
done
if [[ $(nproc) -lt 2 ]]; then
  echo "$0: needs two cores (this machine has $(nproc))" >&2
  exit 2
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for ((i = 1; i <= rounds; ++i)); do
  if ((i % 2)); then old_core=0 new_core=1; else old_core=1 new_core=0; fi
  /usr/bin/time -f "%U" -o "$scratch/old.$i" taskset -c "$old_core" "$old" "$@" >/dev/null &
  /usr/bin/time -f "%U" -o "$scratch/new.$i" taskset -c "$new_core" "$new" "$@" >/dev/null &
  wait
  printf 'round %d: old %s s, new %s s\n' "$i" "$(tail -1 "$scratch/old.$i")" "$(tail -1 "$scratch/new.$i")"
done

for side in old new; do
  for ((i = 1; i <= rounds; ++i)); do tail -1 "$scratch/$side.$i"; done | awk -v side="$side" '{ s += $1 } END { printf "%s mean %.3f s\n", side, s / NR }'
done | tee "$scratch/means"
awk '/^old/ { o = $3 } /^new/ { n = $3 } END { printf "new / old %.3f\n", n / o }' "$scratch/means"
