#!/usr/bin/env bash
# Writes what the simulator says about everything the repository ships into OUT: the JSON report
# of every scenario under scenarios/ (without sim.wall_s, the one figure that varies between runs)
# and every validation document under docs/. Two snapshots of two revisions that should behave
# alike must be identical: `diff -r OLD NEW`.
#
#   scripts/snapshot.sh OUT [CLUSTERSIM]     (CLUSTERSIM defaults to target/release/clustersim)
set -euo pipefail
out=${1:?usage: scripts/snapshot.sh OUT [CLUSTERSIM]}
bin=${2:-target/release/clustersim}
cd "$(dirname "$0")/.."
mkdir -p "$out/scenarios" "$out/docs"
strip='import json,sys
v=json.load(sys.stdin)
def drop(o):
    if isinstance(o,dict):
        o.pop("wall_s",None)
        for x in o.values(): drop(x)
    elif isinstance(o,list):
        for x in o: drop(x)
drop(v)
print(json.dumps(v,indent=1,sort_keys=True))'
find scenarios -name '*.toml' | sort | while read -r f; do
  name=$(echo "$f" | tr / _)
  if "$bin" run "$f" --json > "$out/scenarios/$name.raw" 2> "$out/scenarios/$name.err"; then
    python3 -c "$strip" < "$out/scenarios/$name.raw" > "$out/scenarios/$name.json"
  else
    echo "exit $?" >> "$out/scenarios/$name.err"
  fi
  rm -f "$out/scenarios/$name.raw"
done
for doc in docs/VALIDATION*.md; do
  src=$(head -3 "$doc" | grep -o 'validate [^ `]*' | head -1 | cut -d' ' -f2)
  "$bin" validate "$src" --write "$out/docs/$(basename "$doc")" > /dev/null
  sed -i "1s|$out/docs/|docs/|" "$out/docs/$(basename "$doc")"
done
echo "snapshot of $(find "$out" -type f | wc -l) files in $out"
