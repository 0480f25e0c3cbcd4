#!/bin/sh
# on-host.sh HOST CMD [ARGS...]: runs CMD "on" an emulated host of up.sh:
# in the host's network namespace, and in mount and UTS namespaces of its
# own with
#   - the host's name as hostname, and an /etc/hosts naming every host;
#   - its own /tmp and /dev/shm (node-local files: Open MPI's session
#     directories, Slurm's PMIx directories, shared-memory segments), kept
#     under the state directory; a checkout that lives under /tmp is bound
#     back at its path, so every host sees the project as on a shared file
#     system;
#   - a sysfs of its network namespace, with the cgroup tree carried over
#     (slurmd does not start without it);
#   - no limit on the size of core files.
# Arguments pass through unchanged.
. "$(dirname "$0")/env.sh"
h=$1; shift
ns=$(awk -v h="$h" '$1 == h { print $2 }' "$CLUSTER_STATE/hosts.map" 2>/dev/null)
[ -n "$ns" ] || { echo "on-host.sh: no emulated host '$h' (run test/cluster/up.sh)" >&2; exit 255; }
repo=$(cd "$CLUSTER_DIR/../.." && pwd -P)
exec nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation private sh -c '
  set -e
  h=$1 state=$2 repo=$3; shift 3
  keep=$(mktemp -d /run/nodempi-cluster.XXXXXX)
  mount --rbind /sys/fs/cgroup "$keep"
  mount -t sysfs sysfs /sys
  mount --move "$keep" /sys/fs/cgroup
  case "$repo" in /tmp/*) mkdir "$keep/repo"; mount --bind "$repo" "$keep/repo" ;; esac
  mount --bind "$state/hosts" /etc/hosts
  mount --bind "$state/host/$h/tmp" /tmp
  mount --bind "$state/host/$h/shm" /dev/shm
  case "$repo" in /tmp/*) mkdir -p "$repo"; mount --move "$keep/repo" "$repo"; rmdir "$keep/repo" ;; esac
  rmdir "$keep"
  hostname "$h"
  # A rank that crashes leaves a core file (bed.ts reads it): Slurm passes
  # the limit on to its tasks, the MPI launchers to theirs.
  ulimit -c unlimited 2>/dev/null || :
  exec "$@"' on-host "$h" "$CLUSTER_STATE" "$repo" "$@"
