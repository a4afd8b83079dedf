#!/bin/bash
# bench/gpu/run.sh: what a GPU machine runs from a copy of the repository (bench/gpu/README.md).
#
# The machine is bare and offline (an NVIDIA GPU, CUDA with nvcc, cuBLAS, NCCL, CMake; no MPI,
# Eigen, doctest, CLI11 or nlohmann-json): those come packed in .gpu-deps/deps.tar.gz (made by
# bench/gpu/fetch_deps.sh on a Debian 12 machine), unpacked here into .gpu-deps/root. NCCL is
# taken from $NCCL_HOME, else from the Python wheel `nvidia-nccl` next to PyTorch, else from the
# CUDA toolkit. Then cmake/cuda_tests.sh (the README test command's CUDA part) does the rest:
# configures build-gpu/ with -DTRIDENT_WITH_CUDA=ON against the unpacked tree, builds the CUDA
# tests with the training programs, runs the host-side tests (ctest -L cuda -LE gpu, under the
# unpacked mpiexec) and the `gpu` ones (ctest -L gpu: kernels against the CPU, GPT-2 and Llama
# trained on the GPU against the CPU reference, the programs with --device cuda at 1, 2 and 4
# ranks). Everything goes to $OUT/gpu_run.log (or bench/gpu/out/). Exit status: the tests'.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/gpu/out}
mkdir -p "$out"
exec > >(tee "$out/gpu_run.log") 2>&1
start=$(date +%s)
deps=$PWD/.gpu-deps/root
if [ ! -d "$deps/usr/include" ]; then
  if [ ! -f .gpu-deps/deps.tar.gz ]; then
    echo "run.sh: no .gpu-deps/deps.tar.gz: run bench/gpu/fetch_deps.sh (on a machine with apt) first"
    exit 2
  fi
  mkdir -p "$deps" && tar -xzf .gpu-deps/deps.tar.gz -C "$deps"
fi
lib=$deps/usr/lib/x86_64-linux-gnu
export PATH=$deps/usr/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -z "${NCCL_HOME:-}" ]; then
  for py in python3 /opt/torch/.venv/bin/python3; do
    dir=$("$py" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2> /dev/null) || continue
    [ -f "$dir/include/nccl.h" ] && export NCCL_HOME=$dir && break
  done
fi
[ -n "${NCCL_HOME:-}" ] && export LD_LIBRARY_PATH=$NCCL_HOME/lib:$LD_LIBRARY_PATH

echo "== $(date -u) on $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi failed"
nvcc --version | tail -n 1
echo "NCCL_HOME=${NCCL_HOME:-none, NCCL from the CUDA toolkit if there}"

# MPI from the unpacked MPICH, without its compiler wrapper (its paths are the packages' /usr).
generator=""
command -v ninja > /dev/null && generator="-G Ninja"
export TRIDENT_CUDA_BUILD_DIR=${TRIDENT_GPU_BUILD_DIR:-build-gpu}
export TRIDENT_CUDA_CMAKE_ARGS="$generator -DTRIDENT_BLAS=eigen -DCMAKE_PREFIX_PATH=$deps/usr
  -DTRIDENT_BUILD_EXAMPLES=ON -DTRIDENT_BUILD_BENCH=OFF -DTRIDENT_INSTALL=OFF
  -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_CXX_SKIP_MPICXX=ON
  -DMPI_CXX_ADDITIONAL_INCLUDE_DIRS=$deps/usr/include/x86_64-linux-gnu/mpich
  -DMPI_CXX_LIB_NAMES=mpich -DMPI_mpich_LIBRARY=$lib/libmpich.so
  -DMPIEXEC_EXECUTABLE=$deps/usr/bin/mpiexec.hydra ${TRIDENT_GPU_CMAKE_ARGS:-}"
status=0
sh cmake/cuda_tests.sh "$(nproc)" || status=$?
echo "== done in $(($(date +%s) - start)) s, status $status"
exit $status
