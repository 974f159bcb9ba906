"""A sweep directory belongs to one sweep: which sweep a plan is, and whether it may use a directory.

    sweep_id(spec, base)      the sweep: its spec and the overrides every job gets
    sweep_family(spec, base)  the same without what an extension changes (EXTENDABLE: a larger budget)
    refusal(sweep_dir, ...)   None: the directory is empty, or holds this sweep (a resume) or one of
                              its family (an extension); else the one-line refusal (rc 2), before
                              anything in the directory is written

A directory with no manifest.json but a plan.json (written by a dry run before dry runs wrote
beside the sweep) holds no results: it is anyone's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rllm_sweeps.config.planned import job_overrides
from rllm_sweeps.config.source import current_source
from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.manifest import SweepManifest
from rllm_sweeps.records.plan import LEGACY_DISTRIBUTIONS, read_plan, renamed_distributions

# Spec fields whose change extends a sweep rather than making another one (docs/OPTUNA.md, "Resume").
EXTENDABLE = ("budget",)


def _legacy_names(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec with the distribution names plan.json used before schema 3 (records/plan.py), so that a
    sweep planned then keeps its id (and its directory). No two valid specs meet: a log_uniform over
    exponents has min <= 0 (positive ones are refused), a log_uniform_values min > 0."""
    return renamed_distributions(spec, {new: legacy for legacy, new in LEGACY_DISTRIBUTIONS.items()})


def _digest(spec: Mapping[str, Any], base: Sequence[str]) -> str:
    data = {"spec": _legacy_names(spec), "base": job_overrides(list(base))}
    if not (source := current_source()).is_default():  # another search path: another sweep
        data["configs"] = source.train_py_args()
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:8]


def sweep_id(spec: Mapping[str, Any], base: Sequence[str]) -> str:
    """What identifies a sweep: its spec (SweepSpec.to_dict) and the overrides every job gets."""
    return _digest(spec, base)


def sweep_family(spec: Mapping[str, Any], base: Sequence[str]) -> str:
    """The sweep's id without the fields an extension may change."""
    return _digest({k: v for k, v in spec.items() if k not in EXTENDABLE}, base)


def recorded_family(sweep_dir: Path, manifest: SweepManifest) -> str | None:
    """The family of the sweep a directory holds: its manifest's, or (an older manifest) its plan's."""
    if manifest.family is not None:
        return manifest.family
    try:
        plan = read_plan(SweepPaths(sweep_dir).plan)
    except (OSError, ValueError):  # no plan, or one that does not read (schema 1: no facts): no family
        return None
    return sweep_family(plan.spec, list(plan.base_overrides))


def refusal(sweep_dir: Path, this_id: str, this_family: str) -> str | None:
    """Why this sweep may not use `sweep_dir` (None: it may)."""
    manifest = SweepManifest.read(sweep_dir)
    if manifest is None or manifest.sweep_id == this_id:
        return None
    if recorded_family(sweep_dir, manifest) == this_family:
        return None  # the same sweep, extended (a larger budget)
    return (
        f"{sweep_dir} holds sweep {manifest.sweep_id} (made by: {' '.join(manifest.command[1:]) or '?'}); "
        f"this command is another sweep, {this_id}: nothing was written. Choose another directory "
        f"(hydra.sweep.dir=DIR, or leave hydra.sweep.dir out: each sweep gets its own, named after its id)"
    )
