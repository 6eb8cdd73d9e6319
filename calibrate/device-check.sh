#!/usr/bin/env bash
# Device check for clustersim-calibrate: runs an already-built binary on a GPU machine and
# leaves the profile, the raw numbers, the summary and a log in "$OUT".
#
#   calibrate/device-check.sh [BINARY] [--quick]
#
# Run from the repository root. BINARY defaults to target/release/clustersim-calibrate (build it
# beforehand, on an x86-64 machine with glibc no newer than the GPU machine's:
# `cargo build --release -p clustersim-calibrate`). This script builds nothing.
#
# What it does, all within 8 minutes (`timeout`):
#   1. puts the CUDA libraries of a pip-installed PyTorch (site-packages/nvidia/*/lib) on
#      LD_LIBRARY_PATH, with a libnccl.so link to libnccl.so.2 where only the latter exists
#      (cudarc does not look for libnccl.so.2);
#   2. runs `devices` (and, when it fails, lists what the loader can find);
#   3. runs `measure --out "$OUT"` (the full plan; the quick one with --quick), which also runs
#      PyTorch's attention and elementwise kernels (calibrate/python/torch_bench.py, embedded in
#      the binary) where python3 has PyTorch, and adds them to the profile;
#   4. runs `validate --profile "$OUT/profile.toml" --out "$OUT"`: one transformer layer forward
#      and backward in PyTorch at eight shapes against the simulator's prediction from that
#      profile ("$OUT/torch-layers.json", "$OUT/validation.json");
#   5. writes everything it printed to "$OUT/log.txt".
# OUT defaults to ./calibration-out when unset. Exit status: that of `measure` (124 when the
# time limit stopped it), or 2 when the binary is missing.

set -u

LIMIT_S=480 # the whole script
START_S=$SECONDS

binary=target/release/clustersim-calibrate
plan=
for arg in "$@"; do
    case "$arg" in
    --quick) plan=--quick ;;
    -h | --help)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) binary=$arg ;;
    esac
done

OUT=${OUT:-$PWD/calibration-out}
mkdir -p "$OUT" || exit 2
LOG=$OUT/log.txt

say() { printf '== %s\n' "$*"; }
left() { echo $((LIMIT_S - (SECONDS - START_S))); }

# The body is not indented so that the here-document below stays flush left.
check() {
say "clustersim-calibrate device check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "host: $(uname -srm)"
if [ ! -x "$binary" ]; then
    say "no executable at $binary: build it first (cargo build --release -p clustersim-calibrate) and carry it"
    return 2
fi
say "binary: $binary ($(wc -c <"$binary") bytes)"

# 1. Libraries of a pip-installed PyTorch.
libdirs=""
if command -v python3 >/dev/null 2>&1; then
    libdirs=$(timeout 60 python3 - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
dirs = []
for base in list(nvidia.__path__):
    dirs += [d for d in sorted(glob.glob(os.path.join(base, "*", "lib"))) if os.path.isdir(d)]
print(":".join(dirs))
EOF
    )
fi
if [ -n "$libdirs" ]; then
    say "CUDA libraries of the pip packages: $libdirs"
    shim=$(mktemp -d)
    IFS=: read -r -a dirs <<<"$libdirs"
    for d in "${dirs[@]}"; do
        if [ -e "$d/libnccl.so.2" ] && [ ! -e "$d/libnccl.so" ]; then
            ln -sf "$d/libnccl.so.2" "$shim/libnccl.so"
            say "linked $shim/libnccl.so -> $d/libnccl.so.2"
        fi
    done
    export LD_LIBRARY_PATH="$shim:$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
    say "no pip-installed nvidia packages found; using the system's library path"
fi
say "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv || true
fi

# 2. What the driver sees.
say "devices"
timeout 60 "$binary" devices
drc=$?
say "devices exited with $drc"
if [ "$drc" -ne 0 ]; then
    say "what the loader can find:"
    ldconfig -p 2>/dev/null | grep -E 'libcuda|cublas|nccl|nvrtc' || true
    ls /usr/local/nvidia/lib64 2>/dev/null | head -20 || true
fi

# 3. The measurements; the tool stops starting new points after 150 s (quick) or 330 s (full).
budget=$(($(left) - 90)) # leaves time for the validation
say "measure --out $OUT ${plan:-(full plan)} (at most ${budget} s)"
timeout --kill-after=10 "$budget" "$binary" measure --out "$OUT" ${plan:+"$plan"}
rc=$?
say "measure exited with $rc after $((SECONDS - START_S)) s in all"

# 4. The layer validation against the profile just measured.
if [ "$rc" -eq 0 ] && [ -f "$OUT/profile.toml" ]; then
    budget=$(($(left) - 10))
    say "validate --profile $OUT/profile.toml --out $OUT (at most ${budget} s)"
    timeout --kill-after=10 "$budget" "$binary" validate --profile "$OUT/profile.toml" --out "$OUT"
    rc=$?
    say "validate exited with $rc after $((SECONDS - START_S)) s in all"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 20 nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv || true
fi
ls -l "$OUT"
return "$rc"
}

check 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
