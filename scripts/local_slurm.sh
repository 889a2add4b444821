#!/usr/bin/env bash
# A Slurm cluster on this one host, for tests and for trying meshlearn's Slurm mode: munged,
# slurmctld and one slurmd per pretend host, all as root, without systemd, every file (state,
# logs, sockets, keys) in one folder.
#
#   scripts/local_slurm.sh start DIR [HOSTS]   starts a cluster of HOSTS pretend hosts (default 3)
#                                              named node1..nodeN, prints the env line to use it
#   scripts/local_slurm.sh stop DIR            stops every daemon it started (by PID) and keeps DIR
#
# After `start`, `. DIR/env` exports what Slurm's clients and the jobs need: SLURM_CONF, and
# LD_PRELOAD=libnss_wrapper.so with NSS_WRAPPER_HOSTS=DIR/hosts, through which every pretend host
# resolves to 127.0.0.1, so that nodes find each other by the host names Slurm gives them. Ports are free ones picked at
# start; several clusters can run side by side.
# Needs: slurmctld slurmd slurm-client munge libnss-wrapper (scripts/setup.sh installs them).
set -euo pipefail

usage() { echo "usage: $0 start DIR [HOSTS] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
action="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
hosts="${3:-3}"
# slurmd's step sockets live at DIR/spool/nodeN/nodeN_<job>.<step>: Unix socket paths end at 108
# bytes.
if [ "${#dir}" -gt 60 ]; then
  echo "local_slurm: '$dir' is too long (${#dir} characters; at most 60, for Unix socket paths)" >&2
  exit 2
fi

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop() {
  local pidfile pid
  for pidfile in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

# Waits until the command succeeds, up to $1 tenths of a second.
wait_for() {
  local tries="$1"; shift
  for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

case "$action" in
  stop) stop; exit 0 ;;
  start) ;;
  *) usage ;;
esac

for tool in munged mungekey slurmctld slurmd srun scontrol; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "local_slurm: $tool not found (scripts/setup.sh installs slurmctld slurmd slurm-client munge)" >&2
    exit 1
  }
done
nss_wrapper="$(ls /usr/lib/*/libnss_wrapper.so 2>/dev/null | head -1 || true)"
[ -n "$nss_wrapper" ] || { echo "local_slurm: libnss_wrapper.so not found (apt-get install libnss-wrapper)" >&2; exit 1; }
stop

# munge: the socket folder must be 0755 and the key in a separate 0700 folder.
mkdir -p "$dir/munge" "$dir/munge-key" "$dir/spool"
chmod 0755 "$dir" "$dir/munge"
chmod 0700 "$dir/munge-key"
[ -f "$dir/munge-key/munge.key" ] || mungekey --create --keyfile="$dir/munge-key/munge.key" >/dev/null
chmod 0600 "$dir/munge-key/munge.key"
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge-key/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge-key/seed"
wait_for 50 test -S "$dir/munge/munge.socket" || { echo "local_slurm: munged did not start; see $dir/munged.log" >&2; exit 1; }

host="$(hostname -s)"
ctld_port="$(free_port)"
{
  echo "# A one-host Slurm cluster written by scripts/local_slurm.sh"
  echo "ClusterName=meshlearn"
  echo "SlurmctldHost=$host(127.0.0.1)"
  echo "SlurmctldPort=$ctld_port"
  echo "SlurmUser=root"
  echo "SlurmdUser=root"
  echo "AuthType=auth/munge"
  echo "CredType=cred/munge"
  echo "AuthInfo=socket=$dir/munge/munge.socket"
  echo "StateSaveLocation=$dir/spool/ctld"
  echo "SlurmdSpoolDir=$dir/spool/%n"
  echo "SlurmctldPidFile=$dir/slurmctld.pid"
  echo "SlurmdPidFile=$dir/slurmd-%n.pid"
  echo "SlurmctldLogFile=$dir/slurmctld.log"
  echo "SlurmdLogFile=$dir/slurmd-%n.log"
  echo "ProctrackType=proctrack/linuxproc"
  echo "TaskPlugin=task/none"
  echo "SchedulerType=sched/builtin"
  echo "SelectType=select/cons_tres"
  echo "SelectTypeParameters=CR_Core"
  echo "SlurmdParameters=config_overrides"
  echo "MpiDefault=none"
  echo "ReturnToService=2"
  echo "JobCompType=jobcomp/none"
  echo "AccountingStorageType=accounting_storage/none"
  echo "JobAcctGatherType=jobacct_gather/none"
  echo "MailProg=/bin/true"
  for i in $(seq "$hosts"); do
    echo "NodeName=node$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=4 State=UNKNOWN"
  done
  echo "PartitionName=mesh Nodes=node[1-$hosts] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
} >"$dir/slurm.conf"
{
  echo "127.0.0.1 $host localhost"
  for i in $(seq "$hosts"); do echo "127.0.0.1 node$i"; done
} >"$dir/hosts"

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$dir/slurm.conf"
wait_for 100 scontrol ping || { echo "local_slurm: slurmctld did not answer; see $dir/slurmctld.log" >&2; stop; exit 1; }
for i in $(seq "$hosts"); do slurmd -f "$dir/slurm.conf" -N "node$i"; done
up() { [ "$(sinfo -h -t idle -o '%D' | awk '{s += $1} END {print s + 0}')" -ge "$hosts" ]; }
wait_for 200 up || { echo "local_slurm: the slurmd did not register; see $dir/slurmd-*.log" >&2; stop; exit 1; }
printf 'export SLURM_CONF=%s LD_PRELOAD=%s NSS_WRAPPER_HOSTS=%s\n' "$dir/slurm.conf" "$nss_wrapper" \
  "$dir/hosts" >"$dir/env"
echo "local_slurm: $hosts hosts up: SLURM_CONF=$dir/slurm.conf LD_PRELOAD=$nss_wrapper NSS_WRAPPER_HOSTS=$dir/hosts (. $dir/env exports them)"
