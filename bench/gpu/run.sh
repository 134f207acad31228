#!/usr/bin/env bash
# The GPU benchmark (python -m bench.gpu.bench_gpu) and, with --tests, the GPU test tier, on one machine with an
# accelerator and only what its image holds (python3 with torch, transformers, accelerate, safetensors,
# jaxtyping, scikit-learn): the repository goes on PYTHONPATH, nothing is installed, nothing is downloaded.
#
#   bash bench/gpu/run.sh              the bench: name=value lines, the headline last; under 8 minutes on one H200
#   bash bench/gpu/run.sh --tests      the GPU test tier first (at most 3 minutes), then the bench in what is left
#                                      of 10 minutes (one device call with timeout_s=600)
#   bash bench/gpu/run.sh --tiny       the bench's logic with tiny models, on a CPU in seconds (a default test runs it)
#   bash bench/gpu/run.sh --long-traces   the long-trace bench instead (python -m bench.long_traces: SmolLM2-135M's
#                                      config with random weights, 512-4,096 new tokens against HF generate dynamic and
#                                      static, continuous batching; within 9 minutes); with --tiny its logic on a CPU
#
# Other options go to bench_gpu.py (--budget-s, --models qwen,llama, --device). Output is copied to $OUT (or /tmp):
# bench_gpu.txt, test_gpu.txt. Without sae-lens the SAE tests steer with a stand-in TopK SAE, and without
# math-verify the LYNX tests grade non-numeric answers as exact strings; a missing pure-Python package can
# travel as wheels in .whl/, as the device notes describe, and is installed to /tmp/site first whenever .whl/
# holds any.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUTDIR=${OUT:-/tmp}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi

tests=0
long=0
budget=420
args=()
for a in "$@"; do
  if [ "$a" = --tests ]; then tests=1; elif [ "$a" = --long-traces ]; then long=1; else args+=("$a"); fi
done

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

if [ "$long" = 1 ]; then
  # the options it takes: --tiny, --device, --repeats, --lengths, --long (python -m bench.long_traces --help); default cuda
  lt=(--device cuda --repeats 2)
  for a in ${args[@]+"${args[@]}"}; do lt+=("$a"); done
  timeout 540 "$PY" -m bench.long_traces "${lt[@]}" 2>&1 | tee "$OUTDIR/long_traces.txt"
  exit "${PIPESTATUS[0]}"
fi

status=0
if [ "$tests" = 1 ]; then
  # --noconftest: the root conftest's shape checks need beartype, which the device image lacks
  timeout 180 "$PY" -m pytest -q -p no:cacheprovider --noconftest -m gpu tests/gpu -rs 2>&1 | tee "$OUTDIR/test_gpu.txt"
  status=${PIPESTATUS[0]}
  echo "gpu_tests_exit=$status"
  budget=$(( 490 - SECONDS ))  # the bench ends within 10 minutes of the start (50 s of margin below)
  [ "$budget" -le 420 ] || budget=420
  [ "$budget" -ge 120 ] || budget=120
fi

timeout $((budget + 50)) "$PY" -m bench.gpu.bench_gpu --budget-s "$budget" ${args[@]+"${args[@]}"} 2>&1 | tee "$OUTDIR/bench_gpu.txt"
bench=${PIPESTATUS[0]}
[ "$bench" = 0 ] || echo "bench_exit=$bench"
[ "$bench" = 0 ] && [ "$status" = 0 ]
