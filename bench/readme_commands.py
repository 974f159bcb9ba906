"""README.md's commands, run in order on a fresh clone: every one must exit 0.

    python bench/readme_commands.py [--quick] [--keep] [--with-tests] [--clone-dir DIR]

Clones this checkout (its committed HEAD) into a temporary directory, runs `make setup` there
(a fresh `.venv`: minutes), then every command of README.md's ```bash blocks top to bottom, as
a newcomer would, in that clone. Placeholders are filled in: `path/to/wandb_sweep.yaml` is a
W&B sweep file written for the purpose, `multirun/rllm-sweeps/<sweep>` the newest sweep
directory. `make test` and the pytest line run only with `--with-tests` (the whole suite takes
15 minutes). `--quick` appends `trainer.total_batches=2` (and a short validation) to each
training command, so that the sweeps take minutes, not an hour; the commands are otherwise as
written. A warm server the commands started is stopped at the end.

Prints one line per command (exit code, seconds) and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICK = ["trainer.total_batches=2", "task.dataset.val_size=8", "trainer.test_freq=0"]
WANDB_SWEEP = """\
program: train.py
method: random
metric: {name: val_reward_mean, goal: maximize}
run_cap: 2
parameters:
  trainer.lr: {distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}
"""


def readme_commands(readme: Path) -> list[str]:
    """Every command line of the ```bash blocks, comments dropped, in order."""
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", readme.read_text(), flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def prepared(command: str, clone: Path, quick: bool, with_tests: bool) -> str | None:
    """The command as it runs in `clone` (placeholders filled in), or None to skip it."""
    words = shlex.split(command)
    if not with_tests and (words[:2] == ["make", "test"] or "pytest" in words):
        return None
    if "path/to/wandb_sweep.yaml" in command:
        (clone / "wandb_sweep.yaml").write_text(WANDB_SWEEP)
        command = command.replace("path/to/wandb_sweep.yaml", "wandb_sweep.yaml")
    if "<sweep>" in command:
        sweeps = sorted((clone / "multirun" / "rllm-sweeps").iterdir(), key=lambda p: p.stat().st_mtime)
        command = command.replace("multirun/rllm-sweeps/<sweep>", str(sweeps[-1].relative_to(clone)))
    training = "train.py" in command and not {"--help", "--cfg"} & set(words) and "dry_run=true" not in command
    if quick and training:
        command += " " + " ".join(QUICK)
    if quick and words[:2] == ["make", "run"]:
        command += " ARGS=" + shlex.quote(" ".join(QUICK))
    return command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short training runs (2 steps each)")
    parser.add_argument("--with-tests", action="store_true", help="also `make test` and the pytest line")
    parser.add_argument("--keep", action="store_true", help="keep the clone")
    parser.add_argument("--clone-dir", type=Path, help="where to clone (default: a temporary directory)")
    args = parser.parse_args()
    base = args.clone_dir or Path(tempfile.mkdtemp(prefix="readme-commands-"))
    clone = base / "rllm-sweeps"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    failures = 0
    try:
        for command in ["make setup", *readme_commands(clone / "README.md")]:
            ready = prepared(command, clone, args.quick, args.with_tests)
            if ready is None:
                print(f"skip      {command}", flush=True)
                continue
            start = time.monotonic()
            proc = subprocess.run(ready, shell=True, cwd=clone, capture_output=True, text=True)
            took = time.monotonic() - start
            print(f"rc {proc.returncode:<3} {took:6.0f}s  {ready}", flush=True)
            if proc.returncode != 0:
                failures += 1
                print((proc.stdout + proc.stderr)[-2000:], flush=True)
    finally:
        subprocess.run([".venv/bin/rllm-sweeps", "warm", "stop"], cwd=clone, capture_output=True)
        if not args.keep and args.clone_dir is None:
            subprocess.run(["rm", "-rf", str(base)])
    print(f"{failures} of the README's commands failed" if failures else "every README command exited 0")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
