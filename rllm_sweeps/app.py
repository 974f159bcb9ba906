"""What `python train.py ...` does around Hydra: friendly pre-flight checks, then the job.

Hydra composes the config and stops at the first unknown key with a message about
"struct mode"; the pre-flight check reports every unknown key with a suggestion
first, and answers `--help` and `--cfg job` with the reconciled, validated config.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.override_text import set_value, split_override
from rllm_sweeps.plain_tree import leaves
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.records.writable import unwritable
from rllm_sweeps.stop import EXIT_BAD_INPUT, EXIT_FAILED, Stop

# The overrides preflight() validated (a single job): the Hydra app need not validate them again.
_validated: tuple[str, ...] | None = None


def fail(message: str) -> NoReturn:
    raise Stop(EXIT_BAD_INPUT, f"error: {message}")


SWEEP_FILE_SETTING = "hydra.sweeper.sweep_file"


def command_line(argv: list[str], notify: Callable[[str], None]) -> list[str]:
    """train.py's arguments as Hydra takes them: rLLM's and SkyRL's spellings made canonical
    (config/spelling.py), and a sweep file given by path (`+sweep=PATH.yaml`, which Hydra would
    look up as a config-group option) handed to the sweeper by path."""

    from rllm_sweeps.config.spelling import canonical_overrides
    from rllm_sweeps.sweep.parse_cli import is_sweep_file_path

    out = []
    for arg in canonical_overrides(argv, notify=notify):
        arg = params_as_text(arg)
        value = set_value(arg, "sweep")
        if value is not None and is_sweep_file_path(value):
            if not Path(value).is_file():
                fail(f"{arg}: no sweep file {value} (a sweep file by path is a YAML file; by name: conf/sweep/NAME)")
            arg = f"{SWEEP_FILE_SETTING}={Path(value).resolve()}"
        out.append(arg)
    return out


PARAMS_PREFIX = "hydra.sweeper.params."


def params_as_text(arg: str) -> str:
    """`hydra.sweeper.params.KEY=EXPR` as the sweeper reads it: `+hydra.sweeper.params={KEY: EXPR}`, EXPR as
    text. Hydra refuses a sweep (`interval(...)`, `a,b`) in its own config's overrides, and reads a dotted KEY
    as nested keys; hydra-optuna-sweeper's users write both (its docs). A dict merges into the params."""
    from rllm_sweeps.config.override_values import format_value

    prefix, key, value = split_override(arg)
    if not key.startswith(PARAMS_PREFIX) or value is None or prefix == "~":
        return arg
    return f"+{PARAMS_PREFIX[:-1]}={{{key[len(PARAMS_PREFIX) :]}: {format_value(value)}}}"


def run_train_py(hydra_app: Callable[[], object]) -> None:
    """`python train.py ARGS`: on every node of an allocation the same command; rank 0 checks the
    command line and runs the Hydra app, the other ranks serve the job's Ray cluster
    (runtime/node_role.py)."""
    from rllm_sweeps.runtime.node_role import NoJobDir, run_node

    def rank_0() -> None:
        # rLLM's and SkyRL's spellings, sweep files by path; notes (a key SkyRL renamed) go to stderr
        sys.argv[1:] = command_line(sys.argv[1:], notify=lambda note: print(note, file=sys.stderr))
        args = preflight(sys.argv[1:])
        if args.cfg in ("hydra", "all"):
            show_hydra_config(hydra_app, args)
        else:
            hydra_app()

    try:
        run_node(sys.argv[1:], rank_0)
    except NoJobDir as err:
        fail(str(err))


