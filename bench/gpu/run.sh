#!/bin/bash
# bench/gpu/run.sh: what a GPU machine runs from a copy of the repository (bench/gpu/README.md).
#
# The machine is bare and offline (an NVIDIA GPU, CUDA with nvcc, cuBLAS, CMake, ninja, the
# Python of PyTorch with the nvidia-nccl wheel; no MPI, Eigen, doctest, CLI11 or nlohmann-json):
# those come packed in .gpu-deps/deps.tar.gz (bench/gpu/fetch_deps.sh, on a Debian 12 machine),
# unpacked here into .gpu-deps/root; NCCL from $NCCL_HOME, else the wheel, else the toolkit.
# Steps, all into $OUT/gpu_run.log (or bench/gpu/out/): what was found where (GPU, driver, nvcc,
# cuBLAS, NCCL, each package); configure build-gpu/ (-DTRIDENT_WITH_CUDA=ON, the examples) and
# build the CUDA tests with ninja -k 0 (a failing target does not stop the others); the host-side
# tests (ctest -L cuda -LE gpu, under the carried mpiexec); the `gpu` tests with
# CUDA_LAUNCH_BLOCKING=1 (an error points at its launch), then without; the benchmark (below).
# Exit status: 0 when everything built and passed.
#   OUT=dir bash bench/gpu/run.sh        TRIDENT_GPU_CMAKE_ARGS: more configure arguments
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/gpu/out}
mkdir -p "$out"
exec > >(tee "$out/gpu_run.log") 2>&1
start=$(date +%s)
elapsed() { echo "[$(($(date +%s) - start)) s]"; }
deps=$PWD/.gpu-deps/root
if [ ! -d "$deps/usr/include" ]; then
  if [ ! -f .gpu-deps/deps.tar.gz ]; then
    echo "run.sh: no .gpu-deps/deps.tar.gz: run bench/gpu/fetch_deps.sh (on a machine with apt) first"
    exit 2
  fi
  mkdir -p "$deps" && tar -xzf .gpu-deps/deps.tar.gz -C "$deps" || exit 2
fi
lib=$deps/usr/lib/x86_64-linux-gnu
export PATH=$deps/usr/bin:$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$lib:$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UCX_MODULE_DIR=$lib/ucx  # MPICH's UCX loads its transports from there
# Hydra on this machine only, by fork, whatever the hostname resolves to (a VM's may not).
echo "localhost:64" > .gpu-deps/hosts
export HYDRA_HOST_FILE=$PWD/.gpu-deps/hosts HYDRA_LAUNCHER=fork
if [ -z "${NCCL_HOME:-}" ]; then
  for py in python3 /opt/torch/.venv/bin/python3; do
    dir=$("$py" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2> /dev/null) || continue
    [ -f "$dir/include/nccl.h" ] && export NCCL_HOME=$dir && break
  done
fi
[ -n "${NCCL_HOME:-}" ] && export LD_LIBRARY_PATH=$NCCL_HOME/lib:$LD_LIBRARY_PATH

echo "== $(date -u) on $(hostname), commit $(git rev-parse --short HEAD 2> /dev/null || echo '?')"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi failed"
nvcc=$(command -v nvcc) || { echo "run.sh: nvcc not found (PATH, /usr/local/cuda/bin)"; exit 2; }
echo "nvcc: $nvcc, $("$nvcc" --version | tail -n 1)"
echo "NCCL_HOME: ${NCCL_HOME:-unset (NCCL from the CUDA toolkit, if it has one)}"
echo "mpiexec: $(command -v mpiexec.hydra)"
build=${TRIDENT_GPU_BUILD_DIR:-build-gpu}
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
# MPI from the unpacked MPICH, without its compiler wrapper (its paths are the packages' /usr).
# shellcheck disable=SC2086
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_WITH_CUDA=ON \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DTRIDENT_BLAS=eigen -DCMAKE_PREFIX_PATH="$deps/usr" \
  -DTRIDENT_BUILD_EXAMPLES=ON -DTRIDENT_BUILD_BENCH=OFF -DTRIDENT_INSTALL=OFF \
  -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_CXX_SKIP_MPICXX=ON \
  -DMPI_CXX_ADDITIONAL_INCLUDE_DIRS="$deps/usr/include/x86_64-linux-gnu/mpich" \
  -DMPI_CXX_LIB_NAMES=mpich -DMPI_mpich_LIBRARY="$lib/libmpich.so" \
  -DMPIEXEC_EXECUTABLE="$deps/usr/bin/mpiexec.hydra" ${TRIDENT_GPU_CMAKE_ARGS:-} || exit 2
