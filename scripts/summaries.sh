#!/usr/bin/env bash
# Prints the text summary of every scenario under scenarios/ with the run's wall time blanked, so
# that two revisions that should behave alike print the same bytes: `diff <(A) <(B)`.
#
#   scripts/summaries.sh [CLUSTERSIM]     (CLUSTERSIM defaults to target/release/clustersim)
set -euo pipefail
bin=${1:-target/release/clustersim}
cd "$(dirname "$0")/.."
find scenarios -name '*.toml' | sort | while read -r f; do
  echo "== $f"
  "$bin" run "$f" 2>&1 | sed -E '/^  simulated /s/ in [0-9.]+ ?(ms|s|us|µs|ns)$/ in T/' || true
done
