#!/usr/bin/env bash
# Issue 48 on the device's GPU machine (no network, no Ray/vLLM): installs the project from the
# carried wheels (.device/wheels, git-ignored: cp -r /work/main/.device/wheels .device/), as
# bench/gpu_real_model.sh does, then bench/gpu_fit.py: the issue's 2-job sweep at defaults (auto
# micro batch), k = 1, 2, 4 tiny jobs sharing one GPU, the 0.44 B model's step time at auto.
#
#   run(carry=[".device/wheels"], command="bash bench/gpu_fit.sh $OUT")           # everything (~8 min)
#   run(carry=[".device/wheels"], command="bash bench/gpu_fit.sh $OUT --skip-sharing")  # the "Why" sweep only
set -euo pipefail
out=${1:?output directory}; shift
site=$PWD/.device/site
mkdir -p "$out"
# Installed (its configs are the package's); the checkout kept off sys.path (PYTHONSAFEPATH).
export PYTHONPATH="$site" PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .device/wheels/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade \
  --target "$site" .
nvidia-smi -L
python3 bench/gpu_fit.py --out /tmp/gpu_fit "$@" 2>&1 | tee "$out/gpu_fit.txt"
# The sweeps' own output (estimate lines, job logs' "GPU memory:" line) and result.json's memory_fit.
for d in /tmp/gpu_fit/*/; do
  name=$(basename "$d"); mkdir -p "$out/$name"
  cp "$d/sweeper.out" "$out/$name/" 2>/dev/null || true
  for j in "$d"jobs/*/; do
    [ -f "$j/result.json" ] && cp "$j/result.json" "$out/$name/$(basename "$j").result.json" || true
    [ -f "$j/job.log" ] && tail -c 20000 "$j/job.log" > "$out/$name/$(basename "$j").job.log" || true
  done
done
