"""hydra-submitit-launcher 1.2's `hydra/launcher=submitit_slurm` / `submitit_local`, field by field:
the one table of what each field becomes here (a job's `resources.*`, a SLURM launcher setting, an
sbatch flag, the sweep's parallelism) or why it is refused.

    FIELDS                      the table (name, 1.2's type and default, launchers, what it becomes)
    translate(values, slurm)    a composed `hydra.launcher` node -> Translation (or the refusals)
    schema(slurm)               1.2's SlurmQueueConf / LocalQueueConf rebuilt from the table, for
                                Hydra where hydra-submitit-launcher is not installed
    docs_table()                the table as docs/SLURM.md shows it ("Coming from hydra-submitit-launcher";
                                `python -m launchers.submitit_fields --write` writes it there)

A field counts as set when its value differs from 1.2's default: a default is what
hydra-submitit-launcher would have done, and it never competes with a job's own `resources.*`.
Standard library only.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional  # noqa: UP035 (OmegaConf's structured configs)

from rllm_sweeps.doc_table import between_markers

SLURM_TARGET = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
LOCAL_TARGET = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"


class Becomes(enum.Enum):
    RESOURCE = "resource"  # every job's resources.<target> (a command-line override of each job)
    SETTING = "setting"  # the SLURM launcher's setting <target> (launchers/slurm_settings.py)
    SBATCH = "sbatch"  # an sbatch flag --<target>, as submitit passes additional parameters
    PARALLEL = "parallel"  # the sweep's parallelism (jobs in flight)
    ONLY_DEFAULT = "only-default"  # accepted at 1.2's default only: anything else is refused
    REFUSED = "refused"  # refused whenever set


@dataclass(frozen=True)
class SubmititField:
    name: str
    type: Any  # 1.2's annotation (the fallback schema's)
    default: Any  # 1.2's default; a factory's result for lists and dicts
    slurm_only: bool  # SlurmQueueConf's own (else BaseQueueConf's: submitit_local has it too)
    becomes: Becomes
    target: str = ""  # resources key, SlurmSettings field or sbatch flag
    why: str = ""  # for ONLY_DEFAULT and REFUSED: the reason and what to write instead; else a limit


FIELDS: tuple[SubmititField, ...] = (
    SubmititField(
        "submitit_folder",
        str,
        "${hydra.sweep.dir}/.submitit/%j",
        False,
        Becomes.REFUSED,
        why="submitit's files are under each job's directory (records/layout.py): set hydra.sweep.dir",
    ),
    SubmititField("timeout_min", int, 60, False, Becomes.RESOURCE, "time_min"),
    SubmititField("cpus_per_task", Optional[int], None, False, Becomes.RESOURCE, "cpus_per_task"),  # noqa: UP045
    SubmititField("gpus_per_node", Optional[int], None, False, Becomes.RESOURCE, "gpus_per_node"),  # noqa: UP045
    SubmititField(
        "tasks_per_node",
        int,
        1,
        False,
        Becomes.ONLY_DEFAULT,
        why="a job runs one task per node, which brings up Ray over the node's GPUs: "
        "set gpus_per_node (resources.gpus_per_node) instead",
    ),
    SubmititField("mem_gb", Optional[int], None, False, Becomes.RESOURCE, "mem_gb"),  # noqa: UP045
    SubmititField("nodes", int, 1, False, Becomes.RESOURCE, "nodes"),
    SubmititField(
        "name",
        str,
        "${hydra.job.name}",
        False,
        Becomes.REFUSED,
        why="SLURM job names are the sweep's (rllm-<job directory>), which `rllm-sweeps status` reads: remove it",
    ),
    SubmititField(
        "stderr_to_stdout",
        bool,
        False,
        False,
        Becomes.REFUSED,
        why="the launcher reads SLURM's errors from the job's own stderr file: remove it",
    ),
    SubmititField("partition", Optional[str], None, True, Becomes.SETTING, "partition"),  # noqa: UP045
    SubmititField("qos", Optional[str], None, True, Becomes.SETTING, "qos"),  # noqa: UP045
    SubmititField("comment", Optional[str], None, True, Becomes.SBATCH, "comment"),  # noqa: UP045
    SubmititField("constraint", Optional[str], None, True, Becomes.SETTING, "constraint"),  # noqa: UP045
    SubmititField("exclude", Optional[str], None, True, Becomes.SBATCH, "exclude"),  # noqa: UP045
    SubmititField(
        "gres",
        Optional[str],  # noqa: UP045
        None,
        True,
        Becomes.SBATCH,
        "gres",
        why="but not GPUs: a job's GPUs are its resources.gpus_per_node (set gpus_per_node)",
    ),
    SubmititField(
        "cpus_per_gpu",
        Optional[int],  # noqa: UP045
        None,
        True,
        Becomes.REFUSED,
        why="a job's CPUs are per task: set cpus_per_task (resources.cpus_per_task)",
    ),
    SubmititField(
        "gpus_per_task",
        Optional[int],  # noqa: UP045
        None,
        True,
        Becomes.REFUSED,
        why="a job has one task per node: set gpus_per_node (resources.gpus_per_node)",
    ),
    SubmititField(
        "mem_per_gpu",
        Optional[str],  # noqa: UP045
        None,
        True,
        Becomes.REFUSED,
        why="a job's memory is per node: set mem_gb (resources.mem_gb)",
    ),
    SubmititField(
        "mem_per_cpu",
        Optional[str],  # noqa: UP045
        None,
        True,
        Becomes.REFUSED,
        why="a job's memory is per node: set mem_gb (resources.mem_gb)",
    ),
    SubmititField("account", Optional[str], None, True, Becomes.SETTING, "account"),  # noqa: UP045
    SubmititField("signal_delay_s", int, 120, True, Becomes.SETTING, "signal_delay_s"),
    SubmititField("max_num_timeout", int, 0, True, Becomes.SETTING, "max_requeues"),
    SubmititField(
        "additional_parameters",
        Dict[str, Any],  # noqa: UP006
        {},
        True,
        Becomes.SETTING,
        "additional_parameters",
        why="more sbatch flags, as submitit passes them; not the flags the launcher sets itself (time, nodes, "
        "partition, ...): set their fields",
    ),
    SubmititField("array_parallelism", int, 256, True, Becomes.PARALLEL, "hydra.sweeper.parallel"),
    SubmititField("setup", Optional[List[str]], None, True, Becomes.SETTING, "setup"),  # noqa: UP006, UP045
)

RESOURCE_FIELD = {f.target: f.name for f in FIELDS if f.becomes is Becomes.RESOURCE}  # resources key -> field

# sbatch flags the launcher derives itself (from resources.*, its settings, the sweep): an
# additional parameter may not set them behind the table's back.
OWNED_FLAGS = {
    "time": "timeout_min",
    "nodes": "nodes",
    "ntasks-per-node": "tasks_per_node",
    "cpus-per-task": "cpus_per_task",
    "gpus-per-node": "gpus_per_node",
    "mem": "mem_gb",
    "partition": "partition",
    "qos": "qos",
    "account": "account",
    "constraint": "constraint",
    "signal": "signal_delay_s",
    "array": "array_parallelism",
    "job-name": "name",
    "output": "submitit_folder",
    "error": "submitit_folder",
    "dependency": "the sweep's array order",
}


@dataclass(frozen=True)
class Translation:
    """What a submitit_* node asks of this project's launchers."""

    resources: dict[str, Any]  # resources key -> value, for every job
    settings: dict[str, Any]  # SlurmSettings fields (SLURM only)
    parallel: int | None  # jobs in flight, where array_parallelism was set
    problems: list[str]  # refusals, each naming the field


