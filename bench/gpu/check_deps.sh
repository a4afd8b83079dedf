#!/bin/sh
# bench/gpu/check_deps.sh: proves that bench/gpu/run.sh takes every package it needs from
# .gpu-deps alone, as on the bare GPU machine, by running it on this machine with the system's
# copies of those packages hidden: in a private mount namespace, /usr is overlaid with a
# whiteout for each file the packages installed here (dpkg -L; and the alternatives links to
# MPI), so they do not exist for the run. Needs root and overlayfs; nothing outside the
# namespace changes. Without a GPU, run.sh's gpu tests report themselves skipped.
#   sh bench/gpu/fetch_deps.sh && sh bench/gpu/check_deps.sh    (as root; OUT as for run.sh)
set -eu
cd "$(dirname "$0")/../.."
[ -f .gpu-deps/deps.tar.gz ] || { echo "check_deps: run bench/gpu/fetch_deps.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/upper" "$work/work"
# Every /usr path of the packages (merged /usr: /lib/... is /usr/lib/...), files and links only.
{
  for p in $(sh bench/gpu/fetch_deps.sh --list); do dpkg -L "$p" 2> /dev/null || true; done
  find /usr/bin /usr/lib/x86_64-linux-gnu /usr/include -maxdepth 2 -lname '/etc/alternatives/*mpi*'
} | sed 's|^/lib/|/usr/lib/|; s|^/bin/|/usr/bin/|' | grep '^/usr/' | sort -u > "$work/files"
hidden=0
while read -r f; do
  { [ -f "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] || continue
  rel=${f#/usr/}
  mkdir -p "$work/upper/$(dirname "$rel")"
  mknod "$work/upper/$rel" c 0 0
  hidden=$((hidden + 1))
done < "$work/files"
echo "check_deps: $hidden files of the system's packages hidden under /usr"
rm -rf .gpu-deps/root build-gpu  # unpacked and configured again, in the namespace
unshare -m sh -c "mount -t overlay overlay -o lowerdir=/usr,upperdir=$work/upper,workdir=$work/work /usr &&
  ! command -v mpiexec > /dev/null && [ ! -e /usr/include/eigen3/Eigen/Core ] && echo 'check_deps: no mpiexec, no Eigen' &&
  bash bench/gpu/run.sh"
