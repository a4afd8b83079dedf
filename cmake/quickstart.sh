#!/bin/sh
# The README's two commands. On a fresh Debian 12 machine, as root:
#   sh cmake/quickstart.sh example   installs what is missing, builds, runs the flagship example
#                                    (8 ranks: TP2 x PP2 x DP2 with ZeRO-1 and 1F1B), which
#                                    ends with 200 bytes of text sampled from the trained model
#   sh cmake/quickstart.sh test      installs what is missing, builds, runs the whole test suite
#   sh cmake/quickstart.sh cluster   the flagship example on 2 emulated nodes of 4 ranks joined by
#                                    a 1 Gbit/s link (cmake/cluster.sh)
set -eu
cd "$(dirname "$0")/.."

# libopenblas-dev: the GEMM (TRIDENT_BLAS=auto); iproute2: ip and tc, for the emulated cluster
# of cmake/cluster.sh (its test, cluster.2nodes)
packages="g++ cmake make mpich libmpich-dev libeigen3-dev libopenblas-dev doctest-dev libcli11-dev
  nlohmann-json3-dev iproute2"
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
    mpiexec -n 8 "$build/examples/train_gpt" --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b \
      --sample 200 --temperature 0.8 --top-k 10
    ;;
  test)
    # The build's wall time, printed so that every run (CI's too) records it (docs/ARCHITECTURE.md
    # §9: a build that stays fast).
    started=$(date +%s)
    cmake --build "$build" -j "$jobs"
    echo "quickstart: built every target in $(($(date +%s) - started)) s with $jobs jobs"
    # The CUDA build's tests first (when nvcc is found, else skipped), then the whole suite, so
    # the suite's summary is the last thing printed; a CUDA failure still fails the command.
    cuda_status=0
    sh cmake/cuda_tests.sh "$jobs" || cuda_status=$?
    (cd "$build" && ctest --output-on-failure)
    if [ "$cuda_status" -ne 0 ]; then
      echo "quickstart: the CUDA build's tests failed (cmake/cuda_tests.sh, status $cuda_status)" >&2
      exit "$cuda_status"
    fi
    ;;
  cluster)
    cmake --build "$build" -j "$jobs" --target train_gpt
    sh cmake/cluster.sh --nodes 2 --ranks-per-node 4 --link 1gbit -- \
      "$build/examples/train_gpt" --tp 2 --pp 2 --dp 2 --zero 1 --schedule 1f1b
    ;;
  *)
    echo "usage: sh cmake/quickstart.sh {example|test|cluster}" >&2
    exit 2
    ;;
esac
