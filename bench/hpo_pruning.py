"""ASHA vs no pruning on the shipped example: the compute each study spends, in one run.

    .venv/bin/python bench/hpo_pruning.py [OVERRIDE ...]

Runs conf/sweep/lr_optuna.yaml (12 trials, 3 at a time, TPE with seed 0) twice, as a user
would (`python train.py -m +sweep=lr_optuna ...`): with its ASHA pruner, then with
`sweep.optuna.pruner=none`; extra overrides go to both. Same sampler, same seed, same
budget; the trials differ once TPE has seen pruned results (it is a different study then).

Printed per run: the sum of the job durations (each job's own wall time, result.json
`wall_time_s`: start-up, Ray, training, validation, teardown), the training steps run,
trials pruned, the best value, and the ratio of the compute sums.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run(sweep_dir: Path, extra: list[str]) -> dict[str, float]:
    import optuna

    from rllm_sweeps.records.result import JobResult
    from rllm_sweeps.study import open_storage

    cmd = [sys.executable, str(REPO / "train.py"), "-m", "+sweep=lr_optuna", *extra, f"hydra.sweep.dir={sweep_dir}"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    results = [JobResult.read(p.parent) for p in sweep_dir.glob("jobs/*/result.json")]
    study = optuna.load_study(study_name=sweep_dir.name, storage=open_storage(str(sweep_dir / "optuna.journal")))
    return {
        "wall": wall,
        "compute": sum(r.wall_time_s for r in results),
        "steps": sum(r.steps for r in results),
        "pruned": sum(r.status == "pruned" for r in results),
        "jobs": len(results),
        "best": study.best_value,
    }


def main() -> None:
    extra = sys.argv[1:]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="hpo_pruning-") as tmp:
        for name, pruner in (("asha", []), ("none", ["sweep.optuna.pruner=none"])):
            runs[name] = run(Path(tmp) / name, [*extra, *pruner])
            r = runs[name]
            print(
                f"pruner {name:5}: {r['jobs']} trials, {r['pruned']} pruned, {r['steps']} steps, "
                f"compute (sum of job durations) {r['compute']:.0f} s, sweep wall {r['wall']:.0f} s, "
                f"best val_reward_mean {r['best']:.4f}",
                flush=True,
            )
    print(f"compute with ASHA / without pruning: {runs['asha']['compute'] / runs['none']['compute']:.2f}")
    print(f"steps with ASHA / without pruning: {runs['asha']['steps'] / runs['none']['steps']:.2f}")


if __name__ == "__main__":
    main()
