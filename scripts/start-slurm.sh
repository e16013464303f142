#!/usr/bin/env bash
# Start a one-node Slurm cluster on this machine, for the job-array test (tests/ext/slurm.rs)
# and for trying examples/slurm/ by hand. Needs root and Debian's `slurm-wlm` and `munge`
# (apt-get install slurm-wlm munge). Works without systemd: the daemons are started directly.
#
#   scripts/start-slurm.sh [STATE_DIR]     STATE_DIR defaults to /var/spool/zhi-slurm
#   scripts/stop-slurm.sh  [STATE_DIR]     stops what this script started, nothing else
#
# Idempotent: a daemon that already runs is left alone, and /etc/slurm/slurm.conf is written
# only when it is absent or was written by this script (a real cluster's file is never
# touched: that cluster is used if it answers, else the script stops). A changed file reaches
# running daemons through `scontrol reconfigure`; what they read only when they start
# (cred_expire) needs stop-slurm.sh, then this script. The daemons it started are listed, with
# their pids, in STATE_DIR/started, which is what stop-slurm.sh reads. It returns once `sinfo`
# shows the node idle (60 s at most).
set -euo pipefail
STATE=${1:-/var/spool/zhi-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# Written by zhi's scripts/start-slurm.sh: a one-node cluster for tests."

if [ "$(id -u)" != 0 ]; then
  echo "start-slurm.sh: run as root (it starts munged, slurmctld and slurmd)" >&2
  exit 2
fi
for p in munged slurmctld slurmd sinfo; do
  if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
    echo "start-slurm.sh: $p is missing: apt-get install slurm-wlm munge" >&2
    exit 2
  fi
done
export PATH="$PATH:/usr/sbin:/sbin"

# A cluster configured by someone else is left alone: used if it answers, never changed.
foreign() { [ -f "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; }
if foreign; then
  if timeout 20 sinfo -h >/dev/null 2>&1; then
    echo "slurm: $CONF was not written by this script; using the cluster it configures"
    exit 0
  fi
  echo "start-slurm.sh: $CONF exists and was not written by this script; not touching it" >&2
  exit 2
fi

mkdir -p "$STATE/ctld" "$STATE/d" "$STATE/log" /etc/slurm
chmod 755 "$STATE"
touch "$STATE/started"

# Whether the process in pid file $1 runs and is program $2.
alive() {
  [ -f "$1" ] || return 1
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
started() { echo "$1 $(cat "$2")" >>"$STATE/started"; }

# munge: the credentials Slurm's daemons and commands exchange.
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  if id munge >/dev/null 2>&1; then
    chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 400 /etc/munge/munge.key
    chmod 755 /run/munge
    runuser -u munge -- munged
  else
    chmod 400 /etc/munge/munge.key
    munged --force
  fi
  for _ in $(seq 1 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  started munged /run/munge/munged.pid
fi

if ! foreign; then
  HOST=$(hostname)
  CPUS=$(nproc)
  # What slurmd sees of the machine, so that the node is not drained for a mismatch.
  MEM=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  cat >"$CONF.new" <<EOF
$MARK
ClusterName=zhi-test
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A requeued job waits the credential lifetime before it starts again (default 120 s).
AuthInfo=cred_expire=5
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
# No cgroups (a container has none to give): processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
# Look for work to start every 2 s (the default 60 s is for big clusters).
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# A finished job stays visible to squeue/scontrol for a minute.
MinJobAge=60
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  if cmp -s "$CONF.new" "$CONF"; then
    rm -f "$CONF.new"
  else
    mv "$CONF.new" "$CONF"
    CHANGED=1
  fi
fi

if ! alive "$STATE/slurmctld.pid" slurmctld; then
  slurmctld
  STARTED_CTLD=1
  for _ in $(seq 1 50); do [ -s "$STATE/slurmctld.pid" ] && break; sleep 0.1; done
  started slurmctld "$STATE/slurmctld.pid"
fi
if ! alive "$STATE/slurmd.pid" slurmd; then
  slurmd
  for _ in $(seq 1 50); do [ -s "$STATE/slurmd.pid" ] && break; sleep 0.1; done
  started slurmd "$STATE/slurmd.pid"
fi

# Daemons that were already running read a changed slurm.conf.
if [ -n "${CHANGED:-}" ] && [ -z "${STARTED_CTLD:-}" ]; then
  scontrol reconfigure
fi

# The node registers, and is idle (or already running jobs).
for _ in $(seq 1 120); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1 || true)
  case "$state" in
    idle* | mixed* | allocated*) echo "slurm: node $(hostname) $state"; exit 0 ;;
  esac
  sleep 0.5
done
echo "start-slurm.sh: the node did not become idle (sinfo: ${state:-no answer}); see $STATE/log/" >&2
exit 1
