"""The command line -> a sweep: train.py's overrides taken apart into a SweepSpec and the
overrides every job gets (a SweepRequest).

    request = parse_sweep(["+sweep=lr_grid", "rollout.n=4,8", "trainer.total_batches=5"])
    request.spec.keys              # ('trainer.lr', 'rollout.n'): the file's and the command line's
    request.base_overrides         # ('trainer.total_batches=5',)

`+sweep=NAME` selects conf/sweep/NAME.yaml (or a YAML file by path); `sweep.KEY=VALUE` sets the
sweep's own settings; sweep overrides, and overrides of keys the file sweeps, are parameters
(parse_param.py); the node is then parsed as a file's is (parse_file.py), the command line
winning key by key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import OmegaConf

from rllm_sweeps.config.compose import CONF_DIR
from rllm_sweeps.config.overrides import config_file, group_choices
from rllm_sweeps.config.paths import is_sweep_file_path
from rllm_sweeps.config.spelling import canonical_key, canonical_overrides, canonical_sweep_node
from rllm_sweeps.override_text import override_key
from rllm_sweeps.problems import ConfigIssue, Problems, did_you_mean
from rllm_sweeps.sweep.param import Param
from rllm_sweeps.sweep.parse_file import SEED_KEY, SpecParser
from rllm_sweeps.sweep.pbt_settings import pbt_base_overrides
from rllm_sweeps.sweep.spec import SweepError, SweepRequest, SweepSpec

SWEEP_DIR = CONF_DIR / "sweep"
SWEEP_GROUP = "sweep"


def sweep_file_path(name: str) -> Path:
    """The search path's sweep/NAME.yaml (conf/sweep/ first, then the user's directories), or NAME
    itself when it is a path to a YAML file."""
    if is_sweep_file_path(name):
        return Path(name)
    return config_file(SWEEP_GROUP, name) or SWEEP_DIR / f"{name}.yaml"


def anchor_cycle(path: Path) -> str | None:
    """'line N: ...' where a YAML alias refers to a node that contains it (`&a [*a]`), or None.
    Such a file is infinite: loading it ends in a RecursionError (hundreds of lines from OmegaConf,
    thousands from Hydra)."""
    import yaml

    open_anchors: list[str | None] = []
    try:
        for event in yaml.parse(path.read_text()):
            if isinstance(event, yaml.CollectionStartEvent):
                open_anchors.append(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                open_anchors.pop()
            elif isinstance(event, yaml.AliasEvent) and event.anchor in open_anchors:
                return (
                    f"line {event.start_mark.line + 1}: the alias *{event.anchor} is inside the node it names "
                    f"(&{event.anchor}): the YAML refers to itself without end; copy the values instead"
                )
    except yaml.YAMLError:
        return None  # a syntax error: the loader says where
    return None


def load_sweep_file(path: Path) -> dict[str, Any]:
    """A sweep file's `sweep` node. The file is the node itself (Hydra's default package
    for the `sweep` group); a file written `# @package _global_` with one top-level
    `sweep:` key is accepted too."""
    if (cycle := anchor_cycle(path)) is not None:
        raise SweepError([ConfigIssue(str(path), f"{display(path)}: {cycle}")])
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if not data:  # not a sweep of one default job, silently
        empty = f"{display(path)}: the sweep file is empty: give it `parameters:` (docs/SWEEPS.md)"
        raise SweepError([ConfigIssue(str(path), empty)])
    if not isinstance(data, dict):
        raise SweepError([ConfigIssue(str(path), f"{display(path)}: a sweep file is a mapping, got {data!r}")])
    if set(data) == {"sweep"} and isinstance(data["sweep"], dict):
        data = data["sweep"]
    return data


def parse_sweep(
    overrides: Iterable[str],
    *,
    sweep_file: str | Path | None = None,
    params: Mapping[str, str] | None = None,
    config_loader: Any = None,
) -> SweepRequest:
    """Take a command line (train.py's overrides) apart into a sweep spec and base overrides.

    `+sweep=NAME` (or `sweep_file`) selects a sweep file; `sweep.KEY=VALUE` sets a sweep
    setting; sweep overrides (`key=a,b`, `range(...)`, `interval(...)`, ...) and
    overrides of keys the file sweeps become parameters; everything else is a base
    override that every job gets. `params` is Hydra's `hydra.sweeper.params` (key ->
    expression), weaker than the command line. `config_loader` expands `glob(...)` over
    config-group options (Hydra's, in the sweeper plugin; one is made when needed).
    Raises SweepError listing every problem.
    """
    problems = Problems()
    request = _parse_command_line(list(overrides), sweep_file, params or {}, config_loader, problems)
    problems.raise_if_any(SweepError)
    return request


def parse_sweep_lenient(
    overrides: Iterable[str],
    *,
    sweep_file: str | Path | None = None,
    params: Mapping[str, str] | None = None,
    config_loader: Any = None,
) -> tuple[SweepRequest, list[ConfigIssue]]:
    """As parse_sweep, but returns the problems with what could be parsed (the planner adds
    the problems only a composed config shows, and reports all of them together)."""
    problems = Problems()
    request = _parse_command_line(list(overrides), sweep_file, params or {}, config_loader, problems)
    return request, problems.issues


def display(path: Path | str) -> str:
    """A path as short as it can be said: relative to the working directory or the repo."""
    path = Path(path).resolve()
    for root in (Path.cwd(), CONF_DIR.parent):
        try:
            return str(path.relative_to(root))
        except ValueError:
            continue
    return str(path)


def _parse_command_line(
    overrides: list[str],
    sweep_file: str | Path | None,
    params: Mapping[str, str],
    config_loader: Any,
    problem: Problems,
) -> SweepRequest:
    spec_parser = SpecParser(problem)
    overrides = canonical_overrides(overrides)  # rLLM's and SkyRL's spellings (config/spelling.py)
    params = {canonical_key(k): v for k, v in params.items()}
    parser = OverridesParser.create(config_loader=config_loader)
    parsed: list[tuple[Override, str]] = []  # (override, where it came from)
    for i, line in enumerate([f"{k}={v}" for k, v in params.items()] + overrides):
        where = f"hydra.sweeper.params.{line.split('=', 1)[0]}" if i < len(params) else f"override '{line}'"
        try:
            parsed.append((parser.parse_override(line), where))
        except HydraException as err:
            problem(where, f"not a Hydra override: {err}")

    # 1. The sweep file (+sweep=NAME) and the sweep's settings (sweep.KEY=VALUE).
    file_path = Path(sweep_file) if sweep_file is not None else None
    settings: dict[str, tuple[Any, str]] = {}
    rest: list[tuple[Override, str]] = []
    for o, where in parsed:
        key = o.key_or_group
        if key == SWEEP_GROUP and not o.is_delete():
            if o.is_sweep_override():
                problem(where, "select one sweep file")
            else:
                file_path = sweep_file_path(str(o.value()))
        elif key.startswith(SWEEP_GROUP + "."):
            setting = key[len(SWEEP_GROUP) + 1 :]
            if o.is_sweep_override():
                problem(where, f"sweep.{setting} takes one value, not a sweep")
            elif "." in setting and not setting.startswith(("metric.", "optuna.", "pbt.", "confirm.")):
                problem(where, f"set parameters as KEY=VALUES on the command line, not sweep.{setting}")
            else:
                settings[setting] = (o.value(), where)
        else:
            rest.append((o, where))
    data: dict[str, Any] = {}
    source = SweepSpec.source  # no sweep file: "command line"
    if file_path is not None:
        source = display(file_path)
        if not file_path.is_file():
            options = group_choices(SWEEP_GROUP)
            hint = did_you_mean(file_path.stem, options) or f" (sweep files: {', '.join(options) or 'none'})"
            problem(f"+sweep={file_path.stem}", f"no sweep file {display(file_path)}{hint}")
        else:
            try:
                data = canonical_sweep_node(load_sweep_file(file_path))
            except SweepError as err:
                problem.extend(err.issues)
            except Exception as err:  # YAML syntax
                problem(source, f"cannot read the sweep file: {err}")
    file_params = data.get("parameters") if isinstance(data, dict) else None
    file_keys = {override_key(str(k)) for k in file_params} if isinstance(file_params, Mapping) else set()
    seed_key = settings.get("seed_key", (None, ""))[0] or data.get("seed_key") or SEED_KEY
    seeds_set = data.get("seeds") is not None or settings.get("seeds", (None, ""))[0] is not None

    # 2. Sweeps and overrides of swept keys are parameters; the rest is every job's base.
    # The last override of a key wins (as in Hydra's BasicSweeper).
    cli_params: dict[str, Param] = {}
    base: list[tuple[str, str]] = []  # (key, override)
    for o, where in rest:
        key = o.key_or_group
        if o.is_hydra_override() or o.is_delete():
            base.append((key, o.input_line))
        elif o.is_sweep_override():
            param = spec_parser.params.from_override(o, where)
            if param is not None:
                base = [b for b in base if b[0] != key]
                cli_params[key] = param
        elif key in file_keys or key in cli_params or (key == seed_key and seeds_set):
            if key == seed_key and settings.get("seeds", (None, ""))[0] is not None:
                problem(where, f"{key} is fixed here and replicated by {settings['seeds'][1]}: keep one")
                continue
            cli_params[key] = spec_parser.params.fixed_from_override(o, where)
        else:
            base = [b for b in base if b[0] != key]
            base.append((key, o.input_line))
    spec = spec_parser.build(data, source, settings, list(cli_params.values()), make=SweepSpec)
    base_lines = [line for _, line in base]
    if spec.pbt is not None:  # every trial validates and checkpoints at each interval
        fixed = [p.override(p.choices[0]) for p in spec.parameters if p.kind == "value"]
        with_pbt, notes = pbt_base_overrides(spec.pbt, [*base_lines, *fixed])
        base_lines += with_pbt[len(base_lines) + len(fixed) :]
        spec = dataclasses.replace(spec, notes=(*spec.notes, *notes))
    return SweepRequest(spec=spec, base_overrides=tuple(base_lines), sweep_file=file_path)
