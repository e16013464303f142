#!/usr/bin/env bash
# Stop the daemons that scripts/start-slurm.sh started (listed with their pids in
# STATE_DIR/started), the last started first. Daemons it did not start are left running.
#
#   scripts/stop-slurm.sh [STATE_DIR]      STATE_DIR defaults to /var/spool/zhi-slurm
set -euo pipefail
STATE=${1:-/var/spool/zhi-slurm}
[ -f "$STATE/started" ] || exit 0
tac "$STATE/started" | while read -r name pid; do
  [ -n "$pid" ] || continue
  # Only the process that was started, if it is still that program.
  if kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
done
rm -f "$STATE/started"
