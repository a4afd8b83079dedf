#!/bin/sh
# The README's two commands. On a fresh Debian 12 machine, as root:
#   sh cmake/quickstart.sh example   installs what is missing, builds, runs the flagship example
#                                    (8 ranks: TP2 x PP2 x DP2 with ZeRO-1 and 1F1B)
#   sh cmake/quickstart.sh test      installs what is missing, builds, runs the whole test suite
set -eu
cd "$(dirname "$0")/.."

packages="g++ cmake make mpich libmpich-dev libeigen3-dev libopenblas-dev doctest-dev libcli11-dev
  nlohmann-json3-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing
fi

build=${TRIDENT_BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
case "${1:-}" in
  example)
    cmake --build "$build" -j "$jobs" --target train_gpt
    mpiexec -n 8 "$build/examples/train_gpt" --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b
    ;;
  test)
    cmake --build "$build" -j "$jobs"
    cd "$build" && ctest --output-on-failure
    ;;
  *)
    echo "usage: sh cmake/quickstart.sh {example|test}" >&2
    exit 2
    ;;
esac
