#!/usr/bin/env bash
# Runs deploy/slurm/sweep.sbatch and merge.sbatch on a real Slurm, on this machine, and checks
# the merged file equals the unsharded sweep byte for byte.
#
# Installs Debian's slurm-wlm and munge when missing (needs root), starts munged, slurmctld and
# slurmd with a one-node configuration in a temporary folder (no systemd, no cgroups), builds
# clustersim in release, submits the sweep as a job array of SHARDS tasks and the merge with
# --dependency=afterok on it, waits for both, compares, and stops the daemons. Too heavy for
# every CI run (a package install and daemons): run it by hand from anywhere:
#
#   deploy/slurm/run-on-slurm.sh [SHARDS]          # default 4
#
# deploy/slurm/run-on-slurm.log is the output of its last recorded run.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
shards="${1:-4}"
cd "$root"

need=()
command -v slurmctld >/dev/null || need+=(slurm-wlm)
command -v munged >/dev/null || need+=(munge)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "== $(slurmctld -V), $(munged -V 2>&1 | head -1)"

cargo build --release --quiet -p clustersim
bin="$root/target/release/clustersim"

work="$(mktemp -d)"
pids=()
cleanup() {
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# munge: a key of our own and a daemon on its own socket.
mkdir -p "$work/munge" && chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
socket="$work/munge/munge.socket"
munged --force --key-file="$work/munge/munge.key" --socket="$socket" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
    --seed-file="$work/munge/munged.seed"
pids+=("$(cat "$work/munge/munged.pid")")

host="$(hostname -s)"
cpus="$(nproc)"
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=clustersim-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 60); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^idle' && break
    sleep 1
done
echo "== sinfo"
sinfo

out="$work/sweep-out"
export CLUSTERSIM="$bin" OUT_DIR="$out"
jid=$(sbatch --parsable --array=0-$((shards - 1)) --cpus-per-task=1 \
    --output="$work/sweep-%A_%a.out" --export=ALL deploy/slurm/sweep.sbatch)
mid=$(sbatch --parsable --dependency=afterok:"$jid" \
    --output="$work/merge-%j.out" --export=ALL deploy/slurm/merge.sbatch)
echo "== submitted: sweep array $jid ($shards tasks), merge $mid after it"
for _ in $(seq 600); do
    [ -z "$(squeue -h -j "$jid,$mid" 2>/dev/null)" ] && break
    sleep 1
done
echo "== the jobs as Slurm ended them (scontrol)"
state() { scontrol -o show job "$1" 2>/dev/null | grep -oE '(^| )(JobId|ArrayTaskId|JobName|JobState|ExitCode|StartTime|EndTime)=[^ ]+' | paste -sd' '; }
for t in $(seq 0 $((shards - 1))); do state "${jid}_$t" || true; done
state "$mid" || true
echo "== parts: $(ls "$out/parts" | paste -sd' ')"
# afterok held the merge until every task had ended: it started no earlier than the last end.
last_end=$(for t in $(seq 0 $((shards - 1))); do
    scontrol -o show job "${jid}_$t" | grep -oE 'EndTime=[^ ]+' | cut -d= -f2
done | sort | tail -1)
merge_start=$(scontrol -o show job "$mid" | grep -oE 'StartTime=[^ ]+' | cut -d= -f2)
if [[ "$merge_start" < "$last_end" ]]; then
    echo "== the merge started at $merge_start, before the last task ended at $last_end" >&2
    exit 1
fi
echo "== the merge started at $merge_start, after the last task ended ($last_end)"

# The unsharded sweep with the same grid: sweep.sbatch's SCENARIO and SWEEP_ARGS.
scenario=$(sed -n 's/^SCENARIO=\${SCENARIO:-\(.*\)}$/\1/p' deploy/slurm/sweep.sbatch)
mapfile -t args < <(sed -n '/^SWEEP_ARGS=(/,/^)/p' deploy/slurm/sweep.sbatch | sed '1d;$d' | xargs -n2)
flat=()
for a in "${args[@]}"; do read -ra pair <<<"$a"; flat+=("${pair[@]}"); done
"$bin" sweep "$scenario" "${flat[@]}" --out "$work/unsharded.csv" 2>/dev/null
if cmp "$out/sweep.csv" "$work/unsharded.csv"; then
    echo "== the merged file of $shards Slurm tasks equals the unsharded sweep byte for byte ($(wc -l <"$work/unsharded.csv") lines, $(wc -c <"$work/unsharded.csv") bytes)"
else
    echo "== DIFFERENT: merged vs unsharded" >&2
    diff "$out/sweep.csv" "$work/unsharded.csv" | head -20 >&2
    exit 1
fi

# A failing task: the merge must never start (afterok), and Slurm must say why.
bad="$work/bad-out"
jid=$(OUT_DIR="$bad" SCENARIO=no-such-scenario.toml sbatch --parsable --array=0-1 \
    --cpus-per-task=1 --output="$work/bad-%A_%a.out" --export=ALL deploy/slurm/sweep.sbatch)
mid=$(OUT_DIR="$bad" sbatch --parsable --dependency=afterok:"$jid" \
    --output="$work/bad-merge-%j.out" --export=ALL deploy/slurm/merge.sbatch)
for _ in $(seq 120); do
    [ -z "$(squeue -h -j "$jid" 2>/dev/null)" ] && break
    sleep 1
done
sleep 2
reason=$(scontrol -o show job "$mid" | grep -oE '(JobState|Reason)=[^ ]+' | paste -sd' ')
scancel "$mid" 2>/dev/null || true
echo "== with a failing task ($(scontrol -o show job "${jid}_0" | grep -oE 'JobState=[^ ]+')), the merge: $reason"
case "$reason" in
*DependencyNeverSatisfied*) ;;
*) echo "== the merge should wait forever on a failed task" >&2; exit 1 ;;
esac