def preflight(argv: list[str]) -> Any:
    """Check the command line before Hydra runs; may print and stop (stop.py). Hydra's parsed arguments."""
    from rllm_sweeps.config.load import check_override_keys, load_config
    from rllm_sweeps.config.planned import job_overrides, validated_by_sweeper
    from rllm_sweeps.config.private_api import command_line_parser
    from rllm_sweeps.config.source import ConfigSource, use_source
    from rllm_sweeps.records.launch import current_launch

    args = command_line_parser().parse_args(argv)
    if args.config_dir is not None and not Path(args.config_dir).is_dir():
        fail(f"--config-dir {args.config_dir}: no such directory")
    use_source(ConfigSource.from_command_line(args))  # every composition below: the user's search path
    if args.help:
        print(usage())
        raise Stop(0)
    sweep_file = next(
        (o for o in args.overrides if (p := split_override(o)).key in ("sweep", SWEEP_FILE_SETTING) and not p.deletes),
        None,
    )
    if sweep_file is not None and not args.multirun:
        fail(f"'{sweep_file}' selects a sweep, which runs with -m: python train.py -m {' '.join(args.overrides)}")
    if args.multirun and args.cfg:  # Hydra's answer is a traceback
        fail(
            f"--cfg {args.cfg} shows one job's config, and -m runs a sweep: drop -m (one value per key) to see a "
            "job's config, or add hydra.sweeper.dry_run=true to see every job of the sweep and its launcher"
        )
    try:
        if args.multirun:
            check_launcher(args)  # before Hydra composes it: a launcher Hydra cannot find is refused here
            check_sweep_file(sweep_file)  # before Hydra composes it
            check_override_keys(args.overrides, where="command line")  # the sweeper checks each job
        elif args.cfg == "job":
            print(job_config_text(args.overrides), end="")
            raise Stop(0)
        else:
            global _validated
            if (problem := unwritable(run_dir_hint(args.overrides))) is not None:
                fail(f"{problem}: run where you may write, or give the job a directory: hydra.run.dir=DIR")
            try:
                launch = current_launch()  # a sweep's job: what its sweeper validated
            except ValueError as err:  # its launch record is unreadable
                fail(str(err))
            if not validated_by_sweeper(args.overrides, None if launch is None else launch.validated):
                # Every problem before Hydra makes the job's directory.
                load_config(args.overrides, where="command line", notify=lambda _: None)
            _validated = tuple(job_overrides(args.overrides))
    except ConfigError as err:
        fail(str(err))
    return args


def job_config_text(overrides: list[str]) -> str:
    """`--cfg job`: the resolved config (every interpolation shown as the value the job runs with);
    where `hydra/launcher`'s fields set resources, as a sweep's jobs get them, each line's source noted."""
    from launchers.choice import LauncherRefused
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.config.spelling import canonical_overrides
    from rllm_sweeps.sweep.launcher_origins import launcher_resources, with_resource_sources

    cfg = load_config(overrides, where="command line")
    canonical = canonical_overrides(overrides, notify=lambda _: None)
    try:
        shown = launcher_resources(canonical)
    except LauncherRefused as err:
        fail(str(err))
    if shown.overrides:
        cfg = load_config([*canonical, *shown.overrides], where="command line", notify=lambda _: None)
    return with_resource_sources(OmegaConf.to_yaml(cfg, resolve=True), shown)


def show_hydra_config(hydra_app: Callable[[], object], args: Any) -> None:
    """`--cfg hydra`/`--cfg all`: Hydra's own printout, each hydra-submitit-launcher field set there
    marked with what it becomes here (launchers/submitit_fields.py)."""
    import contextlib
    import io

    from rllm_sweeps.config.compose import compose_config
    from rllm_sweeps.config.spelling import canonical_overrides
    from rllm_sweeps.sweep.launcher_origins import with_field_destinations

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        hydra_app()
    if args.package not in (None, "hydra", "hydra.launcher", "_global_"):
        print(printed.getvalue(), end="")
        return
    canonical = canonical_overrides(args.overrides, notify=lambda _: None)
    launcher = compose_config(canonical, with_hydra=True).hydra.launcher
    print(with_field_destinations(printed.getvalue(), launcher, args.package), end="")


