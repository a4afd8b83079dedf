#!/bin/sh
# bench/gpu/fetch_deps.sh: the Debian packages a bare, offline GPU machine lacks (MPI, Eigen,
# doctest, CLI11, nlohmann-json and the libraries MPICH loads), downloaded here (a Debian 12
# machine with apt) and unpacked with `dpkg -x` into .gpu-deps/ (git-ignored), which travels with
# a copy of the repository; bench/gpu/run.sh builds against it. Nothing is installed.
#   sh bench/gpu/fetch_deps.sh          -> .gpu-deps/root/usr/..., .gpu-deps/debs/*.deb
set -eu
cd "$(dirname "$0")/../.."
deps=.gpu-deps
packages="libmpich-dev libmpich12 libhwloc15 libudev1 libucx0 libibverbs1 librdmacm1 libnuma1
  libnl-3-200 libnl-route-3-200 libgfortran5 libquadmath0 libeigen3-dev doctest-dev libcli11-dev
  nlohmann-json3-dev"
rm -rf "$deps"
mkdir -p "$deps/debs" "$deps/root"
# shellcheck disable=SC2086
(cd "$deps/debs" && apt-get download $packages)
for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/root"; done
# The unpacked tree's absolute symlinks (e.g. libmpich.so -> /etc/alternatives/...) point outside
# it on the GPU machine: make the library links relative to the tree.
lib="$deps/root/usr/lib/x86_64-linux-gnu"
for so in libmpich.so libmpi.so; do
  real=$(ls "$lib"/libmpich.so.12.* 2>/dev/null | head -n 1)
  [ -n "$real" ] && ln -sf "$(basename "$real")" "$lib/$so"
done
# Only what a build and a run need: no static libraries, documentation or the .debs (the device
# machine's tool carries at most 64 MiB of ignored files).
find "$deps/root" -name "*.a" -delete
rm -rf "$deps/root/usr/share/doc" "$deps/root/usr/share/man" "$deps/root/usr/share/lintian" "$deps/debs"
du -sh "$deps"
echo "fetch_deps: $(echo $packages | wc -w) packages unpacked into $deps/root"
