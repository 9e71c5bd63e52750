#!/usr/bin/env bash
# A one-node Slurm cluster on this machine (Debian's slurm-wlm with munge),
# for the tests that run tierzero under the scheduler users run:
#   eval "$(scripts/slurm_local.sh start DIR)"   # starts munged, slurmctld, slurmd; prints `export SLURM_CONF=...`
#   sbatch / srun / squeue / scancel ...           # as on a cluster; the node has 2 CPUs (srun -O to overcommit)
#   scripts/slurm_local.sh stop DIR                # stops all three, leaves DIR
# Everything (keys, sockets, state, logs) lives under DIR; nothing under
# /etc is changed. Run as root (slurmd must be able to start tasks as any
# user). Exit 1 with the daemon's log when one does not come up.
set -u
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)

running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

stop() {
  if running slurmctld && running slurmd; then  # end the jobs first, so that their step daemons clean up
    export SLURM_CONF=$dir/slurm.conf
    mapfile -t jobs < <(squeue -h -o %i 2>/dev/null)
    [ ${#jobs[@]} -gt 0 ] && scancel --quiet "${jobs[@]}"
    for _ in $(seq 150); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.1; done
  fi
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] && kill "$(cat "$dir/$d.pid")" 2>/dev/null
  done
  for _ in $(seq 50); do
    alive=0
    for d in slurmd slurmctld munged; do running $d && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] && kill -9 "$(cat "$dir/$d.pid")" 2>/dev/null
    rm -f "$dir/$d.pid"
  done
  # Step daemons of this cluster still alive (they write to its slurmd.log).
  for p in $(pgrep -x slurmstepd); do
    for f in /proc/"$p"/fd/*; do
      case $(readlink "$f") in "$dir"/*) kill -9 "$p" 2>/dev/null; break ;; esac
    done
  done
  return 0
}

# Waits until `$@` succeeds (up to 20 s); prints the log and fails otherwise.
await() {
  local log=$1
  shift
  for _ in $(seq 200); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "slurm_local: $log did not come up:" >&2
  tail -n 20 "$dir/$log" >&2
  stop
  exit 1
}

case $cmd in
  stop) stop; exit 0 ;;
  start) ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
for p in munged slurmctld slurmd srun; do
  command -v "$p" >/dev/null || { echo "slurm_local: $p is not installed (apt-get install munge slurmctld slurmd slurm-client)" >&2; exit 1; }
done
stop  # a cluster left running in DIR
mkdir -p "$dir/state" "$dir/spool"
[ -f "$dir/munge.key" ] || { head -c 1024 /dev/urandom > "$dir/munge.key"; chmod 400 "$dir/munge.key"; }
munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>>"$dir/munged.log"
await munged.log test -S "$dir/munge.sock"
host=$(hostname -s)
# Ports from the cluster's folder name, so two clusters on one machine do not meet.
port=$((20000 + $(cksum <<< "$dir" | cut -d' ' -f1) % 20000))
cat > "$dir/slurm.conf" <<CONF
ClusterName=tierzero-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobRequeue=1
ReturnToService=2
KillWait=10
MinJobAge=300
InactiveLimit=0
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" 2>>"$dir/slurmctld.log"
await slurmctld.log scontrol ping
slurmd -f "$SLURM_CONF" 2>>"$dir/slurmd.log"
await slurmd.log bash -c "sinfo -h -N -o %t | grep -qx idle"
echo "export SLURM_CONF=$SLURM_CONF"
