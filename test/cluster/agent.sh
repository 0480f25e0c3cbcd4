#!/bin/sh
# agent.sh [ssh options] HOST COMMAND...: stands in for ssh, for the MPI
# launchers' remote starts (Open MPI: --mca plm_rsh_agent agent.sh; MPICH:
# -launcher ssh -launcher-exec agent.sh). As ssh does, it joins the words
# of COMMAND and runs them with sh -c on HOST (test/cluster/on-host.sh).
while [ $# -gt 0 ]; do
  case $1 in
    -[oplicF]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
h=$1; shift
exec "$(dirname "$0")/on-host.sh" "$h" sh -c "$*"
