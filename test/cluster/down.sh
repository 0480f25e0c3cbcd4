#!/bin/sh
# down.sh: removes everything up.sh made, also what a killed run left:
# Slurm's jobs and daemons, every process inside the test bed's
# namespaces, the namespaces (their links and the bridge go with them),
# and the state directory. Touches nothing that is not the test bed's:
# processes are found by their network namespace or by PID files it wrote.
# Safe to run at any time, any number of times.
. "$(dirname "$0")/env.sh"
D=$CLUSTER_STATE
# The watcher (up.sh --watch) runs this script when the test process dies;
# when the test itself runs it, the watcher is no longer needed.
if [ -f "$D/watch.pid" ]; then
  w=$(cat "$D/watch.pid")
  [ "$w" != "${NODEMPI_CLUSTER_WATCHER:-}" ] && kill "$w" 2>/dev/null
fi
# Slurm first, while its daemons can still end their jobs' steps.
if [ -f "$D/slurm/slurm.conf" ] && [ -f "$D/slurm/run/slurmctld.pid" ]; then
  first=$(awk 'NR == 1 { print $1 }' "$D/hosts.map" 2>/dev/null)
  if [ -n "$first" ]; then
    export SLURM_CONF="$D/slurm/slurm.conf"
    timeout 5 "$CLUSTER_DIR/on-host.sh" "$first" scancel --full --signal=KILL --state=running >/dev/null 2>&1
    timeout 5 "$CLUSTER_DIR/on-host.sh" "$first" scancel --user=root >/dev/null 2>&1
  fi
fi
# stop PIDFILE COMM: ends the process of a PID file if it still is COMM.
stop() {
  [ -f "$1" ] || return 0
  p=$(cat "$1")
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] || return 0
  kill "$p" 2>/dev/null
  i=0
  while kill -0 "$p" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$p" 2>/dev/null
}
for f in "$D"/slurm/run/slurmd-*.pid; do stop "$f" slurmd; done
stop "$D/slurm/run/slurmctld.pid" slurmctld
stop "$D/slurm/run/munged.pid" munged
# Whatever still runs in one of our namespaces (ranks, orted, hydra
# proxies, slurmstepd), then the namespaces themselves.
for ns in $(ip netns list 2>/dev/null | awk -v p="$CLUSTER_NS-" 'index($1, p) == 1 { print $1 }'); do
  for sig in TERM KILL; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -z "$pids" ] && break
    kill -s $sig $pids 2>/dev/null
    i=0
    while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
  done
  ip netns del "$ns"
done
# The state directory, but never through a mount point a host left behind.
if [ -d "$D" ]; then
  if grep -q " $D/" /proc/self/mounts; then
    echo "down.sh: something is still mounted under $D; left in place" >&2
    exit 1
  fi
  rm -rf "$D"
fi
exit 0
