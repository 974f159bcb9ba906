"""What `python train.py ...` does around Hydra: friendly pre-flight checks, then the job.

Hydra composes the config and stops at the first unknown key with a message about
"struct mode"; the pre-flight check reports every unknown key with a suggestion
first, and answers `--help` and `--cfg job` with the reconciled, validated config.
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.validate import ConfigError

EXIT_BAD_CONFIG = 2
# The overrides preflight() validated (a single job): the Hydra app need not validate them again.
_validated: tuple[str, ...] | None = None


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_CONFIG)


def preflight(argv: list[str]) -> None:
    """Check the command line before Hydra runs; may print and exit."""
    from hydra._internal.utils import get_args_parser

    from rllm_sweeps.config.load import check_override_keys, load_config

    args = get_args_parser().parse_args(argv)
    if args.help:
        print(usage())
        raise SystemExit(0)
    sweep_file = next((o for o in args.overrides if o.lstrip("+").split("=", 1)[0] == "sweep"), None)
    if sweep_file is not None and not args.multirun:
        fail(f"'{sweep_file}' selects a sweep, which runs with -m: python train.py -m {' '.join(args.overrides)}")
    try:
        if args.multirun:
            check_override_keys(args.overrides, where="command line")  # the sweeper checks each job
        elif args.cfg == "job":
            cfg = load_config(args.overrides, where="command line")
            # The resolved config: every interpolation shown as the value the job runs with.
            print(OmegaConf.to_yaml(cfg, resolve=True), end="")
            raise SystemExit(0)
        else:
            # Every problem before Hydra makes the job's directory.
            load_config(args.overrides, where="command line", notify=lambda _: None)
            global _validated
            _validated = tuple(o for o in args.overrides if not o.lstrip("+~").startswith("hydra"))  # Hydra's own
    except ConfigError as err:
        fail(str(err))


def run_hydra_job(cfg: DictConfig) -> dict:
    """The body of the Hydra app: reconcile, validate, then train."""
    from hydra.core.hydra_config import HydraConfig

    from rllm_sweeps.config.load import finalize

    overrides = list(HydraConfig.get().overrides.task)
    try:
        finalize(cfg, overrides, where="command line", check=tuple(overrides) != _validated)
    except ConfigError as err:
        fail(str(err))
    from rllm_sweeps.job import EXIT_PREEMPTED, run_job
    from rllm_sweeps.results import COMPLETED, PREEMPTED, PRUNED

    result = run_job(cfg, overrides)
    if result.status == PREEMPTED:
        raise SystemExit(EXIT_PREEMPTED)
    if result.status not in (COMPLETED, PRUNED):  # pruned: stopped by its Optuna trial's pruner, as asked
        raise SystemExit(1)
    return {"status": result.status, "final": result.final, "config_hash": result.config_hash}


def usage() -> str:
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.keymap import KEY_MAPPINGS

    cfg = load_config([], notify=lambda _: None)
    natives: dict[str, list[str]] = {}
    for m in KEY_MAPPINGS:
        natives.setdefault(m.common, []).append(m.native)
    lines = [
        "usage: python train.py [KEY=VALUE ...]            one training job",
        "       python train.py -m KEY=A,B ... [+sweep=NAME] a sweep (Hydra multirun)",
        "       python train.py --cfg job [KEY=VALUE ...]  print the resolved, validated config",
        "",
        "Common keys (rLLM names; `rllm-sweeps keys` shows the SkyRL-native name of each):",
    ]
    for section in ("model", "data", "rollout", "trainer", "algorithm", "resources"):
        for key, value in _leaves(OmegaConf.to_container(cfg[section], resolve=True), section):
            lines.append(f"  {key:<36} {value!r:<24} {'-> ' + natives[key][0] if key in natives else ''}")
    example = next(m for m in KEY_MAPPINGS if m.common == "trainer.lr")
    lines += [
        "",
        "Engine: skyrl.engine=jax|fsdp|megatron; any SkyRL-native key by its full path, e.g.",
        f"  {example.native}=2e-6   (the same setting as {example.common})",
        "Hydra's own help: --hydra-help",
    ]
    return "\n".join(lines)


def _leaves(tree: dict, prefix: str) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for key, value in tree.items():
        path = f"{prefix}.{key}"
        out += _leaves(value, path) if isinstance(value, dict) else [(path, value)]
    return out