def is_set(f: SubmititField, value: Any) -> bool:
    return value != f.default


def translate(values: Mapping[str, Any], slurm: bool) -> Translation:
    """A composed `hydra.launcher` node of hydra-submitit-launcher (its values unresolved where
    1.2's default is an interpolation: `submitit_folder`, `name`)."""
    resources: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    sbatch: dict[str, Any] = {}
    parallel = None
    problems = []
    for f in FIELDS:
        if f.slurm_only and not slurm:
            continue
        value = values.get(f.name, f.default)
        where = f"hydra.launcher.{f.name}={value}"
        if f.becomes in (Becomes.REFUSED, Becomes.ONLY_DEFAULT):
            if is_set(f, value):
                problems.append(f"{where}: not supported by this sweeper: {f.why}")
        elif f.becomes is Becomes.RESOURCE:
            if is_set(f, value):
                resources[f.target] = value
        elif f.becomes is Becomes.PARALLEL:
            if is_set(f, value):
                parallel = value
        elif f.becomes is Becomes.SBATCH:
            if value is not None:
                sbatch[f.target] = value
        elif f.target == "additional_parameters":
            for key, extra in dict(value or {}).items():
                flag = key.replace("_", "-")
                if flag in OWNED_FLAGS:
                    problems.append(
                        f"hydra.launcher.additional_parameters.{key}: the launcher sets --{flag} itself: "
                        f"set {OWNED_FLAGS[flag]} instead"
                    )
                elif key in sbatch and sbatch[key] != extra:
                    problems.append(
                        f"hydra.launcher.additional_parameters.{key}={extra} and hydra.launcher.{key}={sbatch[key]}"
                        " set the same sbatch flag to different values: keep one"
                    )
                else:
                    sbatch[key] = extra
        elif f.target == "setup":
            settings["setup"] = list(value or [])
        else:
            settings[f.target] = value
    if slurm:
        gres = str(sbatch.get("gres") or "")
        if any(part.split(":")[0] == "gpu" for part in gres.split(",")):
            problems.append(
                f"hydra.launcher.gres={gres}: a job's GPUs are its resources.gpus_per_node (the plan, the "
                "job's Ray and its checks read them): set gpus_per_node instead"
            )
        settings["additional_parameters"] = sbatch
    return Translation(resources, settings, parallel, problems)


