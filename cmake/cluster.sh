#!/bin/sh
# cmake/cluster.sh: a cluster of emulated nodes on one machine, joined by a shaped link, running
# an MPI program's ranks inside them (needs root).
#
#   sh cmake/cluster.sh --nodes 2 --ranks-per-node 4 --link 1gbit [--delay 100us] \
#                       [--timeout 600] -- PROGRAM ARGS...
#
# What it makes, named after this script's PID (so that runs never collide), and removes on exit,
# on failure and on Ctrl-C:
#   tridentPID-sw   a network namespace for the switch: a bridge "switch" (10.77.0.1/24), where
#                   mpiexec runs;
#   tridentPID-nK   a network namespace per node K: a veth "wire" (10.77.0.K+2/24) whose other end
#                   is a port of the bridge; its egress shaped by tc: htb at --link (and netem's
#                   delay with --delay, where the kernel has sch_netem; this one has not). A
#                   node's link is thus full duplex at --link each way, as a NIC's.
# Every address lives only in these namespaces: no packet can reach the machine's own network.
# MPICH's hydra starts one proxy per node through cluster_node.sh (its "ssh"), which runs it in
# the node's network, IPC, UTS and mount namespaces: ranks of a node share memory, nodes don't.
# The program's environment gets TRIDENT_CLUSTER_NODES, TRIDENT_LINK_BPS (bits/s) and
# TRIDENT_LINK_DELAY_S; at the end each node's bytes through its wire are printed. It also gets
# TRIDENT_EXIT_WITHOUT_FINALIZE: UCX 1.13's TCP transport (Debian 12's MPICH) often hangs in
# MPI_Finalize after traffic over a shaped link (openucx/ucx#8738), so trident's programs leave
# after a barrier instead, telling hydra they have finished as MPI_Finalize would (without that,
# hydra killed the ranks still leaving with signal 9: core/environment.hpp's leave;
# tests/cluster_exit.cmake runs 10 in a row).
#
# Exit status: the program's; 124 when it ran past --timeout; 77 when this machine cannot build
# the cluster (not root, no network namespaces, no tc or htb): CTest's SKIP_RETURN_CODE.
set -eu

nodes=2 ranks=1 link=1gbit delay="" limit=600
usage() {
  echo "usage: sh cmake/cluster.sh --nodes N --ranks-per-node R --link RATE [--delay TIME]" \
    "[--timeout SECONDS] -- PROGRAM ARGS..." >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=${2:?}; shift 2 ;;
    --ranks-per-node) ranks=${2:?}; shift 2 ;;
    --link) link=${2:?}; shift 2 ;;
    --delay) delay=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] || usage
case "$nodes$ranks$limit" in *[!0-9]*) usage ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] && [ "$ranks" -ge 1 ] || usage

# a rate (tc's units: bit, kbit, mbit, gbit) in bits/s, a delay (us, ms, s) in seconds
link_bps=$(echo "$link" | awk '/^[0-9.]+(bit|kbit|mbit|gbit)$/ { n = $0 + 0;
  if (/gbit$/) n *= 1e9; else if (/mbit$/) n *= 1e6; else if (/kbit$/) n *= 1e3; print n }')
[ -n "$link_bps" ] || { echo "cluster.sh: --link '$link': give a rate like 1gbit or 100mbit" >&2; exit 2; }
delay_s=0
if [ -n "$delay" ]; then
  delay_s=$(echo "$delay" | awk '/^[0-9.]+(us|ms|s)$/ { n = $0 + 0;
    if (/us$/) n /= 1e6; else if (/ms$/) n /= 1e3; print n }')
  [ -n "$delay_s" ] || { echo "cluster.sh: --delay '$delay': give a time like 100us" >&2; exit 2; }
fi

