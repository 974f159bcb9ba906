#!/usr/bin/env bash
# Issue 47's real tier on the device machine's CPU cores (16 there; the task is the CPU default task, so
# JAX is kept off the GPU): installs the project from the carried wheels, as bench/gpu_fit.sh does, then
# `bench/search_peers.py --tier real` on seeds FIRST..LAST-1, stopped after LIMIT seconds (the device's
# per-call limit); each finished search's row.json goes to $OUT/rows/, so the next call (or a later
# session) continues with the seeds left and `search_peers.py --summarize` joins the files.
#
#   run(carry=[".device/wheels"], command="bash bench/search_real.sh $OUT 0 5 540")
set -euo pipefail
out=${1:?output directory}; first=${2:?first seed}; last=${3:?last seed, exclusive}; limit=${4:-540}
shift 4 || true
site=$PWD/.device/site
mkdir -p "$out/rows"
export PYTHONPATH="$site" PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1 JAX_PLATFORMS=cpu
if [ ! -f "$site/.installed" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .device/wheels/*.whl
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --no-build-isolation --upgrade \
    --target "$site" .
  touch "$site/.installed"
fi
nproc
work=/tmp/search_real
rc=0
timeout "$limit" python3 bench/search_peers.py --tier real --first-seed "$first" --seeds "$last" \
  --work "$work" --out "$out/real_${first}_${last}.json" "$@" 2>&1 | tee "$out/real_${first}_${last}.txt" || rc=$?
for row in "$work"/*/row.json; do
  [ -f "$row" ] && cp "$row" "$out/rows/$(basename "$(dirname "$row")").json"
done
# A search cut by the limit: its sweep log's tail says how far it got.
for log in "$work"/*/sweep.log "$work"/*/trial-*.log; do
  [ -f "$log" ] && { echo "== $log"; tail -n 3 "$log"; } >> "$out/logs_tail.txt"
done
exit $rc