def _default(f: SubmititField) -> Any:
    return field(default_factory=dict) if isinstance(f.default, dict) else f.default


def schema(slurm: bool) -> type:
    """hydra-submitit-launcher 1.2's SlurmQueueConf (slurm) or LocalQueueConf, from the table, with
    1.2's `_target_`: what Hydra composes for `hydra/launcher=submitit_*` where that package is
    not installed (tests/test_submitit_fields.py checks it against 1.2's own classes)."""
    target = SLURM_TARGET if slurm else LOCAL_TARGET
    fields = [("_target_", str, field(default=target))]
    fields += [(f.name, f.type, _default(f)) for f in FIELDS if slurm or not f.slurm_only]
    return make_dataclass("SlurmQueueConf" if slurm else "LocalQueueConf", fields)


def docs_table() -> str:
    """The table as docs/SLURM.md's section "Coming from hydra-submitit-launcher" shows it."""
    lines = [
        "| `hydra.launcher.` field | 1.2's default | submitit_slurm | submitit_local |",
        "|---|---|---|---|",
    ]
    for f in FIELDS:
        here = meaning(f)
        local = "(not a field)" if f.slurm_only else here
        lines.append(f"| `{f.name}` | `{f.default!r}` | {here} | {local} |")
    return "\n".join(lines)


DOC = Path("docs/SLURM.md")  # the checkout's, relative to its root (where a developer writes it)
MARK_BEGIN = "<!-- submitit table: python -m launchers.submitit_fields --write -->"
MARK_END = "<!-- end of the submitit table -->"


def with_table(doc: str, table: str) -> str:
    """`doc` with the text between the markers replaced by `table`."""
    return between_markers(doc, MARK_BEGIN, MARK_END, table + "\n")


def meaning(f: SubmititField) -> str:
    """What the field becomes here, in a phrase (the docs' table; `--cfg hydra`'s notes)."""
    if f.becomes is Becomes.RESOURCE:
        return f"every job's `resources.{f.target}`"
    also = f" ({f.why})" if f.why else ""
    if f.becomes is Becomes.SETTING:
        return f"`hydra/launcher=slurm`'s `{f.target}`{also}"
    if f.becomes is Becomes.SBATCH:
        return f"`sbatch --{f.target}`{also}"
    if f.becomes is Becomes.PARALLEL:
        return f"jobs in flight (`{f.target}`)"
    if f.becomes is Becomes.ONLY_DEFAULT:
        return f"only `{f.default!r}`: {f.why}"
    return f"refused: {f.why}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DOC.write_text(with_table(DOC.read_text(), docs_table()))

__all__ = [
    "FIELDS",
    "LOCAL_TARGET",
    "RESOURCE_FIELD",
    "SLURM_TARGET",
    "Becomes",
    "SubmititField",
    "Translation",
    "is_set",
    "meaning",
    "translate",
]