echo "== where each dependency was found $(elapsed)"
grep -E '^(Eigen3_DIR|doctest_DIR|CLI11_DIR|nlohmann_json_DIR|MPI_mpich_LIBRARY|MPIEXEC_EXECUTABLE|TRIDENT_NCCL_(LIBRARY|INCLUDE)|CUDAToolkit_(BIN|LIBRARY)_DIR)[:=]' \
  "$build/CMakeCache.txt"
version() {  # version HEADER PREFIX: MAJOR.MINOR.PATCH from a header's #defines
  awk -v p="$2" '$1 == "#define" && ($2 == p "MAJOR" || $2 == p "MINOR" || $2 == p "PATCH") {
    v = v (v == "" ? "" : ".") $3 } END { print v }' "$1"
}
nccl_h=$(sed -n 's/^TRIDENT_NCCL_INCLUDE:PATH=//p' "$build/CMakeCache.txt")/nccl.h
cublas_h=$(dirname "$(dirname "$nvcc")")/include/cublas_api.h
[ -f "$nccl_h" ] && echo "NCCL $(version "$nccl_h" NCCL_) ($nccl_h)"
[ -f "$cublas_h" ] && echo "cuBLAS $(version "$cublas_h" CUBLAS_VER_) ($cublas_h)"

status=0
echo "== build (ninja -k 0) $(elapsed)"
keep_going=(-k 0)
[ ${#generator[@]} -eq 0 ] && keep_going=(-k)
cmake --build "$build" -j "$(nproc)" --target trident_cuda_tests -- "${keep_going[@]}" || status=1
for t in "$build"/tests/cuda/test_cuda_gpu "$build"/examples/train_gpt; do
  [ -x "$t" ] && ldd "$t" | grep -E 'cublas|cudart|nccl|mpich|gomp' | sed "s|^|$(basename "$t"): |"
done
cd "$build" || exit 2
echo "== host-side tests $(elapsed)"
ctest -L cuda -LE gpu --output-on-failure || status=1
echo "== gpu tests, CUDA_LAUNCH_BLOCKING=1 $(elapsed)"
CUDA_LAUNCH_BLOCKING=1 ctest -L gpu -V --output-on-failure || status=1
echo "== gpu tests $(elapsed)"
ctest -L gpu --output-on-failure || status=1
cd - > /dev/null || exit 2

# The benchmark: GPT-2 124M trained on the GPU by train_gpt (bf16 parameters and gradients, fp32
# master weights and compute) next to the PyTorch peer (bench/gpu/torch_gpt2.py: bf16 autocast,
# eager, then torch.compile), random tokens of the same vocabulary; tokens/s and MFU (model
# FLOPs per token of nn/flops.hpp over the dense bf16 peak, 989 TFLOP/s on H100 SXM and H200).
# TRIDENT_GPU_BENCH=full adds GPT-2 350M (L24 C1024) and TP2 on two ranks sharing the GPU.
bench() {  # bench NAME RANKS "MODEL FLAGS" [train_gpt flags...]
  local name=$1 ranks=$2 model=$3
  shift 3
  echo "== benchmark $name $(elapsed)"
  # shellcheck disable=SC2086
  timeout 300 mpiexec.hydra -n "$ranks" "$build/examples/train_gpt" $model --device cuda \
    --precision bf16 --data synthetic --steps 6 --log-every 1 --json "$out/$name.json" "$@" ||
    { status=1; return; }
  python3 - "$out/$name.json" $model << 'PY'
import json, sys
sys.path.insert(0, "bench/gpu")
import torch_gpt2
r = json.load(open(sys.argv[1]))
a = torch_gpt2.parse(sys.argv[2:])
mfu = torch_gpt2.flops_per_token(a) * r["tokens_per_s"] / (a.peak_tflops * 1e12)
print(f"trident {sys.argv[1]}: tokens_per_s={r['tokens_per_s']:.0f} mfu={mfu:.4f}")
PY
  [ "$ranks" -eq 1 ] || return 0  # (the peer runs one GPU: its rows are the 1-rank ones)
  for mode in eager compile; do
    # shellcheck disable=SC2086
    timeout 240 python3 bench/gpu/torch_gpt2.py --mode $mode $model || status=1
  done
}
gpt2_124m="--vocab 50304 --seq 1024 --layers 12 --hidden 768 --heads 12 --batch 8"
gpt2_350m="--vocab 50304 --seq 1024 --layers 24 --hidden 1024 --heads 16 --batch 8"
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "== benchmark skipped: no GPU (nvidia-smi -L failed)"
else
  bench gpt2_124m 1 "$gpt2_124m"
fi
if [ "${TRIDENT_GPU_BENCH:-}" = full ] && nvidia-smi -L > /dev/null 2>&1; then
  bench gpt2_350m 1 "$gpt2_350m"
  bench gpt2_124m_tp2 2 "$gpt2_124m" --tp 2
fi
echo "== done $(elapsed), status $status"
exit $status
