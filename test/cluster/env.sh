# Settings of the emulated cluster (sourced by the scripts beside it, never
# run). Each can be set in the environment first.
#
# NODEMPI_CLUSTER_TAG names everything one test bed makes (namespaces, the
# state directory), so that two checkouts on one machine never touch each
# other's; the default is derived from this checkout's path, so a run finds
# and removes what a killed run of the same checkout left.
CLUSTER_DIR=$(cd "$(dirname "$0")" && pwd)
if [ -z "${NODEMPI_CLUSTER_TAG:-}" ]; then
  NODEMPI_CLUSTER_TAG=$(printf '%s' "$CLUSTER_DIR" | cksum | awk '{printf "%05d", $1 % 100000}')
fi
# Host names, in order; slurmctld runs on the first.
CLUSTER_HOSTS=${NODEMPI_CLUSTER_HOSTS:-"node1 node2"}
# A private /24 that exists only inside the test bed's namespaces: host i
# (from 1) is $CLUSTER_NET.i. Nothing in the root namespace routes to it.
CLUSTER_NET=${NODEMPI_CLUSTER_NET:-10.77.0}
# Namespace names: ${CLUSTER_NS}-<host>, and ${CLUSTER_NS}-sw for the bridge.
CLUSTER_NS=nmpi${NODEMPI_CLUSTER_TAG}
# State every host must see (hosts map, per-host /tmp and /dev/shm, Slurm's
# configuration, logs and job output): outside /tmp, which each host has
# its own of.
CLUSTER_STATE=${NODEMPI_CLUSTER_STATE:-/var/tmp/nodempi-cluster-$NODEMPI_CLUSTER_TAG}
# CPUs each Slurm node claims (np 4 over two nodes takes 2 a node).
CLUSTER_CPUS=${NODEMPI_CLUSTER_CPUS:-4}