skip() {  # this machine cannot build the cluster
  echo "cluster.sh: cannot emulate a cluster here: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (run as root, as CI does)"
for tool in ip tc unshare mpiexec timeout; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done

here=$(cd "$(dirname "$0")" && pwd)
tag=trident$$
switch=$tag-sw
made=""  # namespaces made so far, removed by cleanup
work=$(mktemp -d)
cleanup() {
  trap - EXIT INT TERM HUP
  for ns in $made; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ip netns add "$switch" 2>/dev/null || skip "cannot create a network namespace ('ip netns add' failed)"
made=$switch
ip -n "$switch" link set lo up
# what cluster_node.sh will need inside each node
ip netns exec "$switch" unshare --ipc --uts sh -c \
  'hostname probe && mount -t tmpfs tmpfs /dev/shm' 2>/dev/null ||
  skip "cannot make IPC, UTS and mount namespaces inside a network namespace (unshare, mount)"
ip -n "$switch" link add switch type bridge
ip -n "$switch" addr add 10.77.0.1/24 dev switch
ip -n "$switch" link set switch up
: >"$work/hosts"
k=0
while [ "$k" -lt "$nodes" ]; do
  node=$tag-n$k
  ip netns add "$node"
  made="$made $node"
  ip -n "$node" link set lo up
  ip -n "$switch" link add "port$k" type veth peer name wire netns "$node"
  ip -n "$switch" link set "port$k" master switch up
  ip -n "$node" addr add "10.77.0.$((k + 2))/24" dev wire
  ip -n "$node" link set wire up
  # the node's outgoing link: a token bucket at the link's rate (burst above one 64 KiB GSO
  # packet; a long queue so that TCP is slowed, not dropped)
  tc -n "$node" qdisc add dev wire root handle 1: htb default 1 2>/dev/null ||
    skip "the kernel has no htb qdisc to shape the link (sch_htb)"
  tc -n "$node" class add dev wire parent 1: classid 1:1 htb rate "$link" ceil "$link" quantum 60000
  if [ -n "$delay" ]; then
    tc -n "$node" qdisc add dev wire parent 1:1 handle 2: netem delay "$delay" limit 100000 2>/dev/null ||
      { echo "cluster.sh: --delay needs the kernel's netem qdisc (sch_netem), missing here" >&2; exit 2; }
  fi
  echo "$node:$ranks" >>"$work/hosts"
  k=$((k + 1))
done

# hydra execs its launcher: cluster_node.sh, or a copy of the call where the checkout lost its
# execute bit
launcher=$here/cluster_node.sh
if [ ! -x "$launcher" ]; then
  launcher=$work/ssh
  printf '#!/bin/sh\nexec sh "%s/cluster_node.sh" "$@"\n' "$here" >"$launcher"
  chmod +x "$launcher"
fi

echo "cluster.sh: $nodes nodes x $ranks ranks, link $link${delay:+, delay $delay}, timeout ${limit}s" >&2
# in the background, so that Ctrl-C (or a TERM) reaches this script's trap at once
ip netns exec "$switch" timeout -k 10 "$limit" mpiexec -launcher ssh -launcher-exec "$launcher" \
  -f "$work/hosts" -iface switch -n $((nodes * ranks)) -ppn "$ranks" \
  -genv TRIDENT_CLUSTER_NODES "$nodes" -genv TRIDENT_LINK_BPS "$link_bps" \
  -genv TRIDENT_LINK_DELAY_S "$delay_s" -genv TRIDENT_EXIT_WITHOUT_FINALIZE 1 "$@" &
job=$!
trap 'kill -TERM $job 2>/dev/null; exit 130' INT
trap 'kill -TERM $job 2>/dev/null; exit 143' TERM
trap 'kill -TERM $job 2>/dev/null; exit 129' HUP
status=0
wait "$job" || status=$?
[ "$status" -ne 124 ] || echo "cluster.sh: the program ran past --timeout ${limit}s" >&2

k=0
while [ "$k" -lt "$nodes" ]; do  # what crossed each node's link in the whole run
  stats=/sys/class/net/wire/statistics
  echo "cluster.sh: node $k sent $(ip netns exec "$tag-n$k" cat $stats/tx_bytes) bytes," \
    "received $(ip netns exec "$tag-n$k" cat $stats/rx_bytes) bytes over its link" >&2
  k=$((k + 1))
done
exit "$status"
