#!/bin/sh
# up.sh [--slurm] [--watch PID]: brings up the emulated hosts (env.sh:
# CLUSTER_HOSTS), each a network namespace with its own address on a
# bridge that lives in a namespace of its own, and with --slurm a Slurm
# cluster on them: munged, slurmctld on the first host, one slurmd per
# host, all started by hand (no systemd), their state, logs and
# configuration under the state directory. With --watch PID, a watcher
# runs down.sh as soon as process PID ends, however it ends (a test runner
# that is killed never runs its own teardown).
#
# Idempotent: first removes whatever a previous run left (down.sh). Needs
# root, iproute2 and util-linux; --slurm needs Debian's slurmctld, slurmd,
# slurm-client and munge. Prints the hosts and, with --slurm, SLURM_CONF.
set -eu
. "$(dirname "$0")/env.sh"
slurm=0 watch=""
while [ $# -gt 0 ]; do
  case $1 in
    --slurm) slurm=1 ;;
    --watch) watch=$2; shift ;;
    *) echo "up.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "up.sh: needs root (network namespaces)" >&2; exit 1; }
for t in ip nsenter unshare; do command -v $t >/dev/null || { echo "up.sh: $t missing (iproute2, util-linux)" >&2; exit 1; }; done
if [ $slurm = 1 ]; then
  for t in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/srun; do
    [ -x $t ] || { echo "up.sh: $t missing (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 1; }
  done
fi
"$CLUSTER_DIR/down.sh"
D=$CLUSTER_STATE
trap '"$CLUSTER_DIR/down.sh"' EXIT
trap 'exit 1' INT TERM HUP
mkdir -p "$D"
chmod 755 "$D"

# The network: ports of one bridge, in a namespace that no process lives in.
sw=$CLUSTER_NS-sw
ip netns add "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
printf '127.0.0.1 localhost\n' > "$D/hosts"
i=0
for h in $CLUSTER_HOSTS; do i=$((i + 1)); echo "$CLUSTER_NET.$i $h" >> "$D/hosts"; done
: > "$D/hosts.map"
i=0
for h in $CLUSTER_HOSTS; do
  i=$((i + 1)) ns=$CLUSTER_NS-$h
  ip netns add "$ns"
  ip -n "$sw" link add "port$i" type veth peer name eth0 netns "$ns"
  ip -n "$sw" link set "port$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$CLUSTER_NET.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  mkdir -p "$D/host/$h/tmp" "$D/host/$h/shm"
  chmod 1777 "$D/host/$h/tmp" "$D/host/$h/shm"
  echo "$h $ns $CLUSTER_NET.$i port$i" >> "$D/hosts.map"
done
# Hostfile for mpirun (two slots a host) and the list for mpiexec -hosts.
awk '{ print $1 " slots=2" }' "$D/hosts.map" > "$D/hostfile"

if [ $slurm = 1 ]; then
  S=$D/slurm
  mkdir -p "$S/state" "$S/spool" "$S/log" "$S/run"
  # A key of this cluster's own, so nothing depends on /etc/munge.
  dd if=/dev/urandom of="$S/run/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$S/run/munge.key"
  first=$(awk 'NR == 1 { print $1 }' "$D/hosts.map")
  overrides=""; [ "$CLUSTER_CPUS" -gt "$(nproc)" ] && overrides="SlurmdParameters=config_overrides"
  cat > "$S/slurm.conf" <<CONF
ClusterName=nodempi
SlurmctldHost=$first($CLUSTER_NET.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$S/run/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=5
$overrides
$(awk -v c="$CLUSTER_CPUS" '{ printf "NodeName=%s NodeAddr=%s CPUs=%s State=UNKNOWN\n", $1, $3, c }' "$D/hosts.map")
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF="$S/slurm.conf"
  # munged's socket is a path, so every namespace reaches it.
  /usr/sbin/munged --force --socket="$S/run/munge.sock" --pid-file="$S/run/munged.pid" \
    --log-file="$S/log/munged.log" --seed-file="$S/run/munge.seed" --key-file="$S/run/munge.key"
  "$CLUSTER_DIR/on-host.sh" "$first" /usr/sbin/slurmctld -f "$SLURM_CONF"
  for h in $(awk '{ print $1 }' "$D/hosts.map"); do "$CLUSTER_DIR/on-host.sh" "$h" /usr/sbin/slurmd -f "$SLURM_CONF" -N "$h"; done
  n=$(wc -l < "$D/hosts.map") i=0
  until [ "$("$CLUSTER_DIR/on-host.sh" "$first" sinfo -h -N -o %T 2>/dev/null | grep -c '^idle')" -ge "$n" ]; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then
      echo "up.sh: Slurm's nodes are not idle after 20 s; logs:" >&2
      tail -n 20 "$S"/log/*.log >&2
      exit 1
    fi
    sleep 0.2
  done
fi

if [ -n "$watch" ]; then
  setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; NODEMPI_CLUSTER_WATCHER=$$ exec "$2/down.sh"' \
    watch "$watch" "$CLUSTER_DIR" </dev/null >/dev/null 2>&1 &
  echo $! > "$D/watch.pid"
fi
trap - EXIT INT TERM HUP
cat "$D/hosts.map"
echo "state $D"
echo "net $CLUSTER_NET.0/24"
[ $slurm = 1 ] && echo "slurm $D/slurm/slurm.conf"
exit 0
