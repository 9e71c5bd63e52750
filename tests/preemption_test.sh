#!/usr/bin/env bash
# Every way a person or a scheduler stops a job ends in one sound
# checkpoint that resumes bit for bit: SIGTERM to `tierzero launch --
# mpirun`, from `timeout`, to the job's process group, SIGUSR1 to mpirun,
# Ctrl-C once and twice, a second notice during a save, Ctrl-C to a single
# process, and SIGTERM to a bare mpirun, once, twice and from `timeout`
# (once: Open MPI's kill sequence; twice: mpirun exits and the ranks find
# it gone), while a job stopped and continued trains on. (A SIGTERM to
# the ranks themselves, what scancel sends: ckpt_faults_test.sh.) Each case waits
# for 5 steps, signals, checks the exit code, what was said, `ckpt verify`
# and the losses so far, then resumes from `latest` to the end and compares
# every loss with an uninterrupted run.
# Usage: preemption_test.sh TIERZERO MPIRUN
source "$(dirname "${BASH_SOURCE[0]}")/ckpt_lib.sh"
# Per rank count: the strategy and the layout. A signalled run waits before
# step $hold (after the 5 rows a case waits for) until its notice arrives
# (TIERZERO_FAULT_HOLD), so it cannot end first however long the notice
# takes to pass through a loaded machine.
hold=6
common=(--micro-batch 2 --steps 20)
layout1=(--strategy ddp)
layout4=(--strategy zero3 --topology node=2,world=2)
layout8=(--strategy zero3 --topology node=4,world=2)
for np in 1 4 8; do
  layout=layout$np[@]
  run $np "${common[@]}" "${!layout}" --metrics "$tmp/ref$np.jsonl" 2>"$tmp/log" || { cat "$tmp/log"; bad "the uninterrupted $np-rank run"; }
done

rows() { { wc -l < "$1"; } 2>/dev/null || echo 0; }
# Waits until the metrics file $1 has 5 rows (or 30 s).
await_steps() { for _ in $(seq 300); do [ "$(rows "$1")" -ge 5 ] && return 0; sleep 0.1; done; return 1; }

# stopped NAME NP RC PATTERN: the case's job (its metrics $tmp/NAME.jsonl,
# checkpoints $tmp/NAME, output $tmp/NAME.log) exited RC, said PATTERN, and
# left a checkpoint that verifies, after losses equal to the reference's;
# the run resumed from it on NP ranks (1: the single-process layout) ends
# with the reference's losses, bit for bit.
stopped() {
  local name=$1 np=$2 want=$3 pattern=$4 got=$5 layout=layout$2[@]
  local d=$tmp/$name ref=$tmp/ref$np.jsonl at steps
  at=$(sed -n 's/^step-0*\([0-9][0-9]*\)$/\1/p' "$d/latest" 2>/dev/null)
  steps=$(wc -l < "$ref")
  if [ "$got" -ne "$want" ] || ! grep -q -- "$pattern" "$d.log" || [ -z "$at" ] || [ "$at" -ge "$steps" ] ||
     ! "$tz" ckpt verify "$d" >/dev/null 2>&1 || ! compare "$ref" "$tmp/$name.jsonl" 0 0 >/dev/null; then
    bad "$name: exit $got (expected $want), latest '${at:-none}', '$pattern' $(grep -c -- "$pattern" "$d.log") times"
    tail -n 8 "$d.log"
    return
  fi
  if run "$np" "${common[@]}" "${!layout}" --save-dir "$d" --resume latest --metrics "$tmp/$name.resumed.jsonl" 2>"$tmp/log" &&
     compare "$ref" "$tmp/$name.resumed.jsonl" 0 "$at" >/dev/null; then
    say "ok: $name: exit $got after step $at, checkpoint verified, resumed bit for bit"
  else
    bad "$name: the run resumed after step $at"; tail -n 5 "$tmp/log"
  fi
}
# start NAME NP [COMMAND PREFIX...]: starts the case's training in the background (pid in $job).
start() {
  local name=$1 np=$2 layout=layout$2[@]
  shift 2
  TIERZERO_FAULT_HOLD=$hold "$@" "$mpirun" --oversubscribe -np "$np" "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 100000 \
    "${common[@]}" "${!layout}" --save-dir "$tmp/$name" --save-every "${SAVE_EVERY:-100000}" --metrics "$tmp/$name.jsonl" > "$tmp/$name.log" 2>&1 &
  job=$!
}
finish() { wait "$job"; }
# Waits (up to 20 s) until no rank of case $1 runs: after mpirun has gone, its ranks finish on their own.
ranks_gone() { for _ in $(seq 200); do pgrep -f "$tz train .*$tmp/$1 " >/dev/null || return 0; sleep 0.1; done; return 1; }
saved='preempted (a rank received SIGTERM, SIGUSR1 or SIGINT, or found mpirun gone) after step'

# 1. SIGTERM to the launcher: SIGUSR1 to mpirun, which forwards it; exit 75.
start launch_term 8 "$tz" launch --max-restarts 0 --
await_steps "$tmp/launch_term.jsonl" && kill -TERM "$job"
finish; stopped launch_term 8 75 "tierzero launch: received SIGTERM: the run saves a checkpoint and stops" $?

# 2. timeout's SIGTERM (to the launcher and timeout's process group; its exit code: 124). 8 s: the run holds before
#    step $hold however long it waits, and on a loaded machine (CI, beside other suites) 1.5 s once ended the
#    launcher before it had started the command.
start timeout 4 timeout -s TERM 8 "$tz" launch --max-restarts 0 --
finish; stopped timeout 4 124 "tierzero launch: received SIGTERM" $?

