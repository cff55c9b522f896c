#!/usr/bin/env bash
# Table I (paper III-A): lines of the MoE-Hub system's own scheduling/communication code, i.e.
# the program written against rowspMalloc / st.rowsp between the "table-I" markers of
# src/systems/moehub/moehub_program.cpp. Counts non-blank lines that are not only a comment.
# Usage: scripts/count-moehub-lines.sh [--json]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
file="$here/src/systems/moehub/moehub_program.cpp"
count=$(awk '/\/\/ table-I begin/{on=1; next} /\/\/ table-I end/{on=0} on' "$file" |
        grep -v -E '^[[:space:]]*$' | grep -v -E '^[[:space:]]*//' | wc -l)
if [[ "${1:-}" == "--json" ]]; then
  printf '{"system": "moehub", "file": "src/systems/moehub/moehub_program.cpp", "lines": %d}\n' "$count"
else
  echo "moehub scheduling/communication code: $count lines (src/systems/moehub/moehub_program.cpp, table-I markers)"
fi
