#!/usr/bin/env bash
# Reproduces docs/screenshot-gui.png: the viewer on GPT-3 1.3B on 8 H100, the timeline opened on
# 15 ms of the backward pass around the first gradient all-reduce (communication overlapping
# compute), the pointer resting on that all-reduce to show its tooltip. The window is found from the
# run's own trace (`clustersim run --trace`), so it follows changes to the simulator.
#
# Runs headless: a virtual X server (Xvfb), OpenGL through Mesa's software renderer (llvmpipe).
# Installs what it needs with apt-get when missing (needs root). Run from anywhere:
#   gui/screenshot.sh [OUTPUT.png]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/screenshot-gui.png}"
display="${SCREENSHOT_DISPLAY:-:99}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/tmp/target-gui}"

need=()
command -v Xvfb >/dev/null || need+=(xvfb)
command -v import >/dev/null || need+=(imagemagick)
command -v xdotool >/dev/null || need+=(xdotool)
command -v python3 >/dev/null || need+=(python3)
ldconfig -p | grep -q 'libGL.so.1' || need+=(libgl1)
ldconfig -p | grep -q 'libEGL.so.1' || need+=(libegl1)
[ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || ls /usr/lib/*/dri/*swrast* >/dev/null 2>&1 || need+=(libgl1-mesa-dri)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

(cd "$root" && cargo build -p clustersim-gui -p clustersim)
bin="$CARGO_TARGET_DIR/debug/clustersim-gui"
scenario=scenarios/training/gpt3-1.3b-8xh100.toml

# 7 ms before to 8 ms after the start of the first communication operation.
trace="$(mktemp --suffix .json)"
(cd "$root" && "$CARGO_TARGET_DIR/debug/clustersim" run "$scenario" --trace "$trace" >/dev/null)
view="$(python3 - "$trace" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
comm = [e for e in events if e.get("ph") == "X" and e.get("cat") == "communication"]
t = min(e["ts"] for e in comm) / 1000.0  # trace times are microseconds
print(f"{t - 7:.3f}ms..{t + 8:.3f}ms")
PY
)"
rm -f "$trace"
echo "timeline window: $view"

pids=()
# Stop what this script started, newest first (the viewer before its X server).
cleanup() { for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT

# The screen is the window's size: with no window manager the window sits at 0,0 and fills it.
Xvfb "$display" -screen 0 1400x900x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
export DISPLAY="$display"
for _ in $(seq 50); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.1; done

cd "$root"
LIBGL_ALWAYS_SOFTWARE=1 "$bin" "$scenario" --view "$view" &
pids+=($!)
for _ in $(seq 100); do xdotool search --name '^clustersim$' >/dev/null 2>&1 && break; sleep 0.2; done
# The run takes milliseconds; give the first frames time to draw.
sleep 3

# Rest the pointer on that all-reduce: 7 ms into the 15 ms window, on the data-parallel comm row
# (the plot starts 178 px from the left and is 1214 px wide at this window size). Move in two steps
# so egui sees a hover, then wait out the tooltip delay.
xdotool mousemove 760 428
sleep 0.3
xdotool mousemove 772 430
sleep 1.5

mkdir -p "$(dirname "$out")"
import -window root "$out"
echo "wrote $out"
