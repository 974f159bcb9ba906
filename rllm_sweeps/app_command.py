"""The command that runs the training app (rllm_sweeps/train.py) as a new process: `python -m
rllm_sweeps ARGS`, with this process's interpreter. A sweep's jobs (sweep/runner.py, on every
launcher) and a rerun start it so: the installed package's code and configs, and the user's own
code where the command runs, whatever checkout or directory the sweep was started from."""

from __future__ import annotations

import sys

MODULE_PROGRAM = ("-m", "rllm_sweeps")  # rllm_sweeps/__main__.py


def app_command(args: list[str]) -> list[str]:
    """`python -m rllm_sweeps ARGS`, with the interpreter (and so the environment) of this process."""
    return [sys.executable, *MODULE_PROGRAM, *args]
