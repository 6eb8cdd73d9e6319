#!/usr/bin/env bash
# Coverage-guided fuzzing of scenario files with AFL++ (docs/FUZZ.md), for MINUTES (default 20):
# installs cargo-afl, builds AFL++ and the target, seeds it with the shipped scenarios of up to 16
# servers and runs afl-fuzz with a 10 s hang limit. Crashes and hangs land in
# target/afl/out/default/{crashes,hangs}/; replay one with
# `target/release/clustersim-afl < FILE` (it aborts on a panic).
set -euo pipefail
minutes=${1:-20}
cd "$(dirname "$0")"
command -v cargo-afl >/dev/null || cargo install --locked cargo-afl
cargo afl config --build >/dev/null 2>&1 || true
cargo afl build --release
rm -rf target/afl && mkdir -p target/afl/in
for f in $(find ../../scenarios -name '*.toml' | sort); do
  nodes=$(sed -n 's/^nodes *= *\([0-9]*\).*/\1/p' "$f" | head -1)
  if [ -z "$nodes" ] || [ "$nodes" -le 16 ]; then
    cp "$f" "target/afl/in/$(echo "$f" | tr / _ | sed 's/^\.\._\.\._//')"
  fi
done
AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 \
  cargo afl fuzz -i target/afl/in -o target/afl/out -t 10000 -V $((minutes * 60)) \
  target/release/clustersim-afl