def check_launcher(args: Any) -> None:
    """`hydra/launcher=NAME` that Hydra cannot find on the search path (a typo, a plugin not
    installed): one line naming the launchers this sweeper drives, instead of Hydra's composition
    error. One it finds is judged by the sweeper, by what it is (launchers/choice.py)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from launchers.choice import not_driven
    from rllm_sweeps.config.overrides import group_choices

    chosen = [p.value for o in args.overrides if (p := split_override(o)).key == "hydra/launcher" and p.value]
    if not chosen:
        return
    try:
        options = group_choices("hydra/launcher")
    except (HydraException, OmegaConfBaseException):  # a broken search path or config: Hydra's own message says it
        return
    if chosen[-1] not in options:
        fail(not_driven(chosen[-1], "Hydra finds no such launcher config here"))


def check_sweep_file(selector: str | None) -> None:
    """A sweep file that refers to itself (a YAML anchor cycle): one line naming the line, before
    Hydra composes it (it would recurse until Python stops it, thousands of lines)."""
    from rllm_sweeps.sweep.parse_cli import anchor_cycle, display, sweep_file_path

    if selector is None:
        return
    _, key, value = split_override(selector)
    path = Path(value or "") if key == SWEEP_FILE_SETTING else sweep_file_path(value or "")
    if path.is_file() and (cycle := anchor_cycle(path)) is not None:
        fail(f"Invalid sweep: {display(path)}: {cycle}")


def run_dir_hint(overrides: list[str]) -> Path:
    """Where Hydra will make the job's directory, as far as the command line says before Hydra
    runs: hydra.run.dir when given plainly, else the outputs/ directory it goes under."""
    given = [v for o in overrides if (v := set_value(o, "hydra.run.dir")) is not None]
    return Path(given[-1]) if given and "${" not in given[-1] else Path("outputs")


def run_hydra_job(cfg: DictConfig) -> dict:
    """The body of the Hydra app: reconcile, validate, then train."""
    from hydra.core.hydra_config import HydraConfig

    from rllm_sweeps.config.load import finalize

    overrides = list(HydraConfig.get().overrides.task)
    try:
        finalize(cfg, overrides, where="command line", check=tuple(overrides) != _validated)
    except ConfigError as err:
        fail(str(err))
    from rllm_sweeps.job import EXIT_PREEMPTED, JobConfig, run_job
    from rllm_sweeps.job_dir import JobRefused
    from rllm_sweeps.records.status import JobStatus

    try:
        result = run_job(JobConfig.of(cfg), overrides)
    except JobRefused as err:
        fail(str(err))
    except PermissionError as err:  # a directory or file of the job that this user may not write
        fail(f"permission denied: cannot write {err.filename}: make it writable, or give the job another directory")
    if result.status is JobStatus.PREEMPTED:
        raise Stop(EXIT_PREEMPTED)
    if not result.status.is_final:  # pruned: stopped by its Optuna trial's pruner, as asked
        raise Stop(EXIT_FAILED)
    return {"status": str(result.status), "final": result.final, "config_hash": result.config_hash}


def usage() -> str:
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.config.overrides import group_choices
    from rllm_sweeps.keymap import KEY_MAPPINGS
    from rllm_sweeps.sweep.spec import setting_help

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
        for key, value in leaves(OmegaConf.to_container(cfg[section], resolve=True), section + "."):
            lines.append(f"  {key:<36} {value!r:<24} {'-> ' + natives[key][0] if key in natives else ''}")
    lines += ["", "Config groups (GROUP=CHOICE: conf/GROUP/CHOICE.yaml; * the default):"]
    lines += group_lines()
    example = next(m for m in KEY_MAPPINGS if m.common == "trainer.lr")
    lines += [
        "",
        "Engine: skyrl.engine=jax|fsdp|megatron; any SkyRL-native key by its full path, e.g.",
        f"  {example.native}=2e-6   (the same setting as {example.common})",
        "",
        "Sweeps (with -m; docs/SWEEPS.md): KEY=A,B / range(...) / interval(a,b) on any key, or a sweep file:",
        f"  +sweep=NAME (conf/sweep/NAME.yaml: {', '.join(group_choices('sweep'))}) or +sweep=PATH.yaml"
        " (also a W&B sweep file)",
    ]
    for key in cfg.sweep:
        if key != "optuna":
            lines.append(f"  {'sweep.' + key:<36} {setting_help(key)}")
    lines += [
        f"  {'sweep.optuna.sampler / .pruner':<36} method optuna (docs/OPTUNA.md)",
        f"  {'hydra.sweeper.dry_run=true':<36} the plan, every job shown validated, the cost; runs nothing",
        f"  {'hydra.sweeper.parallel=N':<36} jobs in flight (overrides sweep.parallel)",
        f"  {'hydra/launcher=slurm':<36} run the jobs on SLURM (docs/SLURM.md)",
        f"  {'hydra/launcher=submitit_slurm':<36} the same with hydra-submitit-launcher's field names",
        f"  {'hydra/sweeper=optuna':<36} hydra-optuna-sweeper's fields on this Optuna search (docs/OPTUNA.md)",
        f"  {'--config-dir DIR':<36} your own configs (task/, experiment/, hydra/launcher/): docs/CONFIG.md",
        "Hydra's own help: --hydra-help",
    ]
    return "\n".join(lines)


GROUP_HELP = {
    "task": "the dataset and reward",
    "workflow": "what one episode is (docs/WORKFLOWS.md)",
    "backend": "the trainer's native tree",
    "cluster": "a SLURM profile, with -m (docs/SLURM.md)",
}


def group_lines() -> list[str]:
    """'  task=        gsm8k | guess_letter | toy_letters*   the dataset and reward': conf/'s groups
    (but sweep, listed with the sweeps), each with its choices and its default from conf/config.yaml."""
    from rllm_sweeps.config.compose import CONF_DIR
    from rllm_sweeps.config.overrides import group_choices

    defaults: dict[str, str] = {}
    for entry in OmegaConf.load(CONF_DIR / "config.yaml").get("defaults", []):
        if isinstance(entry, DictConfig):
            defaults.update({str(k): str(v) for k, v in entry.items()})
    lines = []
    for group in sorted(p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name not in ("sweep", "__pycache__")):
        choices = " | ".join(c + ("*" if defaults.get(group) == c else "") for c in group_choices(group))
        lines.append(f"  {group + '=':<13}{choices:<45} {GROUP_HELP.get(group, '')}".rstrip())
    return lines
