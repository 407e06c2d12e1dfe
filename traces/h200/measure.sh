#!/bin/bash
# The device run that measured traces/h200 (one H200, 2026-12-04), from the repository root.
# $OUT: where the results go; $BENCH_DIR (default .devlib): shiftsim-bench built here
# (meson setup build -Dbench_cuda_arch=90) and, in lib/, the shared libraries it needs that
# the device lacks (GLib, json-glib and theirs, libcudart).  variants/gpt-j-6b-cublaslt.csv is
# the first command with --gemm-library cublaslt; variants/gpt-j-6b-cublaslt-nn*.csv came from
# an earlier build that timed every GEMM with both operands as stored (the last with -q
# --no-l2-flush --only gemm).
set -u
cd "$(dirname "$0")/../.."
D=${BENCH_DIR:-$PWD/.devlib}
exec > >(tee -a "$OUT/log.txt") 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,memory.total --format=csv
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for l in $(ldd "$D/shiftsim-bench" | awk '/not found/{print $1}'); do
  p=$(find /usr /opt -name "$l" 2>/dev/null | head -1)
  [ -n "$p" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$p")
done
ldd "$D/shiftsim-bench" | grep -E 'nccl|cublas|cudart|not found'
export SHIFTSIM_DATA=$PWD
B=$D/shiftsim-bench
mkdir -p "$OUT/h200"
step() { local t=$1; shift; local s=$(date +%s); timeout "$t" "$@"; echo "== rc=$? in $(( $(date +%s) - s )) s: $*"; }
step 180 "$B" --only gemm,attention,memory,copy --gemm-sweep --dtype bf16,fp16 --out "$OUT/h200/gpt-j-6b.csv" --raw "$OUT/raw-gpt-j-6b.csv"
step 90 "$B" --model llama-2-70b --seq 4096 --tp 1,2,4,8 --microbatch 1,2 --only gemm,attention --out "$OUT/h200/llama-2-70b.csv"
step 80 "$B" --model megatron-gpt-1.7b --tp 1,2,4,8 --microbatch 1,2,4,8 --only gemm,attention,memory --out "$OUT/h200/megatron-gpt-1.7b.csv"
step 50 "$B" --model llama-2-7b --seq 512 --tp 1,2,4,8 --microbatch 1,2 --only gemm --out "$OUT/h200/llama-2-7b-s512.csv"
export PYTHONUNBUFFERED=1
step 100 python3 traces/h200/reference/gpt-j-layer-torch.py > "$OUT/layer.csv"
cat "$OUT/layer.csv"
# Whole PyTorch steps and a Kineto trace of the layer; six GEMM shapes in PyTorch every way.
step 240 python3 traces/h200/reference/gpt-j-step-torch.py "$OUT/kineto-gpt-j-layer.json.gz" \
    "$OUT/kineto-gpt-j-layer.txt" > "$OUT/step.csv"
cat "$OUT/step.csv"
step 200 python3 traces/h200/reference/gemm-torch-layouts.py > "$OUT/gemm-torch-layouts.csv"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
wc -l "$OUT"/h200/*.csv
