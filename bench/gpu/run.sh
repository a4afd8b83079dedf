#!/bin/bash
# bench/gpu/run.sh: what a GPU machine runs from a copy of the repository (bench/gpu/README.md).
#
# The machine is bare and offline (an NVIDIA GPU, CUDA with nvcc, cuBLAS and NCCL, CMake, ninja;
# no MPI, Eigen, doctest, CLI11 or nlohmann-json): those come unpacked in .gpu-deps/ (made by
# bench/gpu/fetch_deps.sh on a Debian 12 machine). The script configures the CUDA build against
# them (build-gpu/, TRIDENT_BLAS=eigen, no examples or benchmarks), builds the CUDA tests, runs
# the host-side ones and the `gpu` ones (cuda_gpu: every kernel on the device against nn/'s CPU
# layers in double, device memory counted, out-of-memory as an Error; cuda_model_gpu: GPT-2
# trained 3 AdamW steps on the device against the CPU reference, double and float) and writes
# everything to $OUT/gpu_run.log (or bench/gpu/out/). Exit status: the tests'. No GPU benchmark yet.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/gpu/out}
mkdir -p "$out"
log="$out/gpu_run.log"
exec > >(tee "$log") 2>&1
start=$(date +%s)
deps=$PWD/.gpu-deps/root
if [ ! -d "$deps/usr/include" ]; then
  echo "run.sh: no .gpu-deps/root: run bench/gpu/fetch_deps.sh (on a machine with apt) first"
  exit 2
fi
lib=$deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "run.sh: nvcc not found (PATH, /usr/local/cuda/bin)"; exit 2; }
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
build=${TRIDENT_GPU_BUILD_DIR:-build-gpu}

echo "== $(date -u) on $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi failed"
"$nvcc" --version | tail -n 1

# MPI from the unpacked MPICH, without its compiler wrapper (its paths are the packages' /usr).
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WITH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DTRIDENT_BLAS=eigen -DCMAKE_PREFIX_PATH="$deps/usr" \
  -DTRIDENT_BUILD_EXAMPLES=OFF -DTRIDENT_BUILD_BENCH=OFF -DTRIDENT_INSTALL=OFF \
  -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_CXX_SKIP_MPICXX=ON \
  -DMPI_CXX_ADDITIONAL_INCLUDE_DIRS="$deps/usr/include/x86_64-linux-gnu/mpich" \
  -DMPI_CXX_LIB_NAMES=mpich -DMPI_mpich_LIBRARY="$lib/libmpich.so" \
  ${TRIDENT_GPU_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)" --target test_cuda_gpu test_cuda_model_gpu \
  test_cuda_kernels_host test_cuda_host test_cuda_device_comm
echo "== built in $(( $(date +%s) - start )) s"

status=0
# The host-side tests, one process each (MPICH's singleton start: no mpiexec here).
for t in cuda_kernels_host cuda_host cuda_device_comm; do
  echo "== $t"
  "$build/tests/cuda/test_$t" || status=1
done
# The gpu tests: on a machine without a GPU they exit 77 (skipped, with the reason).
echo "== gpu tests"
(cd "$build" && ctest -L gpu -V --output-on-failure) || status=1
echo "== done in $(( $(date +%s) - start )) s, status $status"
exit $status
