#!/bin/sh
# The CUDA backend's part of the README's test command (called by cmake/quickstart.sh test):
# when nvcc is found (on PATH or in /usr/local/cuda/bin), configures a second build directory
# with -DTRIDENT_WITH_CUDA=ON, builds only the CUDA tests (target trident_cuda_tests) and runs
# them (ctest -L cuda): the host-side tests must pass; the `gpu` tests run on a GPU, and with
# none visible ctest reports them skipped and their output says why. Without nvcc it says so and
# exits 0 (the CPU build is complete without CUDA).
#   sh cmake/cuda_tests.sh [jobs]      build directory: $TRIDENT_CUDA_BUILD_DIR or build-cuda
set -eu
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc)}
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
if [ -z "$nvcc" ]; then
  echo "cuda_tests: nvcc not found (PATH, /usr/local/cuda/bin): the CUDA build is skipped"
  exit 0
fi
build=${TRIDENT_CUDA_BUILD_DIR:-build-cuda}
launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
fi
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WITH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" $launcher ${TRIDENT_CUDA_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs" --target trident_cuda_tests
cd "$build"
ctest -L cuda -LE gpu --output-on-failure
# -V: a skipped test's output (the reason) is printed; a failed one fails the script.
ctest -L gpu -V --output-on-failure