# 3. SIGTERM to the job's whole process group (Kubernetes, PBS): the
#    launcher alone hears it (the command has a group of its own).
start group_term 4 setsid "$tz" launch --max-restarts 0 --
await_steps "$tmp/group_term.jsonl" && kill -TERM -- -"$job"
finish; stopped group_term 4 75 "tierzero launch: received SIGTERM" $?

# 4. SIGUSR1 to mpirun itself (Slurm's --signal with mpirun as the batch
#    command): forwarded to every rank; mpirun exits with the ranks' 75.
start mpirun_usr1 4
await_steps "$tmp/mpirun_usr1.jsonl" && kill -USR1 "$job"
finish; stopped mpirun_usr1 4 75 "$saved" $?

# 5. Ctrl-C at the terminal (SIGINT to the foreground group): exit 75.
start ctrl_c 8 setsid "$tz" launch --max-restarts 0 --
await_steps "$tmp/ctrl_c.jsonl" && kill -INT -- -"$job"
finish; stopped ctrl_c 8 75 "Ctrl-C again stops it at once" $?

# 6. Ctrl-C twice while a checkpoint is written every step: stopped at once
#    (exit 130, said), `latest` a complete checkpoint.
SAVE_EVERY=1 start ctrl_c_twice 4 setsid "$tz" launch --max-restarts 0 --
await_steps "$tmp/ctrl_c_twice.jsonl" && kill -INT -- -"$job" && sleep 0.05 && kill -INT -- -"$job"
finish; stopped ctrl_c_twice 4 130 "interrupted again: stopping .* at once (SIGINT), without saving" $?

# 7. Two SIGTERMs, the second during a save (one every step): the save
#    completes, one exit 75.
SAVE_EVERY=1 start term_twice 8 "$tz" launch --max-restarts 0 --
await_steps "$tmp/term_twice.jsonl" && kill -TERM "$job" && sleep 0.03 && kill -TERM "$job"
finish; stopped term_twice 8 75 "$saved" $?

# 8. Ctrl-C to a single process (no mpirun): said, saved, exit 75.
TIERZERO_FAULT_HOLD=$hold "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 100000 "${common[@]}" "${layout1[@]}" --save-dir "$tmp/single" \
  --save-every 100000 --metrics "$tmp/single.jsonl" > "$tmp/single.log" 2>&1 &
job=$!
await_steps "$tmp/single.jsonl" && kill -INT "$job"
finish; stopped single 1 75 "tierzero: interrupted: finishing the step, then saving" $?
# 9. SIGTERM to a bare mpirun (systemd, PBS, a container whose command is
#    mpirun): its kill sequence's SIGTERM, a second later, is the notice;
#    mpirun exits 1 whatever the ranks do.
start mpirun_term 4
await_steps "$tmp/mpirun_term.jsonl" && kill -TERM "$job"
finish; rc=$?; ranks_gone mpirun_term; stopped mpirun_term 4 1 "$saved" $rc

# 10. Two SIGTERMs to a bare mpirun (GNU timeout without --foreground sends
#     one to mpirun and one to its group): mpirun exits at once, its output
#     with it; the ranks find it gone, save and end.
start mpirun_term_twice 8
await_steps "$tmp/mpirun_term_twice.jsonl" && kill -TERM "$job" && sleep 0.1 && kill -TERM "$job"
finish; rc=$?; ranks_gone mpirun_term_twice; stopped mpirun_term_twice 8 1 "reaches the ranks as Open MPI's kill sequence" $rc

# 11. `timeout -s TERM` around a bare mpirun, as people write it: one
#     SIGTERM or two reach mpirun (as they coalesce), both end in a save;
#     timeout exits 124. (5 s: past the start-up, the run held at step 6.)
start mpirun_timeout 4 timeout -s TERM 5
finish; rc=$?; ranks_gone mpirun_timeout; stopped mpirun_timeout 4 124 "reaches the ranks as Open MPI's kill sequence" $rc

# 12. A job stopped and continued (kill -STOP/-CONT to mpirun and its ranks,
#     as Slurm's suspend and resume do): mpirun passes its SIGCONT
#     on to the ranks, which is no notice: the run trains to its end (exit 0).
"$mpirun" --oversubscribe -np 4 "$tz" train --model gpt-tiny --seq-len 32 --param-dtype fp32 --log-every 100000 --micro-batch 2 --steps 300 \
  "${layout4[@]}" --save-dir "$tmp/stopped_job" --metrics "$tmp/stopped_job.jsonl" > "$tmp/stopped_job.log" 2>&1 &
job=$!
if await_steps "$tmp/stopped_job.jsonl"; then
  ranks=$(pgrep -P "$job")
  kill -STOP "$job" $ranks && sleep 0.3 && kill -CONT "$job" $ranks
fi
finish; rc=$?
if [ $rc -eq 0 ] && [ "$(rows "$tmp/stopped_job.jsonl")" -eq 300 ] && ! grep -q "preempted" "$tmp/stopped_job.log"; then
  say "ok: stopped_job: stopped and continued, no notice: all 300 steps trained"
else
  bad "stopped_job: exit $rc, $(rows "$tmp/stopped_job.jsonl") rows"; tail -n 5 "$tmp/stopped_job.log"
fi
exit $fail
