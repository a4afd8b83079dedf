#!/bin/sh
# cmake/cluster_node.sh: hydra's "ssh" for the emulated cluster of cmake/cluster.sh.
#
# mpiexec -launcher ssh -launcher-exec cluster_node.sh calls it as `ssh [options] HOST COMMAND...`,
# for each host of the host file; HOST is a network namespace that cluster.sh made. The proxy
# COMMAND then runs inside that node: its network namespace (`ip netns exec`, which also gives it
# a mount namespace of its own), a new IPC namespace (no System V shared memory across nodes), a
# new UTS namespace with the node's hostname, and an empty /dev/shm of its own (no POSIX shared
# memory across nodes). The ranks of one node share all of these, so MPI's shared-memory
# transport works inside a node and only the network joins nodes.
set -eu
while [ $# -gt 0 ]; do  # ssh's options (hydra passes -x)
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "cluster_node.sh: usage: cluster_node.sh [-x] NODE COMMAND..." >&2; exit 2; }
node=$1
shift
case "$node" in
  trident*-n*) ;;  # only the nodes cluster.sh names
  *) echo "cluster_node.sh: '$node' is not an emulated node of cmake/cluster.sh" >&2; exit 2 ;;
esac
case "$node" in *[!a-z0-9-]*) echo "cluster_node.sh: bad node name '$node'" >&2; exit 2 ;; esac
# as ssh does, the command's words joined, for a shell (hydra quotes them for one)
exec ip netns exec "$node" unshare --ipc --uts sh -c \
  "hostname $node && mount -t tmpfs -o size=50% tmpfs /dev/shm && exec $*"
