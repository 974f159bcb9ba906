"""The training app: one job, or a sweep with -m. `python train.py ARGS` (the checkout's, or a user's
own), `rllm-sweeps train ARGS` and `python -m rllm_sweeps ARGS` are this one Hydra app, from any
working directory; its configs are the package's (pkg://rllm_sweeps.conf, config/paths.py).

A train.py is three lines (docs: README, "Use it in your own project"):

    from rllm_sweeps.train import main
    if __name__ == "__main__":
        main()  # or main(config_dir="conf"): that directory (beside this file) on the search path too

A sweep's jobs run as `python -m rllm_sweeps ARGS` with the sweeper's own interpreter
(app_command.py), the search path as their arguments: the same code and configs on every node.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

CONFIG_DIR_FLAGS = ("--config-dir", "-cd")
CONFIG_PATH_FLAGS = ("--config-path", "-cp")


def main(config_dir: str | None = None) -> None:
    """`python SCRIPT ARGS`, SCRIPT a train.py that calls this. `config_dir`: a directory of the
    user's configs, relative to SCRIPT's own directory, added as `--config-dir` (one given on the
    command line wins)."""
    script = os.path.abspath(sys.argv[0])
    args = sys.argv[1:]
    if config_dir is not None and not any(_flag_of(a, CONFIG_DIR_FLAGS) for a in args):
        args = [CONFIG_DIR_FLAGS[0], os.path.join(os.path.dirname(script), config_dir), *args]
    run([sys.executable, script], args)


def module_main(args: list[str]) -> None:
    """`python -m rllm_sweeps ARGS` and `rllm-sweeps train ARGS`."""
    from rllm_sweeps.app_command import app_command

    run(app_command([]), args)


def run(program: list[str], args: list[str]) -> None:
    """Run the app on `args`; `program` is the command that runs it again (`python SCRIPT` or
    `python -m rllm_sweeps`), for this machine's warm server."""
    from rllm_sweeps.config.source import config_path_from_cwd

    sys.argv[1:] = absolute_config_path(args, config_path_from_cwd)
    from launchers.warm_server import run_on_warm_server

    run_on_warm_server(program)  # exits here if this machine's warm server ran the job (docs/JOBS.md)

    import hydra

    from rllm_sweeps.app import run_train_py
    from rllm_sweeps.config.native import register
    from rllm_sweeps.config.paths import CONF_SEARCH_PATH
    from rllm_sweeps.config.source import CONFIG_NAME
    from rllm_sweeps.stop import Stop

    register()
    try:
        run_train_py(hydra.main(config_path=CONF_SEARCH_PATH, config_name=CONFIG_NAME, version_base=None)(train))
    except Stop as stop:  # the one place the app ends the process (stop.py)
        raise SystemExit(stop.report()) from None


def train(cfg: Any) -> dict:
    """The Hydra app's body (defined here: Hydra names the job after this module, `train`)."""
    from rllm_sweeps.app import run_hydra_job

    return run_hydra_job(cfg)


def absolute_config_path(args: list[str], absolute: Callable[[str], str]) -> list[str]:
    """`args` with `--config-path`'s value made `absolute` (config/source.py: from the working
    directory, as --config-dir; Hydra would take it relative to the app's file, in site-packages)."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg in CONFIG_PATH_FLAGS and i + 1 < len(out):
            out[i + 1] = absolute(out[i + 1])
        elif (flag := _flag_of(arg, CONFIG_PATH_FLAGS)) and arg.startswith(flag + "="):
            out[i] = f"{flag}={absolute(arg[len(flag) + 1 :])}"
    return out


def _flag_of(arg: str, flags: tuple[str, ...]) -> str | None:
    return next((f for f in flags if arg == f or arg.startswith(f + "=")), None)
