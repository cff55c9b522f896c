#!/usr/bin/env bash
# Checks that two moehub builds give byte-identical results: `run --format json` without its
# `perf` section, `verify --systems all`, and every file of `figures --quick`.
# Usage: scripts/same-results.sh OLD_BINARY NEW_BINARY [WORK_DIR]
set -euo pipefail
old=$1 new=$2 work=${3:-$(mktemp -d)}
strip_perf() { python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("perf",None); print(json.dumps(d,indent=1))'; }
status=0
for side in old new; do
  bin=${!side}
  mkdir -p "$work/$side"
  "$bin" run --format json | strip_perf > "$work/$side/run.json" &
  "$bin" verify --systems all > "$work/$side/verify.txt" &
  wait
  "$bin" figures --quick --out "$work/$side/figures" > /dev/null 2>&1
  rm -rf "$work/$side/figures/cache"
done
for f in run.json verify.txt; do
  if cmp -s "$work/old/$f" "$work/new/$f"; then echo "identical: $f"; else echo "DIFFERENT: $f"; status=1; fi
done
if diff -r "$work/old/figures" "$work/new/figures" > "$work/figures.diff"; then
  echo "identical: figures --quick"
else
  echo "DIFFERENT: figures --quick (see $work/figures.diff)"; status=1
fi
exit $status
