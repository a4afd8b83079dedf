#!/bin/sh
# bench/gpu/fetch_deps.sh: the Debian packages a bare, offline GPU machine lacks (MPI with its
# launcher mpiexec.hydra, Eigen, doctest, CLI11, nlohmann-json and the libraries they load), downloaded here (a Debian 12
# machine with apt) and unpacked with `dpkg -x` into .gpu-deps/ (git-ignored), which travels with
# a copy of the repository as one archive (the device tool carries at most 64 MiB of ignored
# files; unpacked they are ~61 MB, libmpich alone 40): bench/gpu/run.sh unpacks it and builds
# against it. Nothing is installed.
#   sh bench/gpu/fetch_deps.sh          -> .gpu-deps/deps.tar.gz (~20 MB; of root/usr/...)
#   sh bench/gpu/fetch_deps.sh --list   the packages' names
set -eu
cd "$(dirname "$0")/../.."
deps=.gpu-deps
packages="mpich libslurm38 libmpich-dev libmpich12 libhwloc15 libudev1 libucx0 libibverbs1 librdmacm1 libnuma1
  libnl-3-200 libnl-route-3-200 libeigen3-dev doctest-dev libcli11-dev
  nlohmann-json3-dev"
if [ "${1:-}" = --list ]; then echo $packages; exit 0; fi  # for bench/gpu/check_deps.sh
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
# doctest's CMake package names its prefix as an absolute /usr: make it the tree's own.
for f in "$deps"/root/usr/lib/cmake/doctest/doctestTargets.cmake; do
  [ -f "$f" ] && sed -i 's|set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' "$f"
done
# Only what a build and a run need: no static libraries, documentation, Eigen's unsupported
# modules or the .debs.
find "$deps/root" -name "*.a" -delete
rm -rf "$deps/root/usr/share/doc" "$deps/root/usr/share/man" "$deps/root/usr/share/lintian" \
  "$deps/root/usr/include/eigen3/unsupported" "$deps/debs"
tar -czf "$deps/deps.tar.gz" -C "$deps/root" .
rm -rf "$deps/root"
echo "fetch_deps: $(echo $packages | wc -w) packages in $deps/deps.tar.gz ($(du -h "$deps/deps.tar.gz" | cut -f1))"
