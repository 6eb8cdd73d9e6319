#!/usr/bin/env bash
# Reproduces the viewer's screenshots in docs/ under a virtual X server:
#   timeline  docs/screenshot-gui.png: GPT-3 1.3B on 8 H100, the timeline opened on 15 ms of the
#             backward pass around the first gradient all-reduce (communication overlapping
#             compute), the pointer resting on that all-reduce to show its tooltip. The window is
#             found from the run's own trace (`clustersim run --trace`), so it follows the simulator.
#   metrics   docs/screenshot-metrics.png: the same run's Metrics tab (step breakdown, memory).
#   compare   docs/screenshot-compare.png: GPT-3 175B on 1,024 A100 (TP8 PP16 DP8), re-run with
#             PP 8 / DP 16 (`--compare`), on the What-if & compare tab.
#   sweep     docs/screenshot-sweep.png: a `clustersim sweep` of GPT-3 1.3B over micro-batch and
#             recompute (with failing points) in the Sweep tab.
#   topology  docs/screenshot-topology.png: Megatron 3.6B on 64 A100 (8 servers on a leaf/spine
#             fat-tree) in the Topology tab, the pointer on GPU 10 to show its tooltip.
#   links     docs/screenshot-links.png: ZCCL's all-reduce of 1 GiB on 16 x 4 A100 (slow network), the
#             Topology tab with links coloured by their utilisation over the collective.
#   serving   docs/screenshot-serving.png: Llama 3.1 8B on 2 H100 through a one-minute traffic
#             peak, its cards and the Metrics tab: throughput over time (from the trace) and latency.
#   diffusion docs/screenshot-diffusion.png: HunyuanVideo 720p on 8 H100 (Ulysses), its cards
#             (latency, step, videos per hour, where a video's time goes, memory) and Metrics tab.
#
# Runs headless: a virtual X server (Xvfb), OpenGL through Mesa's software renderer (llvmpipe).
# Installs what it needs with apt-get when missing (needs root). Run from anywhere:
#   gui/screenshot.sh [all|timeline|metrics|compare|sweep|topology|links|serving|diffusion] [OUTPUT_DIR]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-all}"
outdir="${2:-$root/docs}"
case "$mode" in all | timeline | metrics | compare | sweep | topology | links | serving | diffusion) ;; *)
    echo "usage: $0 [all|timeline|metrics|compare|sweep|topology|links|serving|diffusion] [OUTPUT_DIR]" >&2
    exit 2
    ;;
esac
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
cli="$CARGO_TARGET_DIR/debug/clustersim"
small=scenarios/training/gpt3-1.3b-8xh100.toml

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
mkdir -p "$outdir"

# shoot NAME SECONDS ARGS...: starts the viewer with ARGS, waits SECONDS for the runs, runs the
# function `pose` if defined (pointer moves), captures the screen to NAME, closes the viewer.
shoot() {
    local name="$1" wait="$2"
    shift 2
    LIBGL_ALWAYS_SOFTWARE=1 "$bin" "$@" &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do xdotool search --name '^clustersim$' >/dev/null 2>&1 && break; sleep 0.2; done
    sleep "$wait"
    if declare -F pose >/dev/null; then pose; unset -f pose; fi
    import -window root "$outdir/$name"
    echo "wrote $outdir/$name"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

if [ "$mode" = all ] || [ "$mode" = timeline ]; then
    # 7 ms before to 8 ms after the start of the first communication operation.
    trace="$(mktemp --suffix .json)"
    "$cli" run "$small" --trace "$trace" >/dev/null
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
    # Rest the pointer on that all-reduce: 7 ms into the 15 ms window, on the data-parallel comm
    # row (the plot starts 178 px from the left and is 1214 px wide at this window size). Move in
    # two steps so egui sees a hover, then wait out the tooltip delay.
    pose() {
        xdotool mousemove 760 452
        sleep 0.3
        xdotool mousemove 772 454
        sleep 1.5
    }
    shoot screenshot-gui.png 3 "$small" --view "$view"
fi

if [ "$mode" = all ] || [ "$mode" = metrics ]; then
    shoot screenshot-metrics.png 3 "$small" --tab metrics
fi

if [ "$mode" = all ] || [ "$mode" = compare ]; then
    # Two runs of 751k operations each (about 1.5 s each in a debug build) and their tracks.
    shoot screenshot-compare.png "${COMPARE_WAIT:-15}" scenarios/training/gpt3-175b-1024xa100-ptdp.toml \
        --compare parallel.pp=8 --compare parallel.dp=16 --tab whatif
fi

if [ "$mode" = all ] || [ "$mode" = sweep ]; then
    grid="$(mktemp -d)/gpt3-1.3b-grid.csv"
    "$cli" sweep "$small" --vary parallel.micro_batch=1,2,3,4,8,16 \
        --vary parallel.recompute=none,selective,full --out "$grid" 2>/dev/null
    shoot screenshot-sweep.png 3 "$grid"
    rm -rf "$(dirname "$grid")"
fi

if [ "$mode" = all ] || [ "$mode" = topology ]; then
    # Rest the pointer on GPU 10 (node 1; found by eye at this window size, see the screenshot).
    x="${TOPOLOGY_X:-304}" y="${TOPOLOGY_Y:-731}"
    pose() {
        xdotool mousemove "$((x - 2))" "$((y - 1))"
        sleep 0.3
        xdotool mousemove "$x" "$y"
        sleep 1.5
    }
    shoot screenshot-topology.png "${TOPOLOGY_WAIT:-6}" scenarios/training/megatron-3.6b-64xa100-tp2.toml \
        --tab topology
fi

if [ "$mode" = all ] || [ "$mode" = serving ]; then
    # 4,000 requests (about 2 s in a debug build).
    shoot screenshot-serving.png "${SERVING_WAIT:-8}" scenarios/serving/llama-3.1-8b-2xh100-peak-hour.toml \
        --tab metrics
fi

if [ "$mode" = all ] || [ "$mode" = diffusion ]; then
    shoot screenshot-diffusion.png "${DIFFUSION_WAIT:-5}" scenarios/diffusion/hunyuanvideo-720p-8xh100-ulysses.toml \
        --tab metrics
fi

if [ "$mode" = all ] || [ "$mode" = links ]; then
    shoot screenshot-links.png "${LINKS_WAIT:-4}" scenarios/papers/zccl-all-reduce-16x4xa100-slow.toml \
        --tab topology
fi
